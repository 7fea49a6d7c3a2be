"""The empirical GDP audit of Nasr et al. (2023) as used by Cebere et al. (2025), fast and checked.

Given R scores with membership bits (**higher score ⇒ member**, i.e. "canary inserted", b = 1), the audit
(Cebere et al. 2025, Algorithm 4 and Appendix A; docs/audit.md):

1. considers every threshold τ between two consecutive *distinct* sorted scores (predict "member" iff
   score > τ);
2. counts FP (non-members above τ) and FN (members at or below τ);
3. bounds the error rates by one-sided Clopper–Pearson upper bounds at ``confidence`` each:
   FPR_ub = CP(FP, n₀), FNR_ub = CP(FN, n₁);
4. takes μ_τ = Φ⁻¹(1 − FPR_ub) − Φ⁻¹(FNR_ub) and μ̂ = max_τ μ_τ;
5. converts once: ε̂ solves δ = Φ(−ε/μ̂ + μ̂/2) − e^ε Φ(−ε/μ̂ − μ̂/2) (ε̂ = 0 when μ̂ ≤ 0).

Validity. ``mode="paper"`` chooses τ on the same scores whose error rates it bounds (as the paper does);
the maximum over thousands of thresholds defeats the per-threshold confidence, so ε̂ is *not* a valid 95%
lower bound (on exact Gaussian pairs it exceeds the true ε in ~20–30% of trials, docs/audit.md
"Coverage study").
``mode="held-out"`` chooses τ on a stratified random selection set (half of each class by default) and
bounds the error rates at that single τ on the other scores: a valid lower bound at the stated confidence
(per error rate, as in the paper), but looser. ``mode="grid"`` chooses a few candidate thresholds on the
selection set and evaluates all of them on the others with Bonferroni-corrected CP bounds (valid; see
:func:`audit_scores`). ``mode="bonferroni"`` keeps the paper's search over every threshold of all scores but pays
for it: each CP bound at 1 − (1 − c)/(2n) for n candidate thresholds (valid jointly, no split, loose).
``mode="crossing"`` and ``mode="rays"`` need no split: they test μ-GDP at the points
where the empirical trade-off curve crosses fixed rays around FPR = FNR, calibrated exactly on the
least-favourable Gaussian pair, which makes them valid lower bounds on μ at ``confidence`` *jointly* for any
score distributions (:mod:`hsaudit.audit.crossing`; docs/audit.md "Tight valid bounds").

The GDP conversion assumes the mechanism's trade-off curve is Gaussian; for other mechanisms it can exceed
the true ε. The assumption-free (ε, δ) bound from the same CP bounds (Kairouz et al. 2015, Theorem 2.1;
Jagielski et al. 2020) is reported beside it:
ε ≥ max(log((1 − δ − FPR_ub)/FNR_ub), log((1 − δ − FNR_ub)/FPR_ub)).

Speed. One audit is two sorts (one per class), one ``searchsorted`` and gathers into cached per-count tables
T_n[k] = Φ⁻¹(CP_ub(k, n)) (cached per (n, confidence) with ``functools.lru_cache``). μ at a candidate is
−T_{n₀}[FP] − T_{n₁}[FN]. The tables are filled lazily: a coarse-to-fine search uses the monotonicity of T
(FP and FN at a candidate lie between two grid counts, so μ is bracketed by table values at grid points) to
discard candidates that cannot hold the maximum, and the Clopper–Pearson quantile (``betaincinv``, ~4 µs
each) is only computed where needed. Populations of ≥ 10⁵ scores skip the full sorts: the scores are
binned by a monotone map, bin edges give a lower bound on μ̂, bins whose best possible μ is below it are
dropped, and only the scores of the remaining few bins are sorted (:func:`_best_threshold_binned`, through
:func:`hsaudit.audit.search.max_over_thresholds`, the search the Section 6 audits share). Every path returns
exactly the same result as the full-table maximum (tested).

This module uses numpy and scipy only (no torch).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import special

from hsaudit.accounting.gaussian import gdp_epsilon
from hsaudit.audit.crossing import (
    CROSSING_RAYS,
    DEFAULT_CALIBRATION_DRAWS,
    DEFAULT_RAYS,
    Crossing,
    crossing_mu_lower,
    first_crossing,
    minimum_calibration_draws,
    ray_path,
    rays_mu_lower,
)
from hsaudit.audit.search import max_over_thresholds

__all__ = [
    "AUDIT_MODES",
    "SPLIT_MODES",
    "TEST_MODES",
    "AuditResult",
    "assumption_free_epsilon",
    "audit_scores",
    "audit_steps",
    "bonferroni_confidence",
    "clopper_pearson_upper",
    "empirical_tradeoff",
    "reference_audit",
]

#: Threshold-selection modes of :func:`audit_scores`.
AUDIT_MODES = ("paper", "held-out", "grid", "bonferroni", "crossing", "rays")

#: Modes that split the scores into a selection set and an evaluation set (``selection_fraction``).
SPLIT_MODES = ("held-out", "grid")

#: Modes whose bound holds jointly at ``confidence`` for any score distributions (no Clopper–Pearson pair).
TEST_MODES = ("crossing", "rays")

#: Default number of candidate thresholds of ``mode="grid"``.
DEFAULT_GRID_SIZE = 4

#: Default share of each class used to choose the threshold in held-out/grid modes (half).
DEFAULT_SELECTION_FRACTION = 0.5

#: Human-readable description of each mode, for outputs ("say in every output which one it is").
MODE_DESCRIPTIONS = {
    "paper": "threshold chosen on the same scores (Cebere et al.; not a valid confidence bound)",
    "held-out": "threshold chosen on a random selection set, bounds on the other scores (valid)",
    "grid": "candidate thresholds chosen on a random selection set, Bonferroni CP bounds on the others (valid)",
    "bonferroni": "best threshold on all scores with every CP bound at 1 - (1 - c)/(2n), n candidate thresholds "
    "(valid jointly, no split; loose)",
    "crossing": "exact test of mu-GDP where the empirical curve crosses FPR = FNR, all scores, no split (valid for "
    "any scores, joint confidence)",
    "rays": "Monte Carlo exact test of mu-GDP on the mean crossing of 9 rays around FPR = FNR, all scores (valid "
    "for any scores, joint confidence; seeded)",
}


@dataclass(frozen=True)
class AuditResult:
    """One GDP audit (Nasr et al. 2023; Cebere et al. Algorithm 4).

    Attributes:
        epsilon: ε̂ at ``delta`` from μ̂ (0 when μ̂ ≤ 0).
        mu: μ̂ = Φ⁻¹(1 − FPR_ub) − Φ⁻¹(FNR_ub) at the chosen threshold (−inf if no threshold separates);
            in the crossing/rays modes the inverted test's lower bound (:mod:`hsaudit.audit.crossing`).
        threshold: τ; "member" iff score > τ (NaN when no threshold has finite μ).
            In the crossing/rays modes: a threshold at the crossing of FPR = FNR.
        fpr_upper: one-sided Clopper–Pearson upper bound on the FPR at τ (NaN in the crossing/rays modes,
            which bound μ directly).
        fnr_upper: one-sided Clopper–Pearson upper bound on the FNR at τ (NaN in the crossing/rays modes).
        fpr: empirical FPR at τ (on the scores the bounds were computed on).
        fnr: empirical FNR at τ.
        epsilon_assumption_free: ε of the (ε, δ) bound from the same CP bounds, no GDP assumption (NaN in
            the crossing/rays modes).
        n_members: members (b = 1) the CP bounds were computed on (half of them in held-out/grid mode).
        n_nonmembers: non-members the CP bounds were computed on.
        confidence: confidence of each one-sided CP bound; in the crossing/rays modes, of the bound on μ; in the
            bonferroni mode, the joint confidence of every bound (each at :func:`bonferroni_confidence`).
        delta: δ.
        mode: one of :data:`AUDIT_MODES`.
    """

    epsilon: float
    mu: float
    threshold: float
    fpr_upper: float
    fnr_upper: float
    fpr: float
    fnr: float
    epsilon_assumption_free: float
    n_members: int
    n_nonmembers: int
    confidence: float
    delta: float
    mode: str

    def to_dict(self) -> dict:
        """The fields as a plain dict of Python scalars (JSON-ready except non-finite floats)."""
        return dataclasses.asdict(self)


# --------------------------------------------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------------------------------------------
def _check_unit(name: str, value: float) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number in (0, 1), got {value!r}") from None
    if not 0.0 < v < 1.0:
        raise ValueError(f"{name} must be in (0, 1), got {value}")
    return v


def _check_mode(mode: str) -> str:
    if mode not in AUDIT_MODES:
        raise ValueError(f"mode must be one of {', '.join(AUDIT_MODES)}; got {mode!r}")
    return mode


def _as_scores(scores: npt.ArrayLike, ndim: int = 1) -> np.ndarray:
    s = np.asarray(scores)
    if s.dtype == object or not (np.issubdtype(s.dtype, np.number) or s.dtype == bool):
        try:
            s = s.astype(float)
        except (TypeError, ValueError):
            raise ValueError("scores must be numeric") from None
    if s.ndim != ndim:
        raise ValueError(f"scores must be {ndim}-dimensional, got shape {s.shape}")
    # float32 is kept (faster sorting); every other type is audited in float64.
    if s.dtype != np.float32:
        s = s.astype(np.float64, copy=False)
    bad = ~np.isfinite(s)
    if bad.any():
        n_nan = int(np.isnan(s).sum())
        raise ValueError(
            f"scores must be finite: {n_nan} NaN (missing) and {int(bad.sum()) - n_nan} infinite value(s) found"
        )
    return s


def _as_members(members: npt.ArrayLike, n: int) -> np.ndarray:
    m = np.asarray(members)
    if m.ndim != 1 or m.shape[0] != n:
        raise ValueError(f"members must be 1-dimensional with one label per score ({n}), got shape {m.shape}")
    if m.dtype == bool:
        return m
    try:
        mf = m.astype(float)
    except (TypeError, ValueError):
        raise ValueError("members must be 0/1 labels (1 = member), got non-numeric values") from None
    ok = (mf == 0) | (mf == 1)
    if not ok.all():
        bad = np.unique(m[~ok])[:5]
        raise ValueError(f"members must be 0/1 labels (1 = member), found {bad.tolist()}")
    return mf == 1


def _check_draws(draws: int, confidence: float) -> int:
    need = minimum_calibration_draws(confidence)
    try:
        k = int(draws)
    except (TypeError, ValueError):
        k = None
    if k is None or k != draws or k < need:
        raise ValueError(
            f"calibration_draws must be an integer >= {need} at confidence {confidence:g} "
            f"(fewer cannot reject at that level), got {draws!r}"
        )
    return k


def _check_classes(n0: int, n1: int, minimum: int = 1) -> None:
    if n1 < minimum or n0 < minimum:
        which = "members (label 1)" if n1 < minimum else "non-members (label 0)"
        have = n1 if n1 < minimum else n0
        if minimum == 1:
            raise ValueError(f"the audit needs both classes: no {which} found")
        raise ValueError(f"this audit mode needs at least {minimum} {which}, got {have}")


# --------------------------------------------------------------------------------------------------------------
# Clopper–Pearson bounds and their probit tables
# --------------------------------------------------------------------------------------------------------------
def clopper_pearson_upper(k: npt.ArrayLike, n: int | npt.ArrayLike, *, confidence: float) -> np.ndarray:
    """One-sided Clopper–Pearson upper confidence bound on a binomial proportion.

    The p with P(Bin(n, p) ≤ k) = 1 − confidence, i.e. the ``confidence`` quantile of Beta(k + 1, n − k)
    (Clopper & Pearson 1934); 1 when k = n. For k = 0 it is 1 − (1 − confidence)^{1/n}.

    Args:
        k: observed counts, 0 ≤ k ≤ n (integers).
        n: numbers of trials (≥ 1), broadcast against ``k``.
        confidence: confidence level in (0, 1).

    Returns:
        The upper bounds, shape of ``k`` broadcast with ``n``.

    Raises:
        ValueError: non-integer or out-of-range counts, confidence outside (0, 1).

    >>> float(clopper_pearson_upper(0, 10, confidence=0.95))  # 1 - 0.05**0.1  # doctest: +ELLIPSIS
    0.2588...
    """
    c = _check_unit("confidence", confidence)
    kk = np.asarray(k, dtype=float)
    nn = np.asarray(n, dtype=float)
    kk, nn = np.broadcast_arrays(kk, nn)
    if np.isnan(kk).any() or np.isnan(nn).any() or (kk != np.round(kk)).any() or (nn != np.round(nn)).any():
        raise ValueError("k and n must be integers")
    if (nn < 1).any() or (kk < 0).any() or (kk > nn).any():
        raise ValueError("counts must satisfy 0 <= k <= n and n >= 1")
    out = np.ones(kk.shape)
    lt = kk < nn
    out[lt] = special.betaincinv(kk[lt] + 1.0, nn[lt] - kk[lt], c)
    return out


def _cp_probit(k: np.ndarray, n: int, confidence: float) -> np.ndarray:
    """Φ⁻¹(CP_ub(k, n)) for integer k in [0, n], accurate at both ends (inf at k = n)."""
    k = np.asarray(k, dtype=float)
    out = np.full(k.shape, np.inf)
    lt = k < n
    kk = k[lt]
    ub = special.betaincinv(kk + 1.0, n - kk, confidence)
    val = special.ndtri(ub)
    upper_half = ub > 0.5
    if upper_half.any():
        # 1 − ub = betaincinv(n − k, k + 1, 1 − c) (symmetry I_x(a, b) = 1 − I_{1−x}(b, a)), and
        # Φ⁻¹(ub) = −Φ⁻¹(1 − ub): no cancellation near ub = 1.
        ku = kk[upper_half]
        val[upper_half] = -special.ndtri(special.betaincinv(n - ku, ku + 1.0, 1.0 - confidence))
    out[lt] = val
    return out


class _ProbitTable:
    """T[k] = Φ⁻¹(CP_ub(k, n)) for k = 0..n, computed on demand and kept (one per (n, confidence))."""

    __slots__ = ("n", "confidence", "values")

    def __init__(self, n: int, confidence: float) -> None:
        self.n = n
        self.confidence = confidence
        self.values = np.full(n + 1, np.nan)
        self.values[n] = np.inf

    def get(self, idx: np.ndarray) -> np.ndarray:
        v = self.values[idx]
        missing = np.isnan(v)
        if missing.any():
            need = np.unique(idx[missing])
            # Concurrent fills (threads) write identical values: harmless.
            self.values[need] = _cp_probit(need, self.n, self.confidence)
            v = self.values[idx]
        return v

    def fill(self) -> None:
        """Compute every entry (for benchmarks; audits fill lazily)."""
        self.get(np.arange(self.n + 1))


@functools.lru_cache(maxsize=32)
def _probit_table(n: int, confidence: float) -> _ProbitTable:
    return _ProbitTable(int(n), float(confidence))


def clear_cache() -> None:
    """Forget the cached Clopper–Pearson tables (benchmarks of the cold path)."""
    _probit_table.cache_clear()


# Shifts (log2 strides) of the coarse-to-fine search; a level only runs while many candidates remain.
_SHIFTS = (12, 8, 4)
_PRUNE_MIN = 512


def _bracket(table: _ProbitTable, f: np.ndarray, shift: int) -> tuple[np.ndarray, np.ndarray]:
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


def _argmax_mu(fp: np.ndarray, fn: np.ndarray, t0: _ProbitTable, t1: _ProbitTable) -> tuple[int, float]:
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
class _Best:
    mu: float
    fp: int
    fn: int
    threshold: float


def _best_threshold_sorted(s0: np.ndarray, s1: np.ndarray, confidence: float) -> _Best:
    """Paper-mode search on sorted non-member scores ``s0`` and sorted member scores ``s1``.

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
    t0 = _probit_table(n0, confidence)
    t1 = _probit_table(n1, confidence)
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
    return _Best(mu=mu, fp=int(fp[c]), fn=jj, threshold=threshold)


