"""The one auditor (hsaudit.audit.auditor) and its rules (hsaudit.audit.rules): rules as values carrying their
estimators, a valid default, every estimate, both directions paid for.

Closed forms (AUROC of a Gaussian pair, the Bonferroni level), slow references (pairwise AUROC, threshold
enumeration for TPR at FPR) and known mechanisms (null scores, Gaussian pairs).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy import stats

from hsaudit.audit import bounds, rules
from hsaudit.audit.auditor import (
    Auditor,
    Bonferroni,
    Crossing,
    Grid,
    HeldOut,
    KnownFamily,
    Paper,
    Rays,
    audit_scores,
    auroc,
    mu_from_auroc,
    parse_rule,
    tpr_at_fpr,
)
from hsaudit.audit.pld import sigma_hat_from_points
from hsaudit.audit.tradeoff import clopper_pearson_points, held_out_point

# One instance of every registered rule (a new rule class is tested here with its defaults); options that keep the
# tests fast or exercise a non-default value.
OPTIONS = {HeldOut: {"fraction": 0.2, "seed": 3}, Grid: {"size": 3, "seed": 1}, Rays: {"draws": 99}}
RULES = [cls(**OPTIONS.get(cls, {})) for cls in rules.RULES]


def _pair(mu: float, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(size=n), rng.normal(mu, 1.0, size=n)


def test_one_rule_per_mode_in_the_same_order():
    assert [type(parse_rule(m)).name for m in rules.AUDIT_MODES] == list(rules.AUDIT_MODES)
    assert [type(r) for r in RULES[:6]] == [Paper, HeldOut, Grid, Bonferroni, Crossing, Rays]
    assert [r for r in RULES if not r.valid] == [Paper()]
    assert all(r.description for r in RULES) and "not a valid" in Paper.description


def test_the_default_rule_is_valid():
    """A user who names no rule gets a valid bound (DESIGN: "a valid threshold rule is the default"): the crossing
    rule, the tightest valid one across the score families of docs/audit.md's coverage study."""
    assert rules.DEFAULT_RULE == Crossing() and rules.DEFAULT_RULE.valid
    assert Auditor().rule == rules.DEFAULT_RULE
    s0, s1 = _pair(1.5, 300, 0)
    scores, members = np.concatenate([s0, s1]), np.r_[np.zeros(300), np.ones(300)]
    assert audit_scores(scores, members) == audit_scores(scores, members, rule=Crossing())
    assert audit_scores(scores, members).threshold_rule == "crossing"


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.name)
def test_the_rule_carries_the_estimator(rule):
    """Auditor.gdp, audit_scores and the rule's own gdp are one computation (no mode strings in between)."""
    s0, s1 = _pair(1.5, 300, 0)
    got = Auditor(delta=1e-4, confidence=0.9, rule=rule).gdp(s0, s1)
    scores, members = np.concatenate([s0, s1]), np.r_[np.zeros(300), np.ones(300)]
    assert got == audit_scores(scores, members, delta=1e-4, confidence=0.9, rule=rule)
    assert got == rule.gdp(s0, s1, delta=1e-4, confidence=0.9) and got.threshold_rule == rule.spec


def test_rules_are_values_with_checked_options():
    assert HeldOut(0.1, 2) == HeldOut(fraction=0.1, seed=2) and hash(HeldOut()) == hash(HeldOut())
    with pytest.raises(dataclasses.FrozenInstanceError):
        HeldOut().fraction = 0.3
    for bad in (lambda: HeldOut(fraction=1.0), lambda: Grid(size=0), lambda: Grid(fraction=0.0)):
        with pytest.raises(ValueError):
            bad()
    with pytest.raises(ValueError, match="rule must be"):
        Auditor(rule="paper")
    with pytest.raises(ValueError, match="directions"):
        Auditor(directions="two")
    with pytest.raises(ValueError, match="confidence"):
        Auditor(confidence=1.0)


def test_parse_rule_names_and_specs():
    assert parse_rule("held-out@0.1", seed=4) == HeldOut(fraction=0.1, seed=4)
    assert parse_rule("grid@0.3") == Grid(fraction=0.3)
    assert parse_rule("bonferroni") == Bonferroni()
    assert parse_rule("rays", calibration_draws=199) == Rays(draws=199)
    assert parse_rule("rays", calibration_draws=199, seed=5) == Rays(draws=199, seed=5)
    for rule in (HeldOut(fraction=0.1), HeldOut(), Grid(fraction=0.3), Grid()):  # spec is parse_rule's inverse
        assert parse_rule(rule.spec) == rule
    for spec, match in (("median", "unknown audit mode"), ("paper@0.1", "no selection fraction"),
                        ("held-out@x", "must be a number"), ("held-out@1.5", r"in \(0, 1\)")):
        with pytest.raises(ValueError, match=match):
            parse_rule(spec)


