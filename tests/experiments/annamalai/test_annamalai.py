"""Tests of hsaudit.experiments.annamalai.construction: the adversarial gradient (encoding round trip, update sign), trade-off curves,
the calibration table and the PLD-curve audit."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from hsaudit.accounting import last_iterate as H
from hsaudit.accounting import tradeoff_from_deltas
from hsaudit.accounting.gaussian import PldTable, default_epsilon_grid, sigma_for_epsilon
from hsaudit.accounting.last_iterate import delta_curve, linear_tradeoff
from hsaudit.audit import observed_rates
from hsaudit.audit.pld import audit_pld, pld_sigma_audit
from hsaudit.audit.rules import Paper
from hsaudit.experiments.annamalai import audit as AA
from hsaudit.experiments.annamalai import construction as A


@pytest.mark.parametrize(("sigma", "base"), [(0.5, 10.0), (3.94, 100.0), (0.3, 1.0), (0.837, 10.0), (4.0, 100.0)])
def test_encoding_base(sigma, base):
    """P = 10^⌈log10(3σ)⌉ (Section 4.2)."""
    assert A.encoding_base(sigma) == base


@pytest.mark.parametrize(
    ("sigma", "sigmas", "base"),
    [(2.248, 6.0, 100.0), (0.548, 6.0, 10.0), (0.1, 6.0, 10.0), (10.0, 6.0, 1000.0), (2.0, 2.0, 10.0)],
)
def test_encoding_base_half_width(sigma, sigmas, base):
    """half_width: the smallest power of ten P with P/2 ≥ sigmas·σ + 1."""
    p = A.encoding_base(sigma, rule="half_width", sigmas=sigmas)
    assert p == base
    assert p / 2 >= sigmas * sigma + 1 > p / 20


def test_encoding_base_bad_rule():
    with pytest.raises(ValueError, match="rule"):
        A.encoding_base(1.0, rule="nearest")
    with pytest.raises(ValueError, match="base_rule|rule"):
        A.Construction(noise_multiplier=1.0, sampling_rate=0.1, base_rule="nearest")


def test_wrap_rate_closed_form():
    """On D each decoded value is fresh noise N(0, σ²) (plus a batch-size error ≪ σ), so a run of T steps has no wrap
    with probability (1 − 2Φ̄(P/(2σ)))^T. The paper's rule at σ = 2.248 (q = 0.1, ε = 2): P = 10, window ±2.22σ."""
    sigma, q, steps, runs = 2.248, 0.1, 20, 20000
    c = A.Construction(noise_multiplier=sigma, sampling_rate=q)
    assert c.base == 10.0
    _, wraps = A.simulate(
        np.random.default_rng(3), steps=steps, runs=runs, canary=False, construction=c, return_wraps=True
    )
    p_step = 2 * stats.norm.sf(c.base / 2 / sigma)
    expected = 1 - (1 - p_step) ** steps
    se = math.sqrt(expected * (1 - expected) / runs)
    assert np.mean(wraps > 0) == pytest.approx(expected, abs=4 * se)
    assert np.mean(wraps) == pytest.approx(steps * p_step, rel=0.05)
    wide = A.Construction(noise_multiplier=sigma, sampling_rate=q, base_rule="half_width")
    _, w2 = A.simulate(
        np.random.default_rng(3), steps=steps, runs=runs, canary=True, construction=wide, return_wraps=True
    )
    assert w2.sum() == 0


def test_wraps_are_the_runs_whose_statistic_is_off():
    """A run's statistic equals Σ round(λ(v_k), 2) of its decoded values unless some value wrapped (a carry)."""
    sigma, q, steps = 1.4, 0.1, 60
    c = A.Construction(noise_multiplier=sigma, sampling_rate=q)
    theta, trace, wraps = A.simulate(
        np.random.default_rng(0),
        steps=steps,
        runs=2000,
        canary=True,
        construction=c,
        return_trace=True,
        return_wraps=True,
    )
    diff = (
        A.statistic(theta, c) - np.round(100 * A.step_llr(trace, noise_multiplier=sigma, sampling_rate=q)).sum(1) / 100
    )
    off = np.abs(diff) > 1e-6
    assert off.any()
    assert np.all(wraps[off] > 0)
    assert np.all(~off[wraps == 0])


def test_step_llr_closed_form():
    v = np.linspace(-3, 4, 15)
    q, s = 0.05, 0.7
    ratio = stats.norm.pdf(v, 1, s) / stats.norm.pdf(v, 0, s)
    assert np.allclose(A.step_llr(v, noise_multiplier=s, sampling_rate=q), np.log(q * ratio + 1 - q))


