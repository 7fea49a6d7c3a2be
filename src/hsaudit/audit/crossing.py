"""Exact lower confidence bounds on μ from where the empirical trade-off curve crosses rays (docs/audit.md).

Convention: **higher score ⇒ member**; a threshold τ predicts "member" iff score > τ; thresholds lie between
consecutive distinct scores. FP / FN count non-members above / members at or below τ (n₀ and n₁ of them).

The statistic. A *ray* of slope ρ is the line FNR = ρ·FPR through the origin of the trade-off plane. Its
*path* is the sequence of count pairs (k₀, k₁) with k₀ = ⌊n₀t − ½⌋, k₁ = ⌊ρn₁t − ½⌋ as t grows (each step
raises one count; :func:`ray_path`). The empirical curve *crosses* the ray at the first pair of the path for
which some threshold has FP ≤ k₀ and FN ≤ k₁, which holds iff

    x₍ₙ₀₋ₖ₀₎ < y₍ₖ₁₊₁₎          (the (k₀+1)-th largest non-member score is below the (k₁+1)-th smallest member score),

ties included (:func:`first_crossing`). A ray's crossing maps to μ_ρ = Φ⁻¹(1 − t) − Φ⁻¹(ρt), the μ of the GDP
curve through the crossing point (t, ρt) with t = max((k₀ + ½)/n₀, (k₁ + ½)/(ρn₁)).

Validity for any scores (the least-favourable pair). Let the scores' trade-off curve T (over all tests, or
only over thresholds of the score) satisfy T ≥ G_μ, as it does for every post-processing of a μ-GDP
mechanism. Transform every score by z = Φ⁻¹(F₀(score)) (F₀ the non-member CDF; strictly increasing, so no
threshold count changes): non-member z are N(0, 1) and member z are stochastically *smaller* than N(μ, 1),
because P(z > Φ⁻¹(1 − a)) = 1 − T(a) ≤ 1 − G_μ(a). A quantile coupling therefore puts every member score at
or below the score it would have in the Gaussian pair N(0, 1) vs N(μ, 1), with the same non-member scores.
Every statistic here is invariant to increasing maps of the scores and can only grow when a member score
grows or a non-member score falls, so P(statistic ≥ s) is largest for the Gaussian pair (ties only remove
thresholds: the statistic of tied scores is at most that of the same scores with random tie-breaking, a
post-processing). Hence a test of "μ-GDP" that rejects when P_{N(0,1), N(μ,1)}(statistic ≥ observed) ≤ α has
level α for every pair with T ≥ G_μ, and μ̂ = sup{μ : rejected} is a lower confidence bound: P(μ̂ > μ*) ≤ α
for μ* the scores' (hence the mechanism's) GDP parameter. No Gaussian score distribution is assumed; the
Gaussian pair enters only as the extreme point of the null.

``crossing`` (one ray, ρ = 1: FPR = FNR). The statistic is the path index of the crossing, so
P_μ(statistic ≥ observed) = P(x₍ₙ₀₋ₖ₀₎ − w₍ₖ₁₊₁₎ < μ) at the observed (k₀, k₁), with x and w standard normal
samples: the order statistics are Φ⁻¹ of Beta(n₀ − k₀, k₀ + 1) and Beta(k₁ + 1, n₁ − k₁) variables, and the
distribution of the difference is one integral (:func:`crossing_cdf`, bracketed by Riemann sums of a
monotone integrand; the upper one is used, which can only lower μ̂). μ̂ is its α-quantile
(:func:`crossing_mu_lower`). For comparison, the per-rate Clopper–Pearson μ at the same counts is the *sum*
of the two terms' α-quantiles; μ̂ is the α-quantile of their sum, which is larger, and holds jointly.

``rays`` (several rays around the diagonal, ρ ∈ [1/4, 4]). The statistic is the mean of μ_ρ over the rays
(:data:`DEFAULT_RAYS`); its law under the Gaussian pair has no closed form and is simulated:
``draws`` Gaussian pairs (x, w) with members w + μ, the same draws for every μ (each draw's statistic is
non-decreasing in μ, so it exceeds the observed value from a root r_k on). The Monte Carlo p-value
(1 + #{k: r_k ≤ μ})/(draws + 1) is exact at any draws (Besag & Clifford 1989), and μ̂ is the
⌊α(draws + 1)⌋-th smallest root (:func:`rays_mu_lower`). The bound depends on the seed, like a held-out split.

This module uses numpy and scipy only.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import optimize, special

__all__ = [
    "DEFAULT_CALIBRATION_DRAWS",
    "DEFAULT_RAYS",
    "CROSSING_RAYS",
    "RayCrossing",
    "RayPath",
    "crossing_cdf",
    "crossing_mu_lower",
    "first_crossing",
    "minimum_calibration_draws",
    "ray_path",
    "ray_statistic",
    "rays_mu_lower",
]

#: The ray of mode ``crossing``: FNR = FPR.
CROSSING_RAYS = (1.0,)

#: Rays of mode ``rays``: nine slopes FNR/FPR, log-spaced over [1/4, 4] (docs/audit.md, "Tight valid bounds").
DEFAULT_RAYS = tuple(float(r) for r in np.geomspace(0.25, 4.0, 9))

#: Default number of simulated Gaussian pairs of mode ``rays`` (α(draws + 1) is an integer for α = 0.05, 0.01).
DEFAULT_CALIBRATION_DRAWS = 999

# Riemann nodes of crossing_cdf: the bracket is at most 1/nodes wide in probability.
_CDF_NODES = 4096
# Scores simulated at once by rays_mu_lower (memory: 8 bytes each).
_CHUNK_SCORES = 1 << 22
# Bisection tolerance of the rays roots (in μ); the lower end of each bracket is used.
_ROOT_TOL = 1e-7


@dataclass(frozen=True)
class RayPath:
    """The path of count pairs of a set of rays (:func:`ray_path`); row p belongs to ``rays[p]``.

    Attributes:
        rays: slopes ρ = FNR/FPR (> 0).
        k0: [P, L] largest admissible FP at each step (−1 before the first step of its kind).
        k1: [P, L] largest admissible FN.
        mu: [P, L] μ_ρ = Φ⁻¹(1 − t) − Φ⁻¹(ρt) at each step (−inf where t ≥ 1 or ρt ≥ 1).
        n0: non-members.
        n1: members.
    """

    rays: tuple[float, ...]
    k0: np.ndarray
    k1: np.ndarray
    mu: np.ndarray
    n0: int
    n1: int


@dataclass(frozen=True)
class RayCrossing:
    """Where the empirical trade-off curve crosses one ray.

    Attributes:
        index: step of the ray's path at the crossing.
        k0: the largest FP admitted there (some threshold has FP ≤ k0 and FN ≤ k1).
        k1: the largest FN admitted there.
        threshold: such a threshold (midpoint of the (k0+1)-th largest non-member score and the next larger
            distinct score; NaN when k0 ≥ n0 or k1 ≥ n1).
        fp: false positives at ``threshold``.
        fn: false negatives at ``threshold``.
    """

    index: int
    k0: int
    k1: int
    threshold: float
    fp: int
    fn: int


# --------------------------------------------------------------------------------------------------------------
# paths and crossings
# --------------------------------------------------------------------------------------------------------------
def _check_counts(n0: int, n1: int) -> tuple[int, int]:
    a, b = int(n0), int(n1)
    if a != n0 or b != n1 or a < 1 or b < 1:
        raise ValueError(f"n0 and n1 must be positive integers, got {n0!r} and {n1!r}")
    return a, b


def _check_rays(rays: tuple[float, ...]) -> tuple[float, ...]:
    out = tuple(float(r) for r in rays)
    if not out or any(not (r > 0 and math.isfinite(r)) for r in out):
        raise ValueError(f"rays must be positive finite slopes, got {rays!r}")
    return out


@functools.lru_cache(maxsize=16)
def _ray_path_cached(n0: int, n1: int, rays: tuple[float, ...]) -> RayPath:
    length = n0 + n1 + 2
    k0 = np.empty((len(rays), length), dtype=np.int64)
    k1 = np.empty((len(rays), length), dtype=np.int64)
    mu = np.empty((len(rays), length))
    t0 = (np.arange(n0 + 1) + 0.5) / n0
    for p, rho in enumerate(rays):
        t1 = (np.arange(n1 + 1) + 0.5) / (rho * n1)
        ts = np.concatenate([t0, t1])
        order = np.argsort(ts, kind="stable")  # equal t: the FP step first
        is0 = order < n0 + 1
        k0[p] = np.cumsum(is0) - 1
        k1[p] = np.cumsum(~is0) - 1
        t = ts[order]
        with np.errstate(invalid="ignore", divide="ignore"):
            m = -special.ndtri(t) - special.ndtri(rho * t)
        mu[p] = np.where(np.isnan(m), -np.inf, m)
    for a in (k0, k1, mu):
        a.setflags(write=False)
    return RayPath(rays=rays, k0=k0, k1=k1, mu=mu, n0=n0, n1=n1)


def ray_path(n0: int, n1: int, rays: tuple[float, ...] = CROSSING_RAYS) -> RayPath:
    """The paths of count pairs of ``rays`` for n0 non-members and n1 members (cached).

    Step i of ray ρ admits FP ≤ k0[i] and FN ≤ k1[i], with k0 = ⌊n0·t − ½⌋ and k1 = ⌊ρ·n1·t − ½⌋ at the i-th
    value of t where one of them grows (FP first on equal t). The first step has one count at −1 (admits
    nothing), the last is (n0, n1) (admits every threshold); each path has n0 + n1 + 2 steps.

    Args:
        n0: non-members (≥ 1).
        n1: members (≥ 1).
        rays: slopes ρ = FNR/FPR (> 0).

    Returns:
        A :class:`RayPath`.

    Raises:
        ValueError: counts below 1, non-positive or non-finite slopes.

    >>> path = ray_path(2, 2)
    >>> path.k0[0].tolist(), path.k1[0].tolist()
    ([0, 0, 1, 1, 2, 2], [-1, 0, 0, 1, 1, 2])
    """
    a, b = _check_counts(n0, n1)
    return _ray_path_cached(a, b, _check_rays(tuple(rays)))


def _crossing_steps(x: np.ndarray, w: np.ndarray, shift: np.ndarray, path: RayPath) -> np.ndarray:
    """First step of every ray's path at which x₍ₙ₀₋ₖ₀₎ < w₍ₖ₁₊₁₎ + shift, for a batch of sorted samples.

    x: [B, n0] sorted rows, w: [B, n1] sorted rows, shift: [B]. Returns [B, P] step indices. A binary search:
    the condition is monotone along a path (k0 and k1 never decrease), false at step 0 and true at the last.
    """
    n0, n1 = path.n0, path.n1
    b = x.shape[0]
    p, length = path.k0.shape
    x_at, w_at, full, open_ = _path_lookup(n0, n1, path.rays)
    x_flat = x.reshape(-1)
    w_flat = w.reshape(-1)
    x_base = (np.arange(b) * n0)[:, None]
    w_base = (np.arange(b) * n1)[:, None]
    row_base = (np.arange(p) * length)[None, :]
    lo = np.zeros((b, p), dtype=np.int64)
    hi = np.full((b, p), length - 1, dtype=np.int64)
    sh = shift[:, None]
    for _ in range(int(math.ceil(math.log2(length)))):
        mid = (lo + hi) >> 1
        at = row_base + mid
        xi = x_flat[x_base + x_at[at]]
        wi = w_flat[w_base + w_at[at]]
        ok = full[at] | (open_[at] & (xi < wi + sh))
        hi = np.where(ok, mid, hi)
        lo = np.where(ok, lo, mid)
    return hi


@functools.lru_cache(maxsize=64)
def _path_lookup(n0: int, n1: int, rays: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What :func:`_crossing_steps` reads at each step of :func:`ray_path` ``(n0, n1, rays)``, flattened [P·L]: the
    column of x₍ₙ₀₋ₖ₀₎ and of w₍ₖ₁₊₁₎ (k0, k1 clipped into range), "every threshold admitted" (k0 ≥ n0 or k1 ≥ n1)
    and "some threshold may be" (k0, k1 ≥ 0). Once per path instead of clipping and comparing at every step of
    every search (most of a rays audit's time)."""
    path = _ray_path_cached(n0, n1, rays)
    k0, k1 = path.k0.reshape(-1), path.k1.reshape(-1)
    out = (
        (n0 - 1) - np.clip(k0, 0, n0 - 1),
        np.clip(k1, 0, n1 - 1),
        (k0 >= n0) | (k1 >= n1),
        ~((k0 < 0) | (k1 < 0)),
    )
    for a in out:
        a.setflags(write=False)
    return out


