"""``hsaudit bench audit``: timings of the vectorised audit against the slow reference loop.

Times :func:`hsaudit.audit.audit_scores` (paper mode) on Gaussian-pair scores at R = 5,000 and R = 2·10⁶
(median of several runs), with the Clopper–Pearson cache cold (cleared before each run) and warm (after
one audit with the same class sizes), and :func:`hsaudit.audit.reference_audit` at R = 5,000 in the same
process, and checks that both give the same μ̂.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np

from hsaudit.audit import bounds, threshold
from hsaudit.audit.auditor import audit_scores
from hsaudit.audit.reference import reference_audit
from hsaudit.audit.rules import Paper
from hsaudit.audit.validation import gaussian_pair_scores


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


def _median_time(fn, repeats: int, before=None) -> float:
    times = []
    for _ in range(repeats):
        if before is not None:
            before()
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def measure(
    *,
    repeats: int = 5,
    mu: float = 3.95,
    dtype: str = "float64",
    large: int = 2_000_000,
    reference: bool = True,
    seed: int = 0,
    reference_runs: int = 5000,
) -> dict:
    """Run the benchmark and return its numbers (seconds are medians over ``repeats``)."""
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    out: dict = {"mu": mu, "dtype": dtype, "repeats": repeats}
    for r in (5000, int(large)):
        s, m = gaussian_pair_scores(mu=mu, runs=r, seed=seed)
        s = s.astype(dtype)

        def one(s=s, m=m):
            return audit_scores(s, m, rule=Paper())

        cold = _median_time(one, repeats, before=bounds.clear_cache)
        one()
        warm = _median_time(one, repeats)
        out[f"seconds_r{r}"] = warm
        out[f"seconds_r{r}_cold"] = cold
        if r >= threshold.BINNED_MIN:
            # the same audit through the full-sort path (what smaller populations use), for comparison
            x0, x1 = s[m == 0], s[m == 1]
            out[f"sorted_path_seconds_r{r}"] = _median_time(
                lambda: threshold.best_threshold_sorted(np.sort(x0), np.sort(x1), 0.95), repeats
            )
        out[f"epsilon_r{r}"] = one().epsilon
        out[f"mu_r{r}"] = one().mu
    if reference:
        rr = int(reference_runs)
        s, m = gaussian_pair_scores(mu=mu, runs=rr, seed=seed)
        s = s.astype(dtype)
        fast = audit_scores(s, m, rule=Paper())
        t = time.perf_counter()
        ref = reference_audit(s, m)
        out[f"reference_seconds_r{rr}"] = time.perf_counter() - t
        out[f"reference_mu_r{rr}"] = ref.mu
        out[f"reference_epsilon_r{rr}"] = ref.epsilon
        out["reference_agrees"] = bool(np.isclose(ref.mu, fast.mu, rtol=1e-9, atol=1e-12))
        if f"seconds_r{rr}" in out:
            out[f"speedup_r{rr}"] = out[f"reference_seconds_r{rr}"] / max(out[f"seconds_r{rr}"], 1e-12)
    out["machine"] = f"{platform.machine()}, {os.cpu_count()} CPUs, numpy {np.__version__}"
    try:
        out["load_average_1min"] = os.getloadavg()[0]
    except OSError:  # pragma: no cover - not on every platform
        pass
    return out


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
