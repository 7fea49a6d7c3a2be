"""One-run f-DP audits (hsaudit.audit.one_run_fdp, Mahloujifar et al. 2024): the recursion against a slow linear
program over the distribution of the number of right guesses, closed-form binomial limits, published values of an
independent implementation, and coverage/tightness on simulated μ-GDP canaries beside the counting bound."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, special, stats

from hsaudit.accounting.gaussian import gdp_epsilon, gdp_tradeoff
from hsaudit.audit import one_run_fdp_audit, one_run_fdp_epsilon, one_run_fdp_mu, one_run_fdp_p_value
from hsaudit.audit.one_run import one_run_audit, one_run_audit_search


def lp_p_value(m: int, k: int, c: int, mu: float, cuts: int = 400) -> float:
    """The largest P[V ≥ c] over distributions (p_0..p_k) of the number V of right guesses that satisfy the
    constraints μ-GDP puts on them, H_i ≥ g(R_{i+1}) with g(γ) = Φ(Φ⁻¹(γ) − μ), R_i = Σ_{j≥i} j p_j / m and
    H_i = Σ_{j≥i} (k − j) p_j / m (module docstring of hsaudit.audit.one_run_fdp). g is convex, so its tangents
    at ``cuts`` points are valid cuts: a linear program whose optimum is slightly *above* the exact one."""
    n = k + 1
    j = np.arange(n)
    ts = np.logspace(-12, 0, cuts) * min(k / m, 1 - 1e-9)
    z = special.ndtri(ts)
    g, dg = special.ndtr(z - mu), np.exp(-0.5 * (z - mu) ** 2 + 0.5 * z**2)
    rows, rhs = [], []
    for i in range(k):
        h_row = np.where(j >= i, (k - j) / m, 0.0)
        r_row = np.where(j >= i + 1, j / m, 0.0)
        rows.append(dg[:, None] * r_row[None, :] - h_row[None, :])  # g'(t) R − H ≤ g'(t) t − g(t)
        rhs.append(dg * ts - g)
    res = optimize.linprog(-(j >= c).astype(float), A_ub=np.vstack(rows), b_ub=np.concatenate(rhs),
                           A_eq=np.ones((1, n)), b_eq=[1.0], bounds=[(0, None)] * n, method="highs")  # fmt: skip
    assert res.status == 0, res.message
    return -res.fun


@pytest.mark.parametrize(("m", "k", "c", "mu"), [
    (10, 10, 8, 1.0), (20, 10, 8, 1.0), (20, 20, 15, 1.0), (30, 12, 10, 0.5), (16, 16, 16, 1.0), (40, 10, 9, 2.0),
    (12, 12, 6, 0.0),
])  # fmt: skip
def test_recursion_is_the_optimum_of_the_linear_program(m, k, c, mu):
    """Slow reference: the recursion's p-value is the largest tail any admissible distribution of V reaches."""
    fast = one_run_fdp_p_value(canaries=m, guesses=k, correct=c, mu=mu)
    slow = lp_p_value(m, k, c, mu)
    assert slow - 2e-3 <= fast <= slow + 1e-7, (fast, slow)


@pytest.mark.parametrize(("m", "k", "c", "mu"), [(16, 16, 16, 1.0), (50, 30, 25, 0.7), (200, 40, 33, 1.5)])
def test_a_general_tradeoff_curve_gives_the_gdp_closed_form(m, k, c, mu):
    """f = G_μ passed as a callable (inverted by bisection) agrees with the closed-form inverse Φ(Φ⁻¹(γ) − μ)."""
    closed = one_run_fdp_p_value(canaries=m, guesses=k, correct=c, mu=mu)
    general = one_run_fdp_p_value(canaries=m, guesses=k, correct=c, tradeoff=lambda a: gdp_tradeoff(a, mu=mu))
    assert general == pytest.approx(closed, rel=1e-6)


def randomized_response_curve(eps: float):
    """Trade-off curve of ε-DP randomized response: max(0, 1 − e^ε α, e^−ε (1 − α))."""

    def f(alpha):
        a = np.asarray(alpha, dtype=float)
        return np.maximum(0.0, np.maximum(1.0 - math.exp(eps) * a, math.exp(-eps) * (1.0 - a)))

    return f


