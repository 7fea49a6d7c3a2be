"""The one-dimensional process of Cebere et al., Section 6 (adversary A_S^{h*}), by Monte Carlo and exactly.

The adversary inserts the crafted gradient ∇* = C at step 1 only and crafts a loss landscape whose batch
gradient sum is g(θ) = ±BC depending on the side of a switch point h (Eq. 3):

    θ_1 = Z_1 (not inserted, b = 0)   or   θ̄_1 = C + Z_1 (inserted, b = 1),   Z ~ N(0, σ²C²),
    θ_{t+1} = θ_t − (1/B)(g(θ_t) + Z_{t+1}).

**Sign convention** (docs/section6.md). Read literally, ``g = +BC`` above h and ``−BC`` below makes the
process mean-reverting around h (it forgets its start within ~10 steps), which contradicts the paper's
claims and its own "maximally biases subsequent steps" intent. The default rule is therefore

* ``divergent``: θ_{t+1} = θ_t + C·sign(θ_t − h) − Z_{t+1}/B   (pushes θ away from h),

and the literal reading is available as

* ``literal``:   θ_{t+1} = θ_t − C·sign(θ_t − h) − Z_{t+1}/B   (pulls θ back to h).

"sign" follows the paper's threshold function ϕ(X) = 1 iff X > h: a point exactly at h moves as if below.
The default switch point is h* = C/2, the optimal one-step threshold between N(0, σ²C²) and N(C, σ²C²).

The score of a run at step t is θ_t itself (higher ⇒ inserted, since the inserted run starts C higher and
both rules are monotone in θ).

What this module computes:

* :func:`iter_scores` / :func:`simulate_scores` — vectorised float32 Monte Carlo of one world.
* :func:`audit_process` — both worlds, audited at every step with the paper's GDP audit (Nasr et al. 2023,
  Cebere et al. App. A), repeated; one table row per (repetition, step).
* :func:`exact_laws` — the exact law of θ_t in both worlds by density propagation on a grid, and
  :func:`exact_epsilons` / :func:`privacy_profile` — the exact privacy profile δ(ε) = ∫ max(0, p̄ − e^ε p)
  (both directions) and the exact ε of the last iterate at every step.
* :func:`threshold_search` — the T = 2 search over switch points of App. F (Algorithm 5).
* :func:`loss_landscape` — the per-sample loss whose gradient gives the update (Fig. 10).

Numbers of the fast audit (:func:`gdp_audit_sorted_free`) are identical to the reference audit over all
midpoint thresholds; see its docstring for why a histogram pre-pass does not change the maximum.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import optimize, signal, special

from hsaudit.accounting import gdp_epsilon
from hsaudit.audit import assumption_free_epsilon, audit_scores, clopper_pearson_upper
from hsaudit.seeding import derive_seed

RULES = ("divergent", "literal")

# Runs processed per inner chunk of the Monte Carlo (256 KiB of float32: stays in L2 cache across the few
# elementwise passes of a step). A fixed constant: changing it does not change results (the noise of a step
# is drawn chunk by chunk from the same stream, in order).
_CHUNK = 1 << 16


@dataclass(frozen=True)
class Process:
    """Parameters of the Section 6 process (Cebere et al. Eq. 3).

    Args:
        sigma: noise multiplier σ (> 0).
        batch_size: batch size B (≥ 1); the genuine gradient sum is ±BC, the noise N(0, σ²C²).
        steps: number of steps T (≥ 1); step 1 is the insertion step.
        clip_norm: clipping norm C (> 0); the crafted gradient is ∇* = C.
        rule: ``"divergent"`` (default, pushes away from h) or ``"literal"`` (the paper's text read literally,
            mean-reverting); see the module docstring.
        switch_point: the switch point h as a fraction of C (h = switch_point·C); default ½ (h* = C/2).
            ``inf``/``-inf`` give a constant g (Example 1 of the paper).
    """

    sigma: float
    batch_size: int
    steps: int
    clip_norm: float = 1.0
    rule: str = "divergent"
    switch_point: float = 0.5

    def __post_init__(self) -> None:
        if not (np.isfinite(self.sigma) and self.sigma > 0):
            raise ValueError(f"sigma must be a finite number > 0, got {self.sigma}")
        if int(self.batch_size) != self.batch_size or self.batch_size < 1:
            raise ValueError(f"batch_size must be an integer >= 1, got {self.batch_size}")
        if int(self.steps) != self.steps or self.steps < 1:
            raise ValueError(f"steps must be an integer >= 1, got {self.steps}")
        if not (np.isfinite(self.clip_norm) and self.clip_norm > 0):
            raise ValueError(f"clip_norm must be a finite number > 0, got {self.clip_norm}")
        if self.rule not in RULES:
            raise ValueError(f"rule must be one of {', '.join(RULES)}, got {self.rule!r}")
        if np.isnan(self.switch_point):
            raise ValueError(f"switch_point must be a number (fraction of C), got {self.switch_point}")

    @property
    def h(self) -> float:
        """The switch point in θ units, h = switch_point·C."""
        return float(self.switch_point) * float(self.clip_norm)

    @property
    def drift_sign(self) -> float:
        """+1 for the divergent rule (θ moves away from h), −1 for the literal one."""
        return 1.0 if self.rule == "divergent" else -1.0


def loss_landscape(theta: npt.ArrayLike, process: Process) -> np.ndarray:
    """The per-sample loss ℓ(θ) whose gradient descent gives the update of ``process`` (Fig. 10).

    Each of the B genuine samples contributes a clipped gradient ±C, so with learning rate 1 and the 1/B
    normalisation of DP-SGD the update is θ ← θ − ℓ'(θ) − Z/B. The divergent rule needs ℓ'(θ) = −C·sign(θ − h),
    i.e. ℓ(θ) = −C·|θ − h| (a ridge at h: descent moves away from it); the literal rule ℓ(θ) = +C·|θ − h| (a
    valley). The constant is fixed so that ℓ(h) = 0.

    Args:
        theta: points at which to evaluate the loss.
        process: gives C, h and the rule (σ and B do not enter).

    Returns:
        ℓ(θ), same shape as ``theta``.
    """
    theta = np.asarray(theta, dtype=float)
    return -process.drift_sign * process.clip_norm * np.abs(theta - process.h)


# ---------------------------------------------------------------------------------------------------------
# Monte Carlo
# ---------------------------------------------------------------------------------------------------------


def iter_scores(
    process: Process, *, runs: int, inserted: bool, rng: np.random.Generator
) -> Iterator[np.ndarray]:
    """Simulate ``runs`` independent runs of one world and yield θ_t (float32, shape ``(runs,)``) for t = 1..T.

    Memory is O(runs): one float32 state vector plus chunk-sized temporaries. The yielded array is the internal
    state and is overwritten by the next step: copy it if you keep it.

    Args:
        process: the process parameters.
        runs: number of runs R (≥ 1).
        inserted: True for the world with the crafted gradient (θ̄_1 = C + Z_1).
        rng: the noise source; draws are float32 standard normals (``Generator.standard_normal``).

    Yields:
        θ_t for t = 1, ..., T (the score of each run at that step: higher ⇒ inserted).
    """
    runs = _check_runs(runs)
    c = np.float32(process.clip_norm)
    h = np.float32(process.h) if np.isfinite(process.h) else process.h
    first_scale = np.float32(process.sigma * process.clip_norm)
    noise_scale = np.float32(-process.sigma * process.clip_norm / process.batch_size)
    push = np.float32(process.drift_sign * process.clip_norm)
    theta = np.empty(runs, dtype=np.float32)
    for lo in range(0, runs, _CHUNK):
        part = theta[lo : lo + _CHUNK]
        rng.standard_normal(part.shape[0], dtype=np.float32, out=part)
        part *= first_scale
        if inserted:
            part += c
    yield theta
    zbuf = np.empty(min(runs, _CHUNK), dtype=np.float32)
    dbuf = np.empty_like(zbuf)
    mask = np.empty(zbuf.shape, dtype=bool)
    for _ in range(process.steps - 1):
        for lo in range(0, runs, _CHUNK):
            part = theta[lo : lo + _CHUNK]
            n = part.shape[0]
            z, d, m = zbuf[:n], dbuf[:n], mask[:n]
            # drift ±C·sign(θ − h) with ϕ(θ) = 1 iff θ > h, from the state before the noise is added
            np.greater(part, h, out=m)
            np.multiply(m, np.float32(2.0) * push, out=d)
            d -= push
            rng.standard_normal(n, dtype=np.float32, out=z)
            z *= noise_scale
            part += d
            part += z
        yield theta


def simulate_scores(
    process: Process, *, runs: int, inserted: bool, rng: np.random.Generator
) -> np.ndarray:
    """All per-step scores of one world, shape ``(T, runs)`` float32 (see :func:`iter_scores`)."""
    out = np.empty((process.steps, _check_runs(runs)), dtype=np.float32)
    for t, theta in enumerate(iter_scores(process, runs=runs, inserted=inserted, rng=rng)):
        out[t] = theta
    return out


def _check_runs(runs: int) -> int:
    if int(runs) != runs or runs < 1:
        raise ValueError(f"runs must be an integer >= 1, got {runs}")
    return int(runs)


# ---------------------------------------------------------------------------------------------------------
# Fast exact GDP audit for the paper's threshold rule
# ---------------------------------------------------------------------------------------------------------
# Why a second audit beside hsaudit.audit: fig3 runs ~10,000 audits of 2·10⁶ scores. This two-sample search
# (member-score thresholds only, a float32 histogram pre-pass, precomputed CP tables loaded from the
# make_cp_table job) also returns the assumption-free bound maximised over thresholds. Routed through
# hsaudit.audit.audit_scores the same figure costs ~80% more CPU (measured 2026-11-22 with
# `hsaudit bench section6`: 3.5 s vs 6.3 s per cell). Both give the same thresholds and counts, and μ̂ to
# ~1e-13 (tests/test_process1d.py checks this one against hsaudit.audit and a naive scan).


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
    n = _check_runs(n)
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

    ``tests/test_process1d.py`` checks the result against a naive scan of every midpoint.

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


# ---------------------------------------------------------------------------------------------------------
# Exact law on a grid
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExactLaw:
    """Cell masses of θ_t in both worlds on a regular grid.

    Attributes:
        centers: cell centres (length n); the switch point h is a cell edge.
        dx: cell width (C/dx is an integer, so the ±C drift is an exact shift).
        p: masses of θ_t (not inserted), shape (T, n).
        pbar: masses of θ̄_t (inserted), shape (T, n).
        lost: mass that left the grid by step t (max over the two worlds), shape (T,).
    """

    centers: np.ndarray
    dx: float
    p: np.ndarray
    pbar: np.ndarray
    lost: np.ndarray


def exact_laws(
    process: Process, *, cells_per_clip: int = 50, cells_per_sd: int = 25, extent_sds: float = 10.0
) -> ExactLaw:
    """Propagate the exact law of θ_t (both worlds) on a grid (Cebere et al. Eq. 3; our addition).

    Step 1 is N(0, σ²C²) or N(C, σ²C²) integrated over each cell. Each further step splits the masses at h
    (h is a cell edge), shifts each part by ±C (an integer number of cells) and convolves with the
    cell-integrated N(0, (σC/B)²) kernel by FFT. The grid covers h ± (T·C + extent_sds·σC·√(1 + (T−1)/B²)):
    the drift moves θ by at most C per step and the accumulated noise has that standard deviation, so the mass
    that leaves the grid is below 2Φ(−extent_sds) (≈ 1.5e−23 for 10 sds) — it is tracked in ``lost``.

    Discretisation: masses sit at cell centres between steps. The cell width is C/k with
    k = max(cells_per_clip, ⌈cells_per_sd·B/σ⌉), i.e. at least ``cells_per_sd`` cells per noise standard
    deviation; the resulting ε error is checked against the closed form at t = 1 in the tests.

    Args:
        process: the process (a finite switch point is required).
        cells_per_clip: minimum number of cells per C.
        cells_per_sd: minimum number of cells per standard deviation σC/B of the per-step noise.
        extent_sds: half-width of the grid beyond the maximal drift, in accumulated-noise standard deviations.

    Returns:
        An :class:`ExactLaw`.
    """
    if not np.isfinite(process.h):
        raise ValueError(f"exact_laws needs a finite switch point, got {process.switch_point}")
    for name, value, low in (("cells_per_clip", cells_per_clip, 1), ("cells_per_sd", cells_per_sd, 1)):
        if int(value) != value or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value}")
    if not extent_sds > 0:
        raise ValueError(f"extent_sds must be > 0, got {extent_sds}")
    c, sigma, b, steps, h = process.clip_norm, process.sigma, process.batch_size, process.steps, process.h
    k = max(int(cells_per_clip), math.ceil(cells_per_sd * b / sigma))
    dx = c / k
    acc_sd = sigma * c * math.sqrt(1.0 + (steps - 1) / b**2)
    half = steps * c + abs(h) + c + extent_sds * acc_sd
    cells = math.ceil(half / dx)
    edges = h + dx * np.arange(-cells, cells + 1, dtype=np.float64)
    centers = 0.5 * (edges[:-1] + edges[1:])
    n = centers.size
    above = np.arange(n) >= cells  # cells in (h, ∞)
    noise_sd = sigma * c / b
    radius = math.ceil(extent_sds * noise_sd / dx) + 1
    kernel = _gauss_cell_masses(dx * (np.arange(-radius, radius + 2) - 0.5), 0.0, noise_sd)
    shift_up = k if process.rule == "divergent" else -k  # cells above h move by +C (divergent) or −C
    p = np.empty((steps, n))
    pbar = np.empty((steps, n))
    lost = np.zeros(steps)
    for world, start in ((p, 0.0), (pbar, c)):
        cur = _gauss_cell_masses(edges, start, sigma * c)
        world[0] = cur
        lost[0] = max(lost[0], 1.0 - cur.sum())
        for t in range(1, steps):
            moved = np.zeros(n)
            _shift_add(moved, np.where(above, cur, 0.0), shift_up)
            _shift_add(moved, np.where(above, 0.0, cur), -shift_up)
            cur = signal.fftconvolve(moved, kernel, mode="same")
            np.maximum(cur, 0.0, out=cur)  # FFT round-off (~1e-17) can be slightly negative
            world[t] = cur
            lost[t] = max(lost[t], 1.0 - cur.sum())
    lost = np.maximum.accumulate(np.maximum(lost, 0.0))
    return ExactLaw(centers=centers, dx=dx, p=p, pbar=pbar, lost=lost)


def _shift_add(out: np.ndarray, x: np.ndarray, shift: int) -> None:
    """out += x shifted by ``shift`` cells (mass shifted off the grid is dropped)."""
    if shift > 0:
        out[shift:] += x[:-shift]
    elif shift < 0:
        out[:shift] += x[-shift:]
    else:
        out += x


def _gauss_cell_masses(edges: np.ndarray, mean: float, sd: float) -> np.ndarray:
    """Mass of N(mean, sd²) in each cell [edges[i], edges[i+1]], accurate in both tails."""
    z = (np.asarray(edges) - mean) / sd
    lo, hi = z[:-1], z[1:]
    left = special.ndtr(hi) - special.ndtr(lo)
    right = special.ndtr(-lo) - special.ndtr(-hi)
    return np.where(0.5 * (lo + hi) < 0, left, right)


def privacy_profile(p: npt.ArrayLike, pbar: npt.ArrayLike, epsilons: npt.ArrayLike) -> np.ndarray:
    """Exact privacy profile δ(ε) = max(H_{e^ε}(P̄‖P), H_{e^ε}(P‖P̄)), H_γ(Q‖R) = Σ max(0, Q − γR).

    Args:
        p, pbar: cell masses of the two laws (same grid).
        epsilons: ε values (≥ 0).

    Returns:
        δ at each ε.
    """
    prof = _Profile(np.asarray(p, dtype=float), np.asarray(pbar, dtype=float))
    return np.array([prof.delta(float(e)) for e in np.atleast_1d(epsilons)])


def exact_epsilon(p: npt.ArrayLike, pbar: npt.ArrayLike, *, delta: float) -> float:
    """The smallest ε with δ(ε) ≤ ``delta`` for the laws ``p`` and ``pbar`` (0 if TV ≤ δ; inf if never)."""
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    prof = _Profile(np.asarray(p, dtype=float), np.asarray(pbar, dtype=float))
    if prof.delta(0.0) <= delta:
        return 0.0
    hi = 1.0
    while prof.delta(hi) > delta:
        hi *= 2.0
        if hi > 1e4:
            return math.inf
    return float(optimize.brentq(lambda e: prof.delta(e) - delta, 0.0, hi, xtol=1e-10, rtol=1e-12))


class _Profile:
    """δ(ε) of two discrete laws in O(log n) per ε after one sort per direction."""

    def __init__(self, p: np.ndarray, pbar: np.ndarray) -> None:
        if p.shape != pbar.shape:
            raise ValueError(f"p and pbar must have the same shape, got {p.shape} and {pbar.shape}")
        self._dirs = [self._prepare(pbar, p), self._prepare(p, pbar)]

    @staticmethod
    def _prepare(q: np.ndarray, r: np.ndarray):
        keep = q > 0
        q, r = q[keep], r[keep]
        with np.errstate(divide="ignore"):
            loss = np.log(q) - np.log(r)  # +inf where r = 0
        order = np.argsort(-loss, kind="stable")
        loss = loss[order]
        return -loss, np.cumsum(q[order]), np.cumsum(r[order])  # ascending −loss for searchsorted

    def delta(self, eps: float) -> float:
        out = 0.0
        for neg_loss, cq, cr in self._dirs:
            i = int(np.searchsorted(neg_loss, -eps, side="left"))  # number of cells with loss > ε
            if i:
                out = max(out, cq[i - 1] - math.exp(eps) * cr[i - 1])
        return max(out, 0.0)


def threshold_mu_limit(p: npt.ArrayLike, pbar: npt.ArrayLike, *, floor: float = 1e-6) -> float:
    """The R → ∞ limit of the paper audit's μ̂ on the laws ``p`` (not inserted) and ``pbar`` (inserted):
    max over thresholds τ on θ (cell edges) of Φ⁻¹(1 − FPR(τ)) − Φ⁻¹(FNR(τ)), with the exact error rates
    FPR = P(θ > τ), FNR = P̄(θ ≤ τ) in place of Clopper–Pearson bounds.

    Thresholds where FPR or FNR is below ``floor`` (default 10⁻⁶, i.e. about one run in R = 10⁶) are skipped:
    an audit with R runs per world cannot resolve them, and grid masses far below carry FFT round-off. For
    laws whose threshold-μ keeps growing into the tails the value depends on ``floor``. Its GDP ε is what the Monte Carlo audit converges to; the gap to the exact
    ε is the error of the Gaussian trade-off assumption, the gap to ε̂ the audit's statistical slack.
    """
    p = np.asarray(p, dtype=float)
    pbar = np.asarray(pbar, dtype=float)
    fpr = np.cumsum(p[::-1])[::-1][1:]  # mass strictly above the upper edge of cell j
    fnr = np.cumsum(pbar)[:-1]  # inserted mass at or below it
    ok = (fpr >= floor) & (fnr >= floor)
    if not ok.any():
        return -math.inf
    with np.errstate(divide="ignore", invalid="ignore"):
        mu = -special.ndtri(fpr[ok]) - special.ndtri(fnr[ok])
    return float(np.max(mu))


def exact_epsilons(law: ExactLaw, *, delta: float) -> np.ndarray:
    """Exact ε(δ) of the last iterate θ_t vs θ̄_t for every step t = 1..T of ``law``."""
    return np.array([exact_epsilon(law.p[t], law.pbar[t], delta=delta) for t in range(law.p.shape[0])])


def exact_epsilon_curve(
    process: Process,
    *,
    delta: float,
    cells_per_clip: int = 50,
    cells_per_sd: int = 25,
    extent_sds: float = 10.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact ε(δ) of θ_t vs θ̄_t for t = 1..T, the grid mass lost by each step, and the R → ∞ limit of the
    paper audit's μ̂ (:func:`threshold_mu_limit`).

    For an infinite switch point (g constant, Example 1 of the paper) the law is Gaussian and the closed form
    μ = 1/(σ√(1 + (t − 1)/B²)) is used (μ-GDP is exact for a Gaussian pair).

    Returns:
        (epsilons, lost_mass, mu_limit), each of length T.
    """
    if not np.isfinite(process.h):
        t = np.arange(1, process.steps + 1)
        mus = 1.0 / (process.sigma * np.sqrt(1.0 + (t - 1) / process.batch_size**2))
        eps = np.array([gdp_epsilon(mu=float(m), delta=delta) for m in mus])
        return eps, np.zeros(process.steps), mus
    law = exact_laws(process, cells_per_clip=cells_per_clip, cells_per_sd=cells_per_sd, extent_sds=extent_sds)
    mu_limit = np.array([threshold_mu_limit(law.p[t], law.pbar[t]) for t in range(process.steps)])
    return exact_epsilons(law, delta=delta), law.lost, mu_limit