def test_auroc_matches_pairwise_reference_with_ties():
    rng = np.random.default_rng(1)
    s0 = rng.integers(0, 6, 40).astype(float)
    s1 = rng.integers(2, 9, 35).astype(float)
    pairwise = np.mean((s1[:, None] > s0[None, :]) + 0.5 * (s1[:, None] == s0[None, :]))
    assert auroc(s0, s1) == pytest.approx(pairwise, abs=1e-15)
    assert auroc(s0, s0) == pytest.approx(0.5)


def test_auroc_and_its_mu_on_a_gaussian_pair():
    mu = 1.2
    s0, s1 = _pair(mu, 200_000, 2)
    a = auroc(s0, s1)
    assert a == pytest.approx(stats.norm.cdf(mu / math.sqrt(2)), abs=3e-3)  # closed form Φ(μ/√2)
    assert mu_from_auroc(a) == pytest.approx(mu, abs=0.02)
    assert mu_from_auroc(stats.norm.cdf(0.7 / math.sqrt(2))) == pytest.approx(0.7, abs=1e-12)


def test_tpr_at_fpr_matches_threshold_enumeration():
    rng = np.random.default_rng(3)
    s0 = np.round(rng.normal(size=500), 1)  # ties
    s1 = np.round(rng.normal(1.5, 1, size=300), 1)
    levels = (0.0, 0.001, 0.01, 0.1, 0.5)
    taus = np.r_[-np.inf, np.unique(np.r_[s0, s1])]
    fpr = (s0[None, :] > taus[:, None]).mean(1)
    tpr = (s1[None, :] > taus[:, None]).mean(1)
    want = [tpr[fpr <= level].max() for level in levels]
    np.testing.assert_array_equal(tpr_at_fpr(s0, s1, levels), want)


def test_bonferroni_level_and_validity():
    s0, s1 = np.array([0.0, 1.0, 1.0]), np.array([2.0, 3.0])
    # 4 distinct scores → 5 candidate thresholds, two bounds each
    assert bounds.bonferroni_confidence(s0, s1, 0.95) == pytest.approx(1 - 0.05 / 10)
    mu, trials, exceed = 1.0, 200, 0
    for t in range(trials):
        res = Auditor(rule=Bonferroni()).gdp(*_pair(mu, 300, 100 + t))
        exceed += res.mu > mu
        assert res.confidence == 0.95
    assert exceed / trials <= 0.05
    # paying for every threshold: never above the paper mode's (same search, wider bounds)
    s0, s1 = _pair(2.0, 1000, 7)
    assert Auditor(rule=Bonferroni()).gdp(s0, s1).mu < Auditor(rule=Paper()).gdp(s0, s1).mu


def test_both_directions_pay_for_both_on_null_scores():
    """jax_privacy PR #270's failure: a two-direction audit that does not pay for both (or takes |μ|) reports
    ε̂ > 0 on null scores far more often than 1 − c. Ours keeps the rate at ≤ 1 − c; the double-dipping
    version (each direction at full confidence) does not, which shows the test has the power to catch it."""
    trials = 1000
    both, dip = Auditor(rule=Crossing(), directions="both"), Auditor(rule=Crossing())
    valid = dipped = 0
    for t in range(trials):
        s0, s1 = _pair(0.0, 100, 1000 + t)
        paid = both.gdp(s0, s1)
        higher, lower = dip.gdp(s0, s1), dip.gdp(-s0, -s1)
        valid += paid.epsilon > 0
        dipped += max(higher.epsilon, lower.epsilon) > 0
        assert paid.mu <= max(higher.mu, lower.mu) and paid.confidence == 0.975
    sd = math.sqrt(0.05 * 0.95 / trials)
    assert valid / trials <= 0.05 + 2.5 * sd
    assert dipped / trials > 0.05 + 2.5 * sd