@pytest.mark.parametrize(("m", "k", "c"), [(20, 20, 15), (50, 50, 40), (100, 100, 70), (1000, 100, 80)])
def test_p_value_is_never_below_what_a_mechanism_achieves(m, k, c):
    """Closed forms: mechanisms that meet the hypothesis with V ~ Binomial must not be rejected more often.

    μ-GDP: a Gaussian score thresholded at μ/2 on a fixed set of k canaries is right with probability Φ(μ/2);
    f of ε-DP randomized response: right with probability e^ε/(1 + e^ε); μ = 0: chance, Binomial(k, ½) — there the
    bound is nearly exact (within 10 %; 7 % at k = 20)."""
    for mu in (0.0, 0.5, 1.0):
        tail = stats.binom.sf(c - 1, k, special.ndtr(mu / 2))
        assert one_run_fdp_p_value(canaries=m, guesses=k, correct=c, mu=mu) >= tail * (1 - 1e-9)
    for eps in (0.0, 1.0):
        tail = stats.binom.sf(c - 1, k, 1 / (1 + math.exp(-eps)))
        got = one_run_fdp_p_value(canaries=m, guesses=k, correct=c, tradeoff=randomized_response_curve(eps))
        assert got >= tail * (1 - 1e-9)
    chance = stats.binom.sf(c - 1, k, 0.5)
    assert one_run_fdp_p_value(canaries=m, guesses=k, correct=c, mu=0.0) == pytest.approx(chance, rel=0.1)


@pytest.mark.parametrize(("guesses", "correct", "bonferroni", "expected"), [
    (406, 379, 386, 2.164749), (938, 934, 374, 4.7218075), (5436, 5436, 140, 9.133752),
])  # fmt: skip
def test_matches_the_published_values_of_jax_privacy(guesses, correct, bonferroni, expected):
    """Independent implementation: google-deepmind/jax_privacy, tests/auditing_test.py,
    ``test_epsilon_one_run_close`` (fdp cases shift = 1, 2, 4; δ = 1e-6, significance 0.05): 10,000 "in" scores
    N(shift, 1) and 10,000 "out" N(0, 1) at deterministic quantiles, "in" guesses above every threshold of the ROC
    hull (Bonferroni over its ``bonferroni`` vertices), the best ε. Replaying that threshold set with this module
    gives the same maximum at the (guesses, correct) listed here (and the counting bound gives their
    ``epsilon_one_run`` values, 1.13346, 2.311945 and 4.395568, at its own best thresholds)."""
    mu = one_run_fdp_mu(canaries=20_000, guesses=guesses, correct=correct, confidence=1 - 0.05 / bonferroni)
    assert gdp_epsilon(mu=mu, delta=1e-6) == pytest.approx(expected, rel=1e-5)


def test_edge_cases():
    m = 1000
    assert one_run_fdp_mu(canaries=m, guesses=0, correct=0) == 0.0  # k = 0: no guesses, no evidence
    assert one_run_fdp_p_value(canaries=m, guesses=0, correct=0, mu=1.0) == 1.0
    assert one_run_fdp_mu(canaries=m, guesses=100, correct=0) == 0.0  # none right
    assert one_run_fdp_mu(canaries=m, guesses=100, correct=50) == 0.0  # chance
    assert one_run_fdp_epsilon(canaries=m, guesses=100, correct=50, delta=1e-5) == 0.0
    # All right: finite, and rejected exactly at the confidence.
    mu = one_run_fdp_mu(canaries=m, guesses=100, correct=100)
    assert 0.0 < mu < 10.0
    assert one_run_fdp_p_value(canaries=m, guesses=100, correct=100, mu=mu) == pytest.approx(0.05, rel=1e-3)
    # With 10 of 10 right out of 10 canaries: below the exact Bernoulli limit Φ(μ/2)^10 = 0.05.
    assert one_run_fdp_mu(canaries=10, guesses=10, correct=10) < 2 * special.ndtri(0.05**0.1)
    with pytest.raises(ValueError, match="correct <= guesses"):
        one_run_fdp_mu(canaries=10, guesses=5, correct=6)
    with pytest.raises(ValueError, match="confidence"):
        one_run_fdp_mu(canaries=10, guesses=5, correct=5, confidence=1.0)
    with pytest.raises(ValueError, match="exactly one"):
        one_run_fdp_p_value(canaries=10, guesses=5, correct=5)
    with pytest.raises(ValueError, match="mu must be"):
        one_run_fdp_p_value(canaries=10, guesses=5, correct=5, mu=-1.0)
    with pytest.raises(ValueError, match="delta"):
        one_run_fdp_epsilon(canaries=10, guesses=5, correct=5, delta=0.0)