# ---------------------------------------------------------------------------------------------------------
# Audits of the process (fig3, fig14, fig6b, fig6c)
# ---------------------------------------------------------------------------------------------------------


def world_rng(seed: int, *key: object) -> np.random.Generator:
    """The noise stream of one world of one repetition: SFC64 seeded with ``derive_seed(seed, *key)``.

    SFC64 draws float32 normals ~15% faster than PCG64 here; the stream is fixed by the key alone, so results
    do not depend on job order or on how many repetitions run.
    """
    return np.random.Generator(np.random.SFC64(derive_seed(seed, *key)))


def audit_process(
    process: Process,
    *,
    runs_per_world: int,
    repetitions: int,
    seed: int,
    key: tuple = (),
    delta: float = 1e-5,
    confidence: float = 0.95,
    mode: str = "paper",
    selection_fraction: float = 0.5,
    tables: GdpTables | None = None,
    steps: list[int] | None = None,
) -> list[dict]:
    """Simulate both worlds ``repetitions`` times and audit θ_t at every step (or at ``steps``).

    Each repetition draws R = ``runs_per_world`` runs per world (an exact half split of 2R runs, b = 1 for the
    inserted world) from streams keyed by ``(*key, rep, world)``. In ``mode="paper"`` the fast exact audit
    :func:`gdp_audit_two_sample` is used; other modes go through :func:`hsaudit.audit.audit_scores`.

    Args:
        process: the process.
        runs_per_world: R (≥ 1).
        repetitions: number of independent repetitions (≥ 1).
        seed: master seed.
        key: the experiment key the streams are derived from (e.g. (rule, σ, B)).
        delta: δ of the reported ε.
        confidence: Clopper–Pearson confidence.
        mode: audit mode ("paper", "held-out", "grid").
        selection_fraction: share of each class that selects the threshold (held-out and grid modes).
        tables: precomputed :func:`gdp_tables` for (R, R, confidence, δ) (paper mode only).
        steps: 1-based steps to audit (default all).

    Returns:
        One record (dict) per (rep, step): rep, step, epsilon_audit, mu, threshold, fpr, fnr, fpr_upper,
        fnr_upper, epsilon_assumption_free, epsilon_assumption_free_max, runs_per_world, audit_mode.
    """
    runs = _check_runs(runs_per_world)
    if int(repetitions) != repetitions or repetitions < 1:
        raise ValueError(f"repetitions must be an integer >= 1, got {repetitions}")
    wanted = set(range(1, process.steps + 1) if steps is None else steps)
    if not wanted or min(wanted) < 1 or max(wanted) > process.steps:
        raise ValueError(f"steps must lie in 1..{process.steps}, got {sorted(wanted)}")
    if mode == "paper" and tables is None:
        tables = gdp_tables(runs, runs, confidence=confidence, delta=delta)
    if mode == "paper" and (tables.n0, tables.n1, tables.confidence, tables.delta) != (runs, runs, confidence, delta):
        raise ValueError("tables were built for other (n0, n1, confidence, delta)")
    records = []
    for rep in range(int(repetitions)):
        worlds = [
            iter_scores(process, runs=runs, inserted=bool(b), rng=world_rng(seed, *key, rep, b)) for b in (0, 1)
        ]
        for step, (s, m) in enumerate(zip(*worlds), start=1):
            if step not in wanted:
                continue
            if mode == "paper":
                res = gdp_audit_two_sample(s, m, tables)
            else:
                res = audit_scores(
                    np.concatenate([s, m]),
                    np.repeat([False, True], runs),
                    delta=delta,
                    confidence=confidence,
                    mode=mode,
                    selection_fraction=selection_fraction,
                    rng=world_rng(seed, *key, rep, "split", step),
                )
            row = {
                "epsilon_audit": res.epsilon,
                "mu": res.mu,
                "threshold": res.threshold,
                "fpr": res.fpr,
                "fnr": res.fnr,
                "fpr_upper": res.fpr_upper,
                "fnr_upper": res.fnr_upper,
                "epsilon_assumption_free": res.epsilon_assumption_free,
                # Only the two-sample search of the paper mode maximises the assumption-free bound too.
                "epsilon_assumption_free_max": getattr(res, "epsilon_assumption_free_max", np.nan),
            }
            records.append({"rep": rep, "step": step, **row, "runs_per_world": runs, "audit_mode": mode})
    return records