def test_gradient_first_step_and_decoding():
    c = A.Construction(noise_multiplier=0.5, sampling_rate=0.01)
    assert np.array_equal(A.adversarial_gradient(np.array([0.0, 1.0]), np.array([0.0, 0.0]), c), [0.0, 1.0])
    theta = np.array([1230.0 + 0.37, -40.0 - 2.1])
    high, v = c.decode(theta)
    assert np.allclose(high, [1230.0, -40.0]) and np.allclose(v, [0.37, -2.1])
    g = A.adversarial_gradient(0.0, theta, c)
    assert np.allclose(g * c.expected_batch, c.encode(v) - v)


@pytest.mark.parametrize(("sigma", "q", "steps"), [(0.5, 0.01, 200), (3.4, 0.1, 60), (4.0, 0.2, 30)])
def test_round_trip(sigma, q, steps):
    """The decoded statistic equals the sum of the rounded per-step log-likelihood ratios (Section 4.3).

    Settings where P/2 is ≥ 10σ, so that no step's value crosses ±P/2 (see :func:`test_carry_when_noise_wraps`).
    """
    c = A.Construction(noise_multiplier=sigma, sampling_rate=q)
    rng = np.random.default_rng(0)
    for canary in (False, True):
        theta, trace = A.simulate(rng, steps=steps, runs=300, canary=canary, construction=c, return_trace=True)
        o = A.statistic(theta, c)
        ref = np.round(100 * A.step_llr(trace, noise_multiplier=sigma, sampling_rate=q)).sum(axis=1) / 100
        assert np.allclose(o, ref, atol=1e-6)
        # ... and the decoded values are the per-step noisy values (|v| well inside ±P/2).
        assert np.all(np.abs(trace) < c.base / 2)


def test_carry_when_noise_wraps():
    """With P/2 only 3.6σ (σ = 1.4, P = 10, the paper's 3σ rule) a value beyond ±P/2 is decoded as a carry into the
    encoded digits: the statistic is then off by a multiple of 0.01 in a minority of runs."""
    sigma, q, steps = 1.4, 0.1, 60
    c = A.Construction(noise_multiplier=sigma, sampling_rate=q)
    theta, trace = A.simulate(
        np.random.default_rng(0), steps=steps, runs=400, canary=True, construction=c, return_trace=True
    )
    diff = (
        A.statistic(theta, c) - np.round(100 * A.step_llr(trace, noise_multiplier=sigma, sampling_rate=q)).sum(1) / 100
    )
    assert np.allclose(diff * 100, np.round(diff * 100), atol=1e-6)
    assert 0 < np.mean(np.abs(diff) > 1e-6) < 0.1


def test_first_decoded_value_is_the_first_step():
    """v_1 = b_1 + Z_1: N(0, σ²) on D, mixture on D′ (checked by moments)."""
    c = A.Construction(noise_multiplier=1.0, sampling_rate=0.3)
    rng = np.random.default_rng(1)
    _, tr0 = A.simulate(rng, steps=2, runs=20000, canary=False, construction=c, return_trace=True)
    _, tr1 = A.simulate(rng, steps=2, runs=20000, canary=True, construction=c, return_trace=True)
    assert np.mean(tr0[:, 0]) == pytest.approx(0.0, abs=0.03)
    assert np.mean(tr1[:, 0]) == pytest.approx(0.3, abs=0.03)
    assert np.std(tr0[:, 0]) == pytest.approx(1.0, rel=0.03)


def _auc(o0, o1):
    return stats.mannwhitneyu(o1, o0).statistic / (len(o0) * len(o1))


def test_literal_sign_fails_and_working_sign_works():
    """With the printed descent update the encoding does not survive: the statistic loses the all-iterates
    likelihood-ratio signal; the ascent form carries it (compared with the ideal Σ λ(v_t) on the raw steps)."""
    sigma, q, steps, runs = 1.0, 0.1, 40, 4000
    c = A.Construction(noise_multiplier=sigma, sampling_rate=q)
    rng = np.random.default_rng(2)
    asc = _auc(*A.simulate_statistics(rng, steps=steps, runs=runs, construction=c, update="ascent"))
    desc = _auc(*A.simulate_statistics(rng, steps=steps, runs=runs, construction=c, update="descent"))
    v0 = rng.normal(0, sigma, (runs, steps))
    v1 = (rng.random((runs, steps)) < q) + rng.normal(0, sigma, (runs, steps))
    ideal = _auc(
        A.step_llr(v0, noise_multiplier=sigma, sampling_rate=q).sum(1),
        A.step_llr(v1, noise_multiplier=sigma, sampling_rate=q).sum(1),
    )
    assert asc == pytest.approx(ideal, abs=0.02)
    assert desc < 0.5 + 0.5 * (ideal - 0.5)  # loses more than half of the advantage