# Populations at least this large use the binned search (below); smaller ones are sorted whole.
_BINNED_MIN = 100_000
# Scores per bin (on average) of the binned search, and its largest number of bins.
_BIN_LOAD = 16
_MAX_BINS = 1 << 14


def _best_threshold_binned(x0: np.ndarray, x1: np.ndarray, confidence: float) -> _Best | None:
    """Paper-mode search on *unsorted* scores without sorting them all; the same result as
    :func:`_best_threshold_sorted` (same μ, counts and threshold, including tie-breaking).

    The histogram pre-pass of :func:`hsaudit.audit.search.max_over_thresholds` (about R/16 equal-width bins,
    at most ``_MAX_BINS``) on μ = −T0[FP] − T1[FN], whose lazily filled tables T are computed only at the
    counts the search looks up. Returns None when the scores cannot be binned (a single value or a
    non-finite span).
    """
    n0, n1 = x0.size, x1.size
    span = float(max(x0.max(), x1.max())) - float(min(x0.min(), x1.min()))
    if not (span > 0.0 and math.isfinite(span)):
        return None
    t0 = _probit_table(n0, confidence)
    t1 = _probit_table(n1, confidence)
    bins = min(_MAX_BINS, max(2, (n0 + n1) // _BIN_LOAD))
    best = max_over_thresholds(x0, x1, [(lambda k: -t0.get(k), t1.get)], bins=bins)
    mu = best.values[0]
    if not math.isfinite(mu) or math.isinf(best.lower):
        return _Best(mu=mu, fp=best.fp, fn=best.fn, threshold=math.nan)
    return _Best(mu=mu, fp=best.fp, fn=best.fn, threshold=best.lower + (best.upper - best.lower) / 2.0)


def _best_threshold(x0: np.ndarray, x1: np.ndarray, confidence: float) -> _Best:
    """Paper-mode search on unsorted non-member scores ``x0`` and member scores ``x1``."""
    if x0.size + x1.size >= _BINNED_MIN:
        best = _best_threshold_binned(x0, x1, confidence)
        if best is not None:
            return best
    return _best_threshold_sorted(np.sort(x0), np.sort(x1), confidence)


def _result(
    *, fp: int, fn: int, n0: int, n1: int, threshold: float, delta: float, confidence: float, mode: str
) -> AuditResult:
    fpr_ub, fnr_ub = (float(x) for x in clopper_pearson_upper([fp, fn], [n0, n1], confidence=confidence))
    # μ from the same probit function as the cached tables (bit-identical to the search's value, and
    # accurate when a bound is close to 1).
    mu = float(-_cp_probit(np.array([fp]), n0, confidence)[0] - _cp_probit(np.array([fn]), n1, confidence)[0])
    if math.isnan(mu):
        mu = -math.inf
    return AuditResult(
        epsilon=gdp_epsilon(mu=mu, delta=delta),
        mu=mu,
        threshold=float(threshold),
        fpr_upper=fpr_ub,
        fnr_upper=fnr_ub,
        fpr=fp / n0,
        fnr=fn / n1,
        epsilon_assumption_free=float(assumption_free_epsilon(fpr_ub, fnr_ub, delta=delta)),
        n_members=int(n1),
        n_nonmembers=int(n0),
        confidence=float(confidence),
        delta=float(delta),
        mode=mode,
    )


def _paper_result(x0: np.ndarray, x1: np.ndarray, *, delta: float, confidence: float) -> AuditResult:
    """Paper-mode audit of (unsorted) non-member scores ``x0`` and member scores ``x1``."""
    best = _best_threshold(x0, x1, confidence)
    return _result(
        fp=best.fp,
        fn=best.fn,
        n0=x0.size,
        n1=x1.size,
        threshold=best.threshold,
        delta=delta,
        confidence=confidence,
        mode="paper",
    )


def bonferroni_confidence(x0: np.ndarray, x1: np.ndarray, confidence: float) -> float:
    """The per-bound confidence 1 − (1 − c)/(2n) of the bonferroni mode: n = (distinct scores) + 1 candidate
    thresholds, two one-sided bounds each, so that every bound of every threshold holds jointly with probability
    ≥ ``confidence`` (a union bound; thresholds between the same pair of scores are counted once)."""
    n = np.unique(np.concatenate([x0, x1])).size + 1
    return 1.0 - (1.0 - confidence) / (2 * n)


def _bonferroni_result(x0: np.ndarray, x1: np.ndarray, *, delta: float, confidence: float) -> AuditResult:
    """Mode "bonferroni": the paper-mode search over every threshold, each CP bound at
    :func:`bonferroni_confidence`; the result states the joint ``confidence``."""
    each = bonferroni_confidence(x0, x1, confidence)
    best = _best_threshold(x0, x1, each)
    res = _result(
        fp=best.fp, fn=best.fn, n0=x0.size, n1=x1.size, threshold=best.threshold, delta=delta, confidence=each,
        mode="bonferroni",
    )
    return dataclasses.replace(res, confidence=float(confidence))


def _split(rng: np.random.Generator, s: np.ndarray, m: np.ndarray, fraction: float) -> tuple[np.ndarray, ...]:
    """Stratified random split: (sel0, sel1, ev0, ev1), the selection set holding ``fraction`` of each
    class (rounded, at least one score of each class on each side)."""
    i0 = np.flatnonzero(~m)
    i1 = np.flatnonzero(m)
    p0 = rng.permutation(i0)
    p1 = rng.permutation(i1)
    h0 = min(max(int(round(p0.size * fraction)), 1), p0.size - 1)
    h1 = min(max(int(round(p1.size * fraction)), 1), p1.size - 1)
    return s[p0[:h0]], s[p1[:h1]], s[p0[h0:]], s[p1[h1:]]


def _heldout_result(
    s: np.ndarray,
    m: np.ndarray,
    *,
    delta: float,
    confidence: float,
    rng: np.random.Generator,
    fraction: float,
) -> AuditResult:
    sel0, sel1, ev0, ev1 = _split(rng, s, m, fraction)
    best = _best_threshold(sel0, sel1, confidence)
    n0, n1 = ev0.size, ev1.size
    if math.isnan(best.threshold):
        fp, fn = n0, 0  # no separating threshold: everything predicted member, μ = −inf
    else:
        # Compare in float64: a float32 copy of the threshold could round onto a score.
        fp = int(np.count_nonzero(ev0.astype(np.float64) > best.threshold))
        fn = int(np.count_nonzero(ev1.astype(np.float64) <= best.threshold))
    return _result(
        fp=fp,
        fn=fn,
        n0=n0,
        n1=n1,
        threshold=best.threshold,
        delta=delta,
        confidence=confidence,
        mode="held-out",
    )


def _grid_candidates(sel0: np.ndarray, sel1: np.ndarray, grid_size: int, confidence: float) -> np.ndarray:
    """Candidate thresholds chosen on the selection set only: the paper-mode best threshold and thresholds
    at non-member quantiles whose FPR is within a factor 4 of the best one's (log-spaced)."""
    s0 = np.sort(sel0)
    s1 = np.sort(sel1)
    best = _best_threshold_sorted(s0, s1, confidence)
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


def _grid_result(
    s: np.ndarray,
    m: np.ndarray,
    *,
    delta: float,
    confidence: float,
    rng: np.random.Generator,
    grid_size: int,
    fraction: float,
) -> AuditResult:
    sel0, sel1, ev0, ev1 = _split(rng, s, m, fraction)
    cands = _grid_candidates(sel0, sel1, grid_size, confidence)
    n0, n1 = ev0.size, ev1.size
    if cands.size == 0:
        return _result(fp=n0, fn=0, n0=n0, n1=n1, threshold=math.nan, delta=delta, confidence=confidence, mode="grid")
    # Bonferroni: every one of the 2·g error-rate bounds holds simultaneously with probability ≥ 1 − 2g(1 − c)
    # ⇒ each holds at confidence c' = 1 − (1 − c)/g per rate keeps the per-rate guarantee of the paper
    # (each of FPR_ub, FNR_ub at level c) uniformly over the g candidates.
    g = cands.size
    c_each = 1.0 - (1.0 - confidence) / g
    e0 = np.sort(ev0.astype(np.float64))
    e1 = np.sort(ev1.astype(np.float64))
    fp = n0 - np.searchsorted(e0, cands, side="right")
    fn = np.searchsorted(e1, cands, side="right")
    fpr_ub = clopper_pearson_upper(fp, n0, confidence=c_each)
    fnr_ub = clopper_pearson_upper(fn, n1, confidence=c_each)
    with np.errstate(divide="ignore"):
        mus = -special.ndtri(fpr_ub) - special.ndtri(fnr_ub)
    mus = np.where(np.isnan(mus), -np.inf, mus)
    k = int(np.argmax(mus))
    mu = float(mus[k])
    return AuditResult(
        epsilon=gdp_epsilon(mu=mu, delta=delta),
        mu=mu,
        threshold=float(cands[k]),
        fpr_upper=float(fpr_ub[k]),
        fnr_upper=float(fnr_ub[k]),
        fpr=float(fp[k]) / n0,
        fnr=float(fn[k]) / n1,
        epsilon_assumption_free=float(assumption_free_epsilon(fpr_ub[k], fnr_ub[k], delta=delta)),
        n_members=int(n1),
        n_nonmembers=int(n0),
        confidence=float(confidence),
        delta=float(delta),
        mode="grid",
    )


def _test_result(
    n0: int, n1: int, cross: Crossing, *, mu: float, delta: float, confidence: float, mode: str
) -> AuditResult:
    """AuditResult of the crossing/rays modes: μ̂ and, for orientation, the crossing of FPR = FNR."""
    return AuditResult(
        epsilon=gdp_epsilon(mu=mu, delta=delta),
        mu=float(mu),
        threshold=float(cross.threshold),
        fpr_upper=math.nan,
        fnr_upper=math.nan,
        fpr=cross.fp / n0,
        fnr=cross.fn / n1,
        epsilon_assumption_free=math.nan,
        n_members=int(n1),
        n_nonmembers=int(n0),
        confidence=float(confidence),
        delta=float(delta),
        mode=mode,
    )


def _crossing_result(x0: np.ndarray, x1: np.ndarray, *, delta: float, confidence: float) -> AuditResult:
    """Mode "crossing": the exact one-crossing bound (:func:`hsaudit.audit.crossing.crossing_mu_lower`)."""
    s0 = np.sort(x0.astype(np.float64))
    s1 = np.sort(x1.astype(np.float64))
    cross = first_crossing(s0, s1, ray_path(s0.size, s1.size, CROSSING_RAYS))[0]
    mu = crossing_mu_lower(k0=cross.k0, k1=cross.k1, n0=s0.size, n1=s1.size, confidence=confidence)
    return _test_result(s0.size, s1.size, cross, mu=mu, delta=delta, confidence=confidence, mode="crossing")


def _rays_result(
    x0: np.ndarray, x1: np.ndarray, *, delta: float, confidence: float, rng: np.random.Generator, draws: int
) -> AuditResult:
    """Mode "rays": the Monte Carlo bound on the mean crossing of :data:`DEFAULT_RAYS`."""
    s0 = np.sort(x0.astype(np.float64))
    s1 = np.sort(x1.astype(np.float64))
    mu, _ = rays_mu_lower(s0, s1, confidence=confidence, rng=rng, draws=draws, rays=DEFAULT_RAYS)
    cross = first_crossing(s0, s1, ray_path(s0.size, s1.size, CROSSING_RAYS))[0]
    return _test_result(s0.size, s1.size, cross, mu=mu, delta=delta, confidence=confidence, mode="rays")


def _rng(rng: np.random.Generator | int | None) -> np.random.Generator:
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None:
        return np.random.default_rng(0)
    try:
        return np.random.default_rng(int(rng))
    except (TypeError, ValueError):
        raise ValueError(f"rng must be a numpy Generator, an integer seed or None, got {rng!r}") from None


# --------------------------------------------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------------------------------------------
def audit_scores(
    scores: npt.ArrayLike,
    members: npt.ArrayLike,
    *,
    delta: float = 1e-5,
    confidence: float = 0.95,
    mode: str = "paper",
    rng: np.random.Generator | int | None = None,
    selection_fraction: float = DEFAULT_SELECTION_FRACTION,
    grid_size: int = DEFAULT_GRID_SIZE,
    calibration_draws: int = DEFAULT_CALIBRATION_DRAWS,
) -> AuditResult:
    """GDP audit of one population of scores (Nasr et al. 2023; Cebere et al. Algorithm 4, Appendix A).

    Convention: **higher score ⇒ member** (b = 1, canary inserted); a threshold τ predicts "member" iff
    score > τ; thresholds lie between consecutive distinct scores (ties are never split).

    Modes:
        ``"paper"``: τ maximises μ on the same scores (the paper's method; not a valid confidence bound,
        docs/audit.md "Coverage study").
        ``"held-out"``: a stratified random selection set (``selection_fraction`` of each class; the
        half by default) chooses τ as in paper mode; the CP bounds are computed at that single τ on
        the remaining scores. Valid: each bound holds with probability ≥ ``confidence`` whatever the
        selection did, since the evaluation scores are independent of it. A smaller selection set
        (e.g. 0.1) is tighter on Gaussian pairs (docs/audit.md).
        ``"grid"``: the selection set proposes up to ``grid_size`` thresholds (the paper-mode best and
        thresholds at FPR quantiles within a factor 4 of its FPR); all are evaluated on the remaining
        scores with CP bounds at confidence 1 − (1 − c)/g (Bonferroni over the g candidates) and the best
        μ is kept. Valid with the same per-rate guarantee; on Gaussian pairs it is not tighter than
        held-out (docs/audit.md), it is offered for mechanisms whose best threshold is poorly located.
        ``"bonferroni"``: no split. τ maximises μ over every threshold of all scores, as in paper mode, but
        each CP bound is taken at 1 − (1 − c)/(2n) for the n candidate thresholds
        (:func:`bonferroni_confidence`), so that all of them hold jointly with probability ≥ ``confidence``:
        valid for any scores, and loose (the price of the union bound).
        ``"crossing"``: no split. The first point where the empirical trade-off curve crosses the diagonal
        FPR = FNR admits FP ≤ k₀ and FN ≤ k₁ at some threshold; μ̂ is the largest μ for which the Gaussian
        pair N(0, 1) vs N(μ, 1) does so with probability at most 1 − ``confidence`` (an exact law of two
        order statistics). Valid jointly at ``confidence`` for *any* scores whose trade-off curve is μ-GDP:
        that pair is the least favourable one (:mod:`hsaudit.audit.crossing`). Deterministic.
        ``"rays"``: as crossing, with the mean μ over 9 rays FNR = ρ·FPR (ρ ∈ [1/4, 4]) as the statistic,
        calibrated by ``calibration_draws`` simulated Gaussian pairs drawn from ``rng`` (an exact Monte Carlo
        test). The tightest valid mode on Gaussian pairs (docs/audit.md, "Tight valid bounds").

    Args:
        scores: R finite scores.
        members: R membership labels, 0/1 or bool (1 = member).
        delta: δ in (0, 1) at which ε is reported.
        confidence: confidence of each one-sided CP bound, in (0, 1); in the crossing/rays modes the
            confidence of the bound on μ.
        mode: one of :data:`AUDIT_MODES`.
        rng: Generator or seed for the split of held-out/grid modes and the simulations of rays mode
            (None: seed 0, deterministic).
        selection_fraction: share of each class used to choose the threshold (held-out/grid), in (0, 1).
        grid_size: number of candidate thresholds of grid mode (≥ 1).
        calibration_draws: simulated Gaussian pairs of rays mode (≥ ⌈1/(1 − confidence)⌉ − 1).

    Returns:
        An :class:`AuditResult` (its ``mode`` says which estimator it is; in held-out/grid modes its
        counts and rates refer to the evaluation scores).

    Raises:
        ValueError: NaN/infinite scores, labels other than 0/1, an empty class (fewer than 2 per class in
            held-out/grid modes), δ, confidence or selection_fraction outside (0, 1), an unknown mode, too
            few calibration_draws.
    """
    d = _check_unit("delta", delta)
    c = _check_unit("confidence", confidence)
    mode = _check_mode(mode)
    s = _as_scores(scores)
    m = _as_members(members, s.size)
    n1 = int(np.count_nonzero(m))
    n0 = s.size - n1
    if mode == "paper":
        _check_classes(n0, n1)
        return _paper_result(s[~m], s[m], delta=d, confidence=c)
    if mode == "bonferroni":
        _check_classes(n0, n1)
        return _bonferroni_result(s[~m], s[m], delta=d, confidence=c)
    if mode == "crossing":
        _check_classes(n0, n1)
        return _crossing_result(s[~m], s[m], delta=d, confidence=c)
    if mode == "rays":
        _check_classes(n0, n1)
        draws = _check_draws(calibration_draws, c)
        return _rays_result(s[~m], s[m], delta=d, confidence=c, rng=_rng(rng), draws=draws)
    f = _check_unit("selection_fraction", selection_fraction)
    _check_classes(n0, n1, minimum=2)
    if mode == "held-out":
        return _heldout_result(s, m, delta=d, confidence=c, rng=_rng(rng), fraction=f)
    g = int(grid_size)
    if g < 1 or g != grid_size:
        raise ValueError(f"grid_size must be a positive integer, got {grid_size!r}")
    return _grid_result(s, m, delta=d, confidence=c, rng=_rng(rng), grid_size=g, fraction=f)


def audit_steps(
    scores: npt.ArrayLike,
    members: npt.ArrayLike,
    *,
    delta: float = 1e-5,
    confidence: float = 0.95,
    mode: str = "paper",
    rng: np.random.Generator | int | None = None,
    selection_fraction: float = DEFAULT_SELECTION_FRACTION,
    grid_size: int = DEFAULT_GRID_SIZE,
    calibration_draws: int = DEFAULT_CALIBRATION_DRAWS,
    threads: int = 1,
) -> list[AuditResult]:
    """One audit per row of a [n_steps, n_runs] score matrix (e.g. one row per training step).

    The membership labels are shared by all rows (shape [n_runs]) or given per row ([n_steps, n_runs]).
    In paper mode with shared labels, the classes are split once and sorted row-wise; the Clopper–Pearson
    tables are shared by all rows. ``threads > 1`` audits rows concurrently (numpy sorts release the GIL).
    In held-out/grid modes every row uses its own split drawn from ``rng`` in row order (rays mode: its own
    simulations).

    Args:
        scores: [n_steps, n_runs] finite scores (higher ⇒ member).
        members: [n_runs] or [n_steps, n_runs] 0/1 labels.
        delta: δ in (0, 1).
        confidence: CP confidence in (0, 1).
        mode: one of :data:`AUDIT_MODES`.
        rng: Generator or seed for held-out/grid splits and rays simulations (None: seed 0).
        selection_fraction: selection share of held-out/grid modes.
        grid_size: candidates of grid mode.
        calibration_draws: simulated pairs of rays mode.
        threads: worker threads (≥ 1).

    Returns:
        A list of n_steps :class:`AuditResult`.

    Raises:
        ValueError: as :func:`audit_scores`; shapes that do not match.
    """
    d = _check_unit("delta", delta)
    c = _check_unit("confidence", confidence)
    mode = _check_mode(mode)
    s = _as_scores(scores, ndim=2)
    m_arr = np.asarray(members)
    if int(threads) < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    n_steps, n_runs = s.shape
    if m_arr.ndim == 2:
        if m_arr.shape != s.shape:
            raise ValueError(f"members has shape {m_arr.shape}, scores {s.shape}")
        rows_m = [_as_members(m_arr[i], n_runs) for i in range(n_steps)]
    else:
        shared = _as_members(m_arr, n_runs)
        rows_m = None
    if mode != "paper" or rows_m is not None:
        gen = _rng(rng)
        out = []
        for i in range(n_steps):
            mi = shared if rows_m is None else rows_m[i]
            out.append(
                audit_scores(
                    s[i],
                    mi,
                    delta=d,
                    confidence=c,
                    mode=mode,
                    rng=gen,
                    selection_fraction=selection_fraction,
                    grid_size=grid_size,
                    calibration_draws=calibration_draws,
                )
            )
        return out
    n1 = int(np.count_nonzero(shared))
    _check_classes(n_runs - n1, n1)
    s0_all = s[:, ~shared]
    s1_all = s[:, shared]

    def one(i: int) -> AuditResult:
        return _paper_result(s0_all[i], s1_all[i], delta=d, confidence=c)

    if int(threads) == 1 or n_steps == 1:
        return [one(i) for i in range(n_steps)]
    with ThreadPoolExecutor(max_workers=int(threads)) as pool:
        return list(pool.map(one, range(n_steps)))


def assumption_free_epsilon(fpr_upper: npt.ArrayLike, fnr_upper: npt.ArrayLike, *, delta: float) -> np.ndarray | float:
    """ε of the (ε, δ)-DP lower bound from error-rate upper bounds, no GDP assumption.

    Any (ε, δ)-DP mechanism satisfies FPR + e^ε FNR ≥ 1 − δ and FNR + e^ε FPR ≥ 1 − δ (Kairouz et al.
    2015, Theorem 2.1), hence ε ≥ max(log((1 − δ − FPR_ub)/FNR_ub), log((1 − δ − FNR_ub)/FPR_ub)),
    clipped at 0 (docs/audit.md, "The estimators").

    Args:
        fpr_upper: upper bound(s) on the FPR, in [0, 1].
        fnr_upper: upper bound(s) on the FNR, in [0, 1].
        delta: δ in (0, 1).

    Returns:
        ε ≥ 0 (inf when a bound is 0 and the other below 1 − δ); float for scalar input.

    Raises:
        ValueError: bounds outside [0, 1] or NaN, δ outside (0, 1).
    """
    d = _check_unit("delta", delta)
    a = np.asarray(fpr_upper, dtype=float)
    b = np.asarray(fnr_upper, dtype=float)
    for name, x in (("fpr_upper", a), ("fnr_upper", b)):
        if np.isnan(x).any() or (x < 0).any() or (x > 1).any():
            raise ValueError(f"{name} must be in [0, 1]")
    with np.errstate(divide="ignore", invalid="ignore"):
        e1 = np.log(np.maximum(1.0 - d - a, 0.0)) - np.log(b)
        e2 = np.log(np.maximum(1.0 - d - b, 0.0)) - np.log(a)
    e1 = np.where(np.isnan(e1), -np.inf, e1)
    e2 = np.where(np.isnan(e2), -np.inf, e2)
    out = np.maximum(np.maximum(e1, e2), 0.0)
    return float(out) if out.ndim == 0 else out


def empirical_tradeoff(
    scores: npt.ArrayLike, members: npt.ArrayLike, *, max_points: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Empirical trade-off curve: (FPR, FNR) at every threshold between distinct scores.

    Includes both ends (τ below all scores: FPR = 1, FNR = 0; above all: FPR = 0, FNR = 1); FPR is
    non-increasing and FNR non-decreasing along the curve (thresholds increasing). Cebere et al. fig6.

    Args:
        scores: R finite scores (higher ⇒ member).
        members: 0/1 labels.
        max_points: if given (≥ 2) and the curve has more points, keep about that many, evenly spaced in
            arc length of the curve (both ends kept).

    Returns:
        (fpr, fnr) arrays.

    Raises:
        ValueError: as :func:`audit_scores` (scores, labels, classes); max_points < 2.
    """
    s = _as_scores(scores)
    m = _as_members(members, s.size)
    n1 = int(np.count_nonzero(m))
    n0 = s.size - n1
    _check_classes(n0, n1)
    order = np.argsort(s, kind="stable")
    ss = s[order]
    mm = m[order]
    c1 = np.concatenate(([0], np.cumsum(mm)))  # members among the i lowest
    c0 = np.arange(s.size + 1) - c1
    cut = np.concatenate(([True], ss[1:] != ss[:-1], [True]))  # positions i where a threshold can sit
    fnr = c1[cut] / n1
    fpr = (n0 - c0[cut]) / n0
    if max_points is not None:
        k = int(max_points)
        if k < 2:
            raise ValueError(f"max_points must be >= 2, got {max_points}")
        if fpr.size > k:
            arc = np.concatenate(([0.0], np.cumsum(np.abs(np.diff(fpr)) + np.abs(np.diff(fnr)))))
            targets = np.linspace(0.0, arc[-1], k)
            keep = np.unique(np.clip(np.searchsorted(arc, targets), 0, fpr.size - 1))
            keep = np.union1d(keep, [0, fpr.size - 1])
            fpr, fnr = fpr[keep], fnr[keep]
    return fpr, fnr


def reference_audit(
    scores: npt.ArrayLike,
    members: npt.ArrayLike,
    *,
    delta: float = 1e-5,
    confidence: float = 0.95,
) -> AuditResult:
    """Slow reference of the paper-mode audit: a loop over every threshold, as public auditing code does.

    For each threshold between consecutive distinct scores (and below/above all), counts the errors
    directly, takes the one-sided Clopper–Pearson bounds from ``scipy.stats.binomtest(...,
    alternative="less").proportion_ci``, computes μ and converts it to ε by root finding, keeping the
    threshold with the largest (ε, μ). O(R²); for tests and the benchmark only.

    Args:
        scores: R finite scores (higher ⇒ member).
        members: 0/1 labels.
        delta: δ in (0, 1).
        confidence: CP confidence in (0, 1).

    Returns:
        An :class:`AuditResult` with mode "paper".
    """
    from scipy import stats

    d = _check_unit("delta", delta)
    c = _check_unit("confidence", confidence)
    s = _as_scores(scores).astype(np.float64)
    m = _as_members(members, s.size)
    n1 = int(np.count_nonzero(m))
    n0 = s.size - n1
    _check_classes(n0, n1)
    values = np.unique(s)
    # Threshold i sits between values[i-1] and values[i]; i = 0 is below everything, i = len above.
    best_key = (-math.inf, -math.inf)
    best = None
    for i in range(values.size + 1):
        if i == 0:
            pred = np.ones(s.size, dtype=bool)
            tau = -math.inf
        else:
            pred = s > values[i - 1]
            tau = values[i - 1] + (values[i] - values[i - 1]) / 2.0 if i < values.size else math.inf
        fp = int(np.sum(pred & ~m))
        fn = int(np.sum(~pred & m))
        fpr_ub = stats.binomtest(fp, n0, alternative="less").proportion_ci(confidence_level=c).high
        fnr_ub = stats.binomtest(fn, n1, alternative="less").proportion_ci(confidence_level=c).high
        with np.errstate(divide="ignore"):
            mu = float(special.ndtri(1.0 - fpr_ub) - special.ndtri(fnr_ub))
        if math.isnan(mu):
            mu = -math.inf
        eps = gdp_epsilon(mu=mu, delta=d)
        if (eps, mu) > best_key:
            best_key = (eps, mu)
            best = (fp, fn, tau, fpr_ub, fnr_ub, mu, eps)
    if best is None:  # every μ = −inf
        fp, fn = n0, 0
        fpr_ub, fnr_ub = 1.0, float(clopper_pearson_upper(0, n1, confidence=c))
        best = (fp, fn, math.nan, fpr_ub, fnr_ub, -math.inf, 0.0)
    fp, fn, tau, fpr_ub, fnr_ub, mu, eps = best
    if not math.isfinite(mu) or not math.isfinite(tau):
        tau = math.nan
    return AuditResult(
        epsilon=eps,
        mu=mu,
        threshold=float(tau),
        fpr_upper=float(fpr_ub),
        fnr_upper=float(fnr_ub),
        fpr=fp / n0,
        fnr=fn / n1,
        epsilon_assumption_free=float(assumption_free_epsilon(fpr_ub, fnr_ub, delta=d)),
        n_members=n1,
        n_nonmembers=n0,
        confidence=c,
        delta=d,
        mode="paper",
    )


def describe_mode(mode: str) -> str:
    """One-line description of an audit mode (for summaries and figure footers)."""
    return MODE_DESCRIPTIONS[_check_mode(mode)]


def observed_rates(o_out: npt.ArrayLike, o_in: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """(α, β) for every threshold τ ∈ O ∪ O′: α = #{o ∈ O: o ≥ τ}/|O| (FPR), β = #{o′ ∈ O′: o′ < τ}/|O′| (FNR)."""
    o = np.sort(np.asarray(o_out, dtype=float))
    o1 = np.sort(np.asarray(o_in, dtype=float))
    taus = np.unique(np.concatenate([o, o1]))
    alpha = (o.size - np.searchsorted(o, taus, side="left")) / o.size
    beta = np.searchsorted(o1, taus, side="left") / o1.size
    return alpha, beta
