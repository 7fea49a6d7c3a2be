"""Yoon, Jeung & No (2025), the audit: per-model scores of a run → its audit rows (one per sample and split).

Each (adversary, margin, split) of a run's scores (:func:`hsaudit.experiments.yoon.crafting.craft_run`) is audited
with the project's GDP audit (:class:`hsaudit.audit.auditor.Auditor`, the threshold rule of the audit's mode). This
module imports the audit layer only, so an estimator's edit reruns the audits and never a population.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from hsaudit.audit.auditor import Auditor, rule_from_mode

KEYS = ("adversary", "margin", "split")
"""What names one audited sample × split in a run's scores."""


def audit_scores(
    scores: npt.ArrayLike,
    members: npt.ArrayLike,
    *,
    delta: float,
    confidence: float,
    mode: str,
    seed: int,
    selection_fraction: float = 0.5,
) -> dict[str, float]:
    """The GDP audit of one sample's scores (higher ⇒ member) against the models' bits; returns its fields."""
    scores = np.asarray(scores, dtype=float)
    inserted = np.asarray(members).astype(bool)
    if scores.shape != inserted.shape:
        raise ValueError(f"scores and members must have one entry per model, got {scores.shape} and {inserted.shape}")
    rule = rule_from_mode(mode, selection_fraction=selection_fraction, seed=seed)
    return Auditor(delta=delta, confidence=confidence, rule=rule).gdp(scores[~inserted], scores[inserted]).to_dict()


def audit_table(
    scores: pd.DataFrame,
    samples: pd.DataFrame,
    *,
    access: str,
    delta: float,
    confidence: float,
    mode: str,
    seed: int,
    selection_fraction: float = 0.5,
    facts: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """The audit rows of one run: one per consecutive block of ``scores`` with the same (adversary, margin, split).

    Args:
        scores: the run's per-model scores (run, adversary, margin, split, model_index, member, score).
        samples: what the rows say of each sample (:func:`hsaudit.experiments.yoon.crafting.sample_table`), one
            row per (adversary, margin).
        access: ``white`` or ``black`` (a column of every row).
        facts: columns appended to every row (the setting: dataset, model, ε, …), in order.

    Returns:
        run, adversary, margin, split, access, the audit's fields (:func:`audit_scores`), the sample's columns,
        then ``facts``.
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
        result = audit_scores(block["score"], block["member"], delta=delta, confidence=confidence, mode=mode,
                              seed=seed, selection_fraction=selection_fraction)  # fmt: skip
        margin = float(first["margin"])
        sample = sample_of[(first["adversary"], None if np.isnan(margin) else margin)]
        rows.append({"run": int(first["run"]), "adversary": first["adversary"], "margin": margin,
                     "split": first["split"], "access": access, **result, **sample})  # fmt: skip
    return pd.DataFrame(rows).assign(**dict(facts or {}))
