"""The audit side of the trained-model experiments: per-step audits of gathered scores
(:mod:`hsaudit.experiments.cebere.scores`, which the scores job imports instead of this module).

Cebere et al. (2025) Algorithm 4 / Appendix A audit every recorded step of a population's scores. These
functions are what the audit jobs run (they import the audit and accounting layers only), apart from
the training side (:mod:`hsaudit.experiments.cebere.train`) so that editing an estimator or a table never changes a
training job's code version.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from hsaudit.accounting.gaussian import gdp_epsilon, gdp_mu
from hsaudit.audit.auditor import DEFAULT_RULE, Auditor, ThresholdRule
from hsaudit.audit.validity import valid_companion, with_valid


def scores_matrix(table: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """From a :func:`~hsaudit.experiments.cebere.scores.scores_table`: (steps [m], scores [m, n_runs], members
    [n_runs] bool)."""
    wide = table.pivot(index="step", columns="run", values="score").sort_index()
    bits = table.drop_duplicates("run").set_index("run")["bit"].reindex(wide.columns)
    return wide.index.to_numpy(), wide.to_numpy(dtype=np.float64), bits.to_numpy().astype(bool)


def audit_table(
    table: pd.DataFrame,
    *,
    delta: float,
    confidence: float,
    rule: ThresholdRule,
    noise_multiplier: float,
    period: int,
    seed: int = 0,
    valid_rule: ThresholdRule = DEFAULT_RULE,
) -> pd.DataFrame:
    """Audit every recorded step of a scores table (Cebere et al. Algorithm 4 / Appendix A).

    Args:
        table: a :func:`~hsaudit.experiments.cebere.scores.scores_table` (higher score ⇒ inserted).
        delta, confidence, rule: the audit (:meth:`hsaudit.audit.auditor.Auditor.gdp_steps` under ``rule``, the plan's
            from ``audit.mode``).
        noise_multiplier, period: σ and k of the audited training, for the upper bound.
        seed: seed of the rules' split or calibration (:meth:`~hsaudit.audit.rules.ThresholdRule.seeded`).
        valid_rule: the valid rule (``audit.valid_mode``) whose estimate every row carries beside ``rule``'s
            (``mu_valid``, ``epsilon_valid``): when ``rule`` is the paper's (not a valid bound) the figures show both.
            When ``rule`` is itself valid, the valid columns repeat its numbers and ``valid_threshold_rule`` names it.

    Returns:
        One row per recorded step: step, insertions (⌊t/k⌋), runs, mu (μ̂), epsilon (ε̂ at ``delta`` from μ̂),
        epsilon_free (the assumption-free (ε, δ) bound from the same Clopper–Pearson bounds), threshold,
        fpr_upper, fnr_upper, mu_upper = √insertions / σ and epsilon_upper (the μ-GDP upper bound, Cebere et
        al. §1 "Upper bound"), threshold_rule (the rule's spec), rule_valid (whether its ε̂ is a valid lower
        bound), valid_threshold_rule (the valid rule's spec), mu_valid and epsilon_valid (the valid rule's μ̂ and ε̂
        of the same scores), confidence, delta.
    """
    steps, scores, members = scores_matrix(table)
    rule = rule.seeded(seed)
    valid_rule = valid_companion(rule, valid_rule.seeded(seed))
    results, valid_results = with_valid(
        rule, valid_rule, lambda r: Auditor(delta=delta, confidence=confidence, rule=r).gdp_steps(scores, members)
    )
    rows = []
    for step, res, val in zip(steps, results, valid_results, strict=True):
        insertions = int(step) // int(period)
        mu_upper = gdp_mu(noise_multiplier=noise_multiplier, compositions=insertions)
        rows.append(
            {
                "step": int(step),
                "insertions": insertions,
                "runs": int(members.size),
                "mu": float(res.mu),
                "epsilon": float(res.epsilon),
                "epsilon_free": float(res.epsilon_assumption_free),
                "threshold": float(res.threshold),
                "fpr_upper": float(res.fpr_upper),
                "fnr_upper": float(res.fnr_upper),
                "mu_upper": float(mu_upper),
                "epsilon_upper": float(gdp_epsilon(mu=mu_upper, delta=delta)),
                "threshold_rule": res.threshold_rule,
                "rule_valid": bool(rule.valid),
                "valid_threshold_rule": valid_rule.spec,
                "mu_valid": float(val.mu),
                "epsilon_valid": float(val.epsilon),
                "confidence": float(res.confidence),
                "delta": float(res.delta),
            }
        )
    return pd.DataFrame(rows)
