"""``hsaudit audit-training --entry E --runs R``: audit a user's own DP training against its claim (docs/byo.md).

Trains 2R models of the entry's training (each with or without a canary, by a fair coin), scores the canary, and
reports the valid lower bound ε̂ against the claimed ε with a verdict (violation / consistent / inconclusive), beside
our accountant's ε and the last-iterate heuristic. A verdict carries its power: as many models again train the
positive control (in the audit setting the training at σ/--power-factor, else the canary repeated k times), and
"consistent" needs the design to flag it with probability at least --power-target. Writes ``OUT/scores.csv`` (columns ``score`` and ``member``, as
``hsaudit audit`` and ``hsaudit one-run`` read them), ``OUT/report.json``, ``OUT/report.md`` and ``OUT/fig.pdf`` (+
``fig.csv``); the control's scores in ``OUT/control.csv``. ``--jobs N`` trains in N processes (default one per core).

Sharded: ``--shard i/n`` trains the i-th of n shards into ``OUT/scores-i-of-n.csv``; ``--from-shards n`` audits them.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hsaudit.audit.rules import VALID_MODES, parse_rule

PLAN_DEFAULTS = {"canary": "out_of_support", "background": "data", "rule": "crossing"}


def _shard(text: str) -> tuple[int, int]:
    try:
        i, n = (int(v) for v in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected i/n with 1 <= i <= n, got {text!r}") from None
    if not 1 <= i <= n:
        raise argparse.ArgumentTypeError(f"expected i/n with 1 <= i <= n, got {text!r}")
    return i, n


def register(sub) -> None:
    from hsaudit.experiments.byo.train.values import SCORED, SCORES
    from hsaudit.util.scores import score_entry

    parser = sub.add_parser(
        "audit-training",
        description=(
            "Audit your own DP training: ENTRY names make() (package.module:make or path/to/file.py:make) returning "
            "the claim of your accountant and train(data, seed) (docs/byo.md). Trains 2 x RUNS models with and without "
            "a canary and prints the valid lower bound on ε against the claim, with a verdict."
        ),
    )
    parser.add_argument("--entry", required=True, help="package.module:make or path/to/file.py:make")
    parser.add_argument("--runs", type=int, required=True, help="models per world, on average (2 x RUNS in all)")
    parser.add_argument("--canary", default=PLAN_DEFAULTS["canary"],
                        help="a canary type of the registry: mislabelled, out_of_support (default), dirac, blank, "
                             "in_distribution, ood_mislabelled, clipbkd")  # fmt: skip
    parser.add_argument("--design", choices=("given", "auto"), default="given",
                        help="auto: try each design (dirac/blank, opposing/copies, out_of_support/data) in a pilot of "
                        "its positive control (--pilot-runs per world, streams of its own) and audit with the one that "
                        "separates most; given (default): --canary and --background")  # fmt: skip
    parser.add_argument("--pilot-runs", type=int, default=50, help="runs per world of each design's pilot (auto)")
    parser.add_argument("--background", default=PLAN_DEFAULTS["background"],
                        help="data (default), blank (all-zero inputs) or subset")  # fmt: skip
    parser.add_argument("--background-size", type=int, default=16, help="examples of the subset background")
    parser.add_argument("--seed", type=int, default=0, help="master seed of the bits, the models' seeds and the canary")
    parser.add_argument("--data", default=None, help="a .npz with arrays x and y instead of make().dataset()")
    scored = ", ".join(f"{s} ({score_entry(s).description})" for s in SCORED)
    parser.add_argument("--score", default="auto", choices=SCORES,
                        help=f"the canary's score, an entry of the score registry (higher ⇒ member): {scored}; or auto "
                        "(default: relative when θ0 is observed, during the training, and varies with the seed)")  # fmt: skip
    parser.add_argument("--audit-setting", action="store_true",
                        help="run the training in a cheap configuration where a tight audit is possible: make(setting) "
                        "gets few steps, the full batch and a σ calibrated to --setting-epsilon")  # fmt: skip
    parser.add_argument("--setting-steps", type=int, default=5, help="steps of the audit setting (default 5)")
    parser.add_argument("--setting-epsilon", type=float, default=4.0,
                        help="ε at --setting-delta that the audit setting's σ is calibrated to (default 4)")  # fmt: skip
    parser.add_argument("--setting-delta", type=float, default=1e-5, help="δ of the audit setting (default 1e-5)")
    parser.add_argument("--setting-rate", type=float, default=1.0,
                        help="sampling rate of the audit setting (default 1: the full batch)")  # fmt: skip
    parser.add_argument("--confidence", type=float, default=0.95, help="joint confidence of ε̂ (default 0.95)")
    parser.add_argument("--rule", default=PLAN_DEFAULTS["rule"], choices=VALID_MODES,
                        help="the verdict's valid rule (default crossing: exact, no Monte Carlo calibration)")  # fmt: skip
    parser.add_argument("--directions", default="one", choices=("one", "both"),
                        help="one: the canary's score is oriented (default); both: the other way too, paid for")
    parser.add_argument("--basis", default="auto", choices=("auto", "gdp", "assumption-free"),
                        help="the ε̂ of the verdict (default auto: GDP where the declared mechanism allows it)")
    parser.add_argument("--power-factor", type=float, default=1.5,
                        help="the positive control leaks at least this multiple of the claim (default 1.5)")
    parser.add_argument("--power-target", type=float, default=0.8,
                        help="probability of flagging the control that 'consistent' needs (default 0.8)")
    parser.add_argument("--power-resamples", type=int, default=100,
                        help="bootstrap resamples of the control that measure that probability (default 100)")
    parser.add_argument("--no-control", action="store_true",
                        help="train no positive control (half the models; the verdict is then at most inconclusive)")
    parser.add_argument("--shard", type=_shard, default=None, metavar="I/N", help="train only shard I of N")
    parser.add_argument("--from-shards", type=int, default=None, metavar="N",
                        help="audit OUT/scores-*-of-N.csv (written by --shard I/N) instead of training")  # fmt: skip
    parser.add_argument("--out", default="byo-audit", help="directory of the outputs (default byo-audit)")
    parser.add_argument("--jobs", type=int, default=None,
                        help="processes that train the models (default: one per core, or 1 when the check says the "
                        "training takes under 60 s); --jobs 1 trains in this process")  # fmt: skip
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads of this process (default 1: small models train fastest on one thread; "
                        "the jobs fill the cores, each with cores // jobs threads)")  # fmt: skip
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--bench", type=int, default=None, metavar="MODELS",
                        help="benchmark instead of auditing: MODELS models of the training called directly against "
                        "the same through the harness, and the overhead per model")  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print the report as one JSON object")
    parser.set_defaults(func=run)


def _design(args: argparse.Namespace, shards: int):
    from hsaudit.experiments.byo.plan import audit_setting
    from hsaudit.experiments.byo.train.values import Design

    setting = None
    if args.audit_setting:
        setting = audit_setting(steps=args.setting_steps, epsilon=args.setting_epsilon, delta=args.setting_delta,
                                sample_rate=args.setting_rate)  # fmt: skip
    return Design(entry=args.entry, canary=args.canary, runs=args.runs, shards=shards, seed=args.seed,
                  background=args.background, background_size=args.background_size, setting=setting,
                  data=args.data, score=args.score)  # fmt: skip


def _summary(rep) -> str:
    lines = [
        f"verdict: {rep.verdict} — {rep.reason}",
        f"  claimed ε = {rep.claim.epsilon:.4g} at δ = {rep.claim.delta:g}; ours = {rep.accounting.epsilon:.4g}; "
        f"last-iterate heuristic = {rep.accounting.heuristic:.4g}",
    ]
    if rep.epsilon_hat is not None:
        lines.append(
            f"  ε̂ = {rep.epsilon_hat:.4g} ({rep.rule}, {rep.basis}, confidence {rep.confidence:g}) from "
            f"{rep.runs_out} + {rep.runs_in} runs"
        )
    if rep.power is not None:
        lines.append(f"  power: {rep.power.statement()}")
    warning = rep.details.get("warning")
    if warning:
        lines.append(f"  warning: {warning}")
    advice = rep.details.get("θ0 advice")
    if advice:
        lines.append(f"  θ0: {advice}")
    return "\n".join(lines)


def _figure(scores, payload: dict, out: Path) -> None:
    """``OUT/fig.pdf`` (+ ``fig.csv``, its numbers): the scores in both worlds and ε̂ against the claim, as the
    workflow's ``plot_byo`` draws it."""
    from hsaudit.experiments.byo.figures import FIGURES

    facts = {"report": payload, "scale": "cli"}
    FIGURES["scores"](scores, pdf=str(out / "fig.pdf"), csv=str(out / "fig.csv"), facts=facts)


