"""``hsaudit plan TARGET...``: models, DP-SGD steps and CPU/GPU-hours of the experiments behind some targets.

    hsaudit plan results/fig1.pdf results/fig4.pdf      # from config/config.yaml (its scale)
    hsaudit plan all --scale laptop --json
    hsaudit plan --calibrate convnet --steps 5           # measure seconds per model-step here
    hsaudit plan results/yoon/fig3.pdf --scale laptop    # Yoon et al. (full-batch DP-SGD)
    hsaudit plan results/steinke/fig2.pdf --scale laptop --configfile config/config.yaml my.yaml   # as snakemake
    hsaudit plan results/byo/example/report.md --time-byo 8   # a user's training: time 8 of its models here
    hsaudit plan --few examples/byo/cifar_convnet.py:laptop --canaries 500 --trainings 2   # a few-runs audit

See :mod:`hsaudit.pipeline.costs` and docs/cluster.md ("Cost estimates").
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from hsaudit.pipeline.config import SCALES, load_yaml, resolve_scale, user_values
from hsaudit.util.mapping import deep_merge

DEFAULT_CONFIG = "config/config.yaml"


def register(sub) -> None:
    parser = sub.add_parser(
        "plan",
        description="Estimate the number of trained models, DP-SGD steps and CPU/GPU-hours behind figure targets.",
    )
    parser.add_argument("targets", nargs="*", help="figure targets, e.g. results/fig4.pdf, or 'all'")
    parser.add_argument(
        "--configfile",
        nargs="+",
        default=[DEFAULT_CONFIG],
        metavar="FILE",
        help="workflow config file(s), merged in order as snakemake's --configfile (default: %(default)s); an "
        "overlay (a file without scales:) is merged over config/config.yaml and its values win over the preset",
    )
    parser.add_argument("--scale", choices=SCALES, help="scale preset (default: the config's `scale`)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--time-byo",
        type=int,
        default=0,
        metavar="MODELS",
        help="price each audit of a user's own training (byo) by running MODELS of its models here, through the "
        "harness, with a job's one-off work (make, dataset, the determinism check); default 0: not priced",
    )
    cal = parser.add_argument_group("calibration (measure seconds per model-step on this machine)")
    cal.add_argument(
        "--calibrate",
        metavar="MODEL",
        help="a registry model (fcnn, convnet, resnet18_gn, alexnet_head, mnist_cnn, cifar_cnn, wrn16_4, ...): "
        "time its engine steps as `hsaudit bench train` does",
    )
    cal.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    cal.add_argument("--batch", type=int, help="batch size (default: the model's bench batch, fcnn 400, others 128)")
    cal.add_argument("--steps", type=int, default=5, help="timed steps (default: %(default)s)")
    cal.add_argument("--population", type=int, default=1, help="models vectorised per step (default: 1)")
    cal.add_argument("--threads", type=int, default=1, help="torch threads (default: 1, as the rules run)")
    few = parser.add_argument_group("a few-runs audit of a user's training (no config section needed)")
    few.add_argument("--few", metavar="ENTRY", help="price the few-runs audit of ENTRY (path/to/file.py:make): the "
                     "check's trainings, K with M canaries each and the control's K, from one training timed here")  # fmt: skip
    few.add_argument("--canaries", type=int, default=500, metavar="M", help="canaries per training (default 500)")
    few.add_argument("--trainings", type=int, default=2, metavar="K", help="trainings (default 2)")
    few.add_argument("--seconds-per-training", type=float, metavar="S", help="one training's seconds measured "
                     "elsewhere (the GPU it will run on): nothing is trained here, the data is read for its rows")  # fmt: skip
    few.add_argument("--audit-setting", action="store_true", help="in the audit setting (audit-training's defaults)")
    parser.set_defaults(func=_run)


def _load_config(paths: list[str], scale: str | None) -> dict:
    """The config the workflow would see for ``snakemake --configfile PATHS [--config scale=SCALE]``: the files
    merged over config/config.yaml in order, the preset applied, the user's values over it
    (:func:`hsaudit.pipeline.config.user_values`)."""
    texts = []
    for path in paths:
        if not Path(path).is_file():
            raise FileNotFoundError(
                f"config file {path!r} not found (run from the repository root or pass --configfile)"
            )
        texts.append(load_yaml(path) or {})
    defaults = load_yaml(DEFAULT_CONFIG) if Path(DEFAULT_CONFIG).is_file() else texts[0]
    config = defaults
    for text in texts:
        config = deep_merge(config, text)
    cli = {"scale": scale} if scale else {}
    return resolve_scale(deep_merge(config, cli), explicit=user_values(paths, cli, defaults))


def _run(args) -> int:
    from hsaudit.pipeline import costs as P

    if args.calibrate:
        return _calibrate(args)
    if args.few:
        return _few(args)
    if not args.targets:
        raise ValueError("give at least one target (e.g. results/fig4.pdf or all), --calibrate MODEL or --few ENTRY")
    config = _load_config(args.configfile, args.scale)
    p = P.plan(args.targets, config)
    if args.time_byo:
        p = _time_byo(p, config, args.time_byo)
    if args.json:
        out = {
            "scale": config.get("scale", "paper"),
            "targets": list(p.targets),
            "audits": [
                {**{k: v for k, v in asdict(a).items() if k != "key"}, "model_steps": a.model_steps,
                 **{f"{d}_hours": a.hours(d) if a.priced(d) else None for d in ("cpu", "gpu")}}
                for a in p.populations
            ],
            "simulations": list(p.simulations),
            "total": {"models": p.models, "model_steps": p.model_steps, "cpu_hours": p.hours("cpu"),
                      "gpu_hours": p.hours("gpu"), "not_calibrated": {m: P.not_calibrated(m) for m in p.uncalibrated}},
        }
        print(json.dumps(out, indent=2))
    else:
        print(P.format_plan(p, scale=config.get("scale", "paper")))
    return 0


def _time_byo(p, config: dict, models: int):
    """The plan with each byo population (and each row of the libraries table) timed here (:func:`hsaudit.experiments.byo.api.time_training`, at the
    audit's torch threads); a few-runs audit priced as ``--few`` prices it (:func:`hsaudit.experiments.byo.price.price_few`:
    one training timed, whatever MODELS)."""
    from dataclasses import replace

    import torch

    from hsaudit.experiments.byo.api import time_training
    from hsaudit.experiments.byo.price import price_few
    from hsaudit.experiments.byo.plan import plan as byo_plan
    from hsaudit.experiments.byo.train.families import FewRunsDesign
    from hsaudit.experiments.libraries.plan import plan as libraries_plan

    # the libraries table's rows are byo audits too (one job each: its audit and its control)
    audits = {a.root: a for build in (byo_plan, libraries_plan) for a in build(config).audits.values()}
    rows = []
    for pop in p.populations:
        audit = audits.get(pop.key[0]) if pop.section in ("byo", "libraries") and pop.key else None
        if audit is not None:
            torch.set_num_threads(audit.threads)
            few = audit.few()
            if few is not None:
                price = price_few(FewRunsDesign.from_dict(few), audit.options, fractions=audit.guesses,
                                  control=audit.control)  # fmt: skip
                pop = replace(pop, models=pop.models if price.early is None else 0, timed_seconds=price.cost.seconds,
                              detail=f"{pop.detail}; " + (f"no training: {price.early.split(':')[0]} before training"
                                                          if price.early else f"timed here: {_few_line(price)}"))  # fmt: skip
                rows.append(pop)
                continue
            timing = time_training(audit.design, audit.options, models=models)
            if timing.early is not None:
                pop = replace(pop, models=0, detail=f"{pop.detail}; no training: {timing.early} before training")
            else:
                pop = replace(pop, timed_seconds=timing.seconds(audit.design, control=audit.control),
                              detail=f"{pop.detail}; timed here: {timing.seconds_per_model:.3g} s per model, "
                                     f"{timing.shard_seconds:.3g} s per training job before its models, "
                                     f"{timing.check_seconds:.3g} s for the check"
                                     + (f" (with the design's pilot, {timing.pilot_seconds(audit.design):.3g} s)"
                                        if audit.design.chosen else ""))  # fmt: skip
        rows.append(pop)
    return replace(p, populations=tuple(rows))


def _few_line(price) -> str:
    """One line of a few-runs price: its trainings and jobs."""
    c = price.cost
    return (f"{c.check} + {c.audit} + {c.control} trainings (check, audit, control) of {c.seconds_check:.3g}, "
            f"{c.seconds_audit:.3g}, {c.seconds_control:.3g} s; {c.jobs} jobs of {c.seconds_job:.3g} s before their "
            "training")  # fmt: skip


def _few(args) -> int:
    """``--few ENTRY``: the price of its few-runs audit (:func:`hsaudit.experiments.byo.price.price_few`, as
    ``--time-byo`` prices a ``byo:`` few-runs section) from one training of the entry's data timed here (as the audit
    runs it: ``--threads``), or ``--seconds-per-training``."""
    import torch

    from hsaudit.experiments.byo.price import price_few
    from hsaudit.experiments.byo.plan import audit_setting
    from hsaudit.experiments.byo.train.families import FewRunsDesign

    torch.set_num_threads(args.threads)
    setting = audit_setting() if args.audit_setting else None
    design = FewRunsDesign.of(args.few, args.canaries, args.trainings, setting=setting)
    price = price_few(design, seconds_per_training=args.seconds_per_training)
    row = price.to_dict()
    if args.json:
        print(json.dumps(row, indent=2))
        return 0
    print(f"few-runs audit of {args.few}: {args.canaries} canaries x {args.trainings} training(s), {price.rows:,} "
          f"rows, {price.steps:,} steps per training")  # fmt: skip
    if price.early:
        print(f"  no training: {price.early}")
        return 0
    cost = price.cost
    print(f"  one training of the data {price.seconds_per_training:.3g} s ({price.how}); the control "
          + (f"at σ/{price.noise_factor:g}" if price.noise_factor != 1.0 else f"with {price.copies} copies"))
    for part in ("check", "audit", "control"):
        n, s = getattr(cost, part), getattr(cost, f"seconds_{part}")
        print(f"  {part:<8} {n:>3} training(s) x {s:.3g} s")
    print(f"  total    {cost.trainings:>3} training(s), {cost.seconds_trainings:.4g} s, one after "
          f"another (audit-training, one process); as workflow jobs {cost.seconds:.4g} s ({cost.jobs} jobs, each "
          f"{cost.seconds_job:.3g} s of its own work: start, make(), the data)")  # fmt: skip
    return 0


def _calibrate(args) -> int:
    """``--calibrate MODEL``: the benchmark's engine timing (:func:`hsaudit.bench.train.step_seconds`), printed."""
    from hsaudit.engine.models import model_spec

    spec = model_spec(args.calibrate)  # before torch loads: a bad name is a one-line error
    if min(args.steps, args.population, args.threads) < 1:
        raise ValueError(f"--steps, --population and --threads must be >= 1, got {args.steps}, {args.population}, "
                         f"{args.threads}")
    import torch

    from hsaudit.bench.train import step_seconds

    torch.set_num_threads(args.threads)
    batch = args.batch or spec.bench.batch
    seconds = step_seconds(
        spec, device="cuda" if args.device == "gpu" else "cpu", batch=batch, steps=args.steps,
        population=args.population,
    )
    row = {"model": spec.name, "device": args.device, "batch": batch, "steps": args.steps,
           "population": args.population, "threads": args.threads, "seconds_per_model_step": seconds}
    print(json.dumps(row) if args.json else f"{spec.name} on {args.device}: {seconds:.3g} s per model-step")
    return 0
