"""Scores → the report (hsaudit.experiments.byo.audit): our accountant against closed forms, the verdict's validity
and power on the Gaussian mechanism, the underpowered verdict and the runs it needs, the basis of ε̂."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import special

from hsaudit.accounting.gaussian import gaussian_epsilon, gdp_epsilon
from hsaudit.audit.auditor import Crossing, HeldOut, Rays
from hsaudit.experiments.byo.audit import (
    AuditOptions,
    accounting,
    basis_for,
    markdown,
    mu_for_epsilon,
    perfect_epsilon,
    pre_training,
    region,
    report,
    runs_needed,
)
from hsaudit.experiments.byo.train.values import Claim

DELTA = 1e-5


def full_batch(mu: float, *, steps: int = 4, **extra) -> Claim:
    """A full-batch claim whose mechanism is exactly μ-GDP (σ = √T/μ), claiming its exact ε."""
    sigma = math.sqrt(steps) / mu
    return Claim(epsilon=gdp_epsilon(mu=mu, delta=DELTA), delta=DELTA, noise_multiplier=sigma, max_grad_norm=1.0,
                 sampling="poisson", sample_rate=1.0, steps=steps, neighbouring="add-remove", **extra)  # fmt: skip


def test_full_batch_accounting_is_the_gdp_closed_form():
    claim = full_batch(1.0)
    ours = accounting(claim, 100)
    assert ours.full_batch_mu == pytest.approx(1.0) and ours.epsilon == pytest.approx(gdp_epsilon(mu=1.0, delta=DELTA))
    replace = accounting(Claim(**{**claim.to_dict(), "neighbouring": "replace-one"}), 100)
    assert replace.full_batch_mu == pytest.approx(2.0)  # sensitivity 2C
    assert ours.heuristic == pytest.approx(ours.epsilon, rel=1e-3)  # q = 1: the heuristic is the standard bound


def test_poisson_accounting_is_the_pld_of_the_subsampled_gaussian():
    claim = Claim(epsilon=1.0, delta=DELTA, noise_multiplier=1.0, max_grad_norm=1.0, sampling="poisson",
                  sample_rate=0.1, steps=20, neighbouring="add-remove")  # fmt: skip
    expected = gaussian_epsilon(noise_multiplier=1.0, compositions=20, delta=DELTA, sampling_rate=0.1)
    assert accounting(claim, 1000).epsilon == pytest.approx(expected, rel=1e-3)


def test_a_claim_below_our_accountant_is_a_violation_before_any_training():
    claim = Claim(**{**full_batch(1.0).to_dict(), "epsilon": 0.5 * gdp_epsilon(mu=1.0, delta=DELTA)})
    early = pre_training(claim, 100, AuditOptions(), runs=100)
    assert early.verdict == "violation" and early.reason.startswith("accounting") and early.epsilon_hat is None
    assert pre_training(full_batch(1.0), 100, AuditOptions(), runs=100) is None  # the exact claim: train to decide
    shuffled = Claim(**{**claim.to_dict(), "sampling": "shuffle", "sample_rate": 0.1})
    assert not accounting(shuffled, 100).comparable  # no tight accountant for shuffling: not an accounting bug


def test_underpowered_says_the_runs_it_needs():
    claim = full_batch(8.0)  # ε ≈ 40 at δ = 1e-5
    options = AuditOptions(rule=Crossing())
    early = pre_training(claim, 100, options, runs=20)
    assert early.verdict == "underpowered" and early.epsilon_max < claim.epsilon
    need = early.runs_needed
    assert perfect_epsilon(options, "gdp", delta=DELTA, out=need, into=need) > claim.epsilon
    assert perfect_epsilon(options, "gdp", delta=DELTA, out=int(need / 1.25), into=int(need / 1.25)) <= claim.epsilon
    assert runs_needed(options, "gdp", epsilon=1e9, delta=DELTA, limit=1000) is None


def _gaussian_scores(mu: float, n: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return {"score": np.concatenate([rng.standard_normal(n), mu + rng.standard_normal(n)]),
            "member": np.repeat([0, 1], n)}  # fmt: skip


@pytest.mark.parametrize("rule", [Crossing(), HeldOut(fraction=0.5)])
def test_the_verdict_is_valid_on_the_gaussian_mechanism(rule):
    """Scores of an exactly μ-GDP mechanism claiming exactly its ε: flagged in at most 5 % of trials (binomial
    slack: 3 standard deviations of 60 trials), and flagged nearly always when the mechanism leaks 3μ."""
    mu, n, trials = 0.5, 400, 60
    claim = full_batch(mu)
    options = AuditOptions(rule=rule, bootstrap=0)
    def verdict(scores):
        return report(scores, claim, 100, options, every_estimate=False).verdict

    flags = [verdict(_gaussian_scores(mu, n, s)) == "violation" for s in range(trials)]
    assert np.mean(flags) <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / trials)
    leaky = [verdict(_gaussian_scores(3 * mu, n, s)) for s in range(10)]
    assert leaky.count("violation") >= 9


def test_no_evidence_is_zero():
    scores = {"score": np.zeros(200), "member": np.repeat([0, 1], 100)}
    rep = report(scores, full_batch(1.0), 100, AuditOptions(bootstrap=0))
    assert rep.epsilon_hat == 0.0 and rep.verdict == "consistent"


def test_joint_confidence_of_two_bound_rules():
    options = AuditOptions(confidence=0.9)
    assert options.auditor(HeldOut(), DELTA).confidence == pytest.approx(0.95)
    assert options.auditor(Rays(), DELTA).confidence == pytest.approx(0.9)
    both = AuditOptions(confidence=0.9, directions="both").auditor(Crossing(), DELTA)
    assert both.per_direction_confidence == pytest.approx(0.95)


def test_the_rays_region_covers_the_crossing_of_the_diagonal():
    mu = 1.0
    low, high = region(Crossing(), mu, 500)
    diagonal = special.ndtr(-mu / 2)  # FPR = FNR on the μ-GDP curve
    assert low < diagonal / 1.9 and high >= min(0.5, 1.9 * diagonal)
    assert region(HeldOut(), mu, 500) == (pytest.approx(1 / 5000), pytest.approx(1 - 1 / 5000))


def test_the_basis():
    poisson = Claim(epsilon=gaussian_epsilon(noise_multiplier=2.0, compositions=20, delta=DELTA, sampling_rate=0.05),
                    delta=DELTA, noise_multiplier=2.0, max_grad_norm=1.0, sampling="poisson", sample_rate=0.05,
                    steps=20, neighbouring="add-remove")  # fmt: skip
    ours = accounting(poisson, 400)
    assert basis_for(poisson, ours, AuditOptions(rule=Rays()), runs=500)[0] == "gdp"
    # the subsampled curve dips below the claim's GDP curve only in its far tail, which a held-out threshold may read
    assert ours.gdp_mu(1e-5, 1e-4) > mu_for_epsilon(poisson.epsilon, DELTA) > ours.gdp_mu(0.1, 0.5)
    shuffle = Claim(**{**poisson.to_dict(), "sampling": "shuffle"})
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
