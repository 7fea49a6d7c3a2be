"""The figure of an audit of a user's training: the canary's scores in both worlds, and ε̂ against the claim.

One signature for every figure, ``fn(table, *, pdf, csv, facts)``, listed in :data:`FIGURES`. The table is the scores
(columns ``score``, ``member``; a few-runs audit's also ``training``); ``facts`` carries the report
(:meth:`~hsaudit.experiments.byo.audit.ByoReport.to_dict` or
:meth:`~hsaudit.experiments.byo.few_runs.FewRunsReport.to_dict`, key ``report``), the scale and the code version for
the footer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from hsaudit.experiments.plotting import PALETTE, UPPER_BOUND_STYLE, figure, footer_text, save
from hsaudit.util.io import write_csv_atomic


def _bars(report: Mapping[str, Any]) -> pd.DataFrame:
    """The ε values the right panel draws, one row each (what the figure's CSV holds)."""
    acc = report["accounting"]
    rows = [
        dict(what="claimed", epsilon=report["epsilon_claimed"], lo=None, hi=None, kind="claim"),
        dict(what="ours (declared mechanism)", epsilon=acc["epsilon"], lo=None, hi=None, kind="accountant"),
        dict(what="last-iterate heuristic", epsilon=acc["heuristic"], lo=None, hi=None, kind="accountant"),
    ]
    if report["epsilon_hat"] is not None:
        rows.append(dict(what=f"ε̂ ({report['rule']}, {report['basis']}; verdict)", epsilon=report["epsilon_hat"],
                         lo=report["epsilon_hat"], hi=None, kind="lower bound"))  # fmt: skip
    for e in report["estimates"]:
        if e["rule"] == "auroc":
            rows.append(dict(what="ε of the AUROC's μ (estimate)", epsilon=e["epsilon"], lo=e.get("epsilon_lo"),
                             hi=e.get("epsilon_hi"), kind="estimate"))  # fmt: skip
    frame = pd.DataFrame(rows)
    for col in ("epsilon", "lo", "hi"):  # JSON's null (an infinite or missing value) as NaN
        frame[col] = pd.to_numeric(frame[col], errors="coerce").astype(float)
    return frame


COLORS = {"claim": "black", "accountant": PALETTE[2], "lower bound": PALETTE[1], "estimate": PALETTE[0],
          "bound": PALETTE[0], "ceiling": PALETTE[4]}  # fmt: skip
"""The colour of each kind of ε row (the ``kind`` column of the figures' CSVs)."""


def _scores_panel(ax, scores: np.ndarray, members: np.ndarray, report: Mapping[str, Any], *, labels: tuple[str, str],
                  xlabel: str, ylabel: str) -> None:  # fmt: skip
    """Histograms of the scores left out and put in (``labels``), or why nothing was trained."""
    if len(scores):
        bins = np.histogram_bin_edges(scores, bins=40)
        ax.hist(scores[~members], bins=bins, alpha=0.6, color=PALETTE[0], label=f"{labels[0]} ({(~members).sum()})")
        ax.hist(scores[members], bins=bins, alpha=0.6, color=PALETTE[1], label=f"{labels[1]} ({members.sum()})")
        ax.legend(loc="upper left")
    else:
        ax.text(0.5, 0.5, "nothing trained:\n" + report["verdict"], ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(f"verdict: {report['verdict']}")


def _epsilon_panel(ax, rows: pd.DataFrame, report: Mapping[str, Any], *, top: float, title: str,
                   point: Callable[..., None]) -> None:  # fmt: skip
    """One ε per row against the claimed ε (dashed): the verdict's ε̂ as a one-sided bound (a bracket opening to the
    right), every other row as ``point(ax, i, row, color)`` draws it."""
    for i, row in rows.iterrows():
        eps, color = row["epsilon"], COLORS[row["kind"]]
        if not np.isfinite(eps):
            continue
        if row["kind"] == "lower bound":  # a one-sided bound: ε ≥ ε̂, drawn as a bracket opening to the right
            ax.plot([eps], [i], marker="$[$", markersize=12, color=color)
            ax.annotate("", xy=(eps + 0.25 * top, i), xytext=(eps, i), arrowprops=dict(arrowstyle="->", color=color))
        else:
            point(ax, i, row, color)
    ax.axvline(report["epsilon_claimed"], **UPPER_BOUND_STYLE)
    ax.set_yticks(np.arange(len(rows)), rows["what"])
    ax.set_xlabel(f"ε at δ = {report['delta']:g}")
    ax.set_xlim(0.0, 1.3 * top)
    ax.set_title(title)


def _write(fig, written: pd.DataFrame, *, pdf: str, csv: str, facts: Mapping[str, Any], **footer: Any) -> pd.DataFrame:
    """``written`` to ``csv`` and the figure to ``pdf`` with its footer (the scale, ``footer``'s facts, the code
    version); returns ``written``."""
    write_csv_atomic(written, csv)
    save(fig, pdf, footer=footer_text(scale=facts.get("scale", "-"), code_version=facts.get("code_version", ""),
                                      **footer))  # fmt: skip
    return written


def plot_scores(table: pd.DataFrame, *, pdf: str, csv: str, facts: Mapping[str, Any]) -> pd.DataFrame:
    """Left: histograms of the canary's score without and with it. Right: the verdict's ε̂ (a one-sided lower bound)
    and the AUROC's point estimate with its bootstrap interval, against the claimed ε, ours and the heuristic."""
    report = facts["report"]
    bars = _bars(report)
    fig, axes = figure(2, 1, height=3.0)
    scores = table["score"].to_numpy(dtype=float) if len(table) else np.zeros(0)
    members = table["member"].to_numpy().astype(bool) if len(table) else np.zeros(0, dtype=bool)
    _scores_panel(axes[0][0], scores, members, report, labels=("without canary", "with canary"),
                  xlabel="canary score (higher ⇒ canary present)", ylabel="models")  # fmt: skip
    finite = [v for v in pd.concat([bars["epsilon"], bars["hi"]]) if np.isfinite(v)]
    top = max(finite) if finite else 1.0

    def point(ax, i, row, color):
        eps = row["epsilon"]
        if row["kind"] == "estimate" and np.isfinite(row["lo"]):
            hi = row["hi"] if np.isfinite(row["hi"]) else 1.3 * top  # an unbounded interval runs off the panel
            ax.errorbar([eps], [i], xerr=[[eps - row["lo"]], [hi - eps]], fmt="o", color=color, capsize=3)
        else:
            ax.plot([eps], [i], "s", color=color)

    _epsilon_panel(axes[0][1], bars, report, top=top, title="ε̂ against the claimed ε (dashed)", point=point)
    written = bars.assign(verdict=report["verdict"], runs_out=report["runs_out"], runs_in=report["runs_in"])
    return _write(fig, written, pdf=pdf, csv=csv, facts=facts, R=f"{report['runs_out']} + {report['runs_in']}",
                  audit=f"{report['rule']} ({report['basis']}), confidence {report['confidence']:g}",
                  canary=report["details"].get("canary"))  # fmt: skip


def _few_rows(report: Mapping[str, Any]) -> pd.DataFrame:
    """The ε values of a few-runs report the right panel draws, one row each (what the figure's CSV holds)."""
    verdict_basis = "f-DP" if report["basis"] == "gdp" else "counting"
    rows = [dict(what="claimed", epsilon=report["epsilon_claimed"], kind="claim"),
            dict(what="ours (declared mechanism)", epsilon=report["epsilon_ours"], kind="accountant"),
            dict(what="ceiling (every guess right)", epsilon=report["ceiling"], kind="ceiling")]  # fmt: skip
    for name, label in (("counting", "counting (Steinke et al.)"), ("fdp", "f-DP (Mahloujifar et al.)")):
        if report[name] is not None:
            rows.append(dict(what=label, epsilon=report[name]["epsilon"], kind="bound"))
    if report["epsilon_hat"] is not None:
        rows.append(dict(what=f"ε̂ (verdict, {verdict_basis})", epsilon=report["epsilon_hat"], kind="lower bound"))
    frame = pd.DataFrame(rows)
    frame["epsilon"] = pd.to_numeric(frame["epsilon"], errors="coerce").astype(float)
    return frame


def _few_point(ax, i: int, row: pd.Series, color: str) -> None:
    """The ceiling as a tick (a limit, not an estimate), every other ε as a square."""
    ceiling = row["kind"] == "ceiling"
    ax.plot([row["epsilon"]], [i], "|" if ceiling else "s", color=color, markersize=14 if ceiling else None,
            markeredgewidth=2)  # fmt: skip


def plot_few(table: pd.DataFrame, *, pdf: str, csv: str, facts: Mapping[str, Any]) -> pd.DataFrame:
    """A few-runs audit. Left: histograms of the canaries' scores, each training's centred on its median (what the
    guesses rank), for the canaries left out and those put in. Right: the verdict's ε̂ (a one-sided lower bound), both
    pooled bounds and the ceiling — the most these canaries can show — against the claimed ε and ours."""
    report = facts["report"]
    rows = _few_rows(report)
    fig, axes = figure(2, 1, height=3.0)
    members = table["member"].to_numpy().astype(bool) if len(table) else np.zeros(0, dtype=bool)
    scores = np.zeros(0)
    if len(table):  # hsaudit.experiments.byo.few_runs.centred (a module that imports torch)
        scores = table["score"].to_numpy(dtype=float)
        scores = scores - table.groupby("training")["score"].transform("median").to_numpy(dtype=float)
    _scores_panel(axes[0][0], scores, members, report, labels=("canary out", "canary in"),
                  xlabel="canary score − its training's median", ylabel="canaries")  # fmt: skip
    finite = [v for v in rows["epsilon"] if np.isfinite(v)]
    _epsilon_panel(axes[0][1], rows, report, top=max(finite) if finite else 1.0,
                   title="ε̂, ceiling vs. claim (dashed)", point=_few_point)  # fmt: skip
    power = (report.get("power") or {}).get("probability")
    written = rows.assign(verdict=report["verdict"], canaries=report["canaries"], trainings=report["trainings"],
                          canaries_in=int(members.sum()), canaries_out=int((~members).sum()), power=power)  # fmt: skip
    return _write(fig, written, pdf=pdf, csv=csv, facts=facts,
                  R=f"{report['canaries']} canaries × {report['trainings']} trainings",
                  audit=f"one-run bounds pooled ({report['basis'] or '-'}), confidence {report['confidence']:g}",
                  canary=report["details"].get("canary family"),
                  power=None if power is None else f"{power:.2f}")  # fmt: skip


FIGURES: dict[str, Callable[..., pd.DataFrame]] = {"scores": plot_scores, "few": plot_few}
"""Figure id → function (``results/byo/{name}/fig.pdf`` is ``scores``, a few-runs audit's ``few``)."""
