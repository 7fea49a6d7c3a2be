"""Yoon, Jeung & No (2025), the audit: per-model scores of a run → its audit rows (one per sample and split).

Each (adversary, margin, split) of a run's scores (:func:`hsaudit.experiments.yoon.crafting.craft_run`) is audited
with the project's GDP audit (:class:`hsaudit.audit.auditor.Auditor`) twice: under the rule of the audit's mode
(``audit.mode``; the default, the paper's, is not a valid lower bound) and under a valid rule (``audit.valid_mode``,
default ``crossing``; the mode's own result when its rule is valid). Every row carries both, so a verdict can be read
from a valid audit. This module imports the audit layer only, so an estimator's edit reruns the audits and never a
population.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from hsaudit.audit.auditor import DEFAULT_RULE, Auditor, ThresholdRule
from hsaudit.audit.validity import valid_companion, with_valid

KEYS = ("adversary", "margin", "split")
"""What names one audited sample × split in a run's scores."""


def audit_scores(
    scores: npt.ArrayLike,
    members: npt.ArrayLike,
    *,
    delta: float,
    confidence: float,
    rule: ThresholdRule,
    seed: int,
    valid_rule: ThresholdRule = DEFAULT_RULE,
) -> dict[str, Any]:
    """The GDP audit of one sample's scores (higher ⇒ member) against the models' bits, under ``rule`` and under a
    valid rule.

    Args:
        scores: one score per model.
        members: one bit per model (1: trained on D′ = D ∪ {canary}).
        delta, confidence: the audit's δ and confidence.
        rule: the rule of the audit's fields (the plan's, from ``audit.mode``).
        seed: the seed of a rule that splits or simulates (held-out, grid, rays); both rules take it.
        valid_rule: the valid rule audited beside ``rule`` when that one is not valid (``audit.valid_mode``).

    Returns:
        The fields of ``rule``'s :class:`hsaudit.audit.gdp.AuditResult` (epsilon, mu, threshold, …,
        threshold_rule: the rule's spec), then rule_valid (whether ``rule`` gives a valid lower bound),
        valid_threshold_rule (the valid rule's spec: ``rule``'s own when it is valid), mu_valid and epsilon_valid (that rule's μ̂ and ε̂ of the same scores).

    Raises:
        ValueError: scores and members of different shapes, or a ``valid_rule`` that is not valid.
    """
    scores = np.asarray(scores, dtype=float)
    inserted = np.asarray(members).astype(bool)
    if scores.shape != inserted.shape:
        raise ValueError(f"scores and members must have one entry per model, got {scores.shape} and {inserted.shape}")
    x0, x1 = scores[~inserted], scores[inserted]
    rule = rule.seeded(seed)
    valid_rule = valid_companion(rule, valid_rule.seeded(seed))
    result, valid_result = with_valid(rule, valid_rule,
                                      lambda r: Auditor(delta=delta, confidence=confidence, rule=r).gdp(x0, x1))  # fmt: skip
    return {**result.to_dict(), "rule_valid": bool(rule.valid), "valid_threshold_rule": valid_rule.spec,
            "mu_valid": float(valid_result.mu), "epsilon_valid": float(valid_result.epsilon)}  # fmt: skip


def audit_table(
    scores: pd.DataFrame,
    samples: pd.DataFrame,
    *,
    access: str,
    delta: float,
    confidence: float,
    rule: ThresholdRule,
    seed: int,
    valid_rule: ThresholdRule = DEFAULT_RULE,
    facts: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """The audit rows of one run: one per consecutive block of ``scores`` with the same (adversary, margin, split).

    Args:
        scores: the run's per-model scores (run, adversary, margin, split, model_index, member, score).
        samples: what the rows say of each sample (:func:`hsaudit.experiments.yoon.crafting.sample_table`), one
            row per (adversary, margin).
        access: ``white`` or ``black`` (a column of every row).
        delta, confidence, rule, seed, valid_rule: the audit of each block
            (:func:`audit_scores`).
        facts: columns appended to every row (the setting: dataset, model, ε, …), in order.

    Returns:
        run, adversary, margin, split, access, the audit's fields (:func:`audit_scores`: ``mode``'s audit, then
        rule_valid, valid_threshold_rule, mu_valid, epsilon_valid), the sample's columns, then ``facts``.
    """
    if scores.empty:
        raise ValueError("the run has no scores")
    changed = pd.Series(False, index=scores.index)
    for column in KEYS:
        now, before = scores[column], scores[column].shift()
        changed |= ~((now == before) | (now.isna() & before.isna()))
    blocks = changed.cumsum()
    sample_of = {}
    for record in samples.to_dict("records"):
        margin = record.pop("margin")
        name = (record.pop("adversary"), None if np.isnan(margin) else float(margin))
        if name in sample_of:
            raise ValueError(f"samples must hold one row per (adversary, margin), got {name} twice")
        sample_of[name] = record
    rows = []
    for _, block in scores.groupby(blocks, sort=False):
        first = block.iloc[0]
        result = audit_scores(block["score"], block["member"], delta=delta, confidence=confidence, rule=rule,
                              seed=seed, valid_rule=valid_rule)  # fmt: skip
        margin = float(first["margin"])
        sample = sample_of[(first["adversary"], None if np.isnan(margin) else margin)]
        rows.append({"run": int(first["run"]), "adversary": first["adversary"], "margin": margin,
                     "split": first["split"], "access": access, **result, **sample})  # fmt: skip
    return pd.DataFrame(rows).assign(**dict(facts or {}))