def test_monotone_in_correct_guesses_confidence_and_mu():
    mus = [one_run_fdp_mu(canaries=10_000, guesses=1000, correct=c) for c in (520, 600, 700, 800, 900, 1000)]
    assert mus[0] == 0.0 and all(a < b for a, b in zip(mus, mus[1:])), mus
    levels = [one_run_fdp_mu(canaries=10_000, guesses=1000, correct=800, confidence=q) for q in (0.5, 0.9, 0.99)]
    assert levels[0] > levels[1] > levels[2] > 0
    p = [one_run_fdp_p_value(canaries=1000, guesses=100, correct=80, mu=mu) for mu in (0.0, 0.2, 0.4, 0.8)]
    assert all(a < b for a, b in zip(p, p[1:])), p


def gdp_canaries(rng, *, m: int, mu: float) -> tuple[np.ndarray, np.ndarray]:
    """m canaries included with probability ½; score N(μ, 1) if included, N(0, 1) if not (μ-GDP per canary)."""
    included = rng.random(m) < 0.5
    return rng.standard_normal(m) + mu * included, included


@pytest.mark.parametrize(("mu", "m", "k", "trials", "tightness"), [
    (1.0, 1000, 100, 200, (0.5, 0.75)), (2.0, 10_000, 500, 60, (0.6, 0.85)),
])  # fmt: skip
def test_coverage_and_tightness_on_gdp_canaries(mu, m, k, trials, tightness):
    """μ̂ ≤ μ in ≥ 95 % of seeded runs (observed: every run); mean μ̂/μ in the stated band (measured 0.61 and 0.73,
    docs/audit.md); ε̂ of the f-DP audit at least the counting bound's on every run, and below the true ε."""
    rng = np.random.default_rng(2024)
    ratios, over = [], 0
    for _ in range(trials):
        scores, included = gdp_canaries(rng, m=m, mu=mu)
        res = one_run_fdp_audit(scores, included, k_plus=k, k_minus=k, delta=1e-5)
        counting = one_run_audit(scores, included, k_plus=k, k_minus=k, delta=1e-5)
        over += res.mu > mu
        ratios.append(res.mu / mu)
        assert counting.epsilon <= res.epsilon <= gdp_epsilon(mu=mu, delta=1e-5)
        assert res.method == "mahloujifar2024 (GDP)" and res.epsilon == gdp_epsilon(mu=res.mu, delta=1e-5)
    assert over <= 0.05 * trials
    assert tightness[0] < np.mean(ratios) < tightness[1], np.mean(ratios)


def test_search_pays_for_its_tries():
    scores, included = gdp_canaries(np.random.default_rng(3), m=2000, mu=2.0)
    ks = [(k, k) for k in (50, 100, 200)]
    best = one_run_audit_search(scores, included, ks=ks, delta=1e-5, audit=one_run_fdp_audit)
    single = [one_run_fdp_audit(scores, included, k_plus=a, k_minus=b, delta=1e-5).mu for a, b in ks]
    assert best.mu <= max(single) and best.method == "mahloujifar2024 (GDP), best of 3 (Bonferroni)"
    assert best.to_dict()["mu"] == best.mu
    assert "mu" not in one_run_audit(scores, included, k_plus=50, k_minus=50, delta=1e-5).to_dict()