def first_crossing(nonmember_sorted: np.ndarray, member_sorted: np.ndarray, path: RayPath) -> list[RayCrossing]:
    """Where the empirical trade-off curve of two sorted score samples crosses each ray of ``path``.

    Args:
        nonmember_sorted: the n0 non-member scores, sorted ascending (float64).
        member_sorted: the n1 member scores, sorted ascending (float64).
        path: :func:`ray_path` ``(n0, n1, rays)``.

    Returns:
        One :class:`RayCrossing` per ray.
    """
    x = np.asarray(nonmember_sorted, dtype=np.float64)
    y = np.asarray(member_sorted, dtype=np.float64)
    steps = _crossing_steps(x[None, :], y[None, :], np.zeros(1), path)[0]
    out = []
    n0, n1 = path.n0, path.n1
    for p, i in enumerate(steps.tolist()):
        k0 = int(path.k0[p, i])
        k1 = int(path.k1[p, i])
        if k0 >= n0 or k1 >= n1:
            out.append(RayCrossing(index=i, k0=k0, k1=k1, threshold=math.nan, fp=n0, fn=0))
            continue
        lo = float(x[n0 - 1 - k0])
        above = np.concatenate([x[x > lo][:1], y[y > lo][:1]])
        tau = lo + (float(above.min()) - lo) / 2.0
        fp = int(np.count_nonzero(x > tau))
        fn = int(np.count_nonzero(y <= tau))
        out.append(RayCrossing(index=i, k0=k0, k1=k1, threshold=tau, fp=fp, fn=fn))
    return out


