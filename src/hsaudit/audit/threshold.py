"""Threshold selection of the Clopper–Pearson rules (docs/audit.md, "The estimators" and "Speed").

- :func:`best_threshold`: the paper rule's exact search — over every threshold between two consecutive distinct
  scores ("member" iff score > τ), the one with the largest μ_τ = Φ⁻¹(1 − FPR_ub) − Φ⁻¹(FNR_ub) of its one-sided
  Clopper–Pearson bounds (Cebere et al. 2025, Algorithm 4 and Appendix A). The paper rule takes it on all scores,
  the bonferroni rule at a wider per-bound level, the held-out and grid rules on a selection split.
- :func:`stratified_split`: the random selection / evaluation split of each class (held-out, grid).
- :func:`grid_candidates`: the grid rule's few candidate thresholds, chosen on the selection split.

Speed. One search is two sorts (one per class), one ``searchsorted`` and gathers into the cached per-count tables
T_n[k] = Φ⁻¹(CP_ub(k, n)) (:func:`hsaudit.audit.bounds.probit_table`). μ at a candidate is −T_{n₀}[FP] − T_{n₁}[FN].
The tables are filled lazily: a coarse-to-fine search uses the monotonicity of T (FP and FN at a candidate lie
between two grid counts, so μ is bracketed by table values at grid points) to discard candidates that cannot hold
the maximum, and the Clopper–Pearson quantile (``betaincinv``, ~4 µs each) is only computed where needed.
Populations of ≥ 10⁵ scores skip the full sorts: the scores are binned by a monotone map, bin edges give a lower
bound on μ̂, bins whose best possible μ is below it are dropped, and only the scores of the remaining few bins are
sorted (through :func:`hsaudit.audit.search.max_over_thresholds`, the search the Section 6 audits share). Every
path returns exactly the same result as the full-table maximum (tested).

numpy and scipy only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from hsaudit.audit.bounds import ProbitTable, probit_table
from hsaudit.audit.search import max_over_thresholds

__all__ = [
    "BINNED_MIN",
    "BestThreshold",
    "best_threshold",
    "best_threshold_sorted",
    "grid_candidates",
    "stratified_split",
]


_SHIFTS = (12, 8, 4)
_PRUNE_MIN = 512


def _bracket(table: ProbitTable, f: np.ndarray, shift: int) -> tuple[np.ndarray, np.ndarray]:
    """T at the grid counts just below and just above each count f (grid step s = 2**shift, capped at n).

    ``lo <= T[f] <= hi``. A coarse grid is gathered from a small array of all its values; a fine one (many
    grid points) only computes the values the candidates need.
    """
    s = 1 << shift
    lo_i = f >> shift
    hi_i = (f + (s - 1)) >> shift
    if (table.n >> shift) <= 2048:
        idx = np.arange(0, table.n + 1, s)
        if idx[-1] != table.n:
            idx = np.append(idx, table.n)  # entry i is T[min(i·s, n)]
        g = table.get(idx)
        return g[lo_i], g[hi_i]
    return table.get(lo_i << shift), table.get(np.minimum(hi_i << shift, table.n))


def _argmax_mu(fp: np.ndarray, fn: np.ndarray, t0: ProbitTable, t1: ProbitTable) -> tuple[int, float]:
    """Index of the candidate with the largest μ = −T0[fp] − T1[fn] (first one on ties) and that μ.

    Exact: T is increasing, so μ at (fp, fn) is bracketed by table values at the neighbouring grid counts;
    a candidate whose upper bracket is below the best lower bracket cannot hold the maximum. The grid
    values are small arrays, so each level costs a few shifts and gathers per candidate.
    """
    idx = None
    n_max = max(t0.n, t1.n)
    f0, f1 = fp, fn
    for shift in _SHIFTS:
        s = 1 << shift
        if f0.size <= _PRUNE_MIN or s >= n_max:
            continue
        lo0, hi0 = _bracket(t0, f0, shift)
        lo1, hi1 = _bracket(t1, f1, shift)
        best = (-hi0 - hi1).max()
        upper = -lo0 - lo1
        keep = np.flatnonzero(upper >= best)
        idx = keep if idx is None else idx[keep]
        f0, f1 = f0[keep], f1[keep]
    mu = -t0.get(f0) - t1.get(f1)
    j = int(np.argmax(mu))  # idx is increasing, so the first maximum is kept
    return (j if idx is None else int(idx[j])), float(mu[j])


@dataclass(frozen=True)
class BestThreshold:
    """The threshold with the largest μ: its μ (−inf when none separates), false positives and negatives, and τ
    ("member" iff score > τ; the midpoint of the scores around it, NaN when μ is not finite or τ is below every
    score)."""

    mu: float
    fp: int
    fn: int
    threshold: float


def best_threshold_sorted(s0: np.ndarray, s1: np.ndarray, confidence: float) -> BestThreshold:
    """The search on sorted non-member scores ``s0`` and sorted member scores ``s1``.

    μ decreases in FP and in FN. Between two consecutive member scores, the best threshold is therefore
    the highest one: just below a member score s1[j], where FN = j and FP = n0 − #{s0 < s1[j]}. And among
    the j with the same FP, the smallest j wins. So the only candidates are the j where at least one
    non-member score lies in [s1[j−1], s1[j]) (a non-member → member transition of the merged order);
    tied member scores share their FP and drop out with it. Thresholds above every member score have
    FN = n1 and μ = −inf.
    """
    n0, n1 = s0.size, s1.size
    below0 = np.searchsorted(s0, s1, side="left")
    if n1 > 1:
        j = np.flatnonzero(np.concatenate(([True], below0[1:] != below0[:-1])))
        below0 = below0[j]
    else:
        j = np.arange(n1)
    fp = n0 - below0
    t0 = probit_table(n0, confidence)
    t1 = probit_table(n1, confidence)
    c, mu = _argmax_mu(fp, j, t0, t1)
    jj = int(j[c])
    b0 = int(below0[c])
    upper = float(s1[jj])
    prev = -math.inf
    if b0 > 0:
        prev = float(s0[b0 - 1])
    if jj > 0:
        prev = max(prev, float(s1[jj - 1]))
    threshold = math.nan if math.isinf(prev) else prev + (upper - prev) / 2.0
    if not math.isfinite(mu):
        threshold = math.nan
    return BestThreshold(mu=mu, fp=int(fp[c]), fn=jj, threshold=threshold)


#: Populations at least this large use the binned search (below); smaller ones are sorted whole.
BINNED_MIN = 100_000
# Scores per bin (on average) of the binned search, and its largest number of bins.
_BIN_LOAD = 16
_MAX_BINS = 1 << 14


def _best_threshold_binned(x0: np.ndarray, x1: np.ndarray, confidence: float) -> BestThreshold | None:
    """The search on *unsorted* scores without sorting them all; the same result as
    :func:`best_threshold_sorted` (same μ, counts and threshold, including tie-breaking).

    The histogram pre-pass of :func:`hsaudit.audit.search.max_over_thresholds` (about R/16 equal-width bins,
    at most ``_MAX_BINS``) on μ = −T0[FP] − T1[FN], whose lazily filled tables T are computed only at the
    counts the search looks up. Returns None when the scores cannot be binned (a single value or a
    non-finite span).
    """
    n0, n1 = x0.size, x1.size
    span = float(max(x0.max(), x1.max())) - float(min(x0.min(), x1.min()))
    if not (span > 0.0 and math.isfinite(span)):
        return None
    t0 = probit_table(n0, confidence)
    t1 = probit_table(n1, confidence)
    bins = min(_MAX_BINS, max(2, (n0 + n1) // _BIN_LOAD))
    best = max_over_thresholds(x0, x1, [(lambda k: -t0.get(k), t1.get)], bins=bins)
    mu = best.values[0]
    if not math.isfinite(mu) or math.isinf(best.lower):
        return BestThreshold(mu=mu, fp=best.fp, fn=best.fn, threshold=math.nan)
    return BestThreshold(mu=mu, fp=best.fp, fn=best.fn, threshold=best.lower + (best.upper - best.lower) / 2.0)


def best_threshold(x0: np.ndarray, x1: np.ndarray, confidence: float) -> BestThreshold:
    """The threshold with the largest μ of CP bounds at ``confidence`` (each one-sided), on unsorted non-member scores
    ``x0`` and member scores ``x1``: sorted whole below 10⁵ scores, histogram-pruned above."""
    if x0.size + x1.size >= BINNED_MIN:
        best = _best_threshold_binned(x0, x1, confidence)
        if best is not None:
            return best
    return best_threshold_sorted(np.sort(x0), np.sort(x1), confidence)


def stratified_split(
    rng: np.random.Generator, x0: np.ndarray, x1: np.ndarray, fraction: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Stratified random split of non-member scores ``x0`` and member scores ``x1``: (sel0, sel1, ev0, ev1), the
    selection set holding ``fraction`` of each class (rounded, at least one score of each class on each side).
    Each class is permuted from ``rng`` in turn (non-members first)."""
    p0 = rng.permutation(x0.size)
    p1 = rng.permutation(x1.size)
    h0 = min(max(int(round(p0.size * fraction)), 1), p0.size - 1)
    h1 = min(max(int(round(p1.size * fraction)), 1), p1.size - 1)
    return x0[p0[:h0]], x1[p1[:h1]], x0[p0[h0:]], x1[p1[h1:]]


