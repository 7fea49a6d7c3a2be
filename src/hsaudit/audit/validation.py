"""Coverage study of the audit estimators on score pairs of known μ (docs/audit.md, "Coverage study").

Non-member scores N(0, 1) and member scores N(μ, 1) (an exact half split of R runs) are the scores of the
optimal test between the two worlds of a μ-GDP Gaussian mechanism, whose true ε at δ is
:func:`hsaudit.accounting.gdp_epsilon`. The heavier-tailed location families (:data:`SCORE_FAMILIES`)
draw non-members from F and members from F(· − θ) with θ chosen so that their trade-off curve is μ-GDP and no
better: sup_τ Φ⁻¹(F(τ)) − Φ⁻¹(F(τ − θ)) = μ, attained at τ = θ/2 (:func:`family_shift`). Their likelihood ratio is
non-decreasing in the score, so thresholds of the score are the optimal tests and the mechanism "release the
score" is exactly μ-GDP; the truth is the same ε(μ) as for the Gaussian pair (it upper-bounds the family's own
(ε, δ) profile: an audit that assumes a Gaussian curve is compared with the tightest GDP curve). Unlike the
Gaussian pair, these curves touch G_μ at one point only, so they test estimators that pool thresholds.

A valid lower bound at confidence c should exceed the true ε in at most about 1 − c of the trials (for the
Clopper–Pearson rules the per-rate confidence c applies to each of the two bounds, so up to ~2(1 − c) by the
union bound, less in practice; the crossing/rays rules hold jointly at c). Each trial draws its scores from
its own seed (:func:`hsaudit.util.seeding.derive_seed`), so the study is repeatable and independent of the
order of trials.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace

import numpy as np
from scipy import special

from hsaudit.accounting.gaussian import gdp_epsilon
from hsaudit.audit.auditor import Auditor
from hsaudit.audit.rules import HeldOut, Paper, ThresholdRule
from hsaudit.util.seeding import derive_seed

__all__ = [
    "SCORE_FAMILIES",
    "CoverageRow",
    "coverage_study",
    "family_shift",
    "gaussian_pair_scores",
    "pair_scores",
]

#: Score families of the coverage study: the Gaussian pair and two heavier-tailed location families.
SCORE_FAMILIES = ("gaussian", "logistic", "laplace")


@dataclass(frozen=True)
class CoverageRow:
    """Summary of one (μ, rule) cell of the coverage study.

    Attributes:
        threshold_rule: the rule's spec, ``NAME`` or ``NAME@FRACTION`` (its ``spec``, as
            :func:`hsaudit.audit.rules.parse_rule` reads it; the result tables' ``threshold_rule`` column).
        family: score family (:data:`SCORE_FAMILIES`).
        mu: true μ of the pair.
        true_epsilon: ε of μ-GDP at ``delta`` (0 at μ = 0).
        trials: number of seeded trials.
        runs: R, scores per trial (half members).
        exceed_fraction: fraction of trials with ε̂ > true ε (a valid 95% bound keeps this ≲ 5–10%); one minus
            it is the coverage.
        median_epsilon: median ε̂.
        median_ratio: median ε̂ / true ε (NaN at μ = 0).
        mean_epsilon: mean ε̂.
        mean_ratio: mean ε̂ / true ε (NaN at μ = 0).
        sd_epsilon: standard deviation of ε̂.
        delta: δ.
        confidence: per-rate CP confidence (crossing/rays: confidence of the bound).
    """

    threshold_rule: str
    family: str
    mu: float
    true_epsilon: float
    trials: int
    runs: int
    exceed_fraction: float
    median_epsilon: float
    median_ratio: float
    mean_epsilon: float
    mean_ratio: float
    sd_epsilon: float
    delta: float
    confidence: float

    def to_dict(self) -> dict:
        return asdict(self)


def family_shift(family: str, mu: float) -> float:
    """Location shift θ of ``family`` whose pair F vs F(· − θ) is exactly μ-GDP (module docstring).

    Gaussian: θ = μ. Logistic (F(x) = 1/(1 + e^{−x})): θ = 2 logit Φ(μ/2). Laplace (F(x) = ½e^{x}, x < 0):
    θ = −2 log(2Φ(−μ/2)). Both are symmetric, so Φ⁻¹(F(τ)) − Φ⁻¹(F(τ − θ)) is largest at τ = θ/2, where it
    equals 2Φ⁻¹(F(θ/2)) = μ (checked numerically over τ in tests/audit/test_crossing.py).

    Args:
        family: one of :data:`SCORE_FAMILIES`.
        mu: μ ≥ 0.

    Returns:
        θ ≥ 0.

    Raises:
        ValueError: unknown family, μ negative or not finite.
    """
    m = float(mu)
    if not (m >= 0 and math.isfinite(m)):
        raise ValueError(f"mu must be a finite number >= 0, got {mu!r}")
    if family == "gaussian":
        return m
    if family == "logistic":
        return float(2.0 * special.logit(special.ndtr(m / 2.0)))
    if family == "laplace":
        return float(-2.0 * math.log(2.0 * special.ndtr(-m / 2.0)))
    raise ValueError(f"unknown score family {family!r}; choose from {', '.join(SCORE_FAMILIES)}")


def pair_scores(*, family: str, mu: float, runs: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """R scores of an exact half split from ``family`` at GDP parameter μ: ⌊R/2⌋ non-members F, the rest
    members F(· − θ) with θ = :func:`family_shift` (family, μ). The Gaussian family draws exactly as
    :func:`gaussian_pair_scores`.

    Args:
        family: one of :data:`SCORE_FAMILIES`.
        mu: μ ≥ 0.
        runs: R ≥ 2.
        seed: seed of the draw.

    Returns:
        (scores, members) with members 0/1 (1 = member, higher score ⇒ member).

    Raises:
        ValueError: unknown family, bad μ or R.
    """
    theta = family_shift(family, mu)
    r = int(runs)
    if r < 2 or r != runs:
        raise ValueError(f"runs must be an integer >= 2, got {runs!r}")
    rng = np.random.default_rng(seed)
    members = np.zeros(r, dtype=np.int8)
    members[r // 2 :] = 1
    if family == "gaussian":
        noise = rng.standard_normal(r)
    elif family == "logistic":
        noise = rng.logistic(size=r)
    else:
        noise = rng.laplace(size=r)
    return noise + theta * members, members


def gaussian_pair_scores(*, mu: float, runs: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """R scores of an exact half split: ⌊R/2⌋ non-members N(0, 1), the rest members N(μ, 1).

    Args:
        mu: mean shift of the member scores.
        runs: R ≥ 2.
        seed: seed of the draw.

    Returns:
        (scores, members) with members 0/1 (1 = member, higher score ⇒ member).
    """
    r = int(runs)
    if r < 2 or r != runs:
        raise ValueError(f"runs must be an integer >= 2, got {runs!r}")
    rng = np.random.default_rng(seed)
    n0 = r // 2
    members = np.zeros(r, dtype=np.int8)
    members[n0:] = 1
    scores = rng.standard_normal(r) + mu * members
    return scores, members


def coverage_study(
    *,
    mus: Sequence[float] = (0.5, 2.0, 3.95),
    trials: int = 200,
    runs: int = 5000,
    rules: Sequence[ThresholdRule] = (Paper(), HeldOut()),
    families: Sequence[str] = ("gaussian",),
    delta: float = 1e-5,
    confidence: float = 0.95,
    seed: int = 0,
) -> list[CoverageRow]:
    """Run the coverage study: for each family and μ, ``trials`` seeded score pairs audited under every rule.

    The same scores are audited under every rule (paired comparison); held-out/grid splits and the simulations
    of the rays rule are seeded from the trial's seed (a rule's own ``seed`` is replaced). Gaussian trials draw the
    same scores as before the families existed (seed key without the family).

    Args:
        mus: true μ values (≥ 0; μ = 0 is the null: any ε̂ > 0 exceeds the truth).
        trials: trials per μ (≥ 1).
        runs: R per trial (≥ 4).
        rules: the threshold rules to compare (:mod:`hsaudit.audit.rules`; rows are labelled by their ``spec``,
            e.g. ``held-out@0.1``).
        families: score families (:data:`SCORE_FAMILIES`).
        delta: δ in (0, 1).
        confidence: CP confidence in (0, 1) (crossing/rays: of the bound).
        seed: master seed.

    Returns:
        One :class:`CoverageRow` per (family, μ, rule), family-major then μ.

    Raises:
        ValueError: bad μ, counts, rules, families, δ or confidence.
    """
    mus = [float(m) for m in mus]
    if not mus or any(not (m >= 0 and np.isfinite(m)) for m in mus):
        raise ValueError(f"mus must be finite numbers >= 0, got {mus}")
    if int(trials) < 1 or int(trials) != trials:
        raise ValueError(f"trials must be a positive integer, got {trials!r}")
    if int(runs) < 4 or int(runs) != runs:
        raise ValueError(f"runs must be an integer >= 4, got {runs!r}")
    rules = list(rules)
    if not rules:
        raise ValueError("rules must name at least one threshold rule")
    labels = [getattr(rule, "spec", rule.name) for rule in rules]
    if len(set(labels)) != len(labels):
        raise ValueError(f"rules must differ in their specs, got {labels}")
    families = list(families)
    if not families:
        raise ValueError("families must name at least one score family")
    for family in families:
        family_shift(family, 0.0)  # unknown names raise here, before any trial runs
    Auditor(delta=delta, confidence=confidence)  # a bad δ or confidence raises here, before any trial runs
    for rule in rules:
        Auditor(rule=rule)  # so does anything that is not a rule
    rows: list[CoverageRow] = []
    for family in families:
        for mu in mus:
            truth = gdp_epsilon(mu=mu, delta=delta)
            eps = {label: np.empty(int(trials)) for label in labels}
            for t in range(int(trials)):
                key = ("coverage", mu, runs, t) if family == "gaussian" else ("coverage", family, mu, runs, t)
                trial_seed = derive_seed(seed, *key)
                scores, members = pair_scores(family=family, mu=mu, runs=int(runs), seed=trial_seed)
                inserted = members.astype(bool)
                for label, rule in zip(labels, rules):
                    if hasattr(rule, "seed"):  # the split (held-out, grid) or simulations (rays) of this trial
                        rule = replace(rule, seed=derive_seed(trial_seed, "split"))
                    auditor = Auditor(delta=delta, confidence=confidence, rule=rule)
                    eps[label][t] = auditor.gdp(scores[~inserted], scores[inserted]).epsilon
            for label in labels:
                e = eps[label]
                rows.append(
                    CoverageRow(
                        threshold_rule=label,
                        family=family,
                        mu=mu,
                        true_epsilon=truth,
                        trials=int(trials),
                        runs=int(runs),
                        exceed_fraction=float(np.mean(e > truth)),
                        median_epsilon=float(np.median(e)),
                        median_ratio=float(np.median(e) / truth) if truth > 0 else math.nan,
                        mean_epsilon=float(np.mean(e)),
                        mean_ratio=float(np.mean(e) / truth) if truth > 0 else math.nan,
                        sd_epsilon=float(np.std(e, ddof=1)) if e.size > 1 else 0.0,
                        delta=float(delta),
                        confidence=float(confidence),
                    )
                )
    return rows
