"""The threshold search behind the paper-mode audits of large populations, without sorting every score.

A membership audit with "member iff score > τ" scans every threshold τ between consecutive distinct scores and
keeps the one that maximises a statistic of its false positives (FP) and false negatives (FN) (Nasr et al. 2023;
Cebere et al. 2025, Algorithm 4 and Appendix A). Every statistic the audits use is *separable* and monotone:
at FP = i and FN = j it equals ``a(i) − b(j)`` with ``a`` non-increasing and ``b`` non-decreasing (the GDP
μ = Φ⁻¹(1 − FPR_ub) − Φ⁻¹(FNR_ub), and both directions of the assumption-free (ε, δ) bound).
:func:`max_over_thresholds` returns the exact maximum of each such statistic, as a scan of every midpoint
would:

1. Only thresholds just below a member score can be maximal: moving a threshold up to just below the next
   member score keeps FN and can only lower FP.
2. A monotone histogram (equal-width bins: equal scores share a bin, and every score of bin i is below every
   score of bin j > i) gives at each bin edge an achievable value (a lower bound on the maximum) and, for any
   threshold inside bin j, the upper bound a(FP above bin j) − b(FN below bin j).
3. Only the scores of the bins whose upper bound reaches the best edge value are sorted and scanned exactly.

Speed (fig3 runs ~10,000 audits of 2·10⁶ scores): the histogram is built in cache-sized blocks, and the few
scores of step 3 are found by comparing the scores with a value window around each cluster of kept bins, then
checked bin by bin (with a full pass as the fallback when float rounding makes a window miss one): ≈ 7 ms for
2·10⁶ float32 scores, half the time of full-length bin-index arrays (docs/benchmarks.md).

Ties go to the lowest threshold, as in a scan in increasing order. Used by the threshold search of the
Clopper–Pearson rules (:func:`hsaudit.audit.threshold.best_threshold`, R ≥ 10⁵) and
:func:`hsaudit.audit.gdp_audit_two_sample` (the Section 6 experiments); the tests check it against the sorted
search of :mod:`hsaudit.audit.threshold` and a naive scan of every midpoint
(``tests/audit/test_audit.py``, ``tests/experiments/section6/test_section6.py``). numpy only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

#: One separable statistic: ``(a, b)`` with the value ``a(fp) − b(fn)`` for integer count arrays.
Objective = tuple[Callable[[np.ndarray], np.ndarray], Callable[[np.ndarray], np.ndarray]]


@dataclass(frozen=True)
class ThresholdMax:
    """The maxima of :func:`max_over_thresholds`.

    Attributes:
        values: the maximum of each objective, in the order given (−inf when none is finite).
        fp, fn: false positives and negatives at the first objective's maximising threshold.
        lower, upper: the scores around that threshold (it lies between them): the largest score below it
            (−inf when it is below every score) and the smallest score above it.
    """

    values: tuple[float, ...]
    fp: int
    fn: int
    lower: float
    upper: float


def max_over_thresholds(
    nonmember: np.ndarray, member: np.ndarray, objectives: Sequence[Objective], *, bins: int
) -> ThresholdMax:
    """Exact maximum over thresholds of separable statistics, from a histogram pre-pass (see the module).

    Args:
        nonmember: 1-D finite scores of the b = 0 runs (n0 ≥ 1; the counts FP index ``a``).
        member: 1-D finite scores of the b = 1 runs (n1 ≥ 1; the counts FN index ``b``).
        objectives: one or more ``(a, b)``; ``a`` non-increasing on 0..n0, ``b`` non-decreasing on 0..n1.
        bins: histogram resolution (≥ 2; changes the speed, never the result).

    Returns:
        A :class:`ThresholdMax`.

    Raises:
        ValueError: non-finite scores, ``bins`` < 2.
    """
    if int(bins) != bins or bins < 2:
        raise ValueError(f"bins must be an integer >= 2, got {bins}")
    s, m = nonmember, member
    dtype = np.result_type(s.dtype, m.dtype, np.float32)
    s = s.astype(dtype, copy=False)
    m = m.astype(dtype, copy=False)
    lo = min(s.min(), m.min())
    hi = max(s.max(), m.max())
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise ValueError("scores must be finite")
    scale = dtype.type((bins - 1) / (float(hi) - float(lo))) if hi > lo else dtype.type(0)
    binner = _Binner(dtype.type(lo), scale, bins)
    cs = binner.counts(s)
    cm = binner.counts(m)
    fn_below = np.concatenate(([0], np.cumsum(cm)[:-1]))  # members in bins < j
    fp_from = np.cumsum(cs[::-1])[::-1]  # non-members in bins >= j
    fp_above = np.concatenate((fp_from[1:], [0]))  # non-members in bins > j
    edge_best, keep = [], np.zeros(bins, dtype=bool)
    for a, b in objectives:
        edge = a(fp_from) - b(fn_below)  # threshold just below the smallest score of bin j
        best = float(np.nanmax(edge))
        edge_best.append((best, int(np.nanargmax(edge))))
        keep |= (a(fp_above) - b(fn_below) >= best) & (cm > 0)
    # The scores read exactly: those of the kept bins (scanned), of the nearest non-empty bin below each kept
    # bin (the score just below a kept member) and of the non-empty bins around the first objective's best edge
    # (the scores around that threshold).
    nonempty = np.flatnonzero(cs + cm)
    need = keep.copy()
    pos = np.searchsorted(nonempty, np.flatnonzero(keep))
    need[nonempty[pos[pos > 0] - 1]] = True
    j_edge = edge_best[0][1]
    p = int(np.searchsorted(nonempty, j_edge))
    need[nonempty[max(p - 1, 0) : p + 1]] = True
    s_val, s_bin = binner.select(s, need, int(cs[need].sum()))
    m_val, m_bin = binner.select(m, need, int(cm[need].sum()))
    in_s, in_m = keep[s_bin], keep[m_bin]
    s_in = np.sort(s_val[in_s])
    order = np.argsort(m_val[in_m], kind="stable")
    m_in = m_val[in_m][order]
    jm = m_bin[in_m][order]  # bin of each sorted kept member (bins are ordered like the scores)
    cm_drop = np.where(keep, 0, cm)
    cs_drop = np.where(keep, 0, cs)
    fn_drop_below = np.concatenate(([0], np.cumsum(cm_drop)[:-1]))
    fp_drop_above = np.cumsum(cs_drop[::-1])[::-1] - cs_drop
    fn = fn_drop_below[jm] + np.searchsorted(m_in, m_in, side="left")
    fp = fp_drop_above[jm] + (s_in.size - np.searchsorted(s_in, m_in, side="left"))
    values = []
    for (a, b), (best, j) in zip(objectives, edge_best):
        cand = a(fp) - b(fn) if fp.size else np.array([-np.inf])
        i = int(np.nanargmax(cand)) if np.isfinite(cand).any() else 0
        if fp.size and cand[i] >= best:
            values.append((float(cand[i]), int(fp[i]), int(fn[i]), ("member", m_in[i])))
        else:  # a bin edge is best (e.g. no finite candidate)
            values.append((best, int(fp_from[j]), int(fn_below[j]), ("edge", j)))
    _, fp_max, fn_max, at = values[0]
    near_val = np.concatenate((s_val, m_val))
    if at[0] == "member":  # between v and the largest score below it (in v's bin or the non-empty one below)
        upper = float(at[1])
        below = near_val[near_val < at[1]]
        lower = float(below.max()) if below.size else upper
    elif at[1] == 0:  # below every score
        lower, upper = -np.inf, float(lo)
    else:  # bin edge j: between the largest score below bin j and the smallest score in bins >= j
        near_bin = np.concatenate((s_bin, m_bin))
        lower = float(near_val[near_bin < at[1]].max())
        upper = float(near_val[near_bin >= at[1]].min())
    return ThresholdMax(tuple(v[0] for v in values), fp_max, fn_max, lower, upper)


class _Binner:
    """The monotone histogram of :func:`max_over_thresholds`: bin(x) = min(⌊(x − lo)·scale⌋, bins − 1), in the
    scores' dtype. Floating-point subtraction and multiplication are monotone, so equal scores share a bin and
    bins are ordered like the scores. Scores are binned in cache-sized blocks, so no full-length temporary is
    written."""

    block = 1 << 16

    def __init__(self, lo, scale, bins: int) -> None:
        self.lo, self.scale, self.bins = lo, scale, bins
        self._f = np.empty(self.block, dtype=type(lo))
        self._i = np.empty(self.block, dtype=np.intp)

    def index(self, x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """The bin of every score of ``x`` (at most one block unless ``out`` is not given)."""
        f = np.subtract(x, self.lo, out=self._f[: x.size] if x.size <= self.block else None)
        f *= self.scale
        idx = out if out is not None else np.empty(x.size, dtype=np.intp)
        np.copyto(idx, f, casting="unsafe")
        np.minimum(idx, self.bins - 1, out=idx)
        return idx

    def counts(self, x: np.ndarray) -> np.ndarray:
        """Scores per bin (int64, length ``bins``)."""
        total = np.zeros(self.bins, dtype=np.intp)
        for lo in range(0, x.size, self.block):
            part = x[lo : lo + self.block]
            total += np.bincount(self.index(part, self._i[: part.size]), minlength=self.bins)
        return total

    def select(self, x: np.ndarray, need: np.ndarray, expected: int) -> tuple[np.ndarray, np.ndarray]:
        """The scores whose bin is marked in ``need`` and their bins (in the order of ``x``).

        Candidates are first found by value, in a window two bins wider than each cluster of needed bins (cheap
        comparisons); their bins are then computed exactly. ``expected`` (the histogram's count of needed
        scores) checks that no needed score fell outside the value window (float rounding far from ``lo``); if
        one did, every score's bin is computed instead.
        """
        wanted = np.flatnonzero(need)
        if wanted.size == 0 or expected == 0:
            return x[:0], np.zeros(0, dtype=np.intp)
        if self.scale > 0:  # one value window per cluster of needed bins
            width = 1.0 / float(self.scale)
            gaps = np.flatnonzero(np.diff(wanted) > 8)
            mask = np.zeros(x.size, dtype=bool)
            for first, last in zip(wanted[np.r_[0, gaps + 1]], wanted[np.r_[gaps, wanted.size - 1]]):
                a = float(self.lo) + (int(first) - 2) * width
                b = float(self.lo) + (int(last) + 3) * width
                mask |= (x >= a) & (x <= b)
            cand = np.flatnonzero(mask)
        else:  # one distinct score: every score is in bin 0
            cand = np.arange(x.size)
        val = x[cand]
        idx = self.index(val)
        hit = need[idx]
        if int(hit.sum()) != expected:
            idx = np.concatenate([self.index(x[i : i + self.block]) for i in range(0, x.size, self.block)])
            hit = need[idx]
            return x[hit], idx[hit]
        return val[hit], idx[hit]
