"""Tests of the GDP audit (hsaudit.audit.bounds, .threshold, .gdp, .rules through audit_scores): closed forms, the
slow reference loop (hsaudit.audit.reference), known mechanisms, properties. Most tests check the paper rule's exact
threshold search, which the other Clopper–Pearson rules reuse."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special, stats

from hsaudit.accounting import gdp_epsilon
from hsaudit.audit import (
    AuditResult,
    Crossing,
    Grid,
    HeldOut,
    Paper,
    assumption_free_epsilon,
    audit_steps,
    clopper_pearson_upper,
    empirical_tradeoff,
    parse_rule,
    reference_audit,
)
from hsaudit.audit import audit_scores as _audit_scores
from hsaudit.audit import bounds as B
from hsaudit.audit import threshold as T
from hsaudit.audit.validation import coverage_study, gaussian_pair_scores

DELTA = 1e-5


def audit_scores(scores, members, *, rule=Paper(), **kw):
    """The audit under the paper rule unless another is named (the search most tests here check)."""
    return _audit_scores(scores, members, rule=rule, **kw)


def _pair(mu, runs, seed, n1=None, ties=None):
    rng = np.random.default_rng(seed)
    n1 = runs // 2 if n1 is None else n1
    m = np.zeros(runs, dtype=int)
    m[rng.choice(runs, n1, replace=False)] = 1
    s = rng.standard_normal(runs) + mu * m
    if ties is not None:
        s = np.round(s / ties) * ties
    return s, m


# ---------------------------------------------------------------------------------------------- Clopper–Pearson
@pytest.mark.parametrize("n", [1, 7, 100, 2500])
@pytest.mark.parametrize("c", [0.9, 0.95, 0.99])
def test_cp_upper_closed_forms(n, c):
    # k = 0: (1 − p)^n = 1 − c
    assert clopper_pearson_upper(0, n, confidence=c) == pytest.approx(1 - (1 - c) ** (1 / n), rel=1e-12)
    # k = n − 1: P(Bin ≤ n − 1) = 1 − p^n = 1 − c
    assert clopper_pearson_upper(n - 1, n, confidence=c) == pytest.approx(c ** (1 / n), rel=1e-12)
    assert clopper_pearson_upper(n, n, confidence=c) == 1.0


@pytest.mark.parametrize("k,n", [(3, 10), (50, 400), (0, 5), (999, 1000)])
def test_cp_upper_matches_scipy_binomtest(k, n):
    ref = stats.binomtest(k, n, alternative="less").proportion_ci(confidence_level=0.95).high
    assert clopper_pearson_upper(k, n, confidence=0.95) == pytest.approx(ref, rel=1e-9)
    # defining property: P(Bin(n, ub) ≤ k) = 1 − c
    ub = float(clopper_pearson_upper(k, n, confidence=0.95))
    if k < n:
        assert stats.binom.cdf(k, n, ub) == pytest.approx(0.05, rel=1e-8)


def test_cp_upper_vectorised_and_validation():
    got = clopper_pearson_upper([0, 1, 2], [10, 10, 20], confidence=0.9)
    assert got.shape == (3,)
    assert got[0] == pytest.approx(1 - 0.1**0.1)
    for bad_k, bad_n in [(-1, 5), (6, 5), (1.5, 5), (0, 0)]:
        with pytest.raises(ValueError, match="k"):
            clopper_pearson_upper(bad_k, bad_n, confidence=0.95)
    for c in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match="confidence"):
            clopper_pearson_upper(1, 5, confidence=c)


def test_probit_table_accurate_near_one():
    """T[k] = Φ⁻¹(CP_ub) uses the complement when ub > 1/2: compare with a direct evaluation where it is
    accurate, and check monotonicity over the whole table."""
    n, c = 3000, 0.95
    k = np.arange(n + 1)
    t = B.cp_probit(k, n, c)
    direct = special.ndtri(clopper_pearson_upper(k, n, confidence=c))
    mid = (k > 5) & (k < n - 5)
    assert t[mid] == pytest.approx(direct[mid], rel=1e-9, abs=1e-9)
    assert np.isposinf(t[-1]) and (np.diff(t) > 0).all()


# ---------------------------------------------------------------------------------------------- vs reference
@pytest.mark.parametrize(
    "runs,n1,mu,ties,seed",
    [
        (40, 20, 1.0, None, 0),
        (101, 30, 2.0, None, 1),
        (200, 100, 0.3, None, 2),
        (200, 150, 1.5, 0.25, 3),  # heavy ties across classes
        (300, 120, 3.0, 0.5, 4),
        (250, 125, 0.0, None, 5),  # no signal
        (60, 30, -1.0, None, 6),  # wrong orientation: μ̂ ≤ 0
    ],
)
def test_vectorised_equals_reference(runs, n1, mu, ties, seed):
    s, m = _pair(mu, runs, seed, n1=n1, ties=ties)
    fast = audit_scores(s, m, delta=DELTA, confidence=0.95)
    slow = reference_audit(s, m, delta=DELTA, confidence=0.95)
    assert fast.mu == pytest.approx(slow.mu, rel=1e-9, abs=1e-9)
    assert fast.epsilon == pytest.approx(slow.epsilon, rel=1e-8, abs=1e-9)
    assert fast.fpr_upper == pytest.approx(slow.fpr_upper, rel=1e-9)
    assert fast.fnr_upper == pytest.approx(slow.fnr_upper, rel=1e-9)
    assert fast.epsilon_assumption_free == pytest.approx(slow.epsilon_assumption_free, rel=1e-8, abs=1e-9)
    # the reported threshold reproduces the reported error counts
    if math.isfinite(fast.threshold):
        pred = s > fast.threshold
        assert np.sum(pred & (m == 0)) / np.sum(m == 0) == fast.fpr
        assert np.sum(~pred & (m == 1)) / np.sum(m == 1) == fast.fnr


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.integers(-6, 6), st.booleans()), min_size=2, max_size=60).filter(
        lambda xs: 0 < sum(b for _, b in xs) < len(xs)
    ),
    st.sampled_from([0.8, 0.95]),
)
def test_vectorised_equals_reference_hypothesis(pairs, confidence):
    """Integer scores in a small range: many ties, unbalanced classes."""
    s = np.array([x for x, _ in pairs], dtype=float)
    m = np.array([b for _, b in pairs], dtype=int)
    fast = audit_scores(s, m, confidence=confidence)
    slow = reference_audit(s, m, confidence=confidence)
    assert fast.mu == pytest.approx(slow.mu, rel=1e-9, abs=1e-9) or (fast.mu == slow.mu == -math.inf)
    assert fast.epsilon == pytest.approx(slow.epsilon, rel=1e-8, abs=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_pruned_search_equals_full_table(monkeypatch, seed):
    """The coarse-to-fine search is exact: same maximum as gathering a fully computed table."""
    mu = [0.1, 1.0, 3.0, 5.0][seed]
    s, m = _pair(mu, 40_000, seed, ties=0.01 if seed == 2 else None)
    fast = audit_scores(s, m)
    s0, s1 = np.sort(s[m == 0]), np.sort(s[m == 1])
    n0, n1 = s0.size, s1.size
    t0 = B.cp_probit(np.arange(n0 + 1), n0, 0.95)
    t1 = B.cp_probit(np.arange(n1 + 1), n1, 0.95)
    j = np.arange(n1)
    fp = n0 - np.searchsorted(s0, s1, side="left")
    first = np.concatenate(([True], s1[1:] != s1[:-1]))
    brute = np.max(np.where(first, -t0[fp] - t1[j], -np.inf))
    assert fast.mu == brute


def test_pruning_forced_on_small_inputs_matches_reference(monkeypatch):
    monkeypatch.setattr(T, "_SHIFTS", (5, 3, 1))
    monkeypatch.setattr(T, "_PRUNE_MIN", 0)
    B.clear_cache()
    try:
        for seed in range(3):
            s, m = _pair(1.0 + seed, 240, seed, ties=0.1 if seed % 2 else None)
            assert audit_scores(s, m).mu == pytest.approx(reference_audit(s, m).mu, rel=1e-9)
    finally:
        B.clear_cache()


def test_float32_scores_are_audited_exactly():
    s, m = _pair(2.0, 3000, 11)
    s32 = s.astype(np.float32)
    assert audit_scores(s32, m).mu == audit_scores(s32.astype(np.float64), m).mu


def test_rank_invariance_and_orientation():
    s, m = _pair(2.5, 2000, 7)
    base = audit_scores(s, m)
    assert audit_scores(np.exp(s / 3), m).mu == base.mu  # depends on ranks only
    flipped = audit_scores(-s, m)  # scores pointing the wrong way
    assert flipped.epsilon == 0.0 and flipped.mu < 0


# ---------------------------------------------------------------------------------------------- limits
def test_zero_errors_cap_from_spec():
    """Spec §1: zero errors cap ε̂ at about 43.6 for R = 5000 (2500 per class)."""
    s = np.r_[np.zeros(2500), np.ones(2500)]
    m = np.r_[np.zeros(2500), np.ones(2500)].astype(int)
    res = audit_scores(s, m)
    ub = 1 - 0.05 ** (1 / 2500)
    assert res.fpr == res.fnr == 0.0
    assert res.fpr_upper == pytest.approx(ub, rel=1e-12)
    assert res.mu == pytest.approx(-2 * special.ndtri(ub), rel=1e-12)
    assert res.epsilon == pytest.approx(43.6, abs=0.05)
    assert res.threshold == 0.5


def test_no_separating_threshold():
    s = np.ones(10)
    m = np.r_[np.zeros(5), np.ones(5)]
    res = audit_scores(s, m)
    assert res.mu == -math.inf and res.epsilon == 0.0 and math.isnan(res.threshold)
    ref = reference_audit(s, m)
    assert ref.mu == -math.inf and ref.epsilon == 0.0


# ---------------------------------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    "scores,members,kwargs,match",
    [
        ([1.0, np.nan, 2.0], [0, 1, 1], {}, "NaN"),
        ([1.0, np.inf, 2.0], [0, 1, 1], {}, "finite"),
        ([1.0, 2.0, 3.0], [0, 2, 1], {}, "0/1"),
        ([1.0, 2.0, 3.0], [1, 1, 1], {}, "non-members"),
        ([1.0, 2.0, 3.0], [0, 0, 0], {}, "members"),
        ([1.0, 2.0, 3.0], [0, 1], {}, "one label per score"),
        ([1.0, 2.0], [0, 1], {"delta": 0.0}, "delta"),
        ([1.0, 2.0], [0, 1], {"delta": 1.0}, "delta"),
        ([1.0, 2.0], [0, 1], {"confidence": 1.0}, "confidence"),
        ([1.0, 2.0], [0, 1], {"confidence": -0.5}, "confidence"),
        ([1.0, 2.0], [0, 1], {"rule": "held-out"}, "rule must be"),
        ([1.0, 2.0, 3.0, 4.0], [0, 1, 1, 1], {"rule": HeldOut()}, "at least 2"),
        (["a", "b"], [0, 1], {}, "numeric"),
    ],
)
def test_bad_input_raises_value_error(scores, members, kwargs, match):
    with pytest.raises(ValueError, match=match):
        audit_scores(scores, members, **kwargs)


def test_bool_members_accepted():
    s, m = _pair(1.0, 200, 3)
    assert audit_scores(s, m.astype(bool)) == audit_scores(s, m)


# ---------------------------------------------------------------------------------------------- known mechanisms
def test_paper_mode_tight_on_gaussian_pair():
    """Spec §1 calibration: μ = √250/4, R = 5000 → ε̂ ≈ 23.2 ± 0.6 against 24.0 (median within a few %)."""
    mu = math.sqrt(250) / 4
    truth = gdp_epsilon(mu=mu, delta=DELTA)
    eps = [audit_scores(*gaussian_pair_scores(mu=mu, runs=5000, seed=100 + t)).epsilon for t in range(40)]
    assert np.median(eps) == pytest.approx(truth, rel=0.05)
    assert np.median(eps) < truth


@pytest.mark.parametrize("mode", ["held-out", "held-out@0.1", "grid"])
def test_valid_modes_cover_on_gaussian_pairs(mode):
    """Held-out/grid ε̂ ≤ true ε in ≥ ~93% of seeded trials (per-rate CP at 95%: ≤ 10% by the union bound,
    about 2% observed). 60 trials per μ at R = 2000."""
    rows = coverage_study(mus=(1.0, 3.0), trials=60, runs=2000, rules=(parse_rule(mode),), seed=7)
    for row in rows:
        assert row.exceed_fraction <= 0.07, row
        assert 0.6 < row.median_ratio < 1.0, row


def test_paper_mode_is_not_valid_but_held_out_is():
    """The spec's finding (§1 step 6): the paper's estimator exceeds the truth much more often than 5%."""
    rows = coverage_study(mus=(2.0,), trials=80, runs=2000, rules=(Paper(), HeldOut()), seed=3)
    by_mode = {r.threshold_rule: r for r in rows}
    assert by_mode["paper"].exceed_fraction > 0.1
    assert by_mode["held-out"].exceed_fraction < by_mode["paper"].exceed_fraction


def test_held_out_split_is_seeded_and_uses_half():
    s, m = _pair(2.0, 1001, 5, n1=401)
    a = audit_scores(s, m, rule=HeldOut(seed=1))
    b = audit_scores(s, m, rule=HeldOut(seed=np.random.default_rng(1)))
    c = audit_scores(s, m, rule=HeldOut(seed=2))
    assert a == b and a != c
    assert (a.n_members, a.n_nonmembers) == (401 - 200, 600 - 300)
    assert a.threshold_rule == "held-out"


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.6, 0.9), st.floats(0.91, 0.999))
def test_mu_decreases_with_confidence(seed, c_lo, c_hi):
    s, m = _pair(1.5, 300, seed)
    assert audit_scores(s, m, confidence=c_hi).mu <= audit_scores(s, m, confidence=c_lo).mu


# ---------------------------------------------------------------------------------------------- audit_steps
def test_audit_steps_equals_row_audits():
    rng = np.random.default_rng(0)
    m = np.r_[np.zeros(150), np.ones(150)].astype(int)
    scores = rng.standard_normal((6, 300)) + np.linspace(0, 3, 6)[:, None] * m
    scores[2] = np.round(scores[2], 1)
    for rule in (Paper(), Crossing()):
        rows = audit_steps(scores, m, rule=rule)
        assert rows == [audit_scores(r, m, rule=rule) for r in scores]
        assert audit_steps(scores, m, rule=rule, threads=2) == rows
        assert audit_steps(scores, np.tile(m, (6, 1)), rule=rule) == rows
    # a seeded rule draws every row's split from one stream, in row order
    held = audit_steps(scores, m, rule=HeldOut(seed=3))
    gen = np.random.default_rng(3)
    assert held == [audit_scores(r, m, rule=HeldOut(seed=gen)) for r in scores]
    assert all(r.threshold_rule == "held-out" for r in held) and len(held) == 6
    assert audit_steps(scores, np.tile(m, (6, 1)), rule=HeldOut(seed=3)) == held
    with pytest.raises(ValueError, match="2-dimensional"):
        audit_steps(scores[0], m)
    with pytest.raises(ValueError, match="shape"):
        audit_steps(scores, np.tile(m, (5, 1)))


# ---------------------------------------------------------------------------------------------- helpers
def test_assumption_free_epsilon_closed_form():
    a, b = 0.01, 0.2
    want = max(math.log((1 - DELTA - a) / b), math.log((1 - DELTA - b) / a))
    assert assumption_free_epsilon(a, b, delta=DELTA) == pytest.approx(want, rel=1e-12)
    assert assumption_free_epsilon(0.5, 0.5, delta=DELTA) == 0.0
    assert assumption_free_epsilon(0.0, 0.3, delta=DELTA) == math.inf
    assert assumption_free_epsilon([0.01, 0.5], [0.2, 0.5], delta=DELTA).shape == (2,)
    with pytest.raises(ValueError, match="fpr_upper"):
        assumption_free_epsilon(1.5, 0.1, delta=DELTA)


def test_assumption_free_bound_holds_for_gaussian_truth():
    """With the true error rates of the optimal test of a μ-GDP pair, the (ε, δ) bound is ≤ the true ε."""
    mu = 2.0
    truth = gdp_epsilon(mu=mu, delta=DELTA)
    for tau in np.linspace(-2, 6, 17):
        fpr, fnr = stats.norm.sf(tau), stats.norm.cdf(tau - mu)
        assert assumption_free_epsilon(fpr, fnr, delta=DELTA) <= truth + 1e-9


def test_empirical_tradeoff_matches_brute_force():
    s, m = _pair(1.0, 300, 9, ties=0.2)
    fpr, fnr = empirical_tradeoff(s, m)
    vals = np.unique(s)
    taus = np.r_[-np.inf, vals]  # member iff s > τ
    bf_fpr = [np.mean(s[m == 0] > t) for t in taus]
    bf_fnr = [np.mean(s[m == 1] <= t) for t in taus]
    assert fpr == pytest.approx(bf_fpr) and fnr == pytest.approx(bf_fnr)
    assert (fpr[0], fnr[0], fpr[-1], fnr[-1]) == (1.0, 0.0, 0.0, 1.0)
    tf, tn = empirical_tradeoff(s, m, max_points=20)
    assert 2 < tf.size <= 22 and (tf[0], tn[-1]) == (1.0, 1.0)
    assert (np.diff(tf) <= 0).all() and (np.diff(tn) >= 0).all()
    with pytest.raises(ValueError, match="max_points"):
        empirical_tradeoff(s, m, max_points=1)


def test_result_to_dict_keys():
    res = audit_scores(*_pair(1.0, 100, 0))
    d = res.to_dict()
    assert isinstance(res, AuditResult)
    for key in (
        "epsilon mu threshold fpr_upper fnr_upper fpr fnr epsilon_assumption_free n_members n_nonmembers "
        "confidence delta threshold_rule"
    ).split():
        assert key in d


def test_selection_fraction_split_sizes_and_validation():
    s, m = _pair(2.0, 1000, 8)
    res = audit_scores(s, m, rule=HeldOut(fraction=0.1, seed=0))
    assert (res.n_members, res.n_nonmembers) == (450, 450)
    res = audit_scores(s, m, rule=Grid(size=3, fraction=0.2, seed=0))
    assert (res.n_members, res.n_nonmembers) == (400, 400) and res.threshold_rule == "grid@0.2"
    for bad in (0.0, 1.0, -0.1):
        with pytest.raises(ValueError, match="selection_fraction"):
            HeldOut(fraction=bad)
    with pytest.raises(ValueError, match="grid_size"):
        Grid(size=0)


@pytest.mark.parametrize("seed", range(6))
def test_binned_search_equals_sorted_search(monkeypatch, seed):
    """The binned search of large populations returns exactly the sorted search's μ, counts and threshold
    (forced on small inputs with few scores per bin, ties, float32 and outliers)."""
    rng = np.random.default_rng(seed)
    monkeypatch.setattr(T, "_BIN_LOAD", [1, 2, 16][seed % 3])
    for _ in range(25):
        n = int(rng.integers(4, 2000))
        m = rng.random(n) < rng.uniform(0.1, 0.9)
        if m.all() or not m.any():
            continue
        s = rng.standard_normal(n) + rng.uniform(-1, 5) * m
        if seed % 2:
            s = np.round(s * 3)  # heavy ties
        if seed == 2:
            s = s.astype(np.float32)
        if seed == 4:
            s[rng.integers(n)] = 1e6  # an outlier stretches the bins
        x0, x1 = s[~m], s[m]
        got = T._best_threshold_binned(x0, x1, 0.95)
        want = T.best_threshold_sorted(np.sort(x0), np.sort(x1), 0.95)
        if got is None:  # a single distinct value
            assert np.unique(s).size == 1
            continue
        assert (got.mu, got.fp, got.fn) == (want.mu, want.fp, want.fn)
        assert got.threshold == want.threshold or (math.isnan(got.threshold) and math.isnan(want.threshold))


def test_large_population_uses_binned_path_and_matches():
    s, m = _pair(3.0, 200_000, 12)
    res = audit_scores(s, m)
    s0, s1 = np.sort(s[m == 0]), np.sort(s[m == 1])
    want = T.best_threshold_sorted(s0, s1, 0.95)
    assert (res.mu, res.threshold) == (want.mu, want.threshold)


def test_doctests():
    import doctest

    assert doctest.testmod(B).failed == 0


@pytest.mark.parametrize("rule", [Paper(), HeldOut(seed=3), Crossing()], ids=lambda r: r.name)
def test_a_common_shift_of_every_score_leaves_the_audit_unchanged(rule):
    """Why fig12's shared-unknown θ0 reading equals the known one: θ_T[d] = (θ_T[d] − θ0[d]) + θ0[d] with one θ0[d]
    for every run of both worlds shifts all scores alike, and the threshold audit sees only their order."""
    rng = np.random.default_rng(12)
    members = np.r_[np.ones(500, bool), np.zeros(500, bool)]
    scores = np.where(members, rng.normal(1.5, 1, 1000), rng.normal(0, 1, 1000))
    base = audit_scores(scores, members, delta=1e-5, confidence=0.95, rule=rule)
    shifted = audit_scores(scores + 0.0625, members, delta=1e-5, confidence=0.95, rule=rule)
    assert shifted.epsilon == base.epsilon and shifted.mu == base.mu