def test_both_directions_finds_a_reversed_score():
    s0, s1 = _pair(2.5, 2000, 5)
    one = Auditor(rule=HeldOut()).report(-s0, -s1)  # members score lower
    both = Auditor(rule=HeldOut(), directions="both").report(-s0, -s1)
    assert one.gdp.epsilon == 0 and both.direction == "lower" and both.gdp.epsilon > 4
    assert both.estimates["auroc"] > 0.9  # estimates in the chosen orientation
    # the reported threshold is in score units, "member iff score < τ": few non-members and many members below it
    assert np.mean(-s0 < both.gdp.threshold) < 0.03 and np.mean(-s1 < both.gdp.threshold) > 0.3


def test_report_bootstrap_interval_covers_the_true_auroc():
    mu, trials, covered = 1.0, 60, 0
    truth = stats.norm.cdf(mu / math.sqrt(2))
    for t in range(trials):
        rep = Auditor(rule=HeldOut(), bootstrap=200, bootstrap_seed=t).report(*_pair(mu, 400, 200 + t))
        lo, hi = rep.intervals["auroc"]
        assert lo <= rep.estimates["auroc"] <= hi
        covered += lo <= truth <= hi
    assert covered / trials >= 0.85  # nominal 0.95; a percentile interval at n = 400 runs slightly short
    row = rep.to_dict()
    assert {"auroc_lo", "auroc_hi", "tpr_at_fpr_0.001", "tpr_at_fpr_0.01", "threshold_rule", "rule_valid"} <= set(row)


def test_known_family_takes_the_same_rules():
    s0, s1 = _pair(1.0, 150, 9)
    fam = KnownFamily(steps=4, sampling_rate=0.5, noise_multiplier=2.0, family="all_iterates", iterations=8)
    kw = dict(steps=4, sampling_rate=0.5, noise_multiplier=2.0, delta=1e-5, family="all_iterates", iterations=8)
    paper = Auditor(rule=Paper()).known_family(s0, s1, fam)
    assert paper == sigma_hat_from_points(*clopper_pearson_points(s0, s1, 0.95), **kw)
    held = Auditor(rule=HeldOut(0.3, 2)).known_family(s0, s1, fam)
    point = held_out_point(s0, s1, confidence=0.95, selection_fraction=0.3, seed=2)
    assert held == sigma_hat_from_points(*point, **kw)
    bonf = Auditor(rule=Bonferroni()).known_family(s0, s1, fam)
    assert bonf["epsilon"] <= paper["epsilon"]  # wider bounds on the same points: a larger σ̂
    for rule in (Crossing(), Grid(), Rays()):
        with pytest.raises(ValueError, match=f"not {rule.name}"):
            Auditor(rule=rule).known_family(s0, s1, fam)
    rep = Auditor(rule=HeldOut(0.3, 2)).report(s0, s1, family=fam)
    assert rep.known == held and rep.to_dict()["epsilon_known"] == held["epsilon"]


def test_the_package_exports_each_name_from_the_module_that_defines_it():
    """hsaudit.audit's lazy exports resolve, and each class or function comes from its defining module (the
    record of a crossing is RayCrossing; the name Crossing is the rule)."""
    import inspect

    import hsaudit.audit as package

    for module, names in package._EXPORTS.items():
        for name in names:
            obj = getattr(package, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                assert obj.__module__ == module, (name, obj.__module__, module)
    assert package.Crossing is Crossing and package.RayCrossing.__module__ == "hsaudit.audit.crossing"
    assert sorted(package.__all__) == package.__all__ and len(set(package.__all__)) == len(package.__all__)


def test_the_package_roots_lazy_names_resolve():
    """``from hsaudit import audit_scores`` and the root's other lazy names reach the audit layer's functions."""
    import hsaudit
    from hsaudit.audit import tradeoff
    from hsaudit.audit.reference import reference_audit

    for name in hsaudit._LAZY:
        assert getattr(hsaudit, name) is not None, name
    assert hsaudit.audit_scores is audit_scores and hsaudit.empirical_tradeoff is tradeoff.empirical_tradeoff
    assert hsaudit.reference_audit is reference_audit and hsaudit.clopper_pearson_upper is bounds.clopper_pearson_upper


def test_valid_companion_keeps_a_valid_rule_and_replaces_the_papers():
    from hsaudit.audit.rules import Crossing, HeldOut, Paper
    from hsaudit.audit.validity import valid_companion

    held = HeldOut(seed=3)
    assert valid_companion(held, Crossing()) is held
    assert valid_companion(Paper(), Crossing()) == Crossing()
    assert valid_companion(Paper(), HeldOut(fraction=0.1, seed=5)) == HeldOut(fraction=0.1, seed=5)
    with pytest.raises(ValueError, match="not a valid rule"):
        valid_companion(Paper(), Paper())
