"""The two-sample GDP audit with precomputed Clopper–Pearson tables (Cebere et al. 2025, Algorithm 4; Nasr et al.
2023), as the Section 6 experiments run it.

The paper's audit (every midpoint threshold, chosen on the same scores) of n0 non-member and n1 member scores,
through the same threshold search as :func:`hsaudit.audit.audit_scores` under the paper rule on large populations
(:func:`hsaudit.audit.search.max_over_thresholds`), but with tables of every count computed once per
(n, confidence) and loaded by each job (:func:`cp_upper_table`, :func:`gdp_tables`), and with the
assumption-free (ε, δ) bound maximised over thresholds as well. fig3 runs ~10,000 such audits of 2·10⁶ scores.
Same thresholds and counts as :func:`hsaudit.audit.audit_scores`, and μ̂ to ~1e-13 (its tables take
Φ⁻¹(1 − CP) where the audit's take −Φ⁻¹(CP)); ``tests/experiments/section6/test_section6.py`` checks this against
:func:`hsaudit.audit.audit_scores` and a naive scan of every midpoint threshold.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import special

from hsaudit.accounting.gaussian import gdp_epsilon
from hsaudit.audit.bounds import assumption_free_epsilon, clopper_pearson_upper
from hsaudit.audit.search import max_over_thresholds


def cp_upper_table(n: int, confidence: float) -> np.ndarray:
    """One-sided Clopper–Pearson upper bounds on a rate for every count k = 0..n out of n trials.

    :func:`hsaudit.audit.clopper_pearson_upper` for k = 0..n (Nasr et al. 2023; Cebere et al. App. A). Takes
    a few seconds for n = 10⁶, so the workflow computes it once per (n, confidence) and the audit jobs load it
    (see :func:`gdp_tables`).

    Args:
        n: number of trials (≥ 1).
        confidence: one-sided confidence level in (0, 1).

    Returns:
        float64 array of length n + 1, non-decreasing, ``u[n] = 1``.
    """
    if int(n) != n or n < 1:
        raise ValueError(f"runs must be an integer >= 1, got {n}")
    n = int(n)
    return np.asarray(clopper_pearson_upper(np.arange(n + 1), n, confidence=confidence), dtype=float)


@dataclass(frozen=True)
class GdpTables:
    """Lookup tables for the audit of n0 non-member and n1 member scores at one (confidence, δ).

    Every audit statistic used here is *separable*: at a threshold with k_fp false positives and k_fn false
    negatives it equals ``a[k_fp] − b[k_fn]`` with ``a`` non-increasing and ``b`` non-decreasing:

    * GDP (Nasr et al. 2023): μ = Φ⁻¹(1 − FPR_ub) − Φ⁻¹(FNR_ub);
    * assumption-free (ε, δ) bound, both directions: log(1 − δ − FPR_ub) − log FNR_ub and
      −log FPR_ub − (−log(1 − δ − FNR_ub)).
    """

    n0: int
    n1: int
    confidence: float
    delta: float
    fp_upper: np.ndarray
    fn_upper: np.ndarray
    objectives: tuple[tuple[np.ndarray, np.ndarray], ...]


def gdp_tables(
    n0: int,
    n1: int,
    *,
    confidence: float,
    delta: float,
    cp0: np.ndarray | None = None,
    cp1: np.ndarray | None = None,
) -> GdpTables:
    """Build :class:`GdpTables` (optionally from precomputed :func:`cp_upper_table` arrays)."""
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    cp0 = _cached_cp(int(n0), float(confidence)) if cp0 is None else np.asarray(cp0, dtype=float)
    if n1 == n0 and cp1 is None:
        cp1 = cp0
    cp1 = _cached_cp(int(n1), float(confidence)) if cp1 is None else np.asarray(cp1, dtype=float)
    if cp0.shape != (n0 + 1,) or cp1.shape != (n1 + 1,):
        raise ValueError(f"Clopper-Pearson tables must have n + 1 entries, got {cp0.shape} and {cp1.shape}")
    with np.errstate(divide="ignore", invalid="ignore"):
        gdp = (special.ndtri(1.0 - cp0), special.ndtri(cp1))
        af1 = (np.log(np.maximum(1.0 - delta - cp0, 0.0)), np.log(cp1))
        af2 = (-np.log(cp0), -np.log(np.maximum(1.0 - delta - cp1, 0.0)))
    return GdpTables(int(n0), int(n1), float(confidence), float(delta), cp0, cp1, (gdp, af1, af2))


@functools.lru_cache(maxsize=4)
def _cached_cp(n: int, confidence: float) -> np.ndarray:
    return cp_upper_table(n, confidence)


@dataclass(frozen=True)
class StepAudit:
    """The result of the paper's GDP audit of one step (higher score ⇒ member).

    Attributes:
        mu: μ̂ = max over thresholds of Φ⁻¹(1 − FPR_ub) − Φ⁻¹(FNR_ub) (may be ≤ 0).
        threshold: the maximising threshold (midpoint between two consecutive distinct scores; a run is called
            a member iff its score > threshold).
        fp, fn: false positives / negatives at that threshold.
        fpr, fnr: the point estimates fp/n0, fn/n1.
        fpr_upper, fnr_upper: their Clopper–Pearson upper bounds.
        epsilon: ε̂ at δ from μ̂ (:func:`hsaudit.accounting.gdp_epsilon`; 0 when μ̂ ≤ 0).
        epsilon_assumption_free: the (ε, δ) lower bound max(log((1 − δ − FPR_ub)/FNR_ub),
            log((1 − δ − FNR_ub)/FPR_ub)) ∨ 0 at the GDP threshold (as :mod:`hsaudit.audit` reports it).
        epsilon_assumption_free_max: the same bound maximised over all thresholds. Neither assumes a
            Gaussian trade-off curve; both share the same-scores caveat of the paper's mode.
    """

    epsilon: float
    mu: float
    threshold: float
    fp: int
    fn: int
    fpr: float
    fnr: float
    fpr_upper: float
    fnr_upper: float
    epsilon_assumption_free: float
    epsilon_assumption_free_max: float


def gdp_audit_two_sample(
    nonmember: npt.ArrayLike, member: npt.ArrayLike, tables: GdpTables, *, bins: int = 1 << 14
) -> StepAudit:
    """The paper's GDP audit (all midpoint thresholds, same scores) of two score samples, fast and exact.

    Equivalent to evaluating the statistics of :class:`GdpTables` at every midpoint between sorted scores and
    taking their max (Cebere et al. Algorithm 4; Nasr et al. 2023), without sorting the 2R scores
    (:func:`hsaudit.audit.search.max_over_thresholds`). ``tests/experiments/section6/test_section6.py`` checks the result against a
    naive scan of every midpoint.

    Args:
        nonmember: scores of the b = 0 runs (n0 = ``tables.n0`` of them).
        member: scores of the b = 1 runs (n1 = ``tables.n1``).
        tables: :func:`gdp_tables` for (n0, n1, confidence, δ).
        bins: histogram resolution of the pre-pass (changes the speed, never the result).

    Returns:
        A :class:`StepAudit`.
    """
    s = np.asarray(nonmember)
    m = np.asarray(member)
    if s.ndim != 1 or m.ndim != 1 or s.size != tables.n0 or m.size != tables.n1:
        raise ValueError(
            f"expected {tables.n0} non-member and {tables.n1} member scores, got shapes {s.shape} and {m.shape}"
        )
    best = max_over_thresholds(s, m, [(a.__getitem__, b.__getitem__) for a, b in tables.objectives], bins=bins)
    mu = best.values[0]
    threshold = best.upper - 0.5 if np.isinf(best.lower) else 0.5 * (best.lower + best.upper)
    eps_af = max(0.0, best.values[1], best.values[2])
    fpr_ub, fnr_ub = float(tables.fp_upper[best.fp]), float(tables.fn_upper[best.fn])
    return StepAudit(
        epsilon=gdp_epsilon(mu=mu if np.isfinite(mu) else -np.inf, delta=tables.delta),
        mu=mu,
        threshold=threshold,
        fp=best.fp,
        fn=best.fn,
        fpr=best.fp / tables.n0,
        fnr=best.fn / tables.n1,
        fpr_upper=fpr_ub,
        fnr_upper=fnr_ub,
        epsilon_assumption_free=float(assumption_free_epsilon(fpr_ub, fnr_ub, delta=tables.delta)),
        epsilon_assumption_free_max=eps_af,
    )