def ray_statistic(nonmember_sorted: np.ndarray, member_sorted: np.ndarray, path: RayPath) -> float:
    """The statistic of mode ``rays``: the mean over the rays of μ_ρ at each crossing (−inf if any is −inf)."""
    x = np.asarray(nonmember_sorted, dtype=np.float64)[None, :]
    y = np.asarray(member_sorted, dtype=np.float64)[None, :]
    steps = _crossing_steps(x, y, np.zeros(1), path)[0]
    return float(np.mean(path.mu[np.arange(steps.size), steps]))


# --------------------------------------------------------------------------------------------------------------
# mode "crossing": one ray, exact law of a difference of two order statistics
# --------------------------------------------------------------------------------------------------------------
def _check_pair(k0: int, k1: int, n0: int, n1: int) -> None:
    if not (0 <= k0 < n0 and 0 <= k1 < n1):
        raise ValueError(f"counts must satisfy 0 <= k0 < n0 and 0 <= k1 < n1, got k0={k0}, k1={k1}, n0={n0}, n1={n1}")


@functools.lru_cache(maxsize=64)
def _nonmember_nodes(k0: int, n0: int) -> np.ndarray:
    """Φ⁻¹(Q(v)) at v = i/N, i = 0..N−1, for Q the quantile function of x₍ₙ₀₋ₖ₀₎'s uniform, Beta(n0 − k0, k0 + 1);
    computed as −Φ⁻¹ of the Beta(k0 + 1, n0 − k0) quantile at 1 − v (no cancellation near 1)."""
    v = np.arange(_CDF_NODES) / _CDF_NODES
    with np.errstate(divide="ignore"):
        out = -special.ndtri(special.betaincinv(k0 + 1.0, n0 - k0, 1.0 - v))
    out.setflags(write=False)
    return out


