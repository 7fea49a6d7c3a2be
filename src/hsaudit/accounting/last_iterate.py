"""The last-iterate heuristic of Steinke, Nasr et al. ("The Last Iterate Advantage", Theorem 1).

For DP-SGD on *linear* losses with only the last iterate released, distinguishing the two neighbouring
datasets is exactly distinguishing (Theorem 1)

    P = Binomial(T, q) + N(0, T σ²)   (canary present)    vs    Q = N(0, T σ²)   (canary absent),

and the heuristic privacy profile is δ_{T,q,σ}(ε) = max(H_{e^ε}(P‖Q), H_{e^ε}(Q‖P)) with
ε_{T,q,σ}(δ) = min{ε ≥ 0 : δ_{T,q,σ}(ε) ≤ δ}.

This module computes it in two independent ways:

* ``method="bisection"`` — the paper's own method (Appendix A.1/A.2): the privacy loss
  f(y) = log Σ_k b_k exp((2 a_k y − a_k²)/(2 s²)) is strictly increasing, so the optimal rejection sets are
  half-lines {y ≥ f⁻¹(ε)} and {y ≤ f⁻¹(−ε)}; f is inverted by bisection and ε(δ) is found by a second
  bisection. Everything is evaluated in log space (log-sum-exp, ``log_ndtr``) so that neither the mixture
  weights nor the Gaussian tails underflow. The paper's pseudocode has exponent typos
  (``(1-q)^{n-k}`` is written ``(1-q)^k``); we use the correct binomial weights.
* ``method="pld"`` — Google's dp-accounting privacy-loss distribution of the mixture-of-Gaussians mechanism
  (``from_mixture_gaussian_mechanism``), as the paper suggests (Section 2).

The mixture functions (:func:`mixture_delta`, :func:`mixture_epsilon`) take arbitrary non-negative atoms, so
they also serve the quadratic-regulariser example of Section 4.2 (:mod:`hsaudit.experiments.steinke.simulations`).

Baselines (Section 2.1): :func:`standard_epsilon` (dp-accounting PLD of T self-composed Poisson-subsampled
Gaussians, add/remove, i.e. releasing all iterates) and :func:`full_batch_epsilon` (Eq. 4: μ = q√T/σ,
μ-GDP closed form), both through :mod:`hsaudit.accounting`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
from scipy import optimize, special

Direction = Literal["both", "pq", "qp"]
Method = Literal["bisection", "pld"]
Neighbouring = Literal["add-remove", "replace-one"]

# Atoms whose weight is below exp(_LOG_WEIGHT_FLOOR) are dropped: their total mass (< (T+1)·e^-110 ≈ 1e-44
# per unit) cannot move δ by a representable amount at any δ this project uses, and dropping them makes
# T = 10,000 fast (only the few hundred binomial atoms near Tq remain).
_LOG_WEIGHT_FLOOR = -110.0


@dataclass(frozen=True)
class Mixture:
    """The pair P = Σ_k w_k N(a_k, s²) vs Q = N(0, s²) with non-negative atoms a_k.

    Attributes:
        atoms: the means a_k ≥ 0 (only those with non-negligible weight are kept).
        log_weights: log w_k, aligned with ``atoms``.
        scale: the common standard deviation s > 0.
    """

    atoms: np.ndarray
    log_weights: np.ndarray
    scale: float

    @classmethod
    def from_weights(cls, atoms: npt.ArrayLike, weights: npt.ArrayLike, scale: float) -> Mixture:
        """Build from atoms and probabilities (validated; negligible atoms dropped).

        Raises:
            ValueError: if the atoms are negative or not finite, the weights are not a probability vector,
                or the scale is not positive.
        """
        a = np.asarray(atoms, dtype=float).ravel()
        w = np.asarray(weights, dtype=float).ravel()
        if a.shape != w.shape or a.size == 0:
            raise ValueError(f"atoms and weights must be non-empty and of equal length, got {a.size} and {w.size}")
        if not np.all(np.isfinite(a)) or np.any(a < 0):
            raise ValueError(f"atoms must be finite and non-negative, got min {a.min()}")
        if np.any(w < 0) or not np.isclose(w.sum(), 1.0, atol=1e-9):
            raise ValueError(f"weights must be non-negative and sum to 1, got sum {w.sum()}")
        if not (np.isfinite(scale) and scale > 0):
            raise ValueError(f"scale must be positive and finite, got {scale}")
        with np.errstate(divide="ignore"):
            lw = np.log(w)
        return cls._pruned(a, lw, float(scale))

    @classmethod
    def _pruned(cls, atoms: np.ndarray, log_weights: np.ndarray, scale: float) -> Mixture:
        keep = log_weights > _LOG_WEIGHT_FLOOR
        return cls(atoms=atoms[keep], log_weights=log_weights[keep], scale=scale)

    @property
    def trivial(self) -> bool:
        """True when P = Q (all the mass sits on the atom 0)."""
        return bool(np.all(self.atoms == 0))

    @functools.cached_property
    def log_mass_at_zero(self) -> float:
        """log P(atom = 0) = f(−∞), the infimum of the privacy loss (−∞ when there is no atom at 0); computed once
        (every inversion of f reads it)."""
        zero = self.atoms == 0
        return float(special.logsumexp(self.log_weights[zero])) if zero.any() else -math.inf


def binomial_mixture(*, steps: int, sampling_rate: float, noise_multiplier: float) -> Mixture:
    """Theorem 1's pair: atoms k = 0..T with Binomial(T, q) weights, scale σ√T.

    Raises:
        ValueError: on T < 1, q ∉ [0, 1] or σ ≤ 0.
    """
    _check_params(steps=steps, sampling_rate=sampling_rate, noise_multiplier=noise_multiplier)
    from scipy import stats  # here: scipy.stats costs ~1 s to import, and the plans import this module

    k = np.arange(steps + 1, dtype=float)
    with np.errstate(divide="ignore"):
        lw = stats.binom.logpmf(k, steps, sampling_rate)
    return Mixture._pruned(k, np.asarray(lw, dtype=float), float(noise_multiplier) * math.sqrt(steps))


def privacy_loss(y: npt.ArrayLike, mixture: Mixture) -> np.ndarray:
    """f(y) = log(P(y)/Q(y)) = log Σ_k w_k exp((2 a_k y − a_k²)/(2 s²)) (App. A.1), by log-sum-exp.

    Strictly increasing in y unless P = Q.
    """
    y = np.asarray(y, dtype=float)
    a, s2 = mixture.atoms, mixture.scale**2
    terms = mixture.log_weights + (2.0 * a * y[..., None] - a * a) / (2.0 * s2)
    return special.logsumexp(terms, axis=-1)


def _scalar_privacy_loss(mixture: Mixture):
    """:func:`privacy_loss` at one float y, as a closure: the bisections call it ~50 times per inversion, where
    scipy's general ``logsumexp`` (array checks, ~0.2 ms a call) cost most of the time; same log-sum-exp (shift by
    the largest term), equal to it to ~1e-15 relative."""
    a, lw, two_s2 = mixture.atoms, mixture.log_weights, 2.0 * mixture.scale**2
    a2 = a * a

    def f(y: float) -> float:
        terms = lw + (2.0 * y * a - a2) / two_s2
        m = terms.max()
        return float(m + math.log(np.exp(terms - m).sum()))

    return f


def _inverse_privacy_loss(value: float, mixture: Mixture) -> float | None:
    """y with f(y) = value, by bracket doubling and bisection (App. A.2 ``finv``); None if value ≤ f(−∞)."""
    if value <= mixture.log_mass_at_zero:
        return None
    f = _scalar_privacy_loss(mixture)
    lo, hi = -mixture.scale, mixture.scale
    while f(lo) > value:
        lo *= 2.0
    while f(hi) < value:
        hi *= 2.0
    return _bisect(f, value, lo, hi)


def _bisect(f, value: float, lo: float, hi: float) -> float:
    """y in [lo, hi] with f(y) = value for an increasing f with f(lo) ≤ value ≤ f(hi), to 1e-13 relative."""
    for _ in range(300):
        mid = 0.5 * (lo + hi)
        if f(mid) < value:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-13 * max(1.0, abs(mid)):
            break
    return 0.5 * (lo + hi)


def _log_diff(log_a: float, log_b: float) -> float:
    """exp(log_a) − exp(log_b), clipped at 0, without cancellation when both are tiny."""
    if log_a == -math.inf or log_b >= log_a:
        return 0.0
    return float(math.exp(log_a) * -math.expm1(log_b - log_a))


def _delta_pq(epsilon: float, mixture: Mixture) -> float:
    # H_{e^ε}(P‖Q) = Σ_k w_k Φ̄((y₊ − a_k)/s) − e^ε Φ̄(y₊/s), y₊ = f⁻¹(ε).
    y = _inverse_privacy_loss(epsilon, mixture)
    s = mixture.scale
    log_p = special.logsumexp(mixture.log_weights + special.log_ndtr((mixture.atoms - y) / s))
    log_q = epsilon + special.log_ndtr(-y / s)
    return _log_diff(float(log_p), float(log_q))


def _delta_qp(epsilon: float, mixture: Mixture) -> float:
    # H_{e^ε}(Q‖P) = Φ(y₋/s) − e^ε Σ_k w_k Φ((y₋ − a_k)/s), y₋ = f⁻¹(−ε); 0 when −ε ≤ f(−∞).
    y = _inverse_privacy_loss(-epsilon, mixture)
    if y is None:
        return 0.0
    s = mixture.scale
    log_q = special.log_ndtr(y / s)
    log_p = epsilon + special.logsumexp(mixture.log_weights + special.log_ndtr((y - mixture.atoms) / s))
    return _log_diff(float(log_q), float(log_p))


def mixture_delta(epsilon: npt.ArrayLike, mixture: Mixture, *, direction: Direction = "both") -> np.ndarray:
    """Hockey-stick divergence δ(ε) of the pair (P, Q) of :class:`Mixture` (App. A.1).

    Args:
        epsilon: ε ≥ 0 (scalar or array).
        mixture: the pair.
        direction: ``"pq"`` for H_{e^ε}(P‖Q), ``"qp"`` for H_{e^ε}(Q‖P), ``"both"`` for their maximum.

    Returns:
        δ(ε) with the shape of ``epsilon``.

    Raises:
        ValueError: on a negative ε or an unknown direction.
    """
    eps = np.asarray(epsilon, dtype=float)
    if np.any(~(eps >= 0)):
        raise ValueError(f"epsilon must be >= 0, got {epsilon}")
    if direction not in ("both", "pq", "qp"):
        raise ValueError(f"direction must be 'both', 'pq' or 'qp', got {direction!r}")
    out = np.empty(eps.shape)
    for idx, e in np.ndenumerate(eps):
        out[idx] = _delta_scalar(float(e), mixture, direction)
    return out


def _delta_scalar(eps: float, mixture: Mixture, direction: Direction) -> float:
    if mixture.trivial:
        return 0.0
    if math.isinf(eps):
        return 0.0
    if direction == "pq":
        return _delta_pq(eps, mixture)
    if direction == "qp":
        return _delta_qp(eps, mixture)
    return max(_delta_pq(eps, mixture), _delta_qp(eps, mixture))


def mixture_epsilon(
    delta: float,
    mixture: Mixture,
    *,
    direction: Direction = "both",
    tol: float = 1e-9,
    solver: Literal["bisection", "brent"] = "bisection",
) -> float:
    """ε(δ) = min{ε ≥ 0 : δ(ε) ≤ δ} by bisection on the decreasing function δ(ε) (App. A.2).

    Unlike the paper's pseudocode, which stops when |δ(ε) − δ| < 1e−9 (coarse at δ = 1e−6), we bisect until
    the ε interval is narrower than ``tol``. ``solver="brent"`` replaces the outer bisection by Brent's method
    on the same bracket (same answer to ``tol``, ~3× fewer evaluations; used for the many mixtures of Figure 5).

    Raises:
        ValueError: if δ ∉ (0, 1).
    """
    _check_delta(delta)
    if mixture.trivial:
        return 0.0
    return _epsilon_for(lambda e: _delta_scalar(e, mixture, direction), delta, tol=tol, solver=solver)


def _epsilon_for(delta_of, delta: float, *, tol: float, solver: str) -> float:
    """min{ε ≥ 0 : δ(ε) ≤ δ} for a decreasing ``delta_of``: bracket by doubling, then bisection or Brent."""
    if delta_of(0.0) <= delta:
        return 0.0
    lo, hi = 0.0, 1.0
    while delta_of(hi) > delta:
        lo, hi = hi, 2.0 * hi
        if hi > 1e4:
            return math.inf
    if solver == "brent":
        g = lambda e: math.log(max(delta_of(e), 1e-300)) - math.log(delta)  # noqa: E731
        return float(optimize.brentq(g, lo, hi, xtol=tol))
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        if delta_of(mid) > delta:
            lo = mid
        else:
            hi = mid
    return hi


# ---- replace-one: a mixture against its mirror image ----------------------------------------------------------------
def mirrored_privacy_loss(y: npt.ArrayLike, mixture: Mixture) -> np.ndarray:
    """L(y) = log(P(y)/Q(y)) of the pair P = Σ_k w_k N(a_k, s²) vs its mirror image Q = Σ_k w_k N(−a_k, s²).

    With M(y) = Σ_k w_k exp((2 a_k y − a_k²)/(2 s²)) (:func:`privacy_loss`), P(y) = φ_s(y) M(y) and
    Q(y) = φ_s(y) M(−y), so L(y) = log M(y) − log M(−y): odd, and strictly increasing unless every atom is 0 (M
    increases, M(−y) decreases, since a_k ≥ 0). The optimal tests are therefore half-lines, and the pair is
    symmetric: H_{e^ε}(P‖Q) = H_{e^ε}(Q‖P) (y ↦ −y swaps P and Q).
    """
    y = np.asarray(y, dtype=float)
    return privacy_loss(y, mixture) - privacy_loss(-y, mixture)


def _inverse_mirrored(value: float, mixture: Mixture) -> float:
    """y ≥ 0 with L(y) = value ≥ 0 (L odd and increasing, L(0) = 0), by bracket doubling and bisection."""
    loss = _scalar_privacy_loss(mixture)
    f = lambda y: loss(y) - loss(-y)  # noqa: E731  (mirrored_privacy_loss at a float)
    lo, hi = 0.0, mixture.scale
    while f(hi) < value:
        lo, hi = hi, 2.0 * hi
    return _bisect(f, value, lo, hi)


def _mirrored_delta_scalar(epsilon: float, mixture: Mixture) -> float:
    # H_{e^ε}(P‖Q) = P(Y > y*) − e^ε Q(Y > y*), y* = L⁻¹(ε): Σ w_k Φ̄((y* − a_k)/s) − e^ε Σ w_k Φ̄((y* + a_k)/s).
    if mixture.trivial or math.isinf(epsilon):
        return 0.0
    y = _inverse_mirrored(epsilon, mixture)
    s, a, lw = mixture.scale, mixture.atoms, mixture.log_weights
    log_p = special.logsumexp(lw + special.log_ndtr((a - y) / s))
    log_q = epsilon + special.logsumexp(lw + special.log_ndtr(-(y + a) / s))
    return _log_diff(float(log_p), float(log_q))


def mirrored_delta(epsilon: npt.ArrayLike, mixture: Mixture) -> np.ndarray:
    """Hockey-stick divergence δ(ε) of P = Σ_k w_k N(a_k, s²) vs Q = Σ_k w_k N(−a_k, s²) (either direction: the
    pair is symmetric, :func:`mirrored_privacy_loss`), closed form at the threshold y* = L⁻¹(ε).

    Raises:
        ValueError: on a negative ε.
    """
    eps = np.asarray(epsilon, dtype=float)
    if np.any(~(eps >= 0)):
        raise ValueError(f"epsilon must be >= 0, got {epsilon}")
    out = np.empty(eps.shape)
    for idx, e in np.ndenumerate(eps):
        out[idx] = _mirrored_delta_scalar(float(e), mixture)
    return out


def mirrored_epsilon(delta: float, mixture: Mixture, *, tol: float = 1e-9) -> float:
    """ε(δ) = min{ε ≥ 0 : δ(ε) ≤ δ} of the mirrored pair (:func:`mirrored_delta`), by bisection to ``tol``.

    Raises:
        ValueError: if δ ∉ (0, 1).
    """
    _check_delta(delta)
    if mixture.trivial:
        return 0.0
    return _epsilon_for(lambda e: _mirrored_delta_scalar(e, mixture), delta, tol=tol, solver="bisection")


def heuristic_delta(
    epsilon: npt.ArrayLike,
    *,
    steps: int,
    sampling_rate: float,
    noise_multiplier: float,
    direction: Direction = "both",
) -> np.ndarray:
    """δ_{T,q,σ}(ε) of Theorem 1 (App. A.1 closed form, log-space numerics)."""
    mix = binomial_mixture(steps=steps, sampling_rate=sampling_rate, noise_multiplier=noise_multiplier)
    return mixture_delta(epsilon, mix, direction=direction)


def heuristic_epsilon(
    delta: float,
    *,
    steps: int,
    sampling_rate: float,
    noise_multiplier: float,
    method: Method = "bisection",
    direction: Direction = "both",
    value_discretization_interval: float = 1e-3,
    neighbouring: Neighbouring = "add-remove",
) -> float:
    """The heuristic ε_{T,q,σ}(δ) of Steinke et al., Theorem 1: what a final-model audit of a correct implementation
    can reach with a worst-case canary, for linear losses.

    Under add-remove the pair is Theorem 1's, Binomial(T, q) + N(0, Tσ²) vs N(0, Tσ²). Under replace-one (x in D
    replaced by x' in D', each present record sampled with probability q at every step) the worst linear losses give
    x the gradient +C·e and x' the gradient −C·e, so the final model's coordinate along e is, in units of C,

        P = Binomial(T, q) + N(0, Tσ²)   (D)    vs    Q = −Binomial(T, q) + N(0, Tσ²)   (D′),

    a mixture against its mirror image (:func:`mirrored_epsilon`). At q = 1 this is N(T, Tσ²) vs N(−T, Tσ²), μ-GDP
    with μ = 2√T/σ; feeding σ/2 into the add-remove pair is the same only there.

    Args:
        delta: target δ ∈ (0, 1).
        steps: number of iterations T ≥ 1.
        sampling_rate: Poisson sampling rate q ∈ [0, 1].
        noise_multiplier: σ > 0 (clipping norm 1).
        method: ``"bisection"`` (App. A) or ``"pld"`` (dp-accounting's mixture-of-Gaussians PLD; pessimistic,
            so it is above the exact value by at most a few discretisation intervals; only ``direction="both"``).
        direction: see :func:`mixture_delta`.
        value_discretization_interval: PLD discretisation (``method="pld"`` only).
        neighbouring: ``"add-remove"`` (Theorem 1's pair) or ``"replace-one"`` (the mirrored pair above; only
            ``method="bisection"``, and ``direction`` does not matter: the pair is symmetric).

    Returns:
        ε ≥ 0; q = 0 gives 0 and q = 1 gives the Gaussian mechanism with noise σ/√T.

    Raises:
        ValueError: on an invalid parameter (the message names it).

    >>> round(heuristic_epsilon(1e-6, steps=3, sampling_rate=0.1, noise_multiplier=1.0), 3)  # paper §4.2
    2.222
    """
    mix = binomial_mixture(steps=steps, sampling_rate=sampling_rate, noise_multiplier=noise_multiplier)
    _check_delta(delta)
    if neighbouring not in ("add-remove", "replace-one"):
        raise ValueError(f"neighbouring must be 'add-remove' or 'replace-one', got {neighbouring!r}")
    if neighbouring == "replace-one":
        if method != "bisection":
            raise ValueError(f"neighbouring='replace-one' supports only method='bisection', got {method!r}")
        return mirrored_epsilon(delta, mix)
    if method == "bisection":
        return mixture_epsilon(delta, mix, direction=direction)
    if method == "pld":
        if direction != "both":
            raise ValueError(f"method='pld' supports only direction='both', got {direction!r}")
        return mixture_epsilon_pld(delta, mix, value_discretization_interval=value_discretization_interval)
    raise ValueError(f"method must be 'bisection' or 'pld', got {method!r}")


def mixture_epsilon_pld(delta: float, mixture: Mixture, *, value_discretization_interval: float = 1e-3) -> float:
    """ε(δ) of a :class:`Mixture` by dp-accounting's ``from_mixture_gaussian_mechanism`` (pessimistic PLD)."""
    _check_delta(delta)
    if mixture.trivial:
        return 0.0
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    weights = np.exp(mixture.log_weights)
    weights = weights / weights.sum()
    pld = pld_lib.from_mixture_gaussian_mechanism(
        standard_deviation=mixture.scale,
        sensitivities=[float(a) for a in mixture.atoms],
        sampling_probs=[float(w) for w in weights],
        value_discretization_interval=value_discretization_interval,
    )
    return float(pld.get_epsilon_for_delta(delta))


