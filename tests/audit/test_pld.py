"""Known-family audits (hsaudit.audit.pld) under the rules' known-family form (hsaudit.audit.tradeoff): the valid
held-out threshold rule against a known Gaussian mechanism."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from hsaudit.audit.bounds import clopper_pearson_upper
from hsaudit.audit.pld import pld_sigma_audit
from hsaudit.audit.rules import Crossing, Grid, HeldOut, Rays
from hsaudit.audit.threshold import stratified_split
from hsaudit.audit.tradeoff import held_out_point


def test_held_out_point_bounds_the_estimation_rates_at_the_chosen_threshold():
    rng = np.random.default_rng(3)
    out, inn = rng.normal(0, 1, 400), rng.normal(2, 1, 400)
    a, b = held_out_point(out, inn, confidence=0.95, selection_fraction=0.5, seed=7)
    assert a.shape == b.shape == (1,)
    # Each is a CP upper bound of a count out of the 200 estimation scores of its world: some count k reproduces it.
    for value in (a[0], b[0]):
        assert any(np.isclose(value, clopper_pearson_upper(k, 200, confidence=0.95)) for k in range(201))
    # The threshold is a good one: far better than chance (α + β ≪ 1) on a pair with μ = 2.
    assert a[0] + b[0] < 0.6
    # Deterministic in its seed, and another seed splits differently.
    assert held_out_point(out, inn, confidence=0.95, seed=7) == (a, b)
    assert held_out_point(out, inn, confidence=0.95, seed=8) != (a, b)


def test_held_out_point_bounds_the_counts_of_the_estimation_split_by_brute_force():
    """The point is the CP bound of the errors on the scores left out of the selection, at the threshold whose
    selection-set bounds have the largest μ: recomputed here by a loop over every candidate threshold."""
    from scipy import stats

    rng = np.random.default_rng(4)
    out, inn = np.round(rng.normal(0, 1, 120), 1), np.round(rng.normal(1.5, 1, 90), 1)
    sel0, sel1, est0, est1 = stratified_split(np.random.default_rng(5), out, inn, 0.3)
    best, tau = -np.inf, None
    for t in np.unique(np.r_[sel0, sel1]):
        a = clopper_pearson_upper(np.sum(sel0 >= t), sel0.size, confidence=0.9)
        b = clopper_pearson_upper(np.sum(sel1 < t), sel1.size, confidence=0.9)
        mu = stats.norm.isf(a) - stats.norm.ppf(b)
        if mu > best:
            best, tau = mu, t
    want = (float(clopper_pearson_upper(np.sum(est0 >= tau), est0.size, confidence=0.9)),
            float(clopper_pearson_upper(np.sum(est1 < tau), est1.size, confidence=0.9)))  # fmt: skip
    got = held_out_point(out, inn, confidence=0.9, selection_fraction=0.3, seed=5)
    assert (got[0][0], got[1][0]) == pytest.approx(want, rel=1e-12)


def test_held_out_point_rejects_bad_input():
    with pytest.raises(ValueError, match="two scores"):
        held_out_point([1.0], [0.0, 1.0], confidence=0.95)
    with pytest.raises(ValueError, match="selection_fraction"):
        held_out_point([0.0, 1.0], [0.0, 1.0], confidence=0.95, selection_fraction=1.0)
    for rule in (Grid(), Crossing(), Rays()):  # no known-family form
        with pytest.raises(ValueError, match=f"not {rule.name}"):
            pld_sigma_audit([0.0, 1.0], [0.0, 1.0], rule=rule, steps=1, sampling_rate=1.0, noise_multiplier=1.0,
                            delta=1e-5)  # fmt: skip


def test_held_out_sigma_hat_audit_is_valid_on_the_gaussian_mechanism():
    """T = 1, q = 1: the last-iterate family is the Gaussian mechanism N(1, σ²) vs N(0, σ²), i.e. scores
    N(1/σ, 1) vs N(0, 1). A valid 95 % rule (each bound at 0.95: level ≥ 0.90) may put σ̂ below the true σ (an ε
    above the truth) in at most ~10 % of the repetitions; the counted failures must stay well inside that. 20
    repetitions catch what 40 did, at half the cost (planted: the rule at 50 % confidence fails 7 of these 20, 18 of
    the 40)."""
    sigma, runs, reps = 0.5, 1000, 20
    failures = 0
    for r in range(reps):
        rng = np.random.default_rng(100 + r)
        out, inn = rng.normal(0, 1, runs), rng.normal(1 / sigma, 1, runs)
        aud = pld_sigma_audit(out, inn, rule=HeldOut(seed=r), steps=1, sampling_rate=1.0, noise_multiplier=sigma,
                              delta=1e-5, iterations=12)  # fmt: skip
        failures += aud["sigma_hat"] < sigma * (1 - 1e-3)
    # P[Binomial(20, 0.10) ≥ 5] ≈ 0.04: a rule at its nominal level passes; one that overshoots half the time fails
    # (P[Binomial(20, 0.5) ≤ 4] ≈ 0.006).
    assert failures <= 4, failures
    assert stats.binom.sf(4, reps, 0.10) < 0.05 and stats.binom.cdf(4, reps, 0.5) < 0.01
