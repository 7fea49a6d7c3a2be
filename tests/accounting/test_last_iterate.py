"""Tests of hsaudit.accounting.last_iterate: Steinke et al.'s last-iterate heuristic ε (Theorem 1, Appendix A) and baselines."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from hsaudit.accounting import last_iterate as H
from hsaudit.cli import main as cli_main

# ----------------------------------------------------------------------------------- values printed or derived


@pytest.mark.parametrize(
    ("steps", "expected"),
    [(3, 2.222), (1, 2.182)],  # Steinke et al. §4.2: q = 0.1, σ = 1, δ = 1e−6 (printed to 3 decimals)
)
def test_printed_values(steps, expected):
    eps = H.heuristic_epsilon(1e-6, steps=steps, sampling_rate=0.1, noise_multiplier=1.0)
    assert eps == pytest.approx(expected, abs=5e-4)


@pytest.mark.parametrize(
    ("steps", "expected"),
    # spec steinke.md fig1 panel (c) [derived]: q = 0.01, σ = 0.5, δ = 1e−6
    [(1, 4.285), (2, 2.728), (10, 1.112), (20, 1.012), (50, 1.109), (1000, 3.401)],
)
def test_non_monotone_panel_values(steps, expected):
    eps = H.heuristic_epsilon(1e-6, steps=steps, sampling_rate=0.01, noise_multiplier=0.5)
    assert eps == pytest.approx(expected, abs=5e-4)


def test_not_monotone_in_steps():
    """§4.1: ε_{T,q,σ} is not monotone in T (q = 0.01, σ = 0.5, δ = 1e−6)."""
    e1 = H.heuristic_epsilon(1e-6, steps=1, sampling_rate=0.01, noise_multiplier=0.5)
    e20 = H.heuristic_epsilon(1e-6, steps=20, sampling_rate=0.01, noise_multiplier=0.5)
    assert e20 < e1 / 4
    assert H.max_heuristic_epsilon(1e-6, steps=3, sampling_rate=0.01, noise_multiplier=0.5) == pytest.approx(e1)


@pytest.mark.parametrize(
    ("steps", "heur", "std", "full"),
    # spec steinke.md baseline table at q = 0.01, σ = 1, δ = 1e−6 [derived]
    [(100, 0.492, 0.954, 0.397), (1000, 1.469, 2.125, 1.368), (10000, 5.009, 6.911, 4.887)],
)
def test_baseline_table(steps, heur, std, full):
    kw = dict(steps=steps, sampling_rate=0.01, noise_multiplier=1.0)
    e = H.heuristic_epsilon(1e-6, **kw)  # T = 10,000 takes ~0.25 s (timed in docs/steinke.md, not here)
    assert e == pytest.approx(heur, abs=1e-3)
    assert H.standard_epsilon(1e-6, **kw) == pytest.approx(std, abs=2e-3)
    assert H.full_batch_epsilon(1e-6, **kw) == pytest.approx(full, abs=1e-3)


def test_table2_check():
    """spec steinke.md table2 [derived]: q = 4096/50000, σ = 3, T = 2468, δ = 1e−5 → 6.346 (paper 6.34)."""
    e = H.heuristic_epsilon(1e-5, steps=2468, sampling_rate=4096 / 50000, noise_multiplier=3.0)
    assert e == pytest.approx(6.346, abs=1e-3)


# ----------------------------------------------------------------------------------- closed forms


@pytest.mark.parametrize(("steps", "sigma"), [(1, 1.0), (5, 2.0), (30, 4.0)])
def test_full_batch_is_gaussian(steps, sigma):
    """q = 1: P = N(T, Tσ²) vs N(0, Tσ²), the Gaussian mechanism with μ = √T/σ (Appendix B)."""
    mu = math.sqrt(steps) / sigma
    e = H.heuristic_epsilon(1e-5, steps=steps, sampling_rate=1.0, noise_multiplier=sigma)
    assert e == pytest.approx(H.gdp_epsilon_for(1e-5, mu), rel=1e-6)
    assert e == pytest.approx(H.full_batch_epsilon(1e-5, steps=steps, sampling_rate=1.0, noise_multiplier=sigma))
    # dp-accounting's Gaussian mechanism with noise σ/√T (independent code path)
    from dp_accounting.pld import privacy_loss_distribution as pld

    ref = pld.from_gaussian_mechanism(sigma / math.sqrt(steps), value_discretization_interval=1e-4)
    assert e == pytest.approx(ref.get_epsilon_for_delta(1e-5), abs=2e-3)


def test_gdp_profile_closed_form():
    # δ(ε) of μ-GDP at ε = 0 is 2Φ(μ/2) − 1 (total variation of N(0,1) vs N(μ,1)).
    for mu in (0.3, 1.0, 3.0):
        assert H.gdp_delta_for(0.0, mu) == pytest.approx(2 * stats.norm.cdf(mu / 2) - 1, rel=1e-10)


def test_zero_sampling_rate_gives_zero():
    assert H.heuristic_epsilon(1e-6, steps=7, sampling_rate=0.0, noise_multiplier=1.0) == 0.0
    assert H.standard_epsilon(1e-6, steps=7, sampling_rate=0.0, noise_multiplier=1.0) == 0.0
    assert np.all(H.heuristic_delta([0.0, 1.0], steps=7, sampling_rate=0.0, noise_multiplier=1.0) == 0.0)


# ----------------------------------------------------------------------------------- two implementations


@pytest.mark.parametrize(("steps", "q", "sigma"), [(3, 0.1, 1.0)])
def test_bisection_agrees_with_dp_accounting_mixture(steps, q, sigma):
    bis = H.heuristic_epsilon(1e-6, steps=steps, sampling_rate=q, noise_multiplier=sigma)
    pld = H.heuristic_epsilon(1e-6, steps=steps, sampling_rate=q, noise_multiplier=sigma, method="pld")
    # The PLD is pessimistic (an upper bound) with discretisation 1e-3.
    assert pld >= bis - 1e-6
    assert pld == pytest.approx(bis, abs=3e-3)


def _delta_by_quadrature(eps: float, mix: H.Mixture) -> float:
    """Slow reference: δ = max(∫(p − e^ε q)₊, ∫(q − e^ε p)₊) by numerical integration of the densities."""
    w = np.exp(mix.log_weights)
    s = mix.scale

    def p(y):
        return float(np.sum(w * stats.norm.pdf(y, mix.atoms, s)))

    def q(y):
        return float(stats.norm.pdf(y, 0.0, s))

    lo, hi = -12 * s, mix.atoms.max() + 12 * s
    pts = list(np.linspace(lo, hi, 41))
    d1 = integrate.quad(lambda y: max(p(y) - math.exp(eps) * q(y), 0.0), lo, hi, points=pts, limit=400)[0]
    d2 = integrate.quad(lambda y: max(q(y) - math.exp(eps) * p(y), 0.0), lo, hi, points=pts, limit=400)[0]
    return max(d1, d2)


@pytest.mark.parametrize(("steps", "q", "sigma", "eps"), [(3, 0.1, 1.0, 0.5), (5, 0.3, 1.0, 1.0), (2, 0.5, 0.7, 0.2)])
def test_delta_against_quadrature(steps, q, sigma, eps):
    mix = H.binomial_mixture(steps=steps, sampling_rate=q, noise_multiplier=sigma)
    fast = float(H.mixture_delta(eps, mix))
    assert fast == pytest.approx(_delta_by_quadrature(eps, mix), rel=1e-5, abs=1e-9)


def test_round_trip_epsilon_delta():
    kw = dict(steps=50, sampling_rate=0.05, noise_multiplier=0.8)
    e = H.heuristic_epsilon(1e-6, **kw)
    assert float(H.heuristic_delta(e, **kw)) == pytest.approx(1e-6, rel=1e-5)


def test_directions():
    kw = dict(steps=10, sampling_rate=0.1, noise_multiplier=1.0)
    both = float(H.heuristic_delta(1.0, **kw))
    pq = float(H.heuristic_delta(1.0, direction="pq", **kw))
    qp = float(H.heuristic_delta(1.0, direction="qp", **kw))
    assert both == max(pq, qp)
    assert pq > qp  # adding the canary is the worse direction here
    # H(Q‖P) is 0 when −ε ≤ T log(1 − q) (App. A.2): the privacy loss never goes below log((1−q)^T).
    big = -kw["steps"] * math.log1p(-kw["sampling_rate"]) + 0.01
    assert float(H.heuristic_delta(big, direction="qp", **kw)) == 0.0


def test_privacy_loss_increasing():
    mix = H.binomial_mixture(steps=30, sampling_rate=0.2, noise_multiplier=1.0)
    y = np.concatenate([[-5000.0], np.linspace(-50, 80, 2001)])
    f = H.privacy_loss(y, mix)
    assert np.all(np.diff(f) > 0)
    assert f[0] == pytest.approx(mix.log_mass_at_zero, abs=1e-6)


# ----------------------------------------------------------------------------------- monotonicity


def test_monotone_in_sigma_q_delta():
    sig = [H.heuristic_epsilon(1e-6, steps=10, sampling_rate=0.1, noise_multiplier=s) for s in (0.6, 0.8, 1.0, 2.0)]
    assert np.all(np.diff(sig) < 0)
    qs = [H.heuristic_epsilon(1e-6, steps=10, sampling_rate=q, noise_multiplier=1.0) for q in (0.01, 0.05, 0.2, 1.0)]
    assert np.all(np.diff(qs) > 0)
    ds = [H.heuristic_epsilon(d, steps=10, sampling_rate=0.1, noise_multiplier=1.0) for d in (1e-8, 1e-6, 1e-4)]
    assert np.all(np.diff(ds) < 0)


@settings(max_examples=6, deadline=None)
@given(
    steps=st.integers(1, 30),
    q=st.floats(0.005, 0.9),
    sigma=st.floats(0.5, 4.0),
)
def test_heuristic_below_standard(steps, q, sigma):
    """Releasing all iterates reveals more: ε_heuristic ≤ ε_standard (Section 2.1)."""
    kw = dict(steps=steps, sampling_rate=q, noise_multiplier=sigma)
    assert H.heuristic_epsilon(1e-5, **kw) <= H.standard_epsilon(1e-5, **kw) + 5e-3


# ----------------------------------------------------------------------------------- validation and CLI


@pytest.mark.parametrize(
    ("kwargs", "word"),
    [
        (dict(steps=0, sampling_rate=0.1, noise_multiplier=1.0), "steps"),
        (dict(steps=3, sampling_rate=1.5, noise_multiplier=1.0), "sampling_rate"),
        (dict(steps=3, sampling_rate=0.1, noise_multiplier=0.0), "noise_multiplier"),
    ],
)
def test_bad_input(kwargs, word):
    with pytest.raises(ValueError, match=word):
        H.heuristic_epsilon(1e-6, **kwargs)
    with pytest.raises(ValueError, match="delta"):
        H.heuristic_epsilon(1.5, steps=3, sampling_rate=0.1, noise_multiplier=1.0)
    with pytest.raises(ValueError, match="method"):
        H.heuristic_epsilon(1e-6, steps=3, sampling_rate=0.1, noise_multiplier=1.0, method="exact")


def test_cli_json(capsys):
    rc = cli_main(
        ["heuristic", "--steps", "3", "--sampling-rate", "0.1", "--noise-multiplier", "1", "--delta", "1e-6", "--json"]
    )
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["epsilon"] == pytest.approx(2.222, abs=5e-4)
    assert out["epsilon_standard"] >= out["epsilon"]
    assert out["epsilon_full_batch"] == pytest.approx(H.gdp_epsilon_for(1e-6, 0.1 * math.sqrt(3)))


def test_cli_bad_input(capsys):
    rc = cli_main(["heuristic", "--steps", "3", "--sampling-rate", "2", "--noise-multiplier", "1"])
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert "sampling_rate" in err and "\n" not in err


# ----------------------------------------------------------------------------------- replace-one: the mirrored pair


def _replace_one(delta: float, **kw) -> float:
    return H.heuristic_epsilon(delta, neighbouring="replace-one", **kw)


@pytest.mark.parametrize(("steps", "sigma"), [(1, 1.0), (10, 1.0), (20, 3.0)])
def test_replace_one_full_batch_is_gaussian_at_twice_the_sensitivity(steps, sigma):
    """q = 1: N(T, Tσ²) vs N(−T, Tσ²), μ-GDP with μ = 2√T/σ (closed form); there σ/2 in the add-remove pair agrees."""
    from hsaudit.accounting.gaussian import gdp_epsilon

    mu = 2.0 * math.sqrt(steps) / sigma
    kw = dict(steps=steps, sampling_rate=1.0)
    assert _replace_one(1e-5, noise_multiplier=sigma, **kw) == pytest.approx(gdp_epsilon(mu=mu, delta=1e-5), abs=1e-6)
    assert H.heuristic_epsilon(1e-5, noise_multiplier=sigma / 2, **kw) == pytest.approx(
        _replace_one(1e-5, noise_multiplier=sigma, **kw), abs=1e-6)  # fmt: skip


@pytest.mark.parametrize(("steps", "q", "sigma"), [(10, 0.1, 1.0), (20, 0.2, 2.0), (5, 0.5, 0.8), (10, 0.01, 0.6)])
def test_replace_one_below_all_iterates_replace_one_pld(steps, q, sigma):
    """The final model is a post-processing of every iterate: its ε is at most dp-accounting's replace-one PLD of T
    Poisson-subsampled Gaussians (pessimistic, so an upper bound), called here directly. Below the review's case
    (q = 0.1, σ = 1, T = 10: 2.97 against 3.43) σ/2 in the add-remove pair gave 7.97, above it."""
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    pld = pld_lib.from_gaussian_mechanism(
        standard_deviation=sigma, sampling_prob=q, value_discretization_interval=1e-3,
        neighboring_relation=pld_lib.NeighborRel.REPLACE_ONE,
    ).self_compose(steps)  # fmt: skip
    heur = _replace_one(1e-5, steps=steps, sampling_rate=q, noise_multiplier=sigma)
    assert 0.0 < heur <= pld.get_epsilon_for_delta(1e-5) + 1e-9


def test_replace_one_review_case():
    """The review's case, q = 0.1, σ = 1, T = 10, δ = 1e−5: σ/2 in the add-remove pair gave 7.97, above the all-iterates
    replace-one PLD (3.43); the mirrored pair gives 2.97."""
    kw = dict(steps=10, sampling_rate=0.1)
    assert H.heuristic_epsilon(1e-5, noise_multiplier=0.5, **kw) == pytest.approx(7.967, abs=1e-3)
    assert _replace_one(1e-5, noise_multiplier=1.0, **kw) == pytest.approx(2.966, abs=1e-3)


def _mirrored_delta_on_grid(eps: float, mix: H.Mixture) -> float:
    """Slow reference: ∫ (p − e^ε q)₊ dy for P = Σ w_k N(k, s²), Q = Σ w_k N(−k, s²), by the trapezoid rule on
    [−a_max − 12 s, a_max + 12 s] with step s/4000: the tails left out weigh < 2Φ̄(12) ≈ 4e−33, and the rule's error on
    an integrand with one kink (at y*) and second derivative ≲ 1/s³ is ≲ (s/4000)²/s² ≈ 1e−7 relative."""
    w = np.exp(mix.log_weights)
    s, top = mix.scale, mix.atoms.max()
    y = np.arange(-top - 12 * s, top + 12 * s, s / 4000)
    p = np.sum(w * stats.norm.pdf(y[:, None], mix.atoms, s), axis=1)
    q = np.sum(w * stats.norm.pdf(y[:, None], -mix.atoms, s), axis=1)
    return float(integrate.trapezoid(np.maximum(p - math.exp(eps) * q, 0.0), y))


@pytest.mark.parametrize(("steps", "q", "sigma", "eps"), [(10, 0.1, 1.0, 1.0), (5, 0.3, 1.0, 2.0), (3, 0.5, 0.7, 0.3)])
def test_replace_one_delta_against_a_grid(steps, q, sigma, eps):
    mix = H.binomial_mixture(steps=steps, sampling_rate=q, noise_multiplier=sigma)
    assert float(H.mirrored_delta(eps, mix)) == pytest.approx(_mirrored_delta_on_grid(eps, mix), rel=1e-5, abs=1e-10)


def test_replace_one_pair_is_odd_increasing_and_round_trips():
    mix = H.binomial_mixture(steps=10, sampling_rate=0.1, noise_multiplier=1.0)
    y = np.linspace(-40, 40, 801)
    loss = H.mirrored_privacy_loss(y, mix)
    assert np.all(np.diff(loss) > 0) and np.allclose(loss, -loss[::-1])
    e = H.mirrored_epsilon(1e-5, mix)
    assert float(H.mirrored_delta(e, mix)) == pytest.approx(1e-5, rel=1e-5)
    with pytest.raises(ValueError, match="replace-one"):
        H.heuristic_epsilon(1e-5, steps=3, sampling_rate=0.1, noise_multiplier=1.0, neighbouring="replace-one",
                            method="pld")  # fmt: skip
    with pytest.raises(ValueError, match="neighbouring"):
        H.heuristic_epsilon(1e-5, steps=3, sampling_rate=0.1, noise_multiplier=1.0, neighbouring="swap")


# ------------------------------------------------------------------------------------- δ(ε′) of a composed PLD


@pytest.mark.parametrize(
    ("steps", "sampling_rate", "sigma"),
    [(5, 0.1, 0.5), (5, 0.1, 1.7), (1, 0.1, 0.5), (20, 0.01, 0.8), (3, 1.0, 1.0)],  # asymmetric and symmetric (q = 1)
)
def test_pld_deltas_are_dp_accountings_bit_for_bit(steps, sampling_rate, sigma, monkeypatch):
    """The vectorised δ(ε′) of the σ̂ audit is dp-accounting's loop, bit for bit: on the audit's ε′ grid, on ε′
    at the PLD's own loss grid (ties: a loss equal to ε′ is not counted), beyond the largest loss, and at +∞."""
    pld = H.standard_pld(steps=steps, sampling_rate=sampling_rate, noise_multiplier=sigma)
    lo = pld._pmf_remove._lower_loss * pld._pmf_remove._discretization
    at_losses = lo + pld._pmf_remove._discretization * np.arange(0, pld._pmf_remove.size, 997)
    for eps in (np.round(np.arange(0.0, 40.0 + 1e-9, 0.05), 6), np.concatenate([at_losses, [1e3, math.inf]])):
        ref = np.asarray(pld.get_delta_for_epsilon(eps), dtype=float)
        with monkeypatch.context() as m:  # the fast path, not dp-accounting's call, computes it
            m.setattr(type(pld), "get_delta_for_epsilon", lambda *a: pytest.fail("fell back to dp-accounting"))
            fast = H.pld_deltas(pld, eps)
        assert fast.dtype == ref.dtype and np.array_equal(fast.view(np.int64), ref.view(np.int64))
    curve = H.delta_curve(steps=steps, sampling_rate=sampling_rate, noise_multiplier=sigma, epsilons=eps)
    assert np.array_equal(curve.view(np.int64), ref.view(np.int64))


def test_pld_deltas_falls_back_on_unsorted_epsilons():
    pld = H.standard_pld(steps=2, sampling_rate=0.1, noise_multiplier=1.0)
    with pytest.raises(ValueError, match="sorted"):
        H.pld_deltas(pld, [1.0, 0.5])


def test_pld_deltas_of_a_mixture_pld_are_dp_accountings_bit_for_bit(monkeypatch):
    """The byo control's PLD (Binomial(k, q) copies: a mixture-of-Gaussians mechanism, composed) goes the same way."""
    from hsaudit.accounting.gaussian import mixture_gaussian_pld

    pld = mixture_gaussian_pld(standard_deviation=1.0, sensitivities=[0.0, 1.0, 2.0], probabilities=[0.81, 0.18, 0.01],
                               discretization=1e-2).self_compose(3)  # fmt: skip
    eps = np.round(np.arange(0.0, 20.0 + 1e-9, 0.02), 6)
    ref = np.asarray(pld.get_delta_for_epsilon(eps), dtype=float)
    monkeypatch.setattr(type(pld), "get_delta_for_epsilon", lambda *a: pytest.fail("fell back to dp-accounting"))
    assert np.array_equal(H.pld_deltas(pld, eps).view(np.int64), ref.view(np.int64))
