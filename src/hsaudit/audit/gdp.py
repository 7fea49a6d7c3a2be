"""The GDP audit's result and its conversion: error-rate bounds → μ̂ → ε̂ (Nasr et al. 2023; Cebere et al. 2025,
Algorithm 4 and Appendix A; docs/audit.md).

Given R scores with membership bits (**higher score ⇒ member**, "canary inserted", b = 1), every threshold rule
(:mod:`hsaudit.audit.rules`) ends in one :class:`AuditResult`:

1. a threshold τ between two consecutive distinct scores ("member" iff score > τ), chosen by the rule;
2. FP (non-members above τ) and FN (members at or below τ), on the scores the rule evaluates;
3. one-sided Clopper–Pearson upper bounds FPR_ub = CP(FP, n₀), FNR_ub = CP(FN, n₁)
   (:func:`hsaudit.audit.bounds.clopper_pearson_upper`);
4. μ̂ = Φ⁻¹(1 − FPR_ub) − Φ⁻¹(FNR_ub) (:func:`result_from_counts`) — or, for the crossing and rays rules, a lower
   confidence bound on μ from an exact test (:func:`result_from_mu`, :mod:`hsaudit.audit.crossing`);
5. one conversion: ε̂ solves δ = Φ(−ε/μ̂ + μ̂/2) − e^ε Φ(−ε/μ̂ − μ̂/2), ε̂ = 0 when μ̂ ≤ 0
   (:func:`hsaudit.accounting.gdp_epsilon`).

The GDP conversion assumes the mechanism's trade-off curve is Gaussian; for other mechanisms it can exceed the true
ε. The assumption-free (ε, δ) bound from the same CP bounds (:func:`hsaudit.audit.bounds.assumption_free_epsilon`)
is reported beside it. numpy and scipy only.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from hsaudit.accounting.gaussian import gdp_epsilon
from hsaudit.audit.bounds import assumption_free_epsilon, clopper_pearson_upper, cp_probit

__all__ = ["AuditResult", "result_from_counts", "result_from_mu"]

@dataclass(frozen=True)
class AuditResult:
    """One GDP audit (Nasr et al. 2023; Cebere et al. Algorithm 4).

    Attributes:
        epsilon: ε̂ at ``delta`` from μ̂ (0 when μ̂ ≤ 0).
        mu: μ̂ = Φ⁻¹(1 − FPR_ub) − Φ⁻¹(FNR_ub) at the chosen threshold (−inf if no threshold separates);
            under the crossing/rays rules the inverted test's lower bound (:mod:`hsaudit.audit.crossing`).
        threshold: τ; "member" iff score > τ (NaN when no threshold has finite μ).
            Under the crossing/rays rules: a threshold at the crossing of FPR = FNR.
        fpr_upper: one-sided Clopper–Pearson upper bound on the FPR at τ (NaN under the crossing/rays rules,
            which bound μ directly).
        fnr_upper: one-sided Clopper–Pearson upper bound on the FNR at τ (NaN under the crossing/rays rules).
        fpr: empirical FPR at τ (on the scores the bounds were computed on).
        fnr: empirical FNR at τ.
        epsilon_assumption_free: ε of the (ε, δ) bound from the same CP bounds, no GDP assumption (NaN under
            the crossing/rays rules).
        n_members: members (b = 1) the CP bounds were computed on (the evaluation split under held-out/grid).
        n_nonmembers: non-members the CP bounds were computed on.
        confidence: confidence of each one-sided CP bound; under the crossing/rays rules, of the bound on μ; under
            the bonferroni rule, the joint confidence of every bound (each at
            :func:`hsaudit.audit.bounds.bonferroni_confidence`).
        delta: δ.
        threshold_rule: the threshold rule's canonical spec (:attr:`hsaudit.audit.rules.ThresholdRule.spec`, which
            :func:`hsaudit.audit.rules.parse_rule` reads back): the result tables' ``threshold_rule`` column.
    """

    epsilon: float
    mu: float
    threshold: float
    fpr_upper: float
    fnr_upper: float
    fpr: float
    fnr: float
    epsilon_assumption_free: float
    n_members: int
    n_nonmembers: int
    confidence: float
    delta: float
    threshold_rule: str

    def to_dict(self) -> dict:
        """The fields as a plain dict of Python scalars (JSON-ready except non-finite floats)."""
        return dataclasses.asdict(self)


def result_from_counts(
    *, fp: int, fn: int, n0: int, n1: int, threshold: float, delta: float, confidence: float, threshold_rule: str
) -> AuditResult:
    """The audit at one threshold with ``fp`` of ``n0`` non-members above it and ``fn`` of ``n1`` members at or
    below it: CP upper bounds at ``confidence`` each, μ̂ from them, ε̂ and the assumption-free ε at ``delta``."""
    fpr_ub, fnr_ub = (float(x) for x in clopper_pearson_upper([fp, fn], [n0, n1], confidence=confidence))
    # μ from the same probit function as the cached tables (bit-identical to the search's value, and
    # accurate when a bound is close to 1).
    mu = float(-cp_probit(np.array([fp]), n0, confidence)[0] - cp_probit(np.array([fn]), n1, confidence)[0])
    if math.isnan(mu):
        mu = -math.inf
    return AuditResult(
        epsilon=gdp_epsilon(mu=mu, delta=delta),
        mu=mu,
        threshold=float(threshold),
        fpr_upper=fpr_ub,
        fnr_upper=fnr_ub,
        fpr=fp / n0,
        fnr=fn / n1,
        epsilon_assumption_free=float(assumption_free_epsilon(fpr_ub, fnr_ub, delta=delta)),
        n_members=int(n1),
        n_nonmembers=int(n0),
        confidence=float(confidence),
        delta=float(delta),
        threshold_rule=threshold_rule,
    )


def result_from_mu(
    *,
    mu: float,
    n0: int,
    n1: int,
    threshold: float,
    fp: int,
    fn: int,
    delta: float,
    confidence: float,
    threshold_rule: str,
) -> AuditResult:
    """The audit of a rule that bounds μ directly (crossing, rays): μ̂ and its ε̂; for orientation a threshold with
    ``fp`` and ``fn`` errors (the crossing of FPR = FNR); no CP pair, so its bounds and the assumption-free ε are
    NaN."""
    return AuditResult(
        epsilon=gdp_epsilon(mu=mu, delta=delta),
        mu=float(mu),
        threshold=float(threshold),
        fpr_upper=math.nan,
        fnr_upper=math.nan,
        fpr=fp / n0,
        fnr=fn / n1,
        epsilon_assumption_free=math.nan,
        n_members=int(n1),
        n_nonmembers=int(n0),
        confidence=float(confidence),
        delta=float(delta),
        threshold_rule=threshold_rule,
    )