def max_heuristic_epsilon(delta: float, *, steps: int, sampling_rate: float, noise_multiplier: float) -> float:
    """max_{t ≤ T} ε_{t,q,σ}(δ): the heuristic made robust to the non-monotonicity in T (Section 4.1)."""
    _check_params(steps=steps, sampling_rate=sampling_rate, noise_multiplier=noise_multiplier)
    return max(
        heuristic_epsilon(delta, steps=t, sampling_rate=sampling_rate, noise_multiplier=noise_multiplier)
        for t in range(1, steps + 1)
    )


def standard_epsilon(
    delta: float,
    *,
    steps: int,
    sampling_rate: float,
    noise_multiplier: float,
    value_discretization_interval: float = 1e-3,
) -> float:
    """Standard (all-iterates) accounting: dp-accounting PLD of T Poisson-subsampled Gaussians, add/remove.

    Delegates to :func:`hsaudit.accounting.gaussian_epsilon` (pessimistic PLD, cached); q = 0 gives 0.
    """
    _check_params(steps=steps, sampling_rate=sampling_rate, noise_multiplier=noise_multiplier)
    _check_delta(delta)
    if sampling_rate == 0:
        return 0.0
    from hsaudit.accounting import gaussian_epsilon

    return float(
        gaussian_epsilon(
            noise_multiplier=noise_multiplier,
            compositions=steps,
            delta=delta,
            sampling_rate=sampling_rate,
            discretization=value_discretization_interval,
        )
    )


