"""``hsaudit validate-audit``: coverage study of the audit estimators (docs/audit.md, "Coverage study")."""

from __future__ import annotations

import argparse
import json
import time

from hsaudit.audit.validation import coverage_study, parse_mode


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
            parse_mode(m)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None
    return modes


def register(sub) -> None:
    parser = sub.add_parser(
        "validate-audit",
        description=(
            "Seeded trials on N(0,1) vs N(mu,1) scores (an exact half split of R runs); for each mode the "
            "fraction of trials with ε̂ > true ε (true ε = μ-GDP ε at δ), median ε̂ and median ratio."
        ),
    )
    parser.add_argument("--trials", type=int, default=200, help="trials per mu (default 200)")
    parser.add_argument("--runs", type=int, default=5000, help="R, scores per trial (default 5000)")
    parser.add_argument("--mus", type=_floats, default=[0.5, 2.0, 3.95], help="true mu values (default 0.5,2,3.95)")
    parser.add_argument(
        "--modes",
        type=_modes,
        default=["paper", "held-out"],
        help="estimators: paper, held-out, grid, optionally MODE@FRACTION for the selection share, e.g. "
        "held-out@0.1 (default paper,held-out)",
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
        modes=args.modes,
        delta=args.delta,
        confidence=args.confidence,
        seed=args.seed,
    )
    elapsed = time.perf_counter() - start
    if args.json:
        print(json.dumps({"rows": [r.to_dict() for r in rows], "seconds": elapsed}, indent=2))
        return 0
    print(
        f"Coverage of the audit on N(0,1) vs N(mu,1): R = {args.runs}, {args.trials} trials per mu, "
        f"delta = {args.delta:g}, confidence = {args.confidence:g}, seed = {args.seed}"
    )
    print(f"{'mode':<13} {'mu':>6} {'true eps':>9} {'P(eps>true)':>12} {'median eps':>11} {'median ratio':>13}")
    for r in rows:
        print(
            f"{r.mode:<13} {r.mu:>6g} {r.true_epsilon:>9.3f} {r.exceed_fraction:>12.3f} "
            f"{r.median_epsilon:>11.3f} {r.median_ratio:>13.3f}"
        )
    print(f"({elapsed:.1f} s)")
    return 0