def test_bad_input():
    with pytest.raises(ValueError, match="noise_multiplier"):
        A.Construction(noise_multiplier=0.0, sampling_rate=0.1)
    with pytest.raises(ValueError, match="sampling_rate"):
        A.Construction(noise_multiplier=1.0, sampling_rate=0.0)
    c = A.Construction(noise_multiplier=1.0, sampling_rate=0.1)
    with pytest.raises(ValueError, match="update"):
        A.simulate(np.random.default_rng(0), steps=3, runs=2, canary=True, construction=c, update="sideways")
    with pytest.raises(ValueError, match="steps"):
        A.simulate(np.random.default_rng(0), steps=0, runs=2, canary=True, construction=c)


# ----------------------------------------------------------------------------------- trade-off curves


def test_pld_tradeoff_is_gaussian_for_one_full_step():
    """q = 1, T = 1: the symmetric PLD trade-off equals the Gaussian one Φ(Φ⁻¹(1 − α) − 1/σ)."""
    sigma = 0.8
    eg = default_epsilon_grid()
    d = delta_curve(
        steps=1, sampling_rate=1.0, noise_multiplier=sigma, epsilons=eg, value_discretization_interval=1e-4
    )
    alpha = np.linspace(0.01, 0.99, 50)
    f = tradeoff_from_deltas(alpha, eg, d)
    exact = stats.norm.cdf(stats.norm.isf(alpha) - 1 / sigma)
    assert np.allclose(f, exact, atol=2e-3)
    assert np.all(f <= exact + 1e-4)  # a pessimistic PLD never puts the curve above the truth


def test_linear_tradeoff_closed_form():
    steps, sigma = 9, 2.0
    alpha = np.linspace(0.001, 0.999, 30)
    mu = math.sqrt(steps) / sigma
    assert np.allclose(
        linear_tradeoff(alpha, steps=steps, sampling_rate=1.0, noise_multiplier=sigma),
        stats.norm.cdf(stats.norm.isf(alpha) - mu),
        atol=1e-12,
    )


def test_observed_rates_naive():
    rng = np.random.default_rng(3)
    o0 = np.round(rng.normal(0, 1, 60), 1)
    o1 = np.round(rng.normal(1, 1, 50), 1)
    a, b = observed_rates(o0, o1)
    taus = np.unique(np.concatenate([o0, o1]))
    assert np.allclose(a, [np.mean(o0 >= t) for t in taus])
    assert np.allclose(b, [np.mean(o1 < t) for t in taus])


# ----------------------------------------------------------------------------------- calibration and audit


def test_sigma_calibration_derived_values():
    """spec annamalai.md fig2 [derived, δ = 1e−5, PLD]: q = 0.1, T = 100, ε = 2 → σ = 2.25."""
    sigma = H.calibrate(
        lambda s: H.standard_epsilon(1e-5, steps=100, sampling_rate=0.1, noise_multiplier=s),
        2.0,
        lo=1.0,
        hi=4.0,
        rtol=1e-5,
    )
    assert sigma == pytest.approx(2.25, abs=5e-3)


@pytest.fixture(scope="module")
def small_frame():
    return A.pld_table(steps=20, sampling_rate=0.1, delta=1e-5, n_sigmas=12, epsilon_range=(0.3, 25.0))


@pytest.fixture(scope="module")
def small_table(small_frame):
    return PldTable.from_frame(small_frame)


def test_table_interpolation(small_table):
    for eps in (1.0, 4.0, 10.0):
        sig = sigma_for_epsilon(eps, small_table)
        direct = H.standard_epsilon(1e-5, steps=20, sampling_rate=0.1, noise_multiplier=sig)
        assert direct == pytest.approx(eps, rel=0.03)
    with pytest.raises(ValueError, match="epsilon"):
        sigma_for_epsilon(1000.0, small_table)


def test_audit_recovers_epsilon_and_literal_fails(small_table):
    """The paper's audit on the working construction lands near ε (no confidence intervals: it may exceed ε);
    the Clopper–Pearson variant stays below; the literal update audits far lower."""
    eps = 4.0
    sig = sigma_for_epsilon(eps, small_table)
    c = A.Construction(noise_multiplier=sig, sampling_rate=0.1)
    rng = np.random.default_rng(4)
    o0, o1 = A.simulate_statistics(rng, steps=20, runs=4000, construction=c)
    paper = audit_pld(o0, o1, small_table, tail_floor=0.01)
    cp = audit_pld(o0, o1, small_table, rule=Paper(), confidence=0.95)
    assert 0.6 * eps <= paper <= 1.5 * eps
    assert cp <= paper
    lo0, lo1 = A.simulate_statistics(rng, steps=20, runs=4000, construction=c, update="descent")
    assert audit_pld(lo0, lo1, small_table, tail_floor=0.01) < 0.5 * eps


