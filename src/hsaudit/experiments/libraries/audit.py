"""The libraries table from its rows' byo reports (``results/libraries/<row>/report.json``, written by byo's
``audit_byo``): each row's record (:func:`record`), the CSV's columns, what each consistent row rules out, whether
each planted control was flagged, and the report's markdown. It reads files and dicts only: the rows' trainings and
audits are byo's jobs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

COLUMNS = ("row", "library", "version", "configuration", "planted", "accountant", "epsilon_claimed", "epsilon_ours",
           "epsilon_hat", "epsilon_point", "epsilon_lo", "epsilon_hi", "power_multiple", "power_probability",
           "verdict", "expected", "rules_out", "seconds", "runs_out", "runs_in")  # fmt: skip
"""The columns of ``results/libraries/table.csv``."""


def point_estimate(report: Mapping[str, Any]) -> dict[str, Any]:
    """The report's point estimate (the ε of the AUROC's μ, with its bootstrap interval), or an empty dict."""
    return next((dict(e) for e in report.get("estimates", ()) if e.get("rule") == "auroc"), {})


def training_seconds(shards: Iterable[pd.DataFrame]) -> float | None:
    """The seconds the row's models took to train and score (the user's training and the harness, summed over the
    audit's and the control's shards, byo's ``train_byo_shard`` CSVs); None without shards (a verdict that needed no
    training)."""
    frames = list(shards)
    if not frames:
        return None
    return float(sum((f["train_seconds"] + f["harness_seconds"]).sum() for f in frames))


def record(row: Mapping[str, Any], report: Mapping[str, Any], seconds: float | None) -> dict[str, Any]:
    """The table's row: what the plan says of it (``row``: :meth:`~hsaudit.experiments.libraries.plan.LibraryRow.
    describe`) and its byo report (:meth:`~hsaudit.experiments.byo.audit.ByoReport.to_dict`)."""
    power = report.get("power") or {}
    point = point_estimate(report)
    return {
        **dict(row),
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


def rules_out(rec: Mapping[str, Any]) -> str:
    """What a consistent row rules out, in a sentence (empty for other verdicts)."""
    if rec["verdict"] != "consistent" or rec.get("power_probability") is None:
        return ""
    return (f"a leak of {rec['power_multiple']:.3g}× the claim would have been flagged with probability "
            f"≥ {rec['power_probability']:.2f}")  # fmt: skip


def expected(rec: Mapping[str, Any]) -> str:
    """``control flagged`` / ``CONTROL MISSED`` for a planted row, ``finding`` for a violation of a correct one."""
    if rec["planted"]:
        return "control flagged" if rec["verdict"] == "violation" else "CONTROL MISSED"
    return "finding: see the report" if rec["verdict"] == "violation" else ""


def table(records: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per configuration (:data:`COLUMNS`), in the records' order."""
    rows = [{**{c: rec.get(c) for c in COLUMNS}, "rules_out": rules_out(rec), "expected": expected(rec)}
            for rec in records]  # fmt: skip
    return pd.DataFrame(rows, columns=list(COLUMNS))


def _num(value: Any, digits: str = ".3g") -> str:
    return "–" if value is None or pd.isna(value) else format(float(value), digits)


def markdown(frame: pd.DataFrame, *, not_run: Mapping[str, str], facts: Mapping[str, Any], figure: str) -> str:
    """The report: the table (one line per configuration), the planted controls, what the consistent rows rule out,
    the rows not run and why, and the design."""
    lines = ["# The DP libraries, configuration by configuration", "",
             f"Scale `{facts.get('scale')}`; every row in the audit setting ({facts.get('setting')}), "
             f"R = {facts.get('runs')} runs per world unless the R column says otherwise, and as many for the "
             "positive control at σ/1.5; "
             f"canary {facts.get('canary')}. Figure: [{figure}]({figure}) (ε̂ and the point estimate's interval "
             "against the claim).", "",
             "| library | version | configuration | R | claimed ε | ours | ε̂ | ε (AUROC) [interval] | power | verdict | "
             "training (s) |", "|---|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for _, r in frame.iterrows():
        power = "–" if pd.isna(r["power_probability"]) else \
            f"{r['power_probability']:.2f} at {r['power_multiple']:.3g}×"  # fmt: skip
        verdict = r["verdict"] + (f" ({r['expected']})" if r["expected"] else "")
        lines.append(f"| {r['library']} | {r['version']} | {r['configuration']} | {_num(r['runs_out'], '.0f')} | "
                     f"{_num(r['epsilon_claimed'])} | "
                     f"{_num(r['epsilon_ours'])} | {_num(r['epsilon_hat'])} | {_num(r['epsilon_point'])} "
                     f"[{_num(r['epsilon_lo'])}, {_num(r['epsilon_hi'])}] | {power} | {verdict} | "
                     f"{_num(r['seconds'], '.0f')} |")  # fmt: skip
    planted = frame[frame["planted"].astype(bool)]
    missed = planted[planted["verdict"] != "violation"]
    lines += ["", f"**Controls**: {len(planted) - len(missed)} of {len(planted)} planted bugs flagged"
              + (f"; missed: {', '.join(missed['row'])}." if len(missed) else ".")]  # fmt: skip
    ruled = frame[frame["rules_out"] != ""]
    if len(ruled):
        lines += ["", "**What the consistent rows rule out**:", ""]
        lines += [f"- {r['row']}: {r['rules_out']}." for _, r in ruled.iterrows()]
    other = frame[~frame["planted"].astype(bool) & (frame["verdict"] != "consistent")]
    if len(other):
        lines += ["", "**Rows that are not consistent** (a violation of a correct configuration at the 5 % boundary "
                  "is not a finding until other seeds repeat it):", ""]  # fmt: skip
        lines += [f"- {r['row']}: {r['verdict']}." for _, r in other.iterrows()]
    if facts.get("own_designs"):
        lines += ["", "**Rows with their own design**:", ""]
        lines += [f"- {name}: {what}." for name, what in facts["own_designs"].items()]
    if not_run:
        lines += ["", "**Not yet run**:", ""] + [f"- {name}: {why}" for name, why in not_run.items()]
    lines += ["", f"Code version: {facts.get('code_version')}.", ""]
    return "\n".join(lines)