def alpha_grid(*, sigma: float, clip_norm: float, count: int) -> np.ndarray:
    """Type-I error grid of Cebere et al. Algorithm 5: linspace(0, Φ(C/(2σ²)), count)."""
    if int(count) != count or count < 2:
        raise ValueError(f"count must be an integer >= 2, got {count}")
    return np.linspace(0.0, float(special.ndtr(clip_norm / (2.0 * sigma**2))), int(count))


def switch_points(alphas: npt.ArrayLike, *, sigma: float, clip_norm: float) -> np.ndarray:
    """h_i = σC·Φ⁻¹(1 − α_i): the threshold of the level-α_i test of N(0, σ²C²) vs a larger mean (App. F).

    α = 0 gives h = +inf (a constant g, Example 1 of the paper).
    """
    a = np.asarray(alphas, dtype=float)
    if np.isnan(a).any() or (a < 0).any() or (a > 1).any():
        raise ValueError(f"alphas must lie in [0, 1], got {a}")
    return sigma * clip_norm * special.ndtri(1.0 - a)


def threshold_search(
    *,
    sigma: float,
    batch_size: int,
    steps: int,
    clip_norm: float,
    rule: str,
    alphas: npt.ArrayLike,
    runs_per_world: int,
    repetitions: int,
    seed: int,
    delta: float = 1e-5,
    confidence: float = 0.95,
    mode: str = "paper",
    selection_fraction: float = 0.5,
    tables: GdpTables | None = None,
    exact: dict | None = None,
) -> list[dict]:
    """The threshold search of Cebere et al. App. F (Algorithm 5) next to A_S^{h*}, with exact ε.

    For every α_i the process is run with switch point h_i = σC·Φ⁻¹(1 − α_i), audited at step ``steps``; the
    search's answer is max_i ε̂_i (per repetition). The candidate ``h*`` (switch point C/2) is added with
    ``alpha = NaN`` and ``candidate = "h*"``. The exact ε of the last iterate is computed for every h.

    Returns:
        One record per (candidate, rep): candidate ("grid" or "h*"), alpha, h, rep, epsilon_audit, mu,
        epsilon_exact, plus the audit fields.
    """
    alphas = np.asarray(alphas, dtype=float)
    hs = switch_points(alphas, sigma=sigma, clip_norm=clip_norm)
    cands = [("grid", a, h) for a, h in zip(alphas, hs)] + [("h*", np.nan, 0.5 * clip_norm)]
    runs = _check_runs(runs_per_world)
    if mode == "paper" and tables is None:
        tables = gdp_tables(runs, runs, confidence=confidence, delta=delta)
    records = []
    for i, (kind, alpha, h) in enumerate(cands):
        proc = Process(
            sigma=sigma, batch_size=batch_size, steps=steps, clip_norm=clip_norm, rule=rule, switch_point=h / clip_norm
        )
        eps_curve, _, mu_curve = exact_epsilon_curve(proc, delta=delta, **(exact or {}))
        eps_exact, mu_limit = float(eps_curve[-1]), float(mu_curve[-1])
        rows = audit_process(
            proc,
            runs_per_world=runs,
            repetitions=repetitions,
            seed=seed,
            key=("threshold_search", rule, sigma, batch_size, steps, kind, i),
            delta=delta,
            confidence=confidence,
            mode=mode,
            selection_fraction=selection_fraction,
            tables=tables,
            steps=[steps],
        )
        for row in rows:
            records.append(
                {
                    "candidate": kind,
                    "alpha": float(alpha),
                    "h": float(h),
                    **row,
                    "epsilon_exact": eps_exact,
                    "mu_limit": mu_limit,
                    "epsilon_gdp_limit": gdp_epsilon(mu=mu_limit, delta=delta),
                }
            )
    return records


