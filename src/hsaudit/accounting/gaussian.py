"""Privacy accounting: μ-GDP closed forms and dp-accounting privacy-loss distributions (upper bounds).

The audits of Cebere et al. (2025, §1 "Upper bound") are compared against the accountant's ε. With a fixed,
known minibatch sequence (sampling rate q = 1) and one Gaussian composition per insertion step, DP-SGD with
noise multiplier σ is exactly μ-GDP with μ = √T/σ (Dong, Roth & Su 2022, Corollary 3.3), whose privacy
profile is (Dong et al., Corollary 2.13)

    δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2).

For q < 1 (Poisson subsampling) there is no closed form; the numerical accountant is dp-accounting's
privacy-loss distribution (PLD, Koskela et al. 2020; Doroshenko et al. 2022, "connect the dots"), with the
add/remove neighbouring relation and a pessimistic discretisation (an upper bound on ε).

Conventions: the sensitivity is 1 (the noise multiplier is σ = standard deviation / sensitivity); δ in (0, 1);
a composition count of 0 means no privacy loss (ε = 0).

Trade-off curves: of μ-GDP (:func:`gdp_tradeoff`), of any privacy profile δ(ε′) (:func:`tradeoff_from_deltas`),
and of a family of composed subsampled Gaussians tabulated over σ (:class:`PldTable`, :func:`sigma_for_epsilon`,
:func:`pld_tradeoff`; Annamalai 2024), the curves the audits of :mod:`hsaudit.audit` compare with.

This module uses numpy, scipy and dp-accounting only (no torch).
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
from scipy import optimize, special

if TYPE_CHECKING:  # the tables come from pandas; accounting itself does not import it
    import pandas as pd

__all__ = [
    "calibrate_noise",
    "epsilon_from_delta_curve",
    "tradeoff_from_deltas",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_pld",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_mu",
    "gdp_tradeoff",
    "mixture_gaussian_epsilon",
    "mixture_gaussian_pld",
    "PldTable",
    "default_epsilon_grid",
    "pld_tradeoff",
    "sigma_for_epsilon",
]

#: Default discretisation interval of the privacy loss in dp-accounting PLDs (its own default).
DEFAULT_DISCRETIZATION = 1e-4


# --------------------------------------------------------------------------------------------------------------
# validation helpers
# --------------------------------------------------------------------------------------------------------------
def _check_delta(delta: float) -> float:
    delta = float(delta)
    if not 0.0 < delta < 1.0:  # also rejects NaN
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    return delta


def _check_noise_multiplier(noise_multiplier: float) -> float:
    sigma = float(noise_multiplier)
    if not sigma > 0.0 or math.isinf(sigma):
        raise ValueError(f"noise_multiplier must be a positive finite number, got {noise_multiplier}")
    return sigma


def _check_compositions(compositions: int) -> int:
    try:
        t = int(compositions)
    except (TypeError, ValueError):
        raise ValueError(f"compositions must be a non-negative integer, got {compositions!r}") from None
    if t != compositions or t < 0:
        raise ValueError(f"compositions must be a non-negative integer, got {compositions!r}")
    return t


def _check_sampling_rate(sampling_rate: float) -> float:
    q = float(sampling_rate)
    if not 0.0 < q <= 1.0:
        raise ValueError(f"sampling_rate must be in (0, 1], got {sampling_rate}")
    return q


def _check_discretization(discretization: float) -> float:
    d = float(discretization)
    if not 0.0 < d < 1.0:
        raise ValueError(f"discretization must be in (0, 1), got {discretization}")
    return d


def _check_mu(mu: float) -> float:
    m = float(mu)
    if math.isnan(m):
        raise ValueError(f"mu must be a number, got {mu}")
    return m


# --------------------------------------------------------------------------------------------------------------
# μ-GDP closed forms
# --------------------------------------------------------------------------------------------------------------
def gdp_mu(*, noise_multiplier: float, compositions: int) -> float:
    """μ of T adaptive compositions of the Gaussian mechanism with noise multiplier σ: μ = √T/σ.

    Dong, Roth & Su (2022), Corollary 3.3; Cebere et al. §1 "Upper bound" (one composition per insertion).

    Args:
        noise_multiplier: σ, the noise standard deviation divided by the sensitivity (> 0).
        compositions: T, the number of Gaussian compositions (insertion steps), ≥ 0.

    Returns:
        μ ≥ 0.

    Raises:
        ValueError: σ not positive and finite, or T not a non-negative integer.

    >>> gdp_mu(noise_multiplier=4.0, compositions=250)  # doctest: +ELLIPSIS
    3.952...
    """
    sigma = _check_noise_multiplier(noise_multiplier)
    t = _check_compositions(compositions)
    return math.sqrt(t) / sigma


def _log_gdp_delta(epsilon: np.ndarray, mu: float) -> np.ndarray:
    """log δ(ε) of μ-GDP for μ > 0 finite, stable for large ε (both terms are formed in logs)."""
    a = -epsilon / mu + mu / 2.0
    b = -epsilon / mu - mu / 2.0
    log_a = special.log_ndtr(a)
    log_b = epsilon + special.log_ndtr(b)
    # δ = Φ(a)·(1 − exp(log_b − log_a)); log_b < log_a for every finite ε when μ > 0.
    with np.errstate(divide="ignore", invalid="ignore"):
        diff = np.minimum(log_b - log_a, 0.0)
        return log_a + np.log(-np.expm1(diff))


def gdp_delta(epsilon: npt.ArrayLike, *, mu: float) -> np.ndarray | float:
    """Privacy profile of μ-GDP: δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2).

    Dong, Roth & Su (2022), Corollary 2.13; Cebere et al. Appendix A (the audit's ε conversion). The two
    terms are computed in logs (``log_ndtr``) so that δ stays accurate (relative error ~1e-12) for large ε,
    where both terms are tiny and nearly equal.

    Args:
        epsilon: ε, scalar or array (any real; δ decreases in ε).
        mu: μ ≥ 0 (μ ≤ 0 means perfect privacy: δ = 0; μ = inf means no privacy: δ = 1).

    Returns:
        δ(ε), a float for scalar input, else an array of the input's shape.

    Raises:
        ValueError: ε or μ is NaN.

    >>> round(gdp_delta(0.0, mu=1.0), 4)  # 2Φ(1/2) − 1, the total variation distance
    0.3829
    """
    m = _check_mu(mu)
    eps = np.asarray(epsilon, dtype=float)
    if np.isnan(eps).any():
        raise ValueError("epsilon must not be NaN")
    if m <= 0.0:
        out = np.zeros_like(eps)
    elif math.isinf(m):
        out = np.ones_like(eps)
    else:
        out = np.exp(_log_gdp_delta(eps, m))
        out = np.where(np.isposinf(eps), 0.0, out)
    return float(out) if out.ndim == 0 else out


def gdp_epsilon(*, mu: float, delta: float) -> float:
    """ε of μ-GDP at δ: the root of δ(ε) = δ (ε ≥ 0), the audit's conversion μ̂ → ε̂.

    Cebere et al. §1 step 5 / Nasr et al. (2023). δ(ε) decreases in ε, so the root is unique; it is found
    by Brent's method on log δ(ε) − log δ (well conditioned over the whole range, including the ε ≈ 40–50
    that μ ≈ 6 gives), after bracketing by doubling.

    Limits: μ ≤ 0 → 0 (no evidence of leakage); μ = inf → inf; if δ(0) ≤ δ the result is 0.

    Args:
        mu: μ (any real or ±inf; NaN is an error).
        delta: δ in (0, 1).

    Returns:
        ε ≥ 0.

    Raises:
        ValueError: δ outside (0, 1) or μ NaN.

    >>> round(gdp_epsilon(mu=gdp_mu(noise_multiplier=4, compositions=250), delta=1e-5), 2)
    24.0
    """
    d = _check_delta(delta)
    m = _check_mu(mu)
    if m <= 0.0:
        return 0.0
    if math.isinf(m):
        return math.inf
    log_target = math.log(d)

    def f(eps: float) -> float:
        return float(_log_gdp_delta(np.asarray(eps), m)) - log_target

    if f(0.0) <= 0.0:
        return 0.0
    # μ-GDP is (ε, δ)-DP with ε ≈ μ²/2 + μ√(2 log(1/δ)); start the bracket there and double as needed.
    hi = max(1.0, 0.5 * m * m + m * math.sqrt(2.0 * math.log(1.0 / d)))
    while f(hi) > 0.0:
        hi *= 2.0
        if hi > 1e12:  # pragma: no cover - cannot happen for finite μ
            return math.inf
    return float(optimize.brentq(f, 0.0, hi, xtol=1e-12, rtol=4 * np.finfo(float).eps, maxiter=200))


def gdp_tradeoff(alpha: npt.ArrayLike, *, mu: float) -> np.ndarray:
    """Trade-off function of μ-GDP: G_μ(α) = Φ(Φ⁻¹(1 − α) − μ), the smallest FNR at FPR α.

    Dong, Roth & Su (2022), Definition 2.2; Cebere et al. Appendix E (fig6).

    Args:
        alpha: FPR values in [0, 1].
        mu: μ (μ ≤ 0 gives 1 − α, perfect privacy).

    Returns:
        The FNR values, same shape as ``alpha``.

    Raises:
        ValueError: α outside [0, 1] or NaN, μ NaN.
    """
    m = _check_mu(mu)
    a = np.asarray(alpha, dtype=float)
    if np.isnan(a).any() or (a < 0).any() or (a > 1).any():
        raise ValueError("alpha must be in [0, 1]")
    m = max(m, 0.0)
    # ndtri(1 − α) loses precision for tiny α; −ndtri(α) does not.
    with np.errstate(divide="ignore"):
        return special.ndtr(-special.ndtri(a) - m)


# --------------------------------------------------------------------------------------------------------------
# dp-accounting privacy loss distributions
# --------------------------------------------------------------------------------------------------------------
def _pld_module():
    from dp_accounting.pld import privacy_loss_distribution

    return privacy_loss_distribution


@functools.lru_cache(maxsize=256)
def _gaussian_pld_cached(sigma: float, t: int, q: float, disc: float):
    pld = _pld_module()
    if t == 0:
        return pld.identity(value_discretization_interval=disc)
    single = _single_gaussian_pld(sigma, q, disc)
    return single.self_compose(t) if t > 1 else single


def _single_gaussian_pld(sigma: float, q: float, disc: float):
    """``from_gaussian_mechanism(sigma, sensitivity=1, value_discretization_interval=disc, sampling_prob=q,
    pessimistic_estimate=True)``, bit for bit, with :class:`_GaussianLoss` in place of dp-accounting's
    ``GaussianPrivacyLoss``: its Python loop over the ε′ grid (one ``inverse_privacy_loss`` per point, ≈ 10 µs each,
    ≈ 0.2 s per PLD at discretisation 1e-3) was most of a σ̂ audit's or a calibration's time. The same construction
    as dp-accounting's ``_pld_for_subsampled_mechanism`` (remove, then add when q < 1); dp-accounting itself when its
    private builder is missing. tests/accounting/test_gaussian.py compares the two bitwise."""
    from dp_accounting.pld import privacy_loss_mechanism as plm

    pld = _pld_module()
    build = getattr(pld, "_create_pld_pmf_from_monotone_privacy_loss", None)
    if build is None:
        return pld.from_gaussian_mechanism(
            standard_deviation=sigma,
            sensitivity=1.0,
            value_discretization_interval=disc,
            sampling_prob=q,
            pessimistic_estimate=True,
        )

    def pmf(adjacency):
        loss = _gaussian_loss_class()(sigma, sensitivity=1.0, pessimistic_estimate=True, sampling_prob=q,
                                      adjacency_type=adjacency)  # fmt: skip
        return build(loss, pessimistic_estimate=True, value_discretization_interval=disc, use_connect_dots=True)

    remove = pmf(plm.AdjacencyType.REMOVE)
    if q == 1.0:
        return pld.PrivacyLossDistribution(remove)
    return pld.PrivacyLossDistribution(remove, pmf(plm.AdjacencyType.ADD))


@functools.cache
def _gaussian_loss_class():
    """dp-accounting's ``GaussianPrivacyLoss`` with ``get_delta_for_epsilon`` vectorised over the ε′ (a class built
    on first use: dp-accounting is imported only when a PLD is)."""
    from dp_accounting.pld import privacy_loss_mechanism as plm

    class _GaussianLoss(plm.GaussianPrivacyLoss):
        def get_delta_for_epsilon(self, epsilon):
            # dp-accounting's AdditiveNoisePrivacyLoss.get_delta_for_epsilon with the cut-offs x = inverse_privacy_loss(ε′)
            # computed for all ε′ at once, by the same operations in the same order (so the same floats).
            epsilons = np.asarray(epsilon, dtype=float)
            q, add = self.sampling_prob, self.adjacency_type == plm.AdjacencyType.ADD
            if epsilons.ndim != 1 or self.adjacency_type not in (plm.AdjacencyType.ADD, plm.AdjacencyType.REMOVE):
                return super().get_delta_for_epsilon(epsilon)
            deltas = np.zeros_like(epsilons, dtype=float)
            if q == 1.0:
                inverse = np.full_like(epsilons, True, dtype=bool)
            elif add:
                inverse = epsilons < -math.log1p(-q)
            else:
                inverse = epsilons > math.log1p(-q)
                deltas[~inverse] = -np.expm1(epsilons[~inverse])
            x = self._inverse_privacy_losses(epsilons[inverse], add)
            if x is None:  # a loss out of range: dp-accounting's own loop, and its error
                return super().get_delta_for_epsilon(epsilon)
            deltas[inverse] = self.mu_upper_cdf(x) - np.exp(epsilons[inverse] + self.mu_lower_log_cdf(x))
            return np.clip(deltas, 0, 1)

        def _inverse_privacy_losses(self, losses: np.ndarray, add: bool) -> np.ndarray | None:
            # inverse_privacy_loss elementwise (_inverse_privacy_loss_add / _remove and common.log_a_times_exp_b_plus_c
            # with a = 1/q > 0 > c = 1 − 1/q); None where dp-accounting would raise.
            q, s, var = self.sampling_prob, self.sensitivity, self._standard_deviation**2
            if q == 1.0:
                plain = losses
            else:
                edge = -math.log(1 - q) if add else math.log(1 - q)
                diff = np.abs(edge - losses)  # math.isclose(losses, edge) elementwise
                close = (diff <= abs(1e-9 * edge)) | (diff <= np.abs(1e-9 * losses))
                if np.any(~close & ((losses > edge) if add else (losses <= edge))):
                    return None
                b = -losses if add else losses
                a, c = 1 / q, 1 - 1 / q
                d, log_c = b + np.log(a), np.log(-c)
                if np.any(~close & (log_c >= d)):
                    return None
                with np.errstate(divide="ignore", invalid="ignore"):
                    value = np.where(b == 0, np.log(a + c), d + np.log1p(-np.exp(log_c - d)))
                plain = -value if add else value
                plain = np.where(close, math.inf if add else -math.inf, plain)
            x = -0.5 * s - plain * var / s
            return s + x if add else x

    return _GaussianLoss


def gaussian_pld(
    *,
    noise_multiplier: float,
    compositions: int,
    sampling_rate: float = 1.0,
    discretization: float = DEFAULT_DISCRETIZATION,
):
    """dp-accounting PLD of T compositions of the (Poisson-subsampled) Gaussian mechanism.

    The add/remove neighbouring relation (both directions are tracked when q < 1, where the PLD is
    asymmetric), pessimistic "connect-the-dots" discretisation (an upper bound on ε). Results are cached
    (PLD objects are not modified by their queries).

    Args:
        noise_multiplier: σ (> 0).
        compositions: T ≥ 0 (0 gives the identity PLD).
        sampling_rate: q in (0, 1]; 1 = no subsampling (then exactly μ-GDP with μ = √T/σ).
        discretization: the privacy-loss discretisation interval (dp-accounting's default 1e-4).

    Returns:
        A ``dp_accounting.pld.privacy_loss_distribution.PrivacyLossDistribution``.

    Raises:
        ValueError: a parameter out of range.
    """
    return _gaussian_pld_cached(
        _check_noise_multiplier(noise_multiplier),
        _check_compositions(compositions),
        _check_sampling_rate(sampling_rate),
        _check_discretization(discretization),
    )


def gaussian_epsilon(
    *,
    noise_multiplier: float,
    compositions: int,
    delta: float,
    sampling_rate: float = 1.0,
    discretization: float = DEFAULT_DISCRETIZATION,
) -> float:
    """ε at δ of T (subsampled) Gaussian compositions, from the dp-accounting PLD (an upper bound).

    Cebere et al. §1 "Upper bound": with q = 1 and T = 250 insertions at σ = 4, ε = 24.00 at δ = 1e−5; this
    equals :func:`gdp_epsilon` of :func:`gdp_mu` up to the PLD's discretisation (~1e−3).

    Args:
        noise_multiplier: σ (> 0).
        compositions: T ≥ 0.
        delta: δ in (0, 1).
        sampling_rate: q in (0, 1].
        discretization: PLD discretisation interval.

    Returns:
        ε ≥ 0.

    Raises:
        ValueError: a parameter out of range.
    """
    d = _check_delta(delta)
    pld = gaussian_pld(
        noise_multiplier=noise_multiplier,
        compositions=compositions,
        sampling_rate=sampling_rate,
        discretization=discretization,
    )
    return max(0.0, float(pld.get_epsilon_for_delta(d)))


def gaussian_delta(
    epsilon: float,
    *,
    noise_multiplier: float,
    compositions: int,
    sampling_rate: float = 1.0,
    discretization: float = DEFAULT_DISCRETIZATION,
) -> float:
    """δ at ε of T (subsampled) Gaussian compositions, from the dp-accounting PLD (an upper bound).

    Args:
        epsilon: ε (a real number).
        noise_multiplier: σ (> 0).
        compositions: T ≥ 0.
        sampling_rate: q in (0, 1].
        discretization: PLD discretisation interval.

    Returns:
        δ in [0, 1].

    Raises:
        ValueError: a parameter out of range or ε NaN.
    """
    eps = float(epsilon)
    if math.isnan(eps):
        raise ValueError("epsilon must not be NaN")
    pld = gaussian_pld(
        noise_multiplier=noise_multiplier,
        compositions=compositions,
        sampling_rate=sampling_rate,
        discretization=discretization,
    )
    return float(min(1.0, max(0.0, pld.get_delta_for_epsilon(eps))))


@functools.lru_cache(maxsize=128)
def _mixture_pld_cached(sd: float, sens: tuple[float, ...], probs: tuple[float, ...], disc: float, t: int):
    pld = _pld_module()
    if t == 0:
        return pld.identity(value_discretization_interval=disc)
    single = pld.from_mixture_gaussian_mechanism(
        standard_deviation=sd,
        sensitivities=list(sens),
        sampling_probs=list(probs),
        value_discretization_interval=disc,
        pessimistic_estimate=True,
    )
    return single.self_compose(t) if t > 1 else single


def mixture_gaussian_pld(
    *,
    standard_deviation: float,
    sensitivities: Sequence[float],
    probabilities: Sequence[float],
    discretization: float = DEFAULT_DISCRETIZATION,
    compositions: int = 1,
):
    """dp-accounting PLD of the mixture-of-Gaussians mechanism (optionally self-composed).

    The mechanism outputs N(s, sd²) with the sensitivity s drawn from ``sensitivities`` with the given
    ``probabilities`` on the neighbouring dataset and N(0, sd²) otherwise (Choquette-Choo et al. 2024,
    dp-accounting ``from_mixture_gaussian_mechanism``); add and remove directions are both tracked.

    Args:
        standard_deviation: noise standard deviation (> 0).
        sensitivities: support of the sensitivity distribution (1-D, finite).
        probabilities: its probabilities (same length, non-negative, summing to 1).
        discretization: PLD discretisation interval.
        compositions: number of self-compositions (≥ 0, default 1).

    Returns:
        A ``PrivacyLossDistribution``.

    Raises:
        ValueError: lengths differ, probabilities invalid, standard deviation not positive.
    """
    sd = _check_noise_multiplier(standard_deviation)
    sens = np.asarray(sensitivities, dtype=float).ravel()
    probs = np.asarray(probabilities, dtype=float).ravel()
    if sens.size == 0 or sens.size != probs.size:
        raise ValueError(
            f"sensitivities and probabilities must be non-empty and of equal length, got {sens.size} and {probs.size}"
        )
    if not np.isfinite(sens).all():
        raise ValueError(f"sensitivities must be finite, got {sens.tolist()}")
    if (probs < 0).any() or not np.isclose(probs.sum(), 1.0, rtol=0, atol=1e-9):
        raise ValueError(f"probabilities must be non-negative and sum to 1, got {probs.tolist()}")
    return _mixture_pld_cached(
        sd,
        tuple(sens.tolist()),
        tuple(probs.tolist()),
        _check_discretization(discretization),
        _check_compositions(compositions),
    )


def mixture_gaussian_epsilon(
    *,
    standard_deviation: float,
    sensitivities: Sequence[float],
    probabilities: Sequence[float],
    delta: float,
    discretization: float = DEFAULT_DISCRETIZATION,
    compositions: int = 1,
) -> float:
    """ε at δ of the mixture-of-Gaussians mechanism (see :func:`mixture_gaussian_pld`).

    Args:
        standard_deviation: noise standard deviation (> 0).
        sensitivities: support of the sensitivity distribution.
        probabilities: its probabilities.
        delta: δ in (0, 1).
        discretization: PLD discretisation interval.
        compositions: number of self-compositions.

    Returns:
        ε ≥ 0.

    Raises:
        ValueError: see :func:`mixture_gaussian_pld`; δ outside (0, 1).
    """
    d = _check_delta(delta)
    pld = mixture_gaussian_pld(
        standard_deviation=standard_deviation,
        sensitivities=sensitivities,
        probabilities=probabilities,
        discretization=discretization,
        compositions=compositions,
    )
    return max(0.0, float(pld.get_epsilon_for_delta(d)))


# --------------------------------------------------------------------------------------------------------------
# calibration and tabulated profiles
# --------------------------------------------------------------------------------------------------------------
def _gdp_mu_for_epsilon(epsilon: float, delta: float) -> float:
    """The μ whose μ-GDP ε at δ equals ``epsilon`` (ε increases in μ)."""
    lo, hi = 1e-8, 1.0
    while gdp_epsilon(mu=hi, delta=delta) < epsilon:
        hi *= 2.0
    return float(optimize.brentq(lambda m: gdp_epsilon(mu=m, delta=delta) - epsilon, lo, hi, xtol=1e-13, rtol=1e-13))


@functools.lru_cache(maxsize=512)
def _calibrate_pld(epsilon: float, delta: float, t: int, q: float, rtol: float, disc: float) -> float:
    def f(log_sigma: float) -> float:
        eps = gaussian_epsilon(
            noise_multiplier=math.exp(log_sigma),
            compositions=t,
            delta=delta,
            sampling_rate=q,
            discretization=disc,
        )
        return eps - epsilon

    # ε decreases in σ: bracket [lo, hi] with f(lo) > 0 > f(hi).
    lo, hi = math.log(0.3), math.log(3.0)
    while f(lo) <= 0.0:
        lo -= 1.0
        if lo < math.log(1e-3):
            raise ValueError(f"epsilon={epsilon} is not reachable with noise_multiplier >= 1e-3")
    while f(hi) > 0.0:
        hi += 1.0
        if hi > math.log(1e5):
            raise ValueError(f"epsilon={epsilon} needs noise_multiplier > 1e5")
    return math.exp(optimize.brentq(f, lo, hi, xtol=rtol))


def calibrate_noise(
    *,
    epsilon: float,
    delta: float,
    compositions: int,
    sampling_rate: float = 1.0,
    rtol: float = 1e-4,
    discretization: float = DEFAULT_DISCRETIZATION,
) -> float:
    """The noise multiplier σ for which T (subsampled) Gaussian compositions are (ε, δ)-DP.

    For q = 1 the mechanism is μ-GDP with μ = √T/σ, so σ = √T/μ(ε, δ) with μ(ε, δ) from inverting
    :func:`gdp_epsilon` (exact up to root-finding precision). For q < 1, Brent's method on log σ over the
    dp-accounting PLD ε (pessimistic, hence the returned σ is slightly conservative); relative precision
    ``rtol`` in σ. Used by the Yoon et al. and Annamalai experiments to set σ from a target ε.

    Args:
        epsilon: target ε (> 0).
        delta: δ in (0, 1).
        compositions: T ≥ 1.
        sampling_rate: q in (0, 1].
        rtol: relative tolerance on σ for q < 1.
        discretization: PLD discretisation interval for q < 1.

    Returns:
        σ > 0.

    Raises:
        ValueError: ε not positive and finite, T < 1, or other parameters out of range.
    """
    eps = float(epsilon)
    if not eps > 0.0 or math.isinf(eps):
        raise ValueError(f"epsilon must be positive and finite, got {epsilon}")
    d = _check_delta(delta)
    t = _check_compositions(compositions)
    if t < 1:
        raise ValueError(f"compositions must be >= 1 to calibrate noise, got {compositions}")
    q = _check_sampling_rate(sampling_rate)
    if not 0.0 < rtol < 0.1:
        raise ValueError(f"rtol must be in (0, 0.1), got {rtol}")
    if q == 1.0:
        return math.sqrt(t) / _gdp_mu_for_epsilon(eps, d)
    return _calibrate_pld(eps, d, t, q, float(rtol), _check_discretization(discretization))


def epsilon_from_delta_curve(epsilons: npt.ArrayLike, deltas: npt.ArrayLike, *, delta: float) -> float:
    """The smallest ε with δ(ε) ≤ ``delta`` on a tabulated, non-increasing privacy profile.

    Linear interpolation of log δ between grid points (a privacy profile is convex in ε and log δ is close
    to linear in the tail, so this is accurate on a fine grid). Used for exact profiles computed
    numerically (e.g. the Section 6 process).

    Args:
        epsilons: increasing grid of ε values.
        deltas: δ(ε) on that grid (non-increasing, in [0, 1]).
        delta: target δ in (0, 1).

    Returns:
        ε; ``epsilons[0]`` if already δ(ε₀) ≤ δ, inf if δ is never reached on the grid (with a warning).

    Raises:
        ValueError: arrays of different lengths, non-increasing ε grid, NaN values, δ outside (0, 1).
    """
    d = _check_delta(delta)
    e = np.asarray(epsilons, dtype=float).ravel()
    p = np.asarray(deltas, dtype=float).ravel()
    if e.size == 0 or e.size != p.size:
        raise ValueError(f"epsilons and deltas must be non-empty and of equal length, got {e.size} and {p.size}")
    if np.isnan(e).any() or np.isnan(p).any():
        raise ValueError("epsilons and deltas must not contain NaN")
    if e.size > 1 and not (np.diff(e) > 0).all():
        raise ValueError("epsilons must be strictly increasing")
    if p[0] <= d:
        return float(e[0])
    below = np.flatnonzero(p <= d)
    if below.size == 0:
        warnings.warn(f"the privacy profile never reaches delta={d} on the grid; returning inf", stacklevel=2)
        return math.inf
    i = int(below[0])
    e0, e1, p0, p1 = e[i - 1], e[i], p[i - 1], p[i]
    if p1 <= 0.0:
        # log-interpolation impossible: linear in δ instead.
        return float(e0 + (p0 - d) / (p0 - p1) * (e1 - e0))
    lp0, lp1, lt = math.log(p0), math.log(p1), math.log(d)
    if lp0 == lp1:
        return float(e1)
    return float(e0 + (lp0 - lt) / (lp0 - lp1) * (e1 - e0))


def tradeoff_from_deltas(alpha: npt.ArrayLike, epsilons: npt.ArrayLike, deltas: npt.ArrayLike) -> np.ndarray:
    """f(α) = max_{ε′} max(0, 1 − δ(ε′) − e^{ε′}α, e^{−ε′}(1 − δ(ε′) − α)) (the symmetric PLD trade-off curve).

    Evaluated in chunks of α so that 10⁵ points × 2,000 lines stay within a few MB.
    """
    a = np.asarray(alpha, dtype=float)
    e = np.asarray(epsilons, dtype=float)
    one_minus_d = 1.0 - np.asarray(deltas, dtype=float)
    ee, emin = np.exp(e), np.exp(-e)
    flat = a.ravel()
    out = np.empty(flat.shape)
    chunk = 2048
    for i in range(0, flat.size, chunk):
        x = flat[i : i + chunk, None]
        f = np.maximum(one_minus_d - ee * x, emin * (one_minus_d - x))
        out[i : i + chunk] = f.max(axis=1)
    return np.maximum(out, 0.0).reshape(a.shape)


def default_epsilon_grid() -> np.ndarray:
    """ε′ grid for δ(ε′): 0 to 40 in steps of 0.02 (the trade-off is the envelope of these lines)."""
    return np.round(np.arange(0.0, 40.0 + 1e-9, 0.02), 6)


@dataclass(frozen=True)
class PldTable:
    """A PLD calibration table in array form (Annamalai 2024; built by :func:`hsaudit.experiments.annamalai.construction.pld_table`).

    ε(σ) at δ and δ(ε′) of T composed Poisson-subsampled Gaussians over a grid of σ: sigmas (ascending),
    eps_at (descending), eps_prime, log_deltas. :func:`sigma_for_epsilon` and :func:`pld_tradeoff` interpolate it.
    """

    sigmas: np.ndarray
    eps_at: np.ndarray
    eps_prime: np.ndarray
    log_deltas: np.ndarray

    @classmethod
    def from_frame(cls, frame: pd.DataFrame) -> PldTable:
        sig = np.sort(frame["sigma"].unique())
        eg = np.sort(frame["eps_prime"].unique())
        piv = frame.pivot_table(index="sigma", columns="eps_prime", values="delta_prime").loc[sig, eg].to_numpy()
        eps_at = frame.groupby("sigma")["epsilon_at_delta"].first().loc[sig].to_numpy()
        with np.errstate(divide="ignore"):
            return cls(sig, eps_at, eg, np.log(np.maximum(piv, 1e-300)))


def sigma_for_epsilon(epsilon: float, table: PldTable) -> float:
    """σ̂ with ε(σ̂) = ε at the table's δ, by linear interpolation of log σ against log ε."""
    le = np.log(table.eps_at[::-1])
    ls = np.log(table.sigmas[::-1])
    if not (le[0] <= math.log(epsilon) <= le[-1]):
        raise ValueError(
            f"epsilon {epsilon} is outside the table's range [{math.exp(le[0]):.3g}, {math.exp(le[-1]):.3g}]"
        )
    return float(np.exp(np.interp(math.log(epsilon), le, ls)))


def pld_tradeoff(alpha: npt.ArrayLike, sigma: float, table: PldTable) -> np.ndarray:
    """PLD trade-off curve at σ, from the table (log δ(ε′) interpolated linearly in log σ)."""
    ls = np.log(table.sigmas)
    x = math.log(sigma)
    j = int(np.clip(np.searchsorted(ls, x) - 1, 0, len(ls) - 2))
    w = (x - ls[j]) / (ls[j + 1] - ls[j])
    logd = (1 - w) * table.log_deltas[j] + w * table.log_deltas[j + 1]
    return tradeoff_from_deltas(alpha, table.eps_prime, np.exp(logd))
