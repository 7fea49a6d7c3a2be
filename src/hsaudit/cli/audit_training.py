"""``hsaudit audit-training --entry E --runs R``: audit a user's own DP training against its claim (docs/byo.md).

Trains 2R models of the entry's training (each with or without a canary, by a fair coin), scores the canary, and
reports the valid lower bound ε̂ against the claimed ε with a verdict (violation / consistent / inconclusive), beside
our accountant's ε and the last-iterate heuristic. A verdict carries its power: as many models again train the
positive control (in the audit setting the training at σ/--power-factor, else the canary repeated k times), and
"consistent" needs the design to flag it with probability at least --power-target, and the control to be the σ/f one
(the copies control is reported, but bounds no σ bug). Writes ``OUT/scores.csv`` (columns ``score`` and ``member``, as
``hsaudit audit`` and ``hsaudit one-run`` read them), ``OUT/report.json``, ``OUT/report.md`` and ``OUT/fig.pdf`` (+
``fig.csv``); the control's scores in ``OUT/control.csv``. ``--jobs N`` trains in N processes (default one per core).

The design is chosen by default: each candidate's positive control is piloted at ``--pilot-runs`` per world on streams
of its own and the audit runs with the one that separates most (the report names it, the candidates and the pilot's
cost); ``--canary`` or ``--background`` pins one (``--design given``: out_of_support / data).

Sharded: ``--shard i/n`` trains the i-th of n shards into ``OUT/scores-i-of-n.csv``; ``--from-shards n`` audits them.

Few runs: ``--canaries M [--trainings K]`` trains K models with M canaries each (each by its own coin) and audits them
with the one-run bounds pooled over the K trainings (:mod:`hsaudit.experiments.byo.few_runs`; docs/byo.md, "When your
training is expensive"); ``OUT/scores.csv`` has one row per (training, canary), ``OUT/fig.pdf`` (+ ``fig.csv``) its
scores by membership and ε̂ with the ceiling against the claim; its verdict follows the same rule. ``--runs``, ``--shard``,
``--from-shards``, ``--bench`` and ``--design auto`` belong to the population audit and are refused with it (its canary
defaults to out_of_support).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from hsaudit.audit.rules import VALID_MODES, parse_rule

PLAN_DEFAULTS = {"canary": "auto", "background": "auto", "rule": "crossing"}


def _shard(text: str) -> tuple[int, int]:
    try:
        i, n = (int(v) for v in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected i/n with 1 <= i <= n, got {text!r}") from None
    if not 1 <= i <= n:
        raise argparse.ArgumentTypeError(f"expected i/n with 1 <= i <= n, got {text!r}")
    return i, n


def register(sub) -> None:
    from hsaudit.experiments.byo.values import PILOT_RUNS, SCORED, SCORES
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
    parser.add_argument("--runs", type=int, default=None,
                        help="the population audit: models per world, on average (2 x RUNS in all)")
    parser.add_argument("--canaries", type=int, default=None, metavar="M",
                        help="the few-runs audit (with --trainings): M canaries per training, each in or out by its "
                        "own fair coin, audited with the one-run bounds pooled over the trainings (docs/byo.md, "
                        "'When your training is expensive'); --canary must have a family form (out_of_support, "
                        "mislabelled)")  # fmt: skip
    parser.add_argument("--trainings", type=int, default=None, metavar="K",
                        help="the few-runs audit: K trainings of M canaries each (default 1 with --canaries), and K "
                        "more of the positive control")  # fmt: skip
    parser.add_argument("--guesses", default=None, metavar="F[,F...]",
                        help="the few-runs audit's guesses per side as fractions of the K x M canaries, fixed before "
                        "the scores, several paid with Bonferroni (default 0.05,0.1,0.25)")  # fmt: skip
    parser.add_argument("--canary", default=PLAN_DEFAULTS["canary"],
                        help="a canary type of the registry, which pins the design: mislabelled, out_of_support, "
                             "dirac, blank, in_distribution, ood_mislabelled, clipbkd; or auto (default: chosen, "
                             "see --design)")  # fmt: skip
    parser.add_argument("--design", choices=("given", "auto"), default=None,
                        help="auto (the default unless --canary or --background is given): try each design "
                        "(dirac/blank, opposing/copies, out_of_support/data) in a pilot of its positive control "
                        "(--pilot-runs per world, streams of its own) and audit with the one that separates most; "
                        "given: --canary and --background (out_of_support and data where not given)")  # fmt: skip
    parser.add_argument("--pilot-runs", type=int, default=PILOT_RUNS,
                        help=f"runs per world of each design's pilot (auto; default {PILOT_RUNS})")  # fmt: skip
    parser.add_argument("--background", default=PLAN_DEFAULTS["background"],
                        help="data, blank (all-zero inputs), copies, subset, which pins the design; or auto (default: "
                        "chosen with the canary; data with a given canary)")  # fmt: skip
    parser.add_argument("--background-size", type=int, default=16, help="examples of the subset background")
    parser.add_argument("--canary-option", action="append", metavar="KEY=VALUE",
                        help="an option of the given canary and background (repeatable): opposing/copies take "
                        "amplitude (of x0 = a·e_f) and feature; any design replaced=opposite (replace-one: world 0 "
                        "holds the canary's input with the other label, a pair whose gradients oppose)")  # fmt: skip
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
    parser.add_argument("--setting-neighbouring", default="add-remove", choices=("add-remove", "replace-one"),
                        help="the relation the setting's σ is calibrated under (replace-one: twice the σ)")  # fmt: skip
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
    parser.set_defaults(func=run, exit_at_once=True)  # its workers reaped (run): nothing left to finalise


def _design(args: argparse.Namespace, shards: int):
    """The design of the population audit: chosen (canary auto) unless ``--canary``, ``--background`` or
    ``--design given`` pins it.

    Raises:
        ValueError: ``--design auto`` beside a given canary or background.
    """
    from hsaudit.experiments.byo.plan import audit_setting
    from hsaudit.experiments.byo.values import AUTO, PINNED, Design

    given = args.canary != AUTO or args.background != AUTO
    if args.design == "auto" and given:
        raise ValueError("--design auto chooses the canary and the background: leave out --canary and --background")
    canary, background = (PINNED if args.design == "given" and not given else (args.canary, args.background))
    setting = None
    if args.audit_setting:
        setting = audit_setting(steps=args.setting_steps, epsilon=args.setting_epsilon, delta=args.setting_delta,
                                sample_rate=args.setting_rate, neighbouring=args.setting_neighbouring)  # fmt: skip
    return Design(entry=args.entry, canary=canary, runs=args.runs, shards=shards, seed=args.seed,
                  background=background, background_size=args.background_size, setting=setting,
                  data=args.data, score=args.score, pilot_runs=args.pilot_runs,
                  canary_options=canary_options(args.canary_option))  # fmt: skip


def canary_options(pairs: list[str] | None) -> dict[str, Any] | None:
    """``--canary-option KEY=VALUE`` pairs as a mapping (each value read as YAML: ``1.5`` a number), or None.

    Raises:
        ValueError: a pair without ``=``.
    """
    import yaml

    if not pairs:
        return None
    bad = [p for p in pairs if "=" not in p]
    if bad:
        raise ValueError(f"--canary-option takes KEY=VALUE, got {bad}")
    return {k: yaml.safe_load(v) for k, v in (p.split("=", 1) for p in pairs)}


def _trains_in_workers(args: argparse.Namespace) -> bool:
    """Whether this population audit trains in worker processes (``--jobs`` above 1, one process training every
    shard); by default (no ``--jobs``) the audit starts their server once its check says it will
    (:func:`~hsaudit.experiments.byo.api.choose_design`)."""
    whole = args.runs is not None and args.canaries is None and args.trainings is None
    alone = not (args.shard or args.from_shards or args.bench)
    return whole and alone and args.jobs is not None and args.jobs > 1


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
    if "pilot cost" in rep.details:
        lines.append(f"  design: {rep.details['design']}; pilot: {rep.details['pilot cost']}")
    warning = rep.details.get("warning")
    if warning:
        lines.append(f"  warning: {warning}")
    advice = rep.details.get("θ0 advice")
    if advice:
        lines.append(f"  θ0: {advice}")
    return "\n".join(lines)


def _figure(scores, payload: dict, out: Path, kind: str = "scores") -> None:
    """``OUT/fig.pdf`` (+ ``fig.csv``, its numbers): the scores in both worlds and ε̂ against the claim, as the
    workflow draws it (``plot_byo``; a few-runs audit's, ``kind`` "few", ``audit_byo_few``)."""
    from hsaudit.experiments.byo.figures import FIGURES

    facts = {"report": payload, "scale": "cli"}
    FIGURES[kind](scores, pdf=str(out / "fig.pdf"), csv=str(out / "fig.csv"), facts=facts)


def run(args: argparse.Namespace) -> int:
    """The command; before it returns (or raises), every process it started for its workers has ended
    (:func:`~hsaudit.experiments.byo.train.pool.reap`; after an interrupt, killed)."""
    from hsaudit.experiments.byo.train.pool import reap

    try:
        code = _run(args)
    except BaseException as err:
        reap(kill=not isinstance(err, Exception))
        raise
    reap()
    return code


def _run(args: argparse.Namespace) -> int:
    if _trains_in_workers(args):  # the workers' server imports torch while this process imports and loads
        from hsaudit.experiments.byo.train.pool import warm

        warm(args.entry)
    import pandas as pd

    from hsaudit.experiments.byo.api import audit_frames, audit_training, train_all
    from hsaudit.experiments.byo.audit import AuditOptions, markdown
    from hsaudit.experiments.byo.train.harness import load, prepare
    from hsaudit.util.io import write_csv_atomic, write_text_atomic

    if args.canaries is not None or args.trainings is not None:
        return _run_few(args)
    if args.guesses is not None:
        raise ValueError("--guesses belongs to the few-runs audit (--canaries M --trainings K)")
    if args.runs is None:
        raise ValueError("give --runs R (the population audit) or --canaries M [--trainings K] (the few-runs audit)")
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
    if design.chosen and (args.shard or args.from_shards):
        raise ValueError("a sharded audit trains one given design in every process: give --canary and --background "
                         "(the design an unsharded audit's report names, or out_of_support and data)")  # fmt: skip
    if args.bench:
        from hsaudit.experiments.byo.api import benchmark

        from hsaudit.experiments.byo.values import PINNED

        pinned = replace(design, canary=PINNED[0], background=PINNED[1]) if design.chosen else design
        timing = benchmark(pinned, models=args.bench)
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
        if result.pilot and not args.json:
            for row in result.pilot:
                what = (f"separation μ = {row['separation']:.3g}" if row["separation"] is not None
                        else f"left out, this training cannot take it ({row['error']})")  # fmt: skip
                print(f"design {row['canary']} / {row['background']}: {what} ({row['seconds']:.1f} s)")
        if result.control is not None and len(result.control):
            write_csv_atomic(result.control, out / "control.csv")
    if len(scores):
        write_csv_atomic(scores, out / "scores.csv")
    payload = rep.to_dict()
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


FEW_EXCLUSIVE = ("runs", "shard", "from_shards", "bench")
"""Options of the population audit that mean nothing in the few-runs audit (an error when combined)."""


def _run_few(args: argparse.Namespace) -> int:
    """``--canaries M --trainings K``: the few-runs audit (:func:`hsaudit.experiments.byo.few_runs.audit_training_few`)."""
    given = [f"--{name.replace('_', '-')}" for name in FEW_EXCLUSIVE if getattr(args, name)]
    if args.design == "auto":
        given.append("--design auto")
    if given:
        raise ValueError(f"{', '.join(given)} cannot be combined with --canaries/--trainings: the few-runs audit trains "
                         "K trainings of M canaries each (--runs is the population audit's models per world)")  # fmt: skip
    if args.canaries is None:
        raise ValueError("--trainings K needs --canaries M (the canaries per training)")
    trainings = 1 if args.trainings is None else args.trainings
    if args.canaries < 2 or trainings < 1:
        raise ValueError(f"--canaries must be >= 2 and --trainings >= 1, got {args.canaries} and {trainings}")
    try:
        fractions = tuple(float(f) for f in (args.guesses or "0.05,0.1,0.25").split(","))
    except ValueError:
        raise ValueError(f"--guesses must be comma-separated fractions, got {args.guesses!r}") from None
    import torch

    from hsaudit.experiments.byo.audit import AuditOptions
    from hsaudit.experiments.byo.few_runs import audit_training_few, markdown_few
    from hsaudit.experiments.byo.plan import audit_setting
    from hsaudit.experiments.byo.train.families import FewRunsDesign
    from hsaudit.experiments.byo.values import AUTO, PINNED
    from hsaudit.util.io import write_csv_atomic, write_text_atomic

    torch.set_num_threads(args.threads if args.threads is not None else 1)
    setting = None
    if args.audit_setting:
        setting = audit_setting(steps=args.setting_steps, epsilon=args.setting_epsilon, delta=args.setting_delta,
                                sample_rate=args.setting_rate, neighbouring=args.setting_neighbouring)  # fmt: skip
    score = {"relative": "auto"}.get(args.score, args.score)
    canary = PINNED[0] if args.canary == AUTO else args.canary  # the few-runs audit's design is given
    background = PINNED[1] if args.background == AUTO else args.background
    design = FewRunsDesign.of(args.entry, args.canaries, trainings, canary=canary, score=score, seed=args.seed,
                              background=background, background_size=args.background_size, setting=setting,
                              data=args.data)  # fmt: skip
    options = AuditOptions(confidence=args.confidence, seed=args.seed, power_factor=args.power_factor,
                           power_target=args.power_target, power_resamples=args.power_resamples)  # fmt: skip
    result = audit_training_few(design, options, fractions=fractions, control=not args.no_control,
                                progress=not args.no_progress and not args.json)  # fmt: skip
    out = Path(args.out)
    payload = result.report.to_dict()
    if len(result.scores):
        write_csv_atomic(result.scores, out / "scores.csv")
    if result.control is not None:
        write_csv_atomic(result.control, out / "control.csv")
    write_text_atomic(out / "report.json", json.dumps(payload, indent=2) + "\n")
    write_text_atomic(out / "report.md", markdown_few(payload))
    _figure(result.scores, payload, out, "few")
    if args.json:
        print(json.dumps(payload, indent=2))
    else:
        rep = result.report
        print(f"verdict: {rep.verdict} — {rep.reason}")
        print(f"  claimed ε = {rep.claim.epsilon:.4g} at δ = {rep.claim.delta:g}; ours = {rep.accounting.epsilon:.4g}; "
              f"ceiling of {rep.canaries} x {rep.trainings} canaries = {rep.ceiling:.4g}")
        if rep.counting is not None:
            print(f"  counting bound ε̂ = {rep.counting.epsilon:.4g}; f-DP bound ε̂ = {rep.fdp.epsilon:.4g} "
                  f"(μ̂ = {rep.fdp.mu:.4g}); verdict's basis {rep.basis}")
        print(f"  model-steps paid: {rep.model_steps}")
        wrote = [out / "report.md", out / "fig.pdf", *([out / "scores.csv"] if len(result.scores) else [])]
        print(f"  wrote {', '.join(map(str, wrote))}")
    return 0