def check_section6_config(section: dict) -> None:
    """Cross-key checks of the ``section6`` config section that the JSON schema cannot express.

    Raises:
        ValueError: naming the offending key (e.g. a panel σ that is not simulated).
    """
    import re

    sigmas = [float(s) for s in section["sigmas"]]
    for key, values in (("section6.sigmas", sigmas), ("section6.threshold_search.sigmas", section["threshold_search"]["sigmas"])):
        for s in values:
            if not re.fullmatch(r"\d+(\.\d+)?", f"{float(s):g}"):
                raise ValueError(f"{key}: {s} cannot be written as a plain decimal (use e.g. 0.5, 2, 7.25)")
    for s in section["panel_sigmas"]:
        if float(s) not in sigmas:
            raise ValueError(f"section6.panel_sigmas: {s} is not one of section6.sigmas {section['sigmas']}")
    if section["tradeoff"]["step"] > section["steps"]:
        raise ValueError(
            f"section6.tradeoff.step: {section['tradeoff']['step']} exceeds section6.steps = {section['steps']}"
        )
    lo, hi = section["landscape"]["range"]
    if not lo < hi:
        raise ValueError(f"section6.landscape.range: need low < high, got {section['landscape']['range']}")


# ---------------------------------------------------------------------------------------------------------
# Tidy records for the workflow (one dict per row; the scripts turn them into CSV files)
# ---------------------------------------------------------------------------------------------------------