def _crossing_cdf_bracket(m: float, k0: int, k1: int, n0: int, n1: int) -> tuple[float, float]:
    a = _nonmember_nodes(k0, n0)
    # P(w₍ₖ₁₊₁₎ > a − m) = P(V > Φ(a − m)) = I_{Φ(m − a)}(n1 − k1, k1 + 1) for V ~ Beta(k1 + 1, n1 − k1)
    # (the complement by symmetry; betainc is faster than betaincc): decreasing in a, so in v.
    g = special.betainc(n1 - k1, k1 + 1.0, special.ndtr(m - a))
    total = float(g.sum())
    n = _CDF_NODES
    # left sums (g at v = i/N) bound the integral of a non-increasing g from above, right sums from below;
    # the right end is g(1) = 0 (a = +inf).
    return (total - float(g[0])) / n, total / n


def crossing_cdf(m: float, *, k0: int, k1: int, n0: int, n1: int) -> float:
    """P(x₍ₙ₀₋ₖ₀₎ < w₍ₖ₁₊₁₎ + m) for x: n0 and w: n1 independent N(0, 1) scores (upper bound, within 1/4096).

    This is the probability that the Gaussian pair N(0, 1) vs N(m, 1) has a threshold with FP ≤ k0 and
    FN ≤ k1, the p-value of mode ``crossing`` (module docstring). Computed as ∫₀¹ P(V > Φ(Φ⁻¹(Q(v)) − m)) dv
    (Q the Beta(n0 − k0, k0 + 1) quantile function, V ~ Beta(k1 + 1, n1 − k1)) by a left Riemann sum of the
    non-increasing integrand, which can only overstate it.

    Args:
        m: the mean of the member scores (any real).
        k0: admitted false positives, 0 ≤ k0 < n0.
        k1: admitted false negatives, 0 ≤ k1 < n1.
        n0: non-members.
        n1: members.

    Returns:
        The probability (upper bound).

    Raises:
        ValueError: counts out of range.
    """
    n0, n1 = _check_counts(n0, n1)
    _check_pair(int(k0), int(k1), n0, n1)
    return _crossing_cdf_bracket(float(m), int(k0), int(k1), n0, n1)[1]