def standard_pld(
    *, steps: int, sampling_rate: float, noise_multiplier: float, value_discretization_interval: float = 1e-3
):
    """dp-accounting PLD of T self-composed Poisson-subsampled Gaussian mechanisms (add/remove, sensitivity 1),
    via :func:`hsaudit.accounting.gaussian_pld`."""
    _check_params(steps=steps, sampling_rate=sampling_rate, noise_multiplier=noise_multiplier)
    from hsaudit.accounting import gaussian_pld

    return gaussian_pld(
        noise_multiplier=noise_multiplier,
        compositions=steps,
        sampling_rate=sampling_rate,
        discretization=value_discretization_interval,
    )


def gdp_delta_for(epsilon: npt.ArrayLike, mu: float) -> np.ndarray:
    """μ-GDP privacy profile δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (:func:`hsaudit.accounting.gdp_delta`)."""
    from hsaudit.accounting.gaussian import gdp_delta

    return np.asarray(gdp_delta(np.asarray(epsilon, dtype=float), mu=max(float(mu), 0.0)), dtype=float)


def gdp_epsilon_for(delta: float, mu: float) -> float:
    """ε of μ-GDP at δ (:func:`hsaudit.accounting.gdp_epsilon`); 0 when μ ≤ 0."""
    _check_delta(delta)
    if mu <= 0:
        return 0.0
    from hsaudit.accounting.gaussian import gdp_epsilon

    return float(gdp_epsilon(mu=float(mu), delta=delta))


