"""``hsaudit bench audit``: timings of the vectorised audit against the slow reference loop
(:mod:`hsaudit.bench.audit`); this module parses the command line and prints."""

from __future__ import annotations

import argparse
import json

from hsaudit.bench.audit import measure


def register(sub) -> None:
    parser = sub.add_parser("audit", description="Time the vectorised audit (R = 5e3, 2e6) and the reference loop.")
    parser.add_argument("--repeats", type=int, default=5, help="runs per timing, median reported (default 5)")
    parser.add_argument("--mu", type=float, default=3.95, help="μ of the Gaussian pair (default √250/4)")
    parser.add_argument(
        "--dtype", choices=("float64", "float32"), default="float64", help="score dtype (default float64)"
    )
    parser.add_argument("--large", type=int, default=2_000_000, help="R of the large case (default 2e6)")
    parser.add_argument(
        "--reference-runs", type=int, default=5000, help="R of the reference loop timing (default 5000)"
    )
    parser.add_argument("--skip-reference", action="store_true", help="do not time the reference loop")
    parser.add_argument("--seed", type=int, default=0, help="seed of the scores")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    out = measure(
        repeats=args.repeats,
        mu=args.mu,
        dtype=args.dtype,
        large=args.large,
        reference=not args.skip_reference,
        seed=args.seed,
        reference_runs=args.reference_runs,
    )
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    large = int(args.large)
    print(f"Vectorised GDP audit (paper mode), Gaussian pair mu = {args.mu:g}, {args.dtype}, median of {args.repeats}")
    for r in (5000, large):
        print(
            f"  R = {r:>9,}: {out[f'seconds_r{r}'] * 1e3:9.2f} ms warm, "
            f"{out[f'seconds_r{r}_cold'] * 1e3:9.2f} ms cold   (mu = {out[f'mu_r{r}']:.4f})"
        )
    rr = int(args.reference_runs)
    if f"sorted_path_seconds_r{large}" in out:
        print(f"  R = {large:>9,}: {out[f'sorted_path_seconds_r{large}'] * 1e3:9.2f} ms warm through the full-sort path")
    if f"reference_seconds_r{rr}" in out:
        speed = out.get(f"speedup_r{rr}")
        print(
            f"  reference loop R = {rr:,}: {out[f'reference_seconds_r{rr}']:.2f} s"
            + (f" (speed-up x{speed:,.0f})" if speed else "")
            + f"; same mu: {out['reference_agrees']}"
        )
    print(f"  {out['machine']}, load average {out.get('load_average_1min', float('nan')):.2f}")
    return 0