def _term_quantile(k: int, n: int, p: float) -> float:
    """p-quantile of −Φ⁻¹(B), B ~ Beta(k + 1, n − k): −Φ⁻¹ of the Clopper–Pearson upper bound at 1 − p."""
    return float(-special.ndtri(special.betaincinv(k + 1.0, n - k, 1.0 - p)))


@functools.lru_cache(maxsize=4096)  # a pure function of counts: coverage studies revisit the same ones
def crossing_mu_lower(*, k0: int, k1: int, n0: int, n1: int, confidence: float) -> float:
    """Lower confidence bound on μ from one crossing: sup{μ : :func:`crossing_cdf` (μ) ≤ 1 − confidence}.

    The α-quantile (α = 1 − confidence) of x₍ₙ₀₋ₖ₀₎ − w₍ₖ₁₊₁₎ = (−Φ⁻¹(B₀)) + (−Φ⁻¹(B₁)) with independent
    B₀ ~ Beta(k0 + 1, n0 − k0), B₁ ~ Beta(k1 + 1, n1 − k1). It lies between the sum of the two terms'
    α/2-quantiles (the Bonferroni Clopper–Pearson μ) and the sum of their √α-quantiles; the per-rate
    Clopper–Pearson μ of the paper is the sum of the α-quantiles (module docstring).

    Args:
        k0: admitted false positives, 0 ≤ k0 < n0 (k0 ≥ n0 or k1 ≥ n1 gives −inf: every pair crosses there).
        k1: admitted false negatives.
        n0: non-members.
        n1: members.
        confidence: 1 − α, in (0, 1).

    Returns:
        μ̂ (float; may be negative).
    """
    n0, n1 = _check_counts(n0, n1)
    k0, k1 = int(k0), int(k1)
    if k0 >= n0 or k1 >= n1:
        return -math.inf
    _check_pair(k0, k1, n0, n1)
    alpha = 1.0 - float(confidence)
    lo = _term_quantile(k0, n0, alpha / 2.0) + _term_quantile(k1, n1, alpha / 2.0)
    hi = _term_quantile(k0, n0, math.sqrt(alpha)) + _term_quantile(k1, n1, math.sqrt(alpha))

    def excess(m: float) -> float:
        return _crossing_cdf_bracket(m, k0, k1, n0, n1)[1] - alpha

    # The Riemann bracket can shift the root slightly outside [lo, hi]; widen until the signs differ.
    step = max(hi - lo, 1e-3)
    while excess(lo) > 0.0:
        lo -= step
    while excess(hi) < 0.0:
        hi += step
    return float(optimize.brentq(excess, lo, hi, xtol=1e-9, rtol=1e-12))


# --------------------------------------------------------------------------------------------------------------
# mode "rays": mean of several crossings, Monte Carlo calibrated
# --------------------------------------------------------------------------------------------------------------
def minimum_calibration_draws(confidence: float) -> int:
    """Fewest simulated pairs for which the Monte Carlo test of mode ``rays`` can reject at ``confidence``:
    ⌊α(draws + 1)⌋ ≥ 1, i.e. draws ≥ ⌈1/α⌉ − 1 (α = 1 − confidence)."""
    alpha = 1.0 - float(confidence)
    need = math.ceil(1.0 / alpha - 1e-9) - 1
    while math.floor(alpha * (need + 1) + 1e-9) < 1:
        need += 1
    return max(need, 1)


