"""One row of the libraries table: its configuration audited end to end by
:func:`hsaudit.experiments.byo.api.audit_training` (the audit's models and its positive control, in one job), and
the row's record: what the table shows of the byo report."""

from __future__ import annotations

import time
from typing import Any

from hsaudit.experiments.byo.api import audit_training
from hsaudit.experiments.libraries.plan import LibraryRow, library_version


def point_estimate(report: dict[str, Any]) -> dict[str, Any]:
    """The report's point estimate (the ε of the AUROC's μ, with its bootstrap interval), or an empty dict."""
    return next((e for e in report.get("estimates", ()) if e.get("rule") == "auroc"), {})


def record(row: LibraryRow, report: dict[str, Any], seconds: float, version: str) -> dict[str, Any]:
    """The table's row of a byo report (:meth:`~hsaudit.experiments.byo.audit.ByoReport.to_dict`)."""
    power = report.get("power") or {}
    point = point_estimate(report)
    return {
        "row": row.name,
        "library": row.library,
        "version": version,
        "configuration": row.configuration,
        "planted": row.planted,
        "accountant": report["claim"].get("accountant"),
        "epsilon_claimed": report["epsilon_claimed"],
        "epsilon_ours": report["epsilon_ours"],
        "epsilon_hat": report["epsilon_hat"],
        "epsilon_point": point.get("epsilon"),
        "epsilon_lo": point.get("epsilon_lo"),
        "epsilon_hi": point.get("epsilon_hi"),
        "power_multiple": power.get("multiple"),
        "power_probability": power.get("probability"),
        "power_statement": power.get("statement"),
        "verdict": report["verdict"],
        "reason": report["reason"],
        "runs_out": report["runs_out"],
        "runs_in": report["runs_in"],
        "seconds": seconds,
    }


def audit_row(row: LibraryRow, *, jobs: int = 1) -> dict[str, Any]:
    """Audit ``row``'s configuration (:func:`~hsaudit.experiments.byo.api.audit_training`) and return its record
    (:func:`record`) with the full byo report under ``report``; the runtime is this call's wall time."""
    start = time.perf_counter()
    result = audit_training(row.design, row.options, control=row.control, jobs=jobs)
    report = result.report.to_dict()
    out = record(row, report, time.perf_counter() - start, library_version(row.library))
    out["report"] = report
    return out