def full_batch_epsilon(delta: float, *, steps: int, sampling_rate: float, noise_multiplier: float) -> float:
    """Full-batch proxy (Eq. 4): DP-GD with noise σ/q is μ-GDP with μ = q√T/σ (Appendix B)."""
    _check_params(steps=steps, sampling_rate=sampling_rate, noise_multiplier=noise_multiplier)
    mu = sampling_rate * math.sqrt(steps) / noise_multiplier
    return gdp_epsilon_for(delta, mu)


def calibrate(
    func,
    target: float,
    *,
    lo: float = 0.05,
    hi: float = 100.0,
    rtol: float = 1e-6,
    what: str = "noise multiplier",
    start: float | None = None,
) -> float:
    """σ with ``func(σ) = target`` for a decreasing ``func`` (ε as a function of σ).

    The bracket is found by stepping geometrically (×1.5) from ``start`` (default √(lo·hi)) within [lo, hi], so
    that expensive evaluations at extreme σ (e.g. a PLD at tiny σ) are avoided; then Brent's method.

    Raises:
        ValueError: if the target is not reached within [lo, hi].
    """
    f = lambda s: func(s) - target  # noqa: E731
    a = math.sqrt(lo * hi) if start is None else float(start)
    fa = f(a)
    b = a
    if fa > 0:  # ε too large: increase σ
        while True:
            b = min(a * 1.5, hi)
            fb = f(b)
            if fb <= 0:
                break
            if b >= hi:
                raise ValueError(f"cannot calibrate the {what}: target {target} needs a value above {hi}")
            a, fa = b, fb
    else:
        while True:
            b = max(a / 1.5, lo)
            fb = f(b)
            if fb >= 0:
                break
            if b <= lo:
                raise ValueError(f"cannot calibrate the {what}: target {target} needs a value below {lo}")
            a, fa = b, fb
        a, b = b, a
    if f(a) == 0:
        return float(a)
    return float(optimize.brentq(f, min(a, b), max(a, b), rtol=rtol))


