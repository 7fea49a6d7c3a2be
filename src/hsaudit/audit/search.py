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

Ties go to the lowest threshold, as in a scan in increasing order. Used by :func:`hsaudit.audit.audit_scores`
(paper mode, R ≥ 10⁵) and :func:`hsaudit.audit.gdp_audit_two_sample` (the Section 6 experiments); the tests
check it against the sorted search of :mod:`hsaudit.audit.gdp` and a naive scan of every midpoint
(``tests/audit/test_audit.py``, ``tests/papers/cebere/test_section6.py``). numpy only.
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
    bs = _bin_index(s, dtype.type(lo), scale, bins)
    bm = _bin_index(m, dtype.type(lo), scale, bins)
    cs = np.bincount(bs, minlength=bins)
    cm = np.bincount(bm, minlength=bins)
    fn_below = np.concatenate(([0], np.cumsum(cm)[:-1]))  # members in bins < j
    fp_from = np.cumsum(cs[::-1])[::-1]  # non-members in bins >= j
    fp_above = np.concatenate((fp_from[1:], [0]))  # non-members in bins > j
    edge_best, keep = [], np.zeros(bins, dtype=bool)
    for a, b in objectives:
        edge = a(fp_from) - b(fn_below)  # threshold just below the smallest score of bin j
        best = float(np.nanmax(edge))
        edge_best.append((best, int(np.nanargmax(edge))))
        keep |= (a(fp_above) - b(fn_below) >= best) & (cm > 0)
    kept = np.flatnonzero(keep)
    if kept.size:  # compare against the kept range first (cheap), gather the keep table only inside it
        keep_s, keep_m = _in_kept(bs, keep, kept), _in_kept(bm, keep, kept)
    else:
        keep_s = keep_m = np.zeros(0, dtype=np.intp)
    s_in = np.sort(s[keep_s])
    m_in = np.sort(m[keep_m])
    cm_drop = np.where(keep, 0, cm)
    cs_drop = np.where(keep, 0, cs)
    fn_drop_below = np.concatenate(([0], np.cumsum(cm_drop)[:-1]))
    fp_drop_above = np.cumsum(cs_drop[::-1])[::-1] - cs_drop
    jm = np.sort(bm[keep_m])  # bin of each sorted kept member (bins are ordered like the scores)
    fn = fn_drop_below[jm] + np.searchsorted(m_in, m_in, side="left")
    fp = fp_drop_above[jm] + (s_in.size - np.searchsorted(s_in, m_in, side="left"))
    values = []
    for (a, b), (best, j) in zip(objectives, edge_best):
        cand = a(fp) - b(fn) if fp.size else np.array([-np.inf])
        i = int(np.nanargmax(cand)) if np.isfinite(cand).any() else 0
        if fp.size and cand[i] >= best:
            values.append((float(cand[i]), int(fp[i]), int(fn[i]), ("member", m_in[i], int(jm[i]))))
        else:  # a bin edge is best (e.g. no finite candidate)
            values.append((best, int(fp_from[j]), int(fn_below[j]), ("edge", j)))
    _, fp_max, fn_max, at = values[0]
    if at[0] == "member":
        upper = float(at[1])
        lower = _largest_below(s, m, bs, bm, cs + cm, at[1], at[2])
    elif at[1] == 0:  # below every score
        lower, upper = -np.inf, float(lo)
    else:  # bin edge j: between the largest score below bin j and the smallest score in bins >= j
        lower = _extreme(s, m, bs, bm, at[1], below=True)
        upper = _extreme(s, m, bs, bm, at[1], below=False)
    return ThresholdMax(tuple(v[0] for v in values), fp_max, fn_max, lower, upper)


def _in_kept(bx: np.ndarray, keep: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """Indices i with keep[bx[i]]. When the kept bins span a narrow range, two comparisons against the range
    find the candidates cheaply; otherwise one gather from the (small) keep table."""
    lo, hi = int(kept[0]), int(kept[-1])  # Python ints: an int64 scalar would promote the int32 array
    if hi - lo < keep.size // 16:
        cand = np.flatnonzero((bx >= lo) & (bx <= hi))
        return cand[keep[bx[cand]]]
    return np.flatnonzero(keep[bx])


def _bin_index(x: np.ndarray, lo, scale, bins: int) -> np.ndarray:
    # floating-point subtraction and multiplication are monotone, so equal scores share a bin and bins are
    # ordered like the scores
    idx = np.subtract(x, lo)
    idx *= scale
    out = idx.astype(np.int32)
    np.minimum(out, bins - 1, out=out)
    return out


def _extreme(s, m, bs, bm, j: int, *, below: bool) -> float:
    """Largest score in bins < j (``below``) or smallest score in bins >= j."""
    out = []
    for x, bx in ((s, bs), (m, bm)):
        sel = x[bx < j] if below else x[bx >= j]
        if sel.size:
            out.append(float(sel.max() if below else sel.min()))
    return max(out) if below else min(out)


def _largest_below(s, m, bs, bm, counts, v, jv: int) -> float:
    """Largest score strictly below the member score v of bin jv (v itself if none): it lies in bin jv or in
    the nearest non-empty bin below it."""
    nonempty = np.flatnonzero(counts[:jv])
    lower = int(nonempty[-1]) if nonempty.size else jv
    out = []
    for x, bx in ((s, bs), (m, bm)):
        cand = x[(bx == jv) | (bx == lower)]
        cand = cand[cand < v]
        if cand.size:
            out.append(float(cand.max()))
    return max(out) if out else float(v)