def upper_bound_epsilon(*, sigma: float, delta: float) -> float:
    """The accounting upper bound of the §6 process: one Gaussian step with sampling rate 1, i.e. μ = 1/σ GDP
    (spec cebere.md §1 "Upper bound"; later steps are post-processing)."""
    return gdp_epsilon(mu=1.0 / sigma, delta=delta)


def audit_records(
    *,
    rule: str,
    sigma: float,
    batch_sizes: list[int],
    steps: int,
    clip_norm: float,
    switch_point: float,
    runs_per_world: int,
    repetitions: int,
    seed: int,
    delta: float,
    confidence: float,
    mode: str,
    selection_fraction: float = 0.5,
    tables: GdpTables | None = None,
    log=None,
) -> list[dict]:
    """Audits of one (rule, σ) for every B, repetition and step, as tidy records (fig3/fig14 input).

    Streams are keyed by ("section6", rule, σ, B, rep, world), so a cell's numbers do not depend on which
    other cells run. Columns: rule, sigma, batch_size, step, rep, epsilon_audit, mu, threshold, fpr, fnr,
    fpr_upper, fnr_upper, epsilon_assumption_free, epsilon_assumption_free_max, epsilon_upper,
    runs_per_world, audit_mode, confidence, delta, clip_norm, switch_point.
    """
    import time

    upper = upper_bound_epsilon(sigma=sigma, delta=delta)
    out = []
    for b in batch_sizes:
        start = time.perf_counter()
        proc = Process(sigma=sigma, batch_size=int(b), steps=steps, clip_norm=clip_norm, rule=rule, switch_point=switch_point)
        rows = audit_process(
            proc,
            runs_per_world=runs_per_world,
            repetitions=repetitions,
            seed=seed,
            key=("section6", rule, f"{float(sigma):g}", int(b)),
            delta=delta,
            confidence=confidence,
            mode=mode,
            selection_fraction=selection_fraction,
            tables=tables,
        )
        for row in rows:
            out.append(
                {
                    "rule": rule,
                    "sigma": float(sigma),
                    "batch_size": int(b),
                    **row,
                    "epsilon_upper": upper,
                    "confidence": confidence,
                    "delta": delta,
                    "clip_norm": clip_norm,
                    "switch_point": switch_point,
                }
            )
        if log is not None:
            last = [r["epsilon_audit"] for r in rows if r["step"] == steps]
            log(
                f"rule={rule} sigma={sigma:g} B={b}: eps_hat(T={steps}) = {np.mean(last):.3f} ± {np.std(last):.3f} "
                f"({repetitions} reps, R={runs_per_world}/world) in {time.perf_counter() - start:.1f} s"
            )
    return out