def _check_params(*, steps: int, sampling_rate: float, noise_multiplier: float) -> None:
    if isinstance(steps, bool) or int(steps) != steps or steps < 1:
        raise ValueError(f"steps must be an integer >= 1, got {steps}")
    if not (0.0 <= sampling_rate <= 1.0):
        raise ValueError(f"sampling_rate must be in [0, 1], got {sampling_rate}")
    if not (np.isfinite(noise_multiplier) and noise_multiplier > 0):
        raise ValueError(f"noise_multiplier must be positive, got {noise_multiplier}")


def _check_delta(delta: float) -> None:
    if not (0.0 < delta < 1.0):
        raise ValueError(f"delta must be in (0, 1), got {delta}")


__all__ = [
    "Mixture",
    "binomial_mixture",
    "privacy_loss",
    "mixture_delta",
    "mixture_epsilon",
    "mixture_epsilon_pld",
    "mirrored_privacy_loss",
    "mirrored_delta",
    "mirrored_epsilon",
    "heuristic_delta",
    "heuristic_epsilon",
    "max_heuristic_epsilon",
    "standard_epsilon",
    "standard_pld",
    "pld_deltas",
    "full_batch_epsilon",
    "gdp_delta_for",
    "gdp_epsilon_for",
    "calibrate",
    "last_iterate_tradeoff",
]