def test_audit_tail_zero_violates_everything(small_table):
    """A point with α = 0 < β < 1 violates every curve: with no floor rule and no CI the audit is ∞."""
    o0 = np.array([0.0, 0.1, 0.2, 0.3])
    o1 = np.array([0.05, 0.15, 5.0, 6.0])
    assert audit_pld(o0, o1, small_table, tail_floor=-1.0) == math.inf
    assert audit_pld(o0, o1, small_table, tail_floor=0.0) < math.inf


def test_sigma_hat_audit_on_a_gaussian_mechanism():
    """Known-(q, T) σ̂ audit on the Gaussian mechanism itself (q = 1, T = 1, σ = 1): σ̂ ≥ σ up to sampling and
    max-over-thresholds optimism, and not far above it."""
    rng = np.random.default_rng(5)
    o0, o1 = rng.normal(0, 1, 20000), rng.normal(1, 1, 20000)
    res = pld_sigma_audit(o0, o1, rule=Paper(), steps=1, sampling_rate=1.0, noise_multiplier=1.0, delta=1e-5,
                          family="all_iterates", iterations=8)
    assert 0.95 <= res["sigma_hat"] <= 1.35
    assert res["epsilon"] <= H.standard_epsilon(1e-5, steps=1, sampling_rate=1.0, noise_multiplier=0.95)


def test_curve_gap_se():
    """Points on the curve have gap 0; a point one binomial standard error below it has gap 1."""
    a = np.array([0.1, 0.2, 0.3])
    f = np.array([0.5, 0.4, 0.3])
    se = np.sqrt(f * (1 - f) / 400)
    below, above = AA.curve_gap_se(a, f - np.array([0.0, se[1], 0.0]), f, runs=400)
    assert below == pytest.approx(1.0)
    assert above == pytest.approx(0.0, abs=1e-12)
    below, above = AA.curve_gap_se(a, f + 2 * se, f, runs=400)
    assert below == pytest.approx(-2.0) and above == pytest.approx(2.0)


def test_ideal_statistics_orientation():
    """On D, Σ λ(v_t) has the law of λ summed over N(0, σ²) draws (KS against a direct draw); it is larger on D′."""
    o, o1 = A.ideal_statistics(np.random.default_rng(0), steps=10, runs=20000, sampling_rate=0.2, noise_multiplier=1.0)
    assert o1.mean() > o.mean() + 0.1
    v = np.random.default_rng(1).normal(0, 1, (20000, 10))
    ref = A.step_llr(v, noise_multiplier=1.0, sampling_rate=0.2).sum(1)
    assert stats.ks_2samp(o, ref).pvalue > 1e-3


def test_repeated_audits_of_the_seeded_statistics(small_frame, small_table):
    """One fig2 job: σ is the table's σ for ε; every repetition's statistics come from their own seeded stream (the
    same as a direct simulation), and each method audits them: the paper's audit at every floor is audit_pld."""
    from hsaudit.util.seeding import derive_seed

    table, sigma = AA.calibrate(small_frame, epsilon=4.0)
    assert sigma == sigma_for_epsilon(4.0, small_table)
    c = A.Construction(noise_multiplier=sigma, sampling_rate=0.1, base_rule="half_width")
    reps = A.repeated_statistics(c, steps=20, runs=500, repetitions=2, seed=3, ideal_reference=True)
    rng = np.random.default_rng(derive_seed(3, "annamalai", 20, 0.1, sigma, 1))
    o0, o1 = A.simulate_statistics(rng, steps=20, runs=500, construction=c)
    np.testing.assert_array_equal(reps[1].out, o0)
    np.testing.assert_array_equal(reps[1].inside, o1)
    assert reps[1].ideal is not None and set(reps[1].wraps) == {"wrap_rate_out", "wrap_rate_in"}
    out = AA.audit_repetitions(reps, table=table, tail_floors=[0.01, 0.0], confidence=0.95, seed=3, steps=20)
    per_rep = {"paper": 2, "clopper_pearson": 1, "clopper_pearson_held_out": 1, "paper_ideal": 1}
    assert out.groupby("method").size().to_dict() == {m: 2 * n for m, n in per_rep.items()}
    assert (out["noise_multiplier"] == sigma).all() and (out["encoding_base"] == c.base).all()
    assert (out["runs_per_world"] == 500).all() and (out["base_rule"] == "half_width").all()
    for floor in (0.01, 0.0):
        row = out[(out.method == "paper") & (out.repetition == 1) & (out.tail_floor == floor)]
        assert row["epsilon_emp"].item() == audit_pld(o0, o1, table, tail_floor=floor)
    with pytest.raises(ValueError, match="at least one repetition"):
        AA.audit_repetitions([], table=table, tail_floors=[0.01], confidence=0.95, seed=3, steps=20)
