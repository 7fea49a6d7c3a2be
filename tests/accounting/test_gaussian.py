"""Tests of hsaudit.accounting: closed forms, dp-accounting PLD, Opacus PRV cross-check, round trips."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from hsaudit.accounting import (
    calibrate_noise,
    epsilon_from_delta_curve,
    gaussian_delta,
    gaussian_epsilon,
    gaussian_pld,
    gdp_delta,
    gdp_epsilon,
    gdp_mu,
    gdp_tradeoff,
    mixture_gaussian_epsilon,
    mixture_gaussian_pld,
)

DELTA = 1e-5


# ---------------------------------------------------------------------------------------------- closed forms
def test_gdp_mu_closed_form():
    assert gdp_mu(noise_multiplier=4.0, compositions=250) == pytest.approx(math.sqrt(250) / 4.0, rel=1e-15)
    assert gdp_mu(noise_multiplier=2.0, compositions=0) == 0.0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"noise_multiplier": 0.0, "compositions": 1},
        {"noise_multiplier": -1.0, "compositions": 1},
        {"noise_multiplier": math.inf, "compositions": 1},
        {"noise_multiplier": math.nan, "compositions": 1},
        {"noise_multiplier": 1.0, "compositions": -1},
        {"noise_multiplier": 1.0, "compositions": 2.5},
    ],
)
def test_gdp_mu_rejects_bad_input(kwargs):
    with pytest.raises(ValueError, match="noise_multiplier|compositions"):
        gdp_mu(**kwargs)


@pytest.mark.parametrize("mu", [0.1, 0.5, 1.0, 3.0])
@pytest.mark.parametrize("eps", [0.0, 0.5, 2.0])
def test_gdp_delta_equals_hockey_stick_integral(mu, eps):
    """δ(ε) = ∫ max(0, p₁ − e^ε p₀) for p₀ = N(0,1), p₁ = N(μ,1) (Dong et al. 2022, Cor. 2.13)."""
    f = lambda x: max(0.0, stats.norm.pdf(x, mu) - math.exp(eps) * stats.norm.pdf(x))  # noqa: E731
    # The integrand is positive only above x* = ε/μ + μ/2.
    x_star = eps / mu + mu / 2
    val, _ = integrate.quad(f, x_star, x_star + 40, epsabs=1e-14, epsrel=1e-12)
    assert gdp_delta(eps, mu=mu) == pytest.approx(val, rel=1e-8, abs=1e-15)


def test_gdp_delta_stable_for_large_epsilon():
    """Direct evaluation cancels catastrophically; the log form stays monotone and positive."""
    eps = np.linspace(0, 200, 2001)
    d = gdp_delta(eps, mu=15.0)
    assert (d > 0).all() and (np.diff(d) < 0).all()
    assert np.isfinite(np.log(d)).all()
    # Far tail: both terms are ~1e-40 and nearly equal; δ(ε) ~ φ(a)/(a·(a + μ))·… — check against the
    # Mills-ratio asymptotic δ ≈ φ(a)·μ/(a·(a+μ)) with a = ε/μ − μ/2 (relative error O(1/a²)).
    eps_far, mu = 500.0, 15.0
    a = eps_far / mu - mu / 2
    approx = stats.norm.pdf(a) * mu / (a * (a + mu))
    assert gdp_delta(eps_far, mu=mu) == pytest.approx(approx, rel=5 / a**2)


def test_gdp_delta_limits_and_shapes():
    assert gdp_delta(1.0, mu=0.0) == 0.0
    assert gdp_delta(1.0, mu=-1.0) == 0.0
    assert gdp_delta(1.0, mu=math.inf) == 1.0
    assert isinstance(gdp_delta(1.0, mu=1.0), float)
    assert gdp_delta([[0.0, 1.0]], mu=1.0).shape == (1, 2)
    # δ(0) = Φ(μ/2) − Φ(−μ/2) (total variation of the pair)
    assert gdp_delta(0.0, mu=1.3) == pytest.approx(2 * stats.norm.cdf(0.65) - 1, rel=1e-12)
    with pytest.raises(ValueError, match="mu"):
        gdp_delta(1.0, mu=math.nan)


# Cebere et al. spec §1 "Upper bound": one step at δ = 1e−5 for σ = 1..8 (values printed in the spec).
ONE_STEP = {1: 4.377, 2: 1.993, 3: 1.271, 4: 0.926, 5: 0.726, 6: 0.594, 7: 0.502, 8: 0.434}


@pytest.mark.parametrize("sigma,expected", ONE_STEP.items())
def test_one_step_values_from_the_spec(sigma, expected):
    assert gdp_epsilon(mu=1.0 / sigma, delta=DELTA) == pytest.approx(expected, abs=6e-4)
    assert gaussian_epsilon(noise_multiplier=sigma, compositions=1, delta=DELTA) == pytest.approx(expected, abs=2e-3)


def test_section5_upper_bound_24():
    """Spec §1: 250 insertions at σ = 4 → ε = 24.00 at δ = 1e−5, by closed form and by the PLD."""
    mu = gdp_mu(noise_multiplier=4, compositions=250)
    assert round(gdp_epsilon(mu=mu, delta=DELTA), 2) == 24.00
    assert gaussian_epsilon(noise_multiplier=4, compositions=250, delta=DELTA) == pytest.approx(
        gdp_epsilon(mu=mu, delta=DELTA), abs=0.01
    )


@pytest.mark.parametrize("sigma,t", [(0.8, 1), (2.0, 10), (5.0, 300)])
def test_pld_equals_gdp_closed_form_at_q1(sigma, t):
    mu = gdp_mu(noise_multiplier=sigma, compositions=t)
    closed = gdp_epsilon(mu=mu, delta=DELTA)
    pld = gaussian_epsilon(noise_multiplier=sigma, compositions=t, delta=DELTA)
    # pessimistic discretisation: PLD ≥ exact, within the discretisation error
    assert pld >= closed - 1e-6
    assert pld == pytest.approx(closed, rel=2e-3, abs=2e-3)
    # and δ at the exact ε agrees
    assert gaussian_delta(closed, noise_multiplier=sigma, compositions=t) == pytest.approx(DELTA, rel=0.02)


@pytest.mark.parametrize("mu", [1e-3, 0.05, 0.5, 1.0, 3.95, 8.0, 20.0])
def test_gdp_epsilon_delta_round_trip(mu):
    eps = gdp_epsilon(mu=mu, delta=DELTA)
    assert eps > 0
    assert gdp_delta(eps, mu=mu) == pytest.approx(DELTA, rel=1e-9)


@pytest.mark.parametrize("eps", [0.1, 1.0, 10.0, 40.0])
def test_gdp_delta_epsilon_round_trip(eps):
    d = gdp_delta(eps, mu=4.0)
    assert gdp_epsilon(mu=4.0, delta=d) == pytest.approx(eps, rel=1e-9)


def test_gdp_epsilon_limits():
    assert gdp_epsilon(mu=0.0, delta=DELTA) == 0.0
    assert gdp_epsilon(mu=-2.0, delta=DELTA) == 0.0
    assert gdp_epsilon(mu=-math.inf, delta=DELTA) == 0.0
    assert gdp_epsilon(mu=math.inf, delta=DELTA) == math.inf
    # δ(0) ≤ δ → 0
    assert gdp_epsilon(mu=1e-6, delta=0.5) == 0.0
    # increasing in μ
    mus = np.linspace(0.01, 10, 50)
    eps = [gdp_epsilon(mu=m, delta=DELTA) for m in mus]
    assert (np.diff(eps) > 0).all()


@pytest.mark.parametrize("delta", [0.0, 1.0, -1e-5, 2.0, math.nan])
def test_gdp_epsilon_rejects_bad_delta(delta):
    with pytest.raises(ValueError, match="delta"):
        gdp_epsilon(mu=1.0, delta=delta)


def test_gdp_tradeoff():
    alpha = np.linspace(0, 1, 11)
    assert gdp_tradeoff(alpha, mu=0.0) == pytest.approx(1 - alpha, abs=1e-15)
    mu = 1.7
    got = gdp_tradeoff(alpha, mu=mu)
    want = stats.norm.cdf(stats.norm.ppf(1 - alpha) - mu)
    assert got == pytest.approx(want, abs=1e-14)
    # symmetric: G(G(α)) = α for a symmetric trade-off function
    assert gdp_tradeoff(got, mu=mu) == pytest.approx(alpha, abs=1e-12)
    with pytest.raises(ValueError, match="alpha"):
        gdp_tradeoff([1.5], mu=1.0)


# ---------------------------------------------------------------------------------------------- PLD vs PRV
@pytest.mark.parametrize("sigma,q,t", [(1.0, 0.05, 200)])
def test_pld_agrees_with_opacus_prv_subsampled(sigma, q, t):
    from opacus.accountants import PRVAccountant

    acc = PRVAccountant()
    acc.history = [(sigma, q, t)]
    prv = acc.get_epsilon(delta=DELTA)
    pld = gaussian_epsilon(noise_multiplier=sigma, compositions=t, delta=DELTA, sampling_rate=q, discretization=1e-3)
    assert pld == pytest.approx(prv, rel=0.02)


def test_subsampling_amplifies():
    full = gaussian_epsilon(noise_multiplier=1.0, compositions=10, delta=DELTA)
    sub = gaussian_epsilon(noise_multiplier=1.0, compositions=10, delta=DELTA, sampling_rate=0.1, discretization=1e-2)
    assert sub < full / 3


def test_pld_zero_compositions_and_validation():
    assert gaussian_epsilon(noise_multiplier=1.0, compositions=0, delta=DELTA) == 0.0
    assert gaussian_pld(noise_multiplier=2.0, compositions=3) is gaussian_pld(noise_multiplier=2.0, compositions=3)
    with pytest.raises(ValueError, match="sampling_rate"):
        gaussian_epsilon(noise_multiplier=1.0, compositions=1, delta=DELTA, sampling_rate=0.0)
    with pytest.raises(ValueError, match="delta"):
        gaussian_epsilon(noise_multiplier=1.0, compositions=1, delta=1.5)


# ---------------------------------------------------------------------------------------------- mixtures
def test_mixture_with_point_mass_is_gaussian():
    """A mixture with all mass on sensitivity 1 is the Gaussian mechanism."""
    mix = mixture_gaussian_epsilon(
        standard_deviation=2.0, sensitivities=[1.0], probabilities=[1.0], delta=DELTA, discretization=1e-2
    )
    gauss = gdp_epsilon(mu=0.5, delta=DELTA)
    assert mix == pytest.approx(gauss, abs=1e-2)


def test_mixture_zero_one_is_subsampled_gaussian():
    """Sensitivity 0 w.p. 1 − q and 1 w.p. q is the Poisson-subsampled Gaussian (Choquette-Choo et al. 2024)."""
    q, disc = 0.3, 1e-2  # coarse discretisation: dp-accounting's mixture PLD is slow to build
    mix = mixture_gaussian_epsilon(
        standard_deviation=1.0, sensitivities=[0.0, 1.0], probabilities=[1 - q, q], delta=DELTA, discretization=disc
    )
    sub = gaussian_epsilon(noise_multiplier=1.0, compositions=1, delta=DELTA, sampling_rate=q, discretization=disc)
    assert mix == pytest.approx(sub, rel=5e-3)
    pld3 = mixture_gaussian_pld(
        standard_deviation=1.0,
        sensitivities=[0.0, 1.0],
        probabilities=[1 - q, q],
        compositions=3,
        discretization=disc,
    )
    sub3 = gaussian_epsilon(noise_multiplier=1.0, compositions=3, delta=DELTA, sampling_rate=q, discretization=disc)
    assert pld3.get_epsilon_for_delta(DELTA) == pytest.approx(sub3, rel=5e-3)


@pytest.mark.parametrize(
    "sens,probs,match",
    [([1.0, 2.0], [0.5], "equal length"), ([1.0], [0.5], "sum to 1"), ([math.nan], [1.0], "finite")],
)
def test_mixture_rejects_bad_input(sens, probs, match):
    with pytest.raises(ValueError, match=match):
        mixture_gaussian_pld(standard_deviation=1.0, sensitivities=sens, probabilities=probs)


# ---------------------------------------------------------------------------------------------- calibration
@pytest.mark.parametrize("eps,t", [(24.0, 250), (1.0, 1), (8.0, 100)])
def test_calibrate_noise_q1_inverts_closed_form(eps, t):
    sigma = calibrate_noise(epsilon=eps, delta=DELTA, compositions=t)
    assert gdp_epsilon(mu=gdp_mu(noise_multiplier=sigma, compositions=t), delta=DELTA) == pytest.approx(eps, rel=1e-9)


def test_calibrate_noise_q1_recovers_sigma4():
    assert calibrate_noise(epsilon=gdp_epsilon(mu=math.sqrt(250) / 4, delta=DELTA), delta=DELTA, compositions=250) == (
        pytest.approx(4.0, rel=1e-9)
    )


def test_calibrate_noise_subsampled():
    kw = {"compositions": 10, "sampling_rate": 0.1, "discretization": 1e-2}
    sigma = calibrate_noise(epsilon=2.0, delta=DELTA, rtol=1e-4, **kw)
    eps = gaussian_epsilon(noise_multiplier=sigma, delta=DELTA, **kw)
    assert eps == pytest.approx(2.0, rel=2e-3)
    # more noise → smaller ε (the root is the right one)
    assert gaussian_epsilon(noise_multiplier=sigma * 1.05, delta=DELTA, **kw) < 2.0


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"epsilon": 0.0, "delta": DELTA, "compositions": 1}, "epsilon"),
        ({"epsilon": 1.0, "delta": 0.0, "compositions": 1}, "delta"),
        ({"epsilon": 1.0, "delta": DELTA, "compositions": 0}, "compositions"),
    ],
)
def test_calibrate_noise_rejects_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        calibrate_noise(**kwargs)


# ---------------------------------------------------------------------------------------------- tabulated profiles
def test_epsilon_from_delta_curve_matches_closed_form():
    mu = 1.5
    grid = np.linspace(0, 20, 4001)
    profile = gdp_delta(grid, mu=mu)
    assert epsilon_from_delta_curve(grid, profile, delta=DELTA) == pytest.approx(
        gdp_epsilon(mu=mu, delta=DELTA), abs=1e-4
    )
    assert epsilon_from_delta_curve(grid, profile, delta=0.9) == 0.0
    with pytest.warns(UserWarning, match="never reaches"):
        assert epsilon_from_delta_curve(grid[:10], profile[:10], delta=DELTA) == math.inf
    with pytest.raises(ValueError, match="equal length"):
        epsilon_from_delta_curve(grid, profile[:-1], delta=DELTA)
    with pytest.raises(ValueError, match="increasing"):
        epsilon_from_delta_curve(grid[::-1], profile, delta=DELTA)


def test_doctests():
    import doctest

    import hsaudit.accounting

    assert doctest.testmod(hsaudit.accounting).failed == 0


@pytest.mark.parametrize(("sigma", "q", "disc"), [(0.5, 0.1, 1e-3), (2.0, 0.01, 1e-3), (0.744, 0.99, 1e-2), (1.0, 1.0, 1e-3)])
def test_the_pld_is_dp_accountings_bit_for_bit(sigma, q, disc):
    """gaussian_pld builds the single-step PLD with a vectorised δ(ε′) (_single_gaussian_pld): each direction's PMF
    is dp-accounting's from_gaussian_mechanism, float for float (small, large and no subsampling)."""
    from dp_accounting.pld import privacy_loss_distribution as pld

    from hsaudit.accounting.gaussian import _single_gaussian_pld

    want = pld.from_gaussian_mechanism(standard_deviation=sigma, sensitivity=1.0, value_discretization_interval=disc,
                                       sampling_prob=q, pessimistic_estimate=True)  # fmt: skip
    got = _single_gaussian_pld(sigma, q, disc)
    for a, b in ((want._pmf_remove, got._pmf_remove), (want._pmf_add, got._pmf_add)):
        a, b = a.to_dense_pmf(), b.to_dense_pmf()
        assert (a._lower_loss, a._infinity_mass) == (b._lower_loss, b._infinity_mass)
        np.testing.assert_array_equal(a._probs, b._probs)