def delta_curve(
    *,
    steps: int,
    sampling_rate: float,
    noise_multiplier: float,
    epsilons: npt.ArrayLike,
    value_discretization_interval: float = 1e-3,
) -> np.ndarray:
    """δ(ε′) of T composed Poisson-subsampled Gaussians (dp-accounting PLD, add/remove, max of both directions)."""
    pld = standard_pld(
        steps=steps,
        sampling_rate=sampling_rate,
        noise_multiplier=noise_multiplier,
        value_discretization_interval=value_discretization_interval,
    )
    return pld_deltas(pld, epsilons)


def pld_deltas(pld, epsilons: npt.ArrayLike) -> np.ndarray:
    """``pld.get_delta_for_epsilon(epsilons)`` of a dp-accounting PLD, bit for bit, without its Python loop.

    dp-accounting walks the losses and the ascending ε′ in one Python loop (≈ 0.1–1 s for 801 ε′ at
    discretisation 1e-3: most of a σ̂ audit's time). For dense PMFs this replays the same sums vectorised —
    the same sequential additions (``np.cumsum``), the same products — so the result is identical
    (tests/accounting/test_last_iterate.py compares the two bitwise); anything else (a sparse PMF, unsorted or
    scalar ε′) goes to dp-accounting itself.
    """
    from dp_accounting.pld.pld_pmf import DensePLDPmf

    eps = np.asarray(epsilons, dtype=float)
    pmfs = (getattr(pld, "_pmf_remove", None), getattr(pld, "_pmf_add", None))
    if eps.ndim != 1 or not all(isinstance(p, DensePLDPmf) for p in pmfs) or np.any(np.diff(eps) < 0):
        return np.asarray(pld.get_delta_for_epsilon(eps), dtype=float)
    return np.maximum(_dense_deltas(pmfs[0], eps), _dense_deltas(pmfs[1], eps))