def exact_records(
    *,
    rule: str,
    sigmas: list[float],
    batch_sizes: list[int],
    steps: int,
    clip_norm: float,
    switch_point: float,
    delta: float,
    grid: dict,
) -> list[dict]:
    """Exact ε of the last iterate at every step for every (σ, B) of one rule (columns rule, sigma,
    batch_size, step, epsilon_exact, mu_limit, epsilon_gdp_limit, lost_mass, epsilon_upper)."""
    out = []
    for s in sigmas:
        upper = upper_bound_epsilon(sigma=float(s), delta=delta)
        for b in batch_sizes:
            proc = Process(sigma=float(s), batch_size=int(b), steps=steps, clip_norm=clip_norm, rule=rule, switch_point=switch_point)
            eps, lost, mu_limit = exact_epsilon_curve(proc, delta=delta, **grid)
            for t in range(steps):
                out.append(
                    {
                        "rule": rule,
                        "sigma": float(s),
                        "batch_size": int(b),
                        "step": t + 1,
                        "epsilon_exact": float(eps[t]),
                        "mu_limit": float(mu_limit[t]),
                        "epsilon_gdp_limit": gdp_epsilon(mu=float(mu_limit[t]), delta=delta),
                        "lost_mass": float(lost[t]),
                        "epsilon_upper": upper,
                    }
                )
    return out


