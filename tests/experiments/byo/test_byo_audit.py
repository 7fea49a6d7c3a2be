"""Scores → the report (hsaudit.experiments.byo.audit): our accountant against closed forms, the verdict's validity
and power on the Gaussian mechanism, the underpowered verdict and the runs it needs, the basis of ε̂."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from scipy import optimize, special

from hsaudit.accounting.gaussian import gaussian_epsilon, gdp_epsilon
from hsaudit.accounting.last_iterate import heuristic_epsilon
from hsaudit.audit.auditor import Crossing, HeldOut, Rays
from hsaudit.experiments.byo.audit import (
    COPIES_DO_NOT_BOUND,
    Accounting,
    AuditOptions,
    Control,
    accounting,
    accounting_bug,
    basis_for,
    bounds_noise_bugs,
    control_copies,
    control_epsilon,
    control_noise_epsilon,
    markdown,
    mu_for_epsilon,
    perfect_epsilon,
    power,
    pre_training,
    region,
    report,
    runs_needed,
)
from hsaudit.experiments.byo.values import Claim, Design

DELTA = 1e-5


def full_batch(mu: float, *, steps: int = 4, **extra) -> Claim:
    """A full-batch claim whose mechanism is exactly μ-GDP (σ = √T/μ), claiming its exact ε."""
    sigma = math.sqrt(steps) / mu
    return Claim(epsilon=gdp_epsilon(mu=mu, delta=DELTA), delta=DELTA, noise_multiplier=sigma, max_grad_norm=1.0,
                 sampling="poisson", sample_rate=1.0, steps=steps, neighbouring="add-remove", **extra)  # fmt: skip


def _claim(**values) -> Claim:
    base = dict(epsilon=1.0, delta=DELTA, noise_multiplier=2.0, max_grad_norm=1.0, sampling="poisson", sample_rate=0.2,
                steps=20, neighbouring="add-remove")  # fmt: skip
    return Claim(**{**base, **values})


@pytest.mark.parametrize(("neighbouring", "sens"), [("add-remove", 1.0), ("replace-one", 2.0)])
@pytest.mark.parametrize("sampling", ["poisson", "fixed", "shuffle"])
def test_full_batch_accounting_is_the_gdp_closed_form(neighbouring, sens, sampling):
    """q = 1 under every sampling: T Gaussians at sensitivity sens·C, μ-GDP with μ = sens·√T/σ (closed form, also
    dp-accounting's Gaussian PLD at that sensitivity, called directly); exact, so it is also the lower figure, and the
    last-iterate heuristic is the same mechanism."""
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    claim = _claim(sampling=sampling, sample_rate=1.0, steps=4, noise_multiplier=2.0, neighbouring=neighbouring)
    ours = accounting(claim, 100)
    mu = sens * math.sqrt(4) / 2.0
    assert ours.full_batch_mu == pytest.approx(mu) and ours.epsilon == pytest.approx(gdp_epsilon(mu=mu, delta=DELTA))
    pld = pld_lib.from_gaussian_mechanism(standard_deviation=2.0, sensitivity=sens, value_discretization_interval=1e-4)
    assert ours.epsilon == pytest.approx(pld.self_compose(4).get_epsilon_for_delta(DELTA), abs=2e-3)
    assert ours.lower == ours.epsilon and ours.comparable
    assert ours.heuristic == pytest.approx(ours.epsilon, rel=1e-6)


@pytest.mark.parametrize(
    ("neighbouring", "relation"), [("add-remove", "ADD_OR_REMOVE_ONE"), ("replace-one", "REPLACE_ONE")]
)
def test_poisson_accounting_is_the_pld_of_the_subsampled_gaussian(neighbouring, relation):
    """Poisson sampling: dp-accounting's PLD of T subsampled Gaussians under the claim's relation, called directly;
    ours is its pessimistic estimate, the accounting-bug check's figure the optimistic one (a lower bound), and the
    heuristic (a post-processing: the final model only) is below both."""
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    claim = _claim(neighbouring=neighbouring)
    ours = accounting(claim, 1000)
    rel = getattr(pld_lib.NeighborRel, relation)
    pessimistic = pld_lib.from_gaussian_mechanism(
        standard_deviation=2.0, sampling_prob=0.2, value_discretization_interval=1e-4, neighboring_relation=rel
    ).self_compose(20)
    assert ours.epsilon == pytest.approx(pessimistic.get_epsilon_for_delta(DELTA), rel=1e-9)
    assert ours.epsilon - 5e-3 <= ours.lower <= ours.epsilon and ours.comparable
    assert ours.heuristic <= ours.lower
    assert ours.heuristic == heuristic_epsilon(DELTA, steps=20, sampling_rate=0.2, noise_multiplier=2.0,
                                               neighbouring=neighbouring)  # fmt: skip
    assert f"{neighbouring} (pessimistic" in ours.method and "optimistic" in ours.method


def test_fixed_size_batches_are_accounted_at_sensitivity_2c():
    """B of N without replacement, replace-one: dp-accounting's RDP takes the noise multiplier over the l2-sensitivity
    (its q = 1 case is the Gaussian's α/(2σ²)), so replace-one needs σ/2 (sensitivity 2C). The review's case, N = 100,
    B = 99, σ = 2, T = 10, gave 12.17 at sensitivity C, below the full batch's exact 17.86; now the RDP bound is
    24.9, and the accounting-bug check compares against a lower figure: the optimistic PLD of the Poisson replace-one
    pair at q = B/N (the fixed-size mechanism on data whose other gradients are 0)."""
    from dp_accounting import dp_event
    from dp_accounting.pld import privacy_loss_distribution as pld_lib
    from dp_accounting.rdp import rdp_privacy_accountant as rdp_lib

    claim = _claim(sampling="fixed", sample_rate=None, batch_size=99, noise_multiplier=2.0, steps=10,
                   neighbouring="replace-one")  # fmt: skip
    ours = accounting(claim, 100)
    rdp = rdp_lib.RdpAccountant(neighboring_relation=rdp_lib.NeighborRel.REPLACE_ONE)
    rdp.compose(dp_event.SelfComposedDpEvent(
        dp_event.SampledWithoutReplacementDpEvent(100, 99, dp_event.GaussianDpEvent(1.0)), 10))  # fmt: skip
    assert ours.epsilon == pytest.approx(rdp.get_epsilon(DELTA), rel=1e-9) == pytest.approx(24.93, abs=0.01)
    full = gdp_epsilon(mu=2.0 * math.sqrt(10) / 2.0, delta=DELTA)  # 17.86: the full batch, sensitivity 2C
    assert ours.epsilon > full
    # ours.lower is the optimistic PLD at discretisation 1e-4: between the optimistic and pessimistic ones at 1e-3
    # (called directly, 10× faster)
    low, high = (pld_lib.from_gaussian_mechanism(
        standard_deviation=2.0, sampling_prob=0.99, value_discretization_interval=1e-3,
        neighboring_relation=pld_lib.NeighborRel.REPLACE_ONE, pessimistic_estimate=p, use_connect_dots=p,
    ).self_compose(10).get_epsilon_for_delta(DELTA) for p in (False, True))  # fmt: skip
    assert low <= ours.lower <= high and high - low < 0.01
    assert ours.heuristic - 1e-3 <= ours.lower < full and ours.comparable and "sensitivity 2C" in ours.method
    assert accounting_bug(Claim(**{**claim.to_dict(), "epsilon": 12.17}), ours)  # the old figure: flagged
    assert not accounting_bug(Claim(**{**claim.to_dict(), "epsilon": 17.7}), ours)  # above the lower figure


def test_shuffled_batches():
    """Shuffled batches: refused under add-remove (q < 1), as fixed-size ones; under replace-one the bound without
    amplification, ⌈T/⌊N/B⌋⌉ Gaussians at sensitivity 2C (closed form μ = 2√a/σ), with no lower figure."""
    with pytest.raises(ValueError, match="'shuffle' .* neighbouring 'add-remove' is inconsistent"):
        accounting(_claim(sampling="shuffle"), 100)
    ours = accounting(_claim(sampling="shuffle", neighbouring="replace-one"), 100)  # 5 batches per epoch, 4 epochs
    assert ours.epsilon == pytest.approx(gdp_epsilon(mu=2.0 * math.sqrt(4) / 2.0, delta=DELTA), abs=2e-3)
    assert not ours.comparable and ours.lower is None and "sensitivity 2C" in ours.method
    assert not accounting_bug(Claim(**{**_claim(sampling="shuffle", neighbouring="replace-one").to_dict(),
                                       "epsilon": 0.01}), ours)  # fmt: skip


def test_a_claim_below_our_accountant_is_a_violation_before_any_training():
    claim = Claim(**{**full_batch(1.0).to_dict(), "epsilon": 0.5 * gdp_epsilon(mu=1.0, delta=DELTA)})
    early = pre_training(claim, 100, AuditOptions(), runs=100)
    assert early.verdict == "violation" and early.reason.startswith("accounting") and early.epsilon_hat is None
    assert pre_training(full_batch(1.0), 100, AuditOptions(), runs=100) is None  # the exact claim: train to decide


def test_the_bug_check_compares_against_the_lower_figure_only():
    """A claim between a valid lower figure and an upper bound is not an accounting bug; without a lower figure
    nothing is."""
    ours = Accounting(epsilon=10.0, method="m", sampling_rate=0.5, comparable=True, heuristic=1.0, lower=5.0)
    assert not accounting_bug(_claim(epsilon=6.0), ours) and accounting_bug(_claim(epsilon=4.0), ours)
    assert not accounting_bug(_claim(epsilon=4.0), dataclasses.replace(ours, lower=None))
    assert not accounting_bug(_claim(epsilon=4.0), dataclasses.replace(ours, comparable=False))


def test_too_few_runs_is_inconclusive_and_says_the_runs_it_needs():
    claim = full_batch(8.0)  # ε ≈ 40 at δ = 1e-5
    options = AuditOptions(rule=Crossing())
    early = pre_training(claim, 100, options, runs=20)
    assert early.verdict == "inconclusive" and early.epsilon_max < claim.epsilon
    need = early.runs_needed
    assert perfect_epsilon(options, "gdp", delta=DELTA, out=need, into=need) > claim.epsilon
    assert perfect_epsilon(options, "gdp", delta=DELTA, out=int(need / 1.25), into=int(need / 1.25)) <= claim.epsilon
    assert runs_needed(options, "gdp", epsilon=1e9, delta=DELTA, limit=1000) is None


def _gaussian_scores(mu: float, n: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return {"score": np.concatenate([rng.standard_normal(n), mu + rng.standard_normal(n)]),
            "member": np.repeat([0, 1], n)}  # fmt: skip


@pytest.mark.parametrize(("rule", "trials"), [(Crossing(), 1000), (HeldOut(fraction=0.5), 300)])
def test_the_verdict_is_valid_on_the_gaussian_mechanism(rule, trials):
    """Scores of an exactly μ-GDP mechanism claiming exactly its ε: flagged in at most 5 % of trials (binomial
    slack: 3 standard deviations; 1,000 trials of the default crossing rule, a bound of 7.1 %; the rays rule's
    coverage is tests/audit's), and flagged nearly always when the mechanism leaks 3μ."""
    mu, n = 0.5, 400
    claim = full_batch(mu)
    options = AuditOptions(rule=rule, bootstrap=0)
    def verdict(scores):
        return report(scores, claim, 100, options, every_estimate=False).verdict

    flags = [verdict(_gaussian_scores(mu, n, s)) == "violation" for s in range(trials)]
    assert np.mean(flags) <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / trials)
    leaky = [verdict(_gaussian_scores(3 * mu, n, s)) for s in range(10)]
    assert leaky.count("violation") >= 9


def test_no_evidence_is_zero_and_without_a_control_no_verdict_is_consistent():
    scores = {"score": np.zeros(200), "member": np.repeat([0, 1], 100)}
    rep = report(scores, full_batch(1.0), 100, AuditOptions(bootstrap=0))
    assert rep.epsilon_hat == 0.0 and rep.verdict == "inconclusive" and "power was not measured" in rep.reason


def test_joint_confidence_of_two_bound_rules():
    options = AuditOptions(confidence=0.9)
    assert options.auditor(HeldOut(), DELTA).confidence == pytest.approx(0.95)
    assert options.auditor(Rays(), DELTA).confidence == pytest.approx(0.9)
    both = AuditOptions(confidence=0.9, directions="both").auditor(Crossing(), DELTA)
    assert both.per_direction_confidence == pytest.approx(0.95)


def test_the_regions_cover_where_each_rule_crosses_the_gdp_curve():
    """Crossing reads the curve at the diagonal (FPR = FNR); rays at its nine rays FNR = ρ·FPR, ρ in [1/4, 4]: each
    region holds every crossing with a factor 2 to spare; a threshold rule reads [1/(10R), 1 − 1/(10R)]."""
    mu = 1.0
    low, high = region(Crossing(), mu, 500)
    diagonal = special.ndtr(-mu / 2)  # FPR = FNR on the μ-GDP curve
    assert low < diagonal / 1.9 and high >= min(0.5, 1.9 * diagonal)
    low, high = region(Rays(), mu, 500)
    for rho in (0.25, 4.0):  # the outermost rays' crossings: FPR t with G_μ(t) = ρ t
        t = optimize.brentq(lambda a: special.ndtr(special.ndtri(1 - a) - mu) - rho * a, 1e-12, 1 / (1 + rho))
        assert low <= min(t, rho * t) / 1.9 and high >= min(0.5, 1.9 * max(t, rho * t))
    assert region(HeldOut(), mu, 500) == (pytest.approx(1 / 5000), pytest.approx(1 - 1 / 5000))


def test_the_basis():
    poisson = Claim(epsilon=gaussian_epsilon(noise_multiplier=2.0, compositions=20, delta=DELTA, sampling_rate=0.05),
                    delta=DELTA, noise_multiplier=2.0, max_grad_norm=1.0, sampling="poisson", sample_rate=0.05,
                    steps=20, neighbouring="add-remove")  # fmt: skip
    ours = accounting(poisson, 400)
    assert basis_for(poisson, ours, AuditOptions(rule=Rays()), runs=500)[0] == "gdp"
    # the subsampled curve dips below the claim's GDP curve only in its far tail, which a held-out threshold may read
    assert ours.gdp_mu(1e-5, 1e-4) > mu_for_epsilon(poisson.epsilon, DELTA) > ours.gdp_mu(0.1, 0.5)
    shuffle = Claim(**{**poisson.to_dict(), "sampling": "shuffle", "neighbouring": "replace-one"})
    basis, why = basis_for(shuffle, accounting(shuffle, 400), AuditOptions(), runs=500)
    assert basis == "assumption-free" and "no trade-off curve" in why
    assert basis_for(poisson, ours, AuditOptions(basis="gdp"), runs=500) == ("gdp", "asked for")


def test_the_report_is_json_and_markdown():
    rep = report(_gaussian_scores(2.0, 100, 0), full_batch(0.5), 100, AuditOptions(bootstrap=20))
    payload = json.loads(json.dumps(rep.to_dict()))
    assert payload["verdict"] == rep.verdict == "violation" and payload["epsilon_hat"] > payload["epsilon_claimed"]
    assert {e["rule"] for e in payload["estimates"]} >= {"held-out", "crossing", "rays", "one-run", "auroc"}
    text = markdown(payload, figure="fig.pdf")
    assert text.startswith("# Audit") and "**Verdict: violation**" in text and "fig.pdf" in text


def test_bad_scores():
    with pytest.raises(ValueError, match="finite"):
        report({"score": [0.0, np.nan], "member": [0, 1]}, full_batch(1.0), 10)
    with pytest.raises(ValueError, match="both worlds"):
        report({"score": [0.0, 1.0], "member": [1, 1]}, full_batch(1.0), 10)


def test_two_looks_each_pay_half_the_level():
    """A recording training's verdict looks at the final model's score and the iterates statistic, each at
    confidence 1 − (1 − c)/2: with both columns equal, ε̂ is the one-look ε̂ at that confidence."""
    scores = _gaussian_scores(1.0, 200, 3)
    both = {**scores, "score_iterates": scores["score"]}
    options = AuditOptions(rule=Crossing(), bootstrap=0)
    two = report(both, full_batch(0.5), 100, options, every_estimate=False)
    one = report(scores, full_batch(0.5), 100, AuditOptions(rule=Crossing(), confidence=0.975, bootstrap=0),
                 every_estimate=False)  # fmt: skip
    assert set(two.looks) == {"score", "score_iterates"} and two.epsilon_hat == pytest.approx(one.epsilon_hat)
    assert two.confidence == 0.95 and two.epsilon_hat < report(scores, full_batch(0.5), 100, options,
                                                               every_estimate=False).epsilon_hat  # fmt: skip


# ---- the positive control and the power of a verdict -------------------------------------------------------------
def test_the_control_is_the_canary_repeated_k_times_of_the_declared_mechanism():
    """The full batch is exact: k copies are the Gaussian mechanism of k·μ (2k·μ under replace-one)."""
    claim = full_batch(1.0)  # μ = 1
    for k in (2, 3):
        assert control_epsilon(claim, 100, k) == pytest.approx(gdp_epsilon(mu=k * 1.0, delta=DELTA), rel=1e-9)
    poisson = Claim(epsilon=2.22, delta=DELTA, noise_multiplier=2.0, max_grad_norm=1.0, sampling="poisson",
                    sample_rate=0.2, steps=20, neighbouring="add-remove")  # fmt: skip
    one = control_epsilon(poisson, 200, 1)  # one copy: the subsampled Gaussian's own PLD (pessimistic, 1e-2)
    assert one == pytest.approx(accounting(poisson, 200).epsilon, rel=2e-3) and one >= accounting(poisson, 200).epsilon
    eps = [control_epsilon(poisson, 200, k) for k in (1, 2, 3, 4)]
    assert eps == sorted(eps) and eps[1] < 2 * 2.22 * 1.2  # independent copies: about k times, not more
    k, worst = control_copies(poisson, 200, 1.5)
    assert k == 2 and worst >= 1.5 * 2.22 and control_epsilon(poisson, 200, 1) < 1.5 * 2.22
    k3, worst3 = control_copies(poisson, 200, 2.5)  # 2.5 × the claim needs the third copy
    assert k3 == 3 and worst3 >= 2.5 * 2.22 > control_epsilon(poisson, 200, 2)


def test_consistent_needs_a_control_the_design_sees():
    """A correct training whose canary reaches 0.9 of the claim's μ (300 runs a world, no evidence) is consistent:
    its control (σ/2, μ = 2, exactly its worst case) is flagged above the claim; one whose canary reaches 0.3 is
    inconclusive, its control (μ = 0.6) unseen, and the reason carries the advice."""
    claim, options = full_batch(1.0), AuditOptions(bootstrap=0, rule=Crossing(), power_resamples=40)
    sigma_over_2 = control_noise_epsilon(claim, 100, 2.0)  # μ = 2
    near = _gaussian_scores(0.9, 300, 1)  # a correct training whose canary reaches 0.9 of the claim's μ
    seen = report(near, claim, 100, options, control=Control(1, sigma_over_2, _gaussian_scores(2.0, 300, 2), 2.0),
                  every_estimate=False)  # fmt: skip
    assert seen.verdict == "consistent" and seen.power.probability >= 0.8 and "flags it with probability" in seen.reason
    page = markdown(seen.to_dict())
    assert "## Power (the positive control)" in page and f"flagged with probability {seen.power.probability:.2f}" in page
    weak = _gaussian_scores(0.3, 300, 1)  # a canary the training dilutes: 0.3 of the claim's μ
    blind = report(weak, claim, 100, options, control=Control(1, sigma_over_2, _gaussian_scores(0.6, 300, 2), 2.0),
                   every_estimate=False, advice="do X")  # fmt: skip
    assert blind.verdict == "inconclusive" and blind.power.probability < 0.8 and blind.reason.endswith("do X")


def test_a_seen_copies_control_leaves_the_verdict_inconclusive():
    """The same scores with the copies control (2 copies, μ = 1.8, below their worst case μ = 2): seen with the same
    power, and reported, but no bound on a σ bug (copies multiply the canary's signal over the variance other rows and
    θ0 add to its score; less noise does not): inconclusive, naming the audit setting — the rule the few-runs audit
    shares (:func:`bounds_noise_bugs`)."""
    claim, options = full_batch(1.0), AuditOptions(bootstrap=0, rule=Crossing(), power_resamples=40)
    copies = Control(2, control_epsilon(claim, 100, 2), _gaussian_scores(1.8, 300, 2))
    rep = report(_gaussian_scores(0.9, 300, 1), claim, 100, options, control=copies, every_estimate=False)
    assert rep.power.enough and rep.power.look <= rep.power.look_threshold and not rep.power.like_sigma
    assert rep.verdict == "inconclusive" and COPIES_DO_NOT_BOUND in rep.reason and rep.power.statement() in rep.reason
    assert bounds_noise_bugs(1.5) and not bounds_noise_bugs(1.0)


def test_the_power_is_the_rate_at_which_the_control_is_flagged():
    """The bootstrap's probability against the rate measured over independent controls of the same law: each world of
    200 models, the control μ = 1.25 against a claim of μ = 1 (the crossing rule; a boundary case, flagged in about half
    of 100 independent draws). One control's estimate spreads widely there (sd ≈ 0.3, measured): the mean of 20 is
    within 0.2 of the rate; far from the boundary (previous tests) it is 0 or 1."""
    claim = full_batch(1.0)
    options = AuditOptions(bootstrap=0, rule=Crossing(), power_resamples=100)
    mu = 1.25

    def worlds(seed: int) -> tuple[np.ndarray, np.ndarray]:
        t = _gaussian_scores(mu, 200, seed)
        return t["score"][t["member"] == 0], t["score"][t["member"] == 1]

    truth = np.mean([report(_gaussian_scores(mu, 200, 100 + s), claim, 100, options, every_estimate=False).verdict
                     == "violation" for s in range(100)])  # fmt: skip
    estimates = [power(*worlds(300 + s), claim, 100, options, copies=2, epsilon_worst=9.9).probability
                 for s in range(20)]  # fmt: skip
    assert 0.3 < truth < 0.8 and abs(np.mean(estimates) - truth) < 0.2, (truth, estimates)


def test_the_orientation_comes_from_the_control():
    """A canary that lowers its own score: read one way the audit finds nothing; the control's models (the same
    orientation, data the bound does not use) turn the reading, and the violation is found."""
    claim, flip = full_batch(1.0), (lambda t: {"score": -t["score"], "member": t["member"]})
    leaky = flip(_gaussian_scores(3.0, 300, 4))
    options = AuditOptions(bootstrap=0, power_resamples=20)
    assert report(leaky, claim, 100, options, every_estimate=False).epsilon_hat == 0.0
    control = Control(copies=2, epsilon_worst=9.9, scores=flip(_gaussian_scores(4.0, 300, 5)))
    rep = report(leaky, claim, 100, options, control=control, every_estimate=False)
    assert rep.verdict == "violation" and rep.power.orientation == -1 and "the other way" in rep.reason


def test_the_same_model_for_every_seed_is_a_violation_whatever_the_scores():
    scores = {"score": np.zeros(200), "member": np.repeat([0, 1], 100)}
    rep = report(scores, full_batch(1.0), 100, AuditOptions(bootstrap=0), same_model=True, every_estimate=False)
    assert rep.verdict == "violation" and "same model for every seed" in rep.reason


def test_a_control_that_leaks_more_than_k_copies_may_is_a_violation():
    """A training that leaks 1.2× its claim's μ (claim μ = 1, 150 runs a world) passes its own look in most seeds;
    its control (2 copies: μ = 2.4, above the declared mechanism's exact worst case μ = 2 for 2 copies) is audited
    against that worst case and finds most of the rest (measured: own look 35 % of 20 seeds, either look 90 %). A
    correct training's control (μ = 2: exactly the worst case) is not flagged by it beyond its level."""
    claim = full_batch(1.0)
    options = AuditOptions(bootstrap=0, rule=Crossing(), power_resamples=10)
    worst = control_epsilon(claim, 100, 2)
    assert worst == pytest.approx(gdp_epsilon(mu=2.0, delta=DELTA))

    def verdicts(mu: float) -> list[str]:
        return [report(_gaussian_scores(mu, 150, s), claim, 100, options, every_estimate=False,
                       control=Control(2, worst, _gaussian_scores(2 * mu, 150, 1000 + s))).reason for s in range(20)]

    leaky = verdicts(1.2)
    own = sum("exceeds the claimed" in r for r in leaky)
    both = own + sum("positive control leaks more" in r for r in leaky)
    assert own <= 12 and both >= 16, (own, both)
    correct = verdicts(1.0)
    assert sum("positive control leaks more" in r for r in correct) <= 2


GAUSS = "tests/experiments/byo/gauss_entry.py"


def test_in_the_audit_setting_the_control_is_the_training_at_sigma_over_the_factor():
    """The audit setting's control divides σ by the power factor (1.5): it leaks exactly 1.5× the declared μ. On an
    exact Gaussian-mechanism training (full batch, T = 5, σ calibrated to ε = 4, 500 runs a world) the correct
    training is consistent with power ≥ 0.8 in each of 3 seeds; the same training with σ/√2 behind its claim is a
    violation in each (its own look or its control's, which leaks 2.1× the declared μ)."""
    from hsaudit.experiments.byo.api import audit_training, control_design
    from hsaudit.experiments.byo.plan import audit_setting

    setting = audit_setting()
    design = Design(entry=f"{GAUSS}:make", canary="out_of_support", runs=500, setting=setting)
    twin, worst = control_design(design, Claim(**full_batch(1.0).to_dict()), 100, AuditOptions())
    assert twin.noise_factor == 1.5 and twin.setting.noise_multiplier == pytest.approx(setting.noise_multiplier / 1.5)
    assert worst == pytest.approx(gdp_epsilon(mu=1.5, delta=DELTA)) and twin.copies == 1
    assert twin.bits().tolist() != design.bits().tolist() and twin.model_seed(0) != design.model_seed(0)
    for seed in range(3):
        good = audit_training(dataclasses.replace(design, seed=seed), AuditOptions(seed=seed, bootstrap=0)).report
        assert good.verdict == "consistent" and good.power.noise_factor == 1.5, good.reason
        assert "at σ/1.5" in good.reason and good.power.multiple == pytest.approx(
            gdp_epsilon(mu=1.5 * mu_for_epsilon(good.claim.epsilon, DELTA), delta=DELTA) / good.claim.epsilon, rel=1e-3)
        bug = dataclasses.replace(design, entry=f"{GAUSS}:make_sigma_sqrt2", seed=seed)
        assert audit_training(bug, AuditOptions(seed=seed, bootstrap=0)).report.verdict == "violation"


def test_the_control_look_reads_the_exact_curve_of_k_copies():
    """Full batch: the look's threshold is the control's worst case itself (μ-GDP). Poisson sampling: the ε of the
    least μ whose GDP curve lies below the Binomial(2, q) mixture's exact curve wherever the crossing rule reads it —
    checked on that curve; below the (ε, δ) worst case, since the subsampled curve is flatter near the diagonal."""
    from hsaudit.accounting.gaussian import tradeoff_from_deltas
    from hsaudit.experiments.byo.audit import EPSILON_GRID, control_accounting, control_threshold

    claim = full_batch(1.0)
    control = Control(2, control_epsilon(claim, 100, 2), None)
    assert control_threshold(claim, 100, control, Crossing(), 200) == pytest.approx(control.epsilon_worst, rel=1e-9)
    poisson = Claim(epsilon=2.22, delta=DELTA, noise_multiplier=2.0, max_grad_norm=1.0, sampling="poisson",
                    sample_rate=0.2, steps=20, neighbouring="add-remove")  # fmt: skip
    control = Control(2, control_epsilon(poisson, 200, 2), None)
    threshold = control_threshold(poisson, 200, control, Crossing(), 200)
    assert 1.0 < threshold < control.epsilon_worst
    mu = mu_for_epsilon(threshold, DELTA)
    low, high = region(Crossing(), mu, 200)
    alpha = np.geomspace(low, high, 300)
    curve = tradeoff_from_deltas(alpha, EPSILON_GRID, control_accounting(poisson, 200, control).deltas)
    assert np.all(curve >= special.ndtr(special.ndtri(1.0 - alpha) - mu) - 1e-9)
    replace_one = Claim(**{**poisson.to_dict(), "neighbouring": "replace-one"})
    assert control_threshold(replace_one, 200, Control(2, 9.9, None), Crossing(), 200) is None  # not exact: no look


def test_no_consistent_verdict_where_the_control_cannot_be_held_to_the_declared_mechanism():
    """Replace-one under Poisson sampling: the control of k copies has no exact curve, so its own look cannot be made
    and a bug between the claim and the control could pass: a seen control gives inconclusive, not consistent."""
    claim = Claim(epsilon=4.0, delta=DELTA, noise_multiplier=2.0, max_grad_norm=1.0, sampling="poisson",
                  sample_rate=0.2, steps=20, neighbouring="replace-one")  # fmt: skip
    options = AuditOptions(bootstrap=0, power_resamples=20)
    rep = report(_gaussian_scores(0.3, 300, 1), claim, 200, options, every_estimate=False,
                 control=Control(2, 9.9, _gaussian_scores(3.0, 300, 2)))  # fmt: skip
    assert rep.power.probability >= 0.8 and rep.power.look is None
    assert rep.verdict == "inconclusive" and "cannot be held to the declared mechanism" in rep.reason


def test_the_design_with_the_most_measured_power_is_chosen_from_pilots_of_its_own():
    """The default design (canary auto): each design's positive control is piloted on streams of its own; a training
    that ignores the Dirac canary's loss term (this one: θ sums the inputs) shows it no separation, and an input
    canary is chosen; the chosen design keeps the audit's seed, so its models are not the pilot's."""
    from hsaudit.experiments.byo.api import choose_design
    from hsaudit.experiments.byo.plan import audit_setting

    design = Design(entry=f"{GAUSS}:make", runs=100, seed=3, setting=audit_setting(), pilot_runs=40)
    chosen, rows = choose_design(design, AuditOptions(bootstrap=0))
    by = {r["canary"]: r for r in rows}
    assert [(r["canary"], r["background"]) for r in rows] == [("dirac", "blank"), ("opposing", "copies"),
                                                             ("out_of_support", "data")]  # fmt: skip
    assert by["dirac"]["separation"] < 0.5 < max(by["opposing"]["separation"], by["out_of_support"]["separation"])
    assert chosen.canary in ("opposing", "out_of_support") and chosen.seed == 3 and chosen.runs == 100