def _dense_deltas(pmf, eps: np.ndarray) -> np.ndarray:
    """dp-accounting's ``_get_delta_for_epsilon_vectorized`` on a dense PMF: δ(ε′) = m + Σ_{ℓ>ε′} p_ℓ −
    e^{ε′} Σ_{ℓ>ε′} p_ℓ e^{−ℓ} (m the infinite loss's mass), both sums accumulated from the largest loss down."""
    losses = (np.arange(pmf.size) + pmf._lower_loss) * pmf._discretization
    rev = pmf._probs[::-1]
    upper = np.cumsum(np.concatenate(([pmf._infinity_mass], rev)))
    lower = np.cumsum(np.concatenate(([0.0], rev * np.exp(-losses[::-1]))))
    k = losses.size - np.searchsorted(losses, eps, side="right")  # losses above each ε′
    d = upper[k] - np.exp(eps) * lower[k]
    d[np.isposinf(eps)] = pmf._infinity_mass
    return d


def linear_tradeoff(alpha: npt.ArrayLike, *, steps: int, sampling_rate: float, noise_multiplier: float) -> np.ndarray:
    """Exact trade-off of linear losses (last iterate): null N(0, Tσ²), alternative Σ_k Bin(k; T, q) N(k, Tσ²).

    The likelihood ratio is increasing in y, so the optimal test rejects for y ≥ c: α = Φ̄(c/s),
    β = Σ_k w_k Φ((c − k)/s) with s = σ√T.
    """
    mix = binomial_mixture(steps=steps, sampling_rate=sampling_rate, noise_multiplier=noise_multiplier)
    a = np.clip(np.asarray(alpha, dtype=float), 1e-300, 1.0)
    c = mix.scale * -special.ndtri(a)  # Φ̄⁻¹(a) (= scipy.stats.norm.isf, bit for bit)
    w = np.exp(mix.log_weights)
    return np.sum(w * special.ndtr((c[..., None] - mix.atoms) / mix.scale), axis=-1)


