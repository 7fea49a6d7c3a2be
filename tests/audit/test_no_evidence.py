"""No evidence is 0, never a search bracket's end (DESIGN: "Statistics are sound and honest").

A lower bound from scores that do not separate the worlds is ε̂ = 0. Known mechanisms: identical score multisets
(every threshold has FPR + FNR = 1 exactly) and null scores (both worlds N(0, 1)), where any ε̂ > 0 exceeds the
truth, so a valid rule at confidence c gives ε̂ > 0 in at most a fraction 1 − c of the trials.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import replace

import numpy as np
import pytest
from scipy import stats

from hsaudit.accounting import last_iterate as H
from hsaudit.accounting.gaussian import PldTable
from hsaudit.accounting.last_iterate import delta_curve
from hsaudit.audit.auditor import Auditor, KnownFamily, audit_scores
from hsaudit.audit.pld import audit_pld, no_evidence, pld_sigma_audit, sigma_hat_from_points
from hsaudit.audit.rules import Bonferroni, Crossing, Grid, HeldOut, Paper, Rays

VALID_GDP = [HeldOut(), Grid(), Bonferroni(), Crossing(), Rays(draws=99)]
VALID_POINTS = [HeldOut(), Bonferroni()]
FAMILY = dict(steps=20, sampling_rate=0.05, noise_multiplier=1.0, delta=1e-5)


def _identical_worlds(seed: int, n: int = 400) -> tuple[np.ndarray, np.ndarray]:
    """Two worlds whose scores are the same multiset (ties included), in different orders."""
    rng = np.random.default_rng(seed)
    scores = np.round(rng.normal(size=n), 2)
    return rng.permutation(scores), rng.permutation(scores)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("rule", VALID_GDP, ids=lambda r: r.name)
def test_identical_worlds_give_zero_under_every_valid_gdp_rule(rule, seed):
    s0, s1 = _identical_worlds(seed)
    if hasattr(rule, "seed"):
        rule = replace(rule, seed=seed)
    res = Auditor(rule=rule).gdp(s0, s1)
    assert res.epsilon == 0.0 and not res.mu > 0


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("family", ["last_iterate", "all_iterates"])
@pytest.mark.parametrize("rule", [Paper(), *VALID_POINTS], ids=lambda r: r.name)
def test_identical_worlds_give_zero_on_every_sigma_hat_path(rule, family, seed):
    """Every σ̂ path (both families, every rule with a known-family form; the paper's every-point rule too: on
    identical multisets each threshold's point is on β = 1 − α before the CP bounds widen it)."""
    s0, s1 = _identical_worlds(seed)
    if hasattr(rule, "seed"):
        rule = replace(rule, seed=seed)
    known = KnownFamily(family=family, steps=20, sampling_rate=0.05, noise_multiplier=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no bracket was hit: the points are read directly as no evidence
        assert Auditor(rule=rule).known_family(s0, s1, known) == {"sigma_hat": math.inf, "epsilon": 0.0}


@pytest.fixture(scope="module")
def small_table() -> PldTable:
    """A PLD table of T = 4 Poisson-subsampled Gaussians (q = 0.5) over σ ∈ [0.6, 10] (ε from ~20 down to ~0.6)."""
    sigmas = np.geomspace(0.6, 10.0, 8)
    eps_prime = np.round(np.arange(0.0, 25.0 + 1e-9, 0.05), 6)
    kw = dict(steps=4, sampling_rate=0.5)
    eps_at = np.array([H.standard_epsilon(1e-5, noise_multiplier=s, **kw) for s in sigmas])
    deltas = np.array([delta_curve(noise_multiplier=s, epsilons=eps_prime, **kw) for s in sigmas])
    return PldTable(sigmas, eps_at, eps_prime, np.log(np.maximum(deltas, 1e-300)))


def test_identical_worlds_give_zero_on_the_pld_curve_audit(small_table: PldTable):
    """Annamalai's Algorithm 2 read as a bound: no evidence is 0, not the grid's first value 0.5."""
    s0, s1 = _identical_worlds(0)
    assert audit_pld(s0, s1, small_table) == 0.0  # raw rates (the paper's audit)
    for rule in VALID_POINTS:
        assert Auditor(rule=rule).pld_curve(s0, s1, small_table) == 0.0


@pytest.mark.parametrize("shift", [0.6, 1.2])
def test_pld_curve_audit_under_a_valid_rule_is_a_rejected_epsilon(small_table: PldTable, shift: float):
    """Under a valid rule the PLD-curve audit reports the largest ε the points reject, never the grid's first
    consistent value, which can sit up to one grid step above it."""
    from hsaudit.accounting.gaussian import pld_tradeoff, sigma_for_epsilon

    rng = np.random.default_rng(7)
    s0, s1 = rng.normal(size=500), rng.normal(shift, 1.0, size=500)
    rule = Bonferroni()
    grid = np.round(np.arange(0.5, 14.0, 0.1), 6)  # within the small table's range of ε
    got = audit_pld(s0, s1, small_table, rule=rule, grid=grid)
    paper_grid = audit_pld(s0, s1, small_table, rule=Paper(), grid=grid)
    alpha, beta = rule.points(s0, s1, confidence=0.95)

    def rejected(eps: float) -> bool:
        return bool(np.any(beta < pld_tradeoff(alpha, sigma_for_epsilon(eps, small_table), small_table) - 1e-12))

    assert got > 0
    assert rejected(got)  # every value reported is rejected by the points ...
    assert not rejected(got + 1e-3)  # ... and it is the largest (the bisection stops at 1e-4)
    assert not rejected(float(grid[np.searchsorted(grid, got)]))  # the paper's answer is the next grid value
    assert got <= paper_grid  # the paper rule (every threshold) is never below a valid one


def test_no_evidence_is_the_curve_of_infinite_sigma():
    assert no_evidence([0.2, 0.5, 1.0], [0.8, 0.5, 0.0])
    assert not no_evidence([0.2, 0.5], [0.8, 0.49])
    # the last-iterate curve approaches β = 1 − α from below as σ grows: points just below the line are evidence
    a = np.array([0.3])
    assert sigma_hat_from_points(a, 1 - a - 1e-3, **FAMILY)["sigma_hat"] < math.inf


@pytest.mark.parametrize("steps", [1, 20, 50])
@pytest.mark.parametrize("rule", VALID_POINTS, ids=lambda r: r.name)
def test_null_scores_give_zero_at_the_nominal_rate(rule, steps):
    """Null scores (both worlds N(0, 1), R = 1,000 each; q = 0.05, σ = 1): ε̂ > 0 in at most 1 − c of the trials,
    up to three binomial standard errors. Before the fix every trial read the heuristic ε at the search bracket's
    end 10σ (0.0144 at T = 1), i.e. a fraction 1: the test fails on it."""
    trials, c = 60, 0.95
    positive = 0
    for t in range(trials):
        rng = np.random.default_rng(1000 * steps + t)
        s0, s1 = rng.normal(size=1000), rng.normal(size=1000)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = pld_sigma_audit(s0, s1, rule=replace(rule, seed=t) if hasattr(rule, "seed") else rule,
                                  steps=steps, sampling_rate=0.05, noise_multiplier=1.0, delta=1e-5,
                                  confidence=c)  # fmt: skip
        positive += res["epsilon"] > 0
    tolerance = 3 * math.sqrt(c * (1 - c) / trials)
    assert positive / trials <= (1 - c) + tolerance, positive


@pytest.mark.parametrize("rule", VALID_GDP, ids=lambda r: r.name)
def test_null_scores_give_zero_at_the_nominal_rate_under_the_gdp_rules(rule):
    trials, c = 100, 0.95
    positive = 0
    for t in range(trials):
        rng = np.random.default_rng(7000 + t)
        scores = rng.normal(size=2000)
        members = np.r_[np.zeros(1000), np.ones(1000)]
        seeded = replace(rule, seed=t) if hasattr(rule, "seed") else rule
        positive += audit_scores(scores, members, rule=seeded, confidence=c).epsilon > 0
    # P[Binomial(100, 0.05) > 11] < 0.005: a rule at its nominal level passes
    assert positive <= 11, positive
    assert stats.binom.sf(11, trials, 1 - c) < 0.005


def test_the_search_does_not_depend_on_the_nominal_sigma():
    """The same scores audited against σ = 1 and σ = 3: no evidence is 0 under both; with evidence outside the
    first bracket [σ/4, 10σ] the search grows until it holds σ̂, and both nominal values find the same σ̂."""
    rng = np.random.default_rng(11)
    null0, null1 = rng.normal(size=1000), rng.normal(size=1000)
    for sigma in (1.0, 3.0):
        kw = dict(steps=5, sampling_rate=0.05, noise_multiplier=sigma, delta=1e-5)
        assert pld_sigma_audit(null0, null1, rule=HeldOut(), **kw)["epsilon"] == 0.0
    # T = 1, q = 1: scores N(0, 1) vs N(1/σ*, 1) with σ* = 0.5 (far below 3/4, the bracket of σ = 3)
    s0, s1 = rng.normal(size=4000), rng.normal(2.0, 1.0, size=4000)
    found = []
    for sigma in (0.5, 3.0, 40.0):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            found.append(pld_sigma_audit(s0, s1, steps=1, sampling_rate=1.0, noise_multiplier=sigma, delta=1e-5,
                                         rule=Bonferroni(), iterations=20)["sigma_hat"])  # fmt: skip
    np.testing.assert_allclose(found, found[0], rtol=1e-4)
    assert 0.45 < found[0] < 0.6