def exact_tradeoff(p: np.ndarray, pbar: np.ndarray, *, max_points: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Trade-off curve (FPR, FNR) of the likelihood-ratio tests between two discrete laws (Neyman–Pearson):
    cells are declared "member" in decreasing order of p̄/p. Randomisation inside a cell is not used, so the
    points lie on the exact curve of the grid laws."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.log(pbar) - np.log(p)
    order = np.argsort(-np.nan_to_num(ratio, nan=-np.inf), kind="stable")
    fpr = np.concatenate(([0.0], np.cumsum(p[order])))
    fnr = 1.0 - np.concatenate(([0.0], np.cumsum(pbar[order])))
    fpr = np.clip(fpr / fpr[-1], 0, 1)
    fnr = np.clip(fnr, 0, 1)
    if max_points is not None and fpr.size > max_points:
        arc = np.concatenate(([0.0], np.cumsum(np.abs(np.diff(fpr)) + np.abs(np.diff(fnr)))))
        keep = np.unique(np.searchsorted(arc, np.linspace(0.0, arc[-1], max_points)).clip(0, fpr.size - 1))
        fpr, fnr = fpr[keep], fnr[keep]
    return fpr[::-1], fnr[::-1]


def tradeoff_records(
    *,
    sigma: float,
    step: int,
    batch_sizes: list[int],
    steps: int,
    clip_norm: float,
    switch_point: float,
    rule: str,
    runs_per_world: int,
    seed: int,
    delta: float,
    confidence: float,
    max_points: int,
    grid: dict,
) -> list[dict]:
    """fig6b data: for each B, the empirical trade-off curve of the scores θ_step (one repetition), the
    G_μ̂ curve of its paper-mode audit and the exact trade-off curve (columns batch_size, curve, fpr, fnr,
    mu, epsilon_audit, epsilon_exact)."""
    from hsaudit.accounting import gdp_tradeoff
    from hsaudit.audit import empirical_tradeoff

    out = []
    for b in batch_sizes:
        proc = Process(sigma=sigma, batch_size=int(b), steps=step, clip_norm=clip_norm, rule=rule, switch_point=switch_point)
        key = ("section6-tradeoff", rule, f"{float(sigma):g}", int(b))
        worlds = [simulate_scores(proc, runs=runs_per_world, inserted=bool(w), rng=world_rng(seed, *key, 0, w))[-1] for w in (0, 1)]
        audit = gdp_audit_two_sample(worlds[0], worlds[1], gdp_tables(runs_per_world, runs_per_world, confidence=confidence, delta=delta))
        scores = np.concatenate(worlds)
        members = np.repeat([False, True], runs_per_world)
        full_fpr, full_fnr = empirical_tradeoff(scores, members)
        # arc-length points for the linear plot plus log-spaced FPR points for the tail (FPR ≥ 1/R)
        arc_fpr, _ = empirical_tradeoff(scores, members, max_points=max_points)
        tail = np.logspace(np.log10(1.0 / runs_per_world), 0.0, max_points // 4)
        pick = np.unique(np.concatenate([
            np.searchsorted(-full_fpr, -np.concatenate([arc_fpr, tail]), side="left").clip(0, full_fpr.size - 1),
            [0, full_fpr.size - 1],
        ]))
        fpr, fnr = full_fpr[pick], full_fnr[pick]
        law = exact_laws(proc, **grid)
        eps_exact = exact_epsilon(law.p[-1], law.pbar[-1], delta=delta)
        efpr, efnr = exact_tradeoff(law.p[-1], law.pbar[-1])
        alpha = np.unique(np.concatenate([np.linspace(0.0, 1.0, max_points), np.logspace(-8, 0, max_points // 4)]))
        # the exact curve at the same α (it is piecewise linear between likelihood-ratio cells)
        efnr = np.interp(alpha, efpr[::-1], efnr[::-1])
        efpr = alpha
        common = {"batch_size": int(b), "sigma": float(sigma), "step": step, "mu": audit.mu, "epsilon_audit": audit.epsilon, "epsilon_exact": eps_exact, "runs_per_world": runs_per_world}
        for name, xs, ys in (
            ("empirical", fpr, fnr),
            ("gdp_fit", alpha, gdp_tradeoff(alpha, mu=audit.mu)),
            ("exact", efpr, efnr),
        ):
            out.extend({**common, "curve": name, "fpr": float(x), "fnr": float(y)} for x, y in zip(xs, ys))
    return out