def last_iterate_tradeoff(
    alpha: npt.ArrayLike, *, steps: int, sampling_rate: float, noise_multiplier: float, grid: int = 4000
) -> np.ndarray:
    """Symmetric trade-off curve of Theorem 1's pair, min(f(α), f⁻¹(α)).

    f is the Neyman–Pearson curve of N(0, Tσ²) vs Σ_k Bin(k; T, q) N(k, Tσ²)
    (:func:`hsaudit.accounting.last_iterate.linear_tradeoff`); f⁻¹ is the curve with the roles of the two distributions
    swapped. The heuristic ε(δ) takes the max of δ over both directions, so this lower envelope is the curve
    whose (ε, δ) profile is the heuristic's, as dp-accounting's symmetric PLD curve is for the all-iterates family.
    f⁻¹ is interpolated (log x against log f) on ``grid`` log-spaced points per tail.
    """

    a = np.asarray(alpha, dtype=float)
    kw = dict(steps=steps, sampling_rate=sampling_rate, noise_multiplier=noise_multiplier)
    f = linear_tradeoff(a, **kw)
    xg = np.unique(
        np.concatenate(
            [np.geomspace(1e-300, 1e-20, 200), np.geomspace(1e-20, 0.5, grid), 1 - np.geomspace(1e-16, 0.5, grid)]
        )
    )
    fg = linear_tradeoff(xg, **kw)
    order = np.argsort(fg, kind="stable")
    with np.errstate(divide="ignore"):
        lf = np.log(np.maximum(fg[order], 1e-300))
        finv = np.exp(np.interp(np.log(np.maximum(a, 1e-300)), lf, np.log(xg[order])))
    return np.minimum(f, finv)
