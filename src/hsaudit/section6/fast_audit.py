"""The fast two-sample GDP audit that Section 6 uses (Cebere et al. Algorithm 4; Nasr et al. 2023).

Same thresholds, counts and μ̂ as :func:`hsaudit.audit.audit_scores` in its paper mode (to ~1e-13), without
sorting the 2R scores, and with the assumption-free bound maximised over thresholds as well. It stays here,
next to the process it serves, until the audit layer is consolidated; ``tests/test_section6.py`` checks it
against :mod:`hsaudit.audit` and a naive scan of every midpoint threshold.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import special

from hsaudit.accounting import gdp_epsilon
from hsaudit.audit import assumption_free_epsilon, clopper_pearson_upper
from hsaudit.section6.process import check_runs

# Why a second audit beside hsaudit.audit: fig3 runs ~10,000 audits of 2·10⁶ scores. This two-sample search
# (member-score thresholds only, a float32 histogram pre-pass, precomputed CP tables loaded from the
# make_cp_table job) also returns the assumption-free bound maximised over thresholds. Routed through
# hsaudit.audit.audit_scores the same figure costs ~80% more CPU (measured 2026-11-22 with
# `hsaudit bench section6`: 3.5 s vs 6.3 s per cell). Both give the same thresholds and counts, and μ̂ to
# ~1e-13 (tests/test_section6.py checks this one against hsaudit.audit and a naive scan).


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
    n = check_runs(n)
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
    taking their max (Cebere et al. Algorithm 4; Nasr et al. 2023), without sorting the 2R scores:

    1. Only thresholds just below a member score can be maximal: moving a threshold up to just below the next
       member score keeps FN and can only lower FP, and every statistic is non-increasing in FP and FN.
    2. A monotone histogram (equal-width bins of the scores: equal scores share a bin, and every score of bin
       i is below every score of bin j > i) gives at each bin edge an achievable value (a lower bound on the
       max) and, for any threshold inside bin j, the upper bound a[FP above bin j] − b[FN below bin j].
    3. Only the scores of bins whose upper bound reaches the best edge value are sorted and scanned exactly.

    ``tests/test_section6.py`` checks the result against a naive scan of every midpoint.

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
    if int(bins) != bins or bins < 2:
        raise ValueError(f"bins must be an integer >= 2, got {bins}")
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
    for a, b in tables.objectives:
        edge = a[fp_from] - b[fn_below]  # threshold just below the smallest score of bin j
        best = float(np.nanmax(edge))
        edge_best.append((best, int(np.nanargmax(edge))))
        keep |= (a[fp_above] - b[fn_below] >= best) & (cm > 0)
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
    for (a, b), (best, j) in zip(tables.objectives, edge_best):
        cand = a[fp] - b[fn] if fp.size else np.array([-np.inf])
        i = int(np.nanargmax(cand)) if np.isfinite(cand).any() else 0
        if fp.size and cand[i] >= best:
            values.append((float(cand[i]), int(fp[i]), int(fn[i]), ("member", m_in[i], int(jm[i]))))
        else:  # a bin edge is best (e.g. no finite candidate)
            values.append((best, int(fp_from[j]), int(fn_below[j]), ("edge", j)))
    mu, fp_mu, fn_mu, at = values[0]
    if at[0] == "member":
        threshold = 0.5 * (float(at[1]) + _largest_below(s, m, bs, bm, cs + cm, at[1], at[2]))
    elif at[1] == 0:  # below every score
        threshold = float(lo) - 0.5
    else:  # bin edge j: between the largest score below bin j and the smallest score in bins >= j
        threshold = 0.5 * (_extreme(s, m, bs, bm, at[1], below=True) + _extreme(s, m, bs, bm, at[1], below=False))
    eps_af = max(0.0, values[1][0], values[2][0])
    fpr_ub, fnr_ub = float(tables.fp_upper[fp_mu]), float(tables.fn_upper[fn_mu])
    return StepAudit(
        epsilon=gdp_epsilon(mu=mu if np.isfinite(mu) else -np.inf, delta=tables.delta),
        mu=mu,
        threshold=threshold,
        fp=fp_mu,
        fn=fn_mu,
        fpr=fp_mu / tables.n0,
        fnr=fn_mu / tables.n1,
        fpr_upper=fpr_ub,
        fnr_upper=fnr_ub,
        epsilon_assumption_free=float(assumption_free_epsilon(fpr_ub, fnr_ub, delta=tables.delta)),
        epsilon_assumption_free_max=eps_af,
    )


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