def _draw_roots(seed: int, count: int, path: RayPath, observed: float, lo: float, hi: float) -> np.ndarray:
    """Roots r_k = inf{μ : statistic of draw k ≥ observed} of ``count`` simulated Gaussian pairs, bracketed:
    −inf below ``lo``, ``hi`` above it (both only lower the bound's order statistic)."""
    n0, n1 = path.n0, path.n1
    rng = np.random.default_rng(seed)
    x = np.sort(rng.standard_normal((count, n0)), axis=1)
    w = np.sort(rng.standard_normal((count, n1)), axis=1)
    cols = np.arange(path.k0.shape[0])[None, :]

    def stat(m: np.ndarray) -> np.ndarray:
        steps = _crossing_steps(x, w, m, path)
        return path.mu[cols, steps].mean(axis=1)

    a = np.full(count, lo)
    b = np.full(count, hi)
    below = stat(a) >= observed  # root at or below lo
    above = stat(b) < observed  # root above hi
    while np.max(b - a) > _ROOT_TOL:
        mid = 0.5 * (a + b)
        ok = stat(mid) >= observed
        b = np.where(ok, mid, b)
        a = np.where(ok, a, mid)
    roots = a  # stat(a) < observed: a is a root's lower bound
    roots[below] = -np.inf
    roots[above] = hi
    return roots


def rays_mu_lower(
    nonmember_sorted: np.ndarray,
    member_sorted: np.ndarray,
    *,
    confidence: float,
    rng: np.random.Generator,
    draws: int = DEFAULT_CALIBRATION_DRAWS,
    rays: tuple[float, ...] = DEFAULT_RAYS,
) -> tuple[float, float]:
    """Monte Carlo lower confidence bound on μ from the mean crossing of several rays (mode ``rays``).

    Draws ``draws`` Gaussian pairs (x ~ N(0, 1)^n0, w ~ N(0, 1)^n1), finds for each the smallest shift μ at
    which the statistic of (x, w + μ) reaches the observed one (bisection; the statistic is non-decreasing in
    μ), and returns the j-th smallest, j = ⌊α(draws + 1)⌋: the supremum of the μ whose Monte Carlo p-value
    (1 + #{roots ≤ μ})/(draws + 1) is at most α (module docstring).

    Args:
        nonmember_sorted: non-member scores, sorted ascending.
        member_sorted: member scores, sorted ascending.
        confidence: 1 − α, in (0, 1).
        rng: generator of the simulated pairs.
        draws: simulated pairs (≥ :func:`minimum_calibration_draws`).
        rays: slopes of the rays.

    Returns:
        (μ̂, observed statistic); μ̂ = −inf when the statistic is −inf (no separation on some ray).

    Raises:
        ValueError: too few draws for ``confidence``.
    """
    x = np.asarray(nonmember_sorted, dtype=np.float64)
    y = np.asarray(member_sorted, dtype=np.float64)
    path = ray_path(x.size, y.size, rays)
    k = int(draws)
    need = minimum_calibration_draws(confidence)
    if k != draws or k < need:
        raise ValueError(f"calibration_draws must be an integer >= {need} at confidence {confidence}, got {draws!r}")
    observed = ray_statistic(x, y, path)
    if observed == -math.inf:
        return -math.inf, observed
    j = math.floor((1.0 - float(confidence)) * (k + 1) + 1e-9)
    per_chunk = max(1, min(k, _CHUNK_SCORES // (x.size + y.size)))
    sizes = [min(per_chunk, k - s) for s in range(0, k, per_chunk)]
    seeds = rng.integers(0, 2**63 - 1, size=len(sizes))
    lo, hi = observed - 4.0, observed + 1.0
    while True:
        roots = np.concatenate(
            [_draw_roots(int(s), c, path, observed, lo, hi) for s, c in zip(seeds, sizes, strict=True)]
        )
        mu = float(np.partition(roots, j - 1)[j - 1])
        if mu >= hi and hi < 1e3:  # the bracket's upper end, not a root: widen it rather than report it
            hi += 4.0 * (hi - lo)
            continue
        if mu > -math.inf:
            return mu, observed
        if lo < -1e3:
            return -math.inf, observed
        lo -= 4.0 * (hi - lo)
