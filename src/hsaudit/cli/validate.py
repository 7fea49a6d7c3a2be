"""``hsaudit validate-audit``: coverage and tightness of the audit estimators (docs/audit.md, "Coverage study")."""

from __future__ import annotations

import argparse
import json
import math
import time

from hsaudit.audit.crossing import DEFAULT_CALIBRATION_DRAWS
from hsaudit.audit.rules import parse_rule
from hsaudit.audit.validation import SCORE_FAMILIES, coverage_study


def _floats(text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None


def _modes(text: str) -> list[str]:
    modes = [x.strip() for x in text.split(",") if x.strip()]
    if not modes:
        raise argparse.ArgumentTypeError(f"expected comma-separated audit modes, got {text!r}")
    for m in modes:
        try:
            parse_rule(m)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None
    return modes


def _families(text: str) -> list[str]:
    families = [x.strip() for x in text.split(",") if x.strip()]
    bad = [f for f in families if f not in SCORE_FAMILIES]
    if not families or bad:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated score families from {', '.join(SCORE_FAMILIES)}, got {text!r}"
        )
    return families


def register(sub) -> None:
    parser = sub.add_parser(
        "validate-audit",
        description=(
            "Seeded trials on score pairs of known mu (an exact half split of R runs): N(0,1) vs N(mu,1), or "
            "logistic/Laplace location pairs shifted to be exactly mu-GDP. For each mode: coverage "
            "P(ε̂ <= true ε) (true ε = μ-GDP ε at δ), the fraction exceeding it, median ε̂ and the mean and "
            "median ratio ε̂ / true ε."
        ),
    )
    parser.add_argument("--trials", type=int, default=200, help="trials per mu (default 200)")
    parser.add_argument("--runs", type=int, default=5000, help="R, scores per trial (default 5000)")
    parser.add_argument(
        "--mus", type=_floats, default=[0.5, 2.0, 3.95], help="true mu values, >= 0 (default 0.5,2,3.95)"
    )
    parser.add_argument(
        "--modes",
        type=_modes,
        default=["paper", "held-out"],
        help="threshold rules: paper, held-out, grid, bonferroni, crossing, rays; the split rules optionally as "
        "MODE@FRACTION for the selection share, e.g. held-out@0.1 (default paper,held-out)",
    )
    parser.add_argument(
        "--families",
        type=_families,
        default=["gaussian"],
        help=f"score families: {', '.join(SCORE_FAMILIES)} (default gaussian)",
    )
    parser.add_argument(
        "--calibration-draws",
        type=int,
        default=DEFAULT_CALIBRATION_DRAWS,
        help=f"simulated Gaussian pairs of the rays mode (default {DEFAULT_CALIBRATION_DRAWS})",
    )
    parser.add_argument("--delta", type=float, default=1e-5, help="δ (default 1e-5)")
    parser.add_argument("--confidence", type=float, default=0.95, help="CP confidence (default 0.95)")
    parser.add_argument("--seed", type=int, default=0, help="master seed (default 0)")
    parser.add_argument("--json", action="store_true", help="print JSON (a list of rows)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    rows = coverage_study(
        mus=args.mus,
        trials=args.trials,
        runs=args.runs,
        rules=[parse_rule(m, calibration_draws=args.calibration_draws) for m in args.modes],
        families=args.families,
        delta=args.delta,
        confidence=args.confidence,
        seed=args.seed,
    )
    elapsed = time.perf_counter() - start
    if args.json:
        out = [
            {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in r.to_dict().items()}
            for r in rows
        ]
        print(json.dumps({"rows": out, "seconds": elapsed}, indent=2))
        return 0
    print(
        f"Coverage and tightness of the audit: families {','.join(args.families)}, R = {args.runs}, "
        f"{args.trials} trials per mu, delta = {args.delta:g}, confidence = {args.confidence:g}, seed = {args.seed}"
    )
    print(
        f"{'family':<9} {'rule':<13} {'mu':>6} {'true eps':>9} {'coverage':>9} {'P(eps>true)':>12} "
        f"{'median eps':>11} {'mean ratio':>11} {'median ratio':>13}"
    )
    for r in rows:
        print(
            f"{r.family:<9} {r.threshold_rule:<13} {r.mu:>6g} {r.true_epsilon:>9.3f} {1.0 - r.exceed_fraction:>9.3f} "
            f"{r.exceed_fraction:>12.3f} {r.median_epsilon:>11.3f} {r.mean_ratio:>11.4f} {r.median_ratio:>13.4f}"
        )
    print(f"({elapsed:.1f} s)")
    return 0