def grid_candidates(sel0: np.ndarray, sel1: np.ndarray, grid_size: int, confidence: float) -> np.ndarray:
    """Candidate thresholds of the grid rule, chosen on the selection set only: the best threshold and thresholds
    at non-member quantiles whose FPR is within a factor 4 of the best one's (log-spaced)."""
    s0 = np.sort(sel0)
    s1 = np.sort(sel1)
    best = best_threshold_sorted(s0, s1, confidence)
    if math.isnan(best.threshold):
        return np.array([], dtype=float)
    cands = [best.threshold]
    if grid_size > 1:
        # Thresholds at non-member quantiles whose FPR is within a factor 4 of the best one's, log-spaced.
        fpr_best = max(best.fp, 1) / s0.size
        lo = max(fpr_best / 4.0, 1.0 / s0.size)
        hi = min(fpr_best * 4.0, 0.5)
        if hi > lo:
            fprs = np.geomspace(lo, hi, grid_size - 1)
            ranks = np.clip(np.round(s0.size * (1.0 - fprs)).astype(int), 1, s0.size - 1)
            mids = (s0[ranks - 1] + (s0[ranks] - s0[ranks - 1]) / 2.0).astype(float)
            cands.extend(mids[s0[ranks] > s0[ranks - 1]].tolist())
    return np.unique(np.asarray(cands, dtype=float))