def run(args: argparse.Namespace) -> int:
    import pandas as pd

    from hsaudit.experiments.byo.api import audit_frames, audit_training, train_all
    from hsaudit.experiments.byo.audit import AuditOptions, markdown
    from hsaudit.experiments.byo.train.harness import load, prepare
    from hsaudit.util.io import write_csv_atomic, write_text_atomic

    if args.runs < 1:
        raise ValueError(f"--runs must be >= 1, got {args.runs}")
    if args.jobs is not None and args.jobs < 1:
        raise ValueError(f"--jobs must be >= 1, got {args.jobs}")
    import torch

    torch.set_num_threads(args.threads if args.threads is not None else 1)
    out = Path(args.out)
    shards = args.shard[1] if args.shard else (args.from_shards or 1)
    design = _design(args, shards)
    options = AuditOptions(confidence=args.confidence, rule=parse_rule(args.rule, seed=args.seed),
                           directions=args.directions, basis=args.basis, seed=args.seed,
                           power_factor=args.power_factor, power_target=args.power_target,
                           power_resamples=args.power_resamples)  # fmt: skip
    progress = not args.no_progress and not args.json
    pilot = None
    if args.design == "auto":
        if args.shard or args.from_shards or args.bench:
            raise ValueError("--design auto chooses in one process: run it once, then give its --canary and "
                             "--background to --shard, --from-shards or --bench")  # fmt: skip
        from hsaudit.experiments.byo.api import choose_design

        design, pilot = choose_design(design, options, pilot_runs=args.pilot_runs, jobs=args.jobs)
        if not args.json:
            for row in pilot:
                what = f"separation μ = {row['separation']:.3g}" if row["separation"] is not None else row["error"]
                print(f"design {row['canary']} / {row['background']}: {what} ({row['seconds']:.1f} s)")
            print(f"chose {design.canary} / {design.background}")
    if args.bench:
        from hsaudit.experiments.byo.api import benchmark

        timing = benchmark(design, models=args.bench)
        print(json.dumps(timing, indent=2) if args.json else "\n".join(f"{k}: {v:.4g}" for k, v in timing.items()))
        return 0
    if args.shard:
        from hsaudit.experiments.byo.api import control_design

        i, n = args.shard
        prepared = prepare(design)
        path = out / f"scores-{i}-of-{n}.csv"
        write_csv_atomic(train_all(prepared, jobs=1, progress=progress, shards=[i - 1]), path)
        print(f"shard {i}/{n}: wrote {path}")
        if not args.no_control:
            twin_design, _ = control_design(design, prepared.training.claim, prepared.probe.n, options)
            twin = prepare(twin_design, found=prepared.probe, canary=prepared.canary)
            path = out / f"control-{i}-of-{n}.csv"
            write_csv_atomic(train_all(twin, jobs=1, progress=progress, shards=[i - 1]), path)
            print(f"control shard {i}/{n}: wrote {path}")
        return 0
    if args.from_shards:
        n = args.from_shards
        paths = [out / f"scores-{i}-of-{n}.csv" for i in range(1, n + 1)]
        missing = [str(p) for p in paths if not p.exists()]
        if missing:
            raise FileNotFoundError(f"missing shard score files: {', '.join(missing)}")
        frames = [pd.read_csv(p) for p in paths]
        twins = [] if args.no_control else [out / f"control-{i}-of-{n}.csv" for i in range(1, n + 1)]
        missing = [str(p) for p in twins if not p.exists()]
        if missing:
            raise FileNotFoundError(f"missing control shard files (or pass --no-control): {', '.join(missing)}")
        rep = audit_frames(frames, design, load(design), options, control=[pd.read_csv(p) for p in twins])
        scores = pd.concat(frames, ignore_index=True)
    else:
        result = audit_training(design, options, progress=progress, control=not args.no_control, jobs=args.jobs)
        rep, scores = result.report, result.scores
        if result.control is not None and len(result.control):
            write_csv_atomic(result.control, out / "control.csv")
    if len(scores):
        write_csv_atomic(scores, out / "scores.csv")
    payload = rep.to_dict()
    if pilot is not None:  # how the design was chosen (pilot controls, streams of their own)
        payload["details"]["design (auto)"] = "; ".join(
            f"{r['canary']}/{r['background']}: " + (f"μ {r['separation']:.3g}" if r["separation"] is not None
                                                   else r["error"]) for r in pilot)  # fmt: skip
    write_text_atomic(out / "report.json", json.dumps(payload, indent=2) + "\n")
    write_text_atomic(out / "report.md", markdown(payload))
    if len(scores):
        _figure(scores, payload, out)
    if args.json:
        print(json.dumps(payload, indent=2))
    else:
        print(_summary(rep))
        print(f"  wrote {out / 'report.md'}" + (f", {out / 'scores.csv'}, {out / 'fig.pdf'}" if len(scores) else ""))
    return 0
