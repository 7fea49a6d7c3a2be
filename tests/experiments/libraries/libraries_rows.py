"""What the libraries' smoke tests share: every row of a plan audited as byo's rules audit it
(:func:`hsaudit.experiments.byo.api.audit_training`, the audit and its control), turned into the table."""

from __future__ import annotations

import warnings

import pandas as pd
import yaml

from conftest import REPO
from hsaudit.experiments.byo.api import audit_training
from hsaudit.experiments.libraries.audit import record, table, training_seconds
from hsaudit.experiments.libraries.plan import LibrariesPlan

_SECTION = yaml.safe_load((REPO / "config" / "config.yaml").read_text())["libraries"]["audit"]
AUDIT = {**{k: _SECTION[k] for k in ("audit_setting", "canary", "background")}, "runs": 10, "power_resamples": 10}
"""Tiny R: the smoke version of the section's ``audit`` options, its setting and its pinned design (a design left to
a pilot would train each candidate's control at ``pilot_runs`` per world first: 15x the audit's models here)."""


def audit_rows(libs: LibrariesPlan) -> pd.DataFrame:
    """The table of ``libs``' rows, each audited here (library warnings silenced)."""
    records = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for row in libs.rows.values():
            result = audit_training(row.audit.design, row.audit.options, control=row.audit.control)
            shards = [f for f in (result.scores, result.control) if f is not None and len(f)]
            records.append(record(row.describe(), result.report.to_dict(), training_seconds(shards)))
    return table(records)
