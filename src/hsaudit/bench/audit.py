"""Audit benchmark: timings of the vectorised audit against the slow reference loop (``hsaudit bench audit``).

:func:`measure` times :func:`hsaudit.audit.audit_scores` (paper mode) on Gaussian-pair scores at R = 5,000 and a large
R (2·10⁶ by default; median of several runs), with the Clopper–Pearson cache cold (cleared before each run) and warm
(after one audit with the same class sizes), and :func:`hsaudit.audit.reference_audit` at R = 5,000 in the same
process, and checks that both give the same μ̂.
"""

from __future__ import annotations

import os
import platform
import time

import numpy as np

from hsaudit.audit import bounds, threshold
from hsaudit.audit.auditor import audit_scores
from hsaudit.audit.reference import reference_audit
from hsaudit.audit.rules import Paper
from hsaudit.audit.validation import gaussian_pair_scores


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
