"""Figures and table of Yoon, Jeung & No (results/yoon/fig2..fig8.pdf, table1.md) from the audits' rows.

Every row of the input table is one audit: a run of a point (dataset, canary, init, C, access, ε) × adversary
(a_c, a_ude, a_ade at margin α) × split (``held-out``: x_a scored on a population it was not crafted on;
``same``: the paper's reading). Figures show the mean ± sd of ε̂ over runs, held-out solid and same dashed.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from hsaudit.io import write_text_atomic
from hsaudit.plotting import figure, footer_text, save

SERIES = ("dataset", "canary", "init", "clip_norm", "access", "epsilon_theory", "adversary", "margin", "split")


def summarise(table: pd.DataFrame) -> pd.DataFrame:
    """Mean, sd and count of ε̂ (and μ̂) over runs for every series."""
    keys = [k for k in SERIES if k in table]
    grouped = table.assign(margin=table["margin"].fillna(-1.0)).groupby(keys, sort=False)
    out = grouped.agg(
        epsilon_mean=("epsilon", "mean"),
        epsilon_sd=("epsilon", lambda v: float(np.std(v, ddof=1)) if len(v) > 1 else 0.0),
        mu_mean=("mu", "mean"),
        runs=("run", "nunique"),
    ).reset_index()
    out["margin"] = out["margin"].replace(-1.0, np.nan)
    return out


def _footer(table: pd.DataFrame, scale: str, code_version: str) -> str:
    return footer_text(
        scale=scale,
        N=f"{int(table['models_per_world'].iloc[0])} per world",
        runs=int(table["run"].nunique()),
        data="/".join(sorted(table["data_source"].astype(str).unique())),
        audit=str(table["mode"].iloc[0]),
        splits="held-out (solid) / same (dashed)",
        code=code_version[:8],
    )


def plot_yoon_figure(
    figure_name: str,
    table: pd.DataFrame,
    pdf: str | os.PathLike,
    csv: str | os.PathLike,
    *,
    scores: pd.DataFrame | None = None,
    scale: str,
    code_version: str,
) -> pd.DataFrame:
    """Draw one figure: ε̂ against the theoretical ε per panel (dataset / canary / init / C), and write its CSV."""
    table = table[(table["adversary"] != "a_ade") | np.isclose(table["margin"].fillna(0.2), 0.2) | (table["margin"].isna())]
    summary = summarise(table)
    panels = [c for c in ("dataset", "canary", "init", "clip_norm") if summary[c].nunique() > 1] or ["dataset"]
    groups = list(summary.groupby(panels, sort=False))
    fig, axes = figure(ncols=len(groups))
    for ax, (name, part) in zip(axes[0], groups):
        for i, adversary in enumerate(("a_c", "a_ude", "a_ade")):
            for split, style in (("held-out", "-"), ("same", "--")):
                rows = part[(part["adversary"] == adversary) & (part["split"] == split)].sort_values("epsilon_theory")
                if rows.empty:
                    continue
                ax.errorbar(
                    rows["epsilon_theory"], rows["epsilon_mean"], yerr=rows["epsilon_sd"], fmt="o" + style,
                    color=f"C{i}", capsize=2, label=f"{adversary} ({split})",
                )
        eps = np.sort(part["epsilon_theory"].unique())
        ax.plot(eps, eps, color="black", linestyle=":", label="theoretical ε")
        ax.set_title(", ".join(f"{p}={v}" for p, v in zip(panels, name if isinstance(name, tuple) else (name,))))
        ax.set_xlabel("theoretical ε")
        ax.set_ylabel("empirical ε")
    axes[0][0].legend(fontsize=6)
    summary.to_csv(csv, index=False)
    save(fig, pdf, footer=_footer(table, scale, code_version))
    return summary


def write_table1(
    table: pd.DataFrame, md: str | os.PathLike, csv: str | os.PathLike, *, scale: str, code_version: str
) -> pd.DataFrame:
    """Table 1: ε̂ (mean ± sd over runs) of a_ade for every margin α, both splits; Markdown and CSV."""
    summary = summarise(table[table["adversary"] == "a_ade"])
    lines = ["| α | ε̂ held-out | ε̂ same |", "|---|---|---|"]
    for margin, part in summary.groupby("margin"):
        cells = {r.split: f"{r.epsilon_mean:.2f} ± {r.epsilon_sd:.2f}" for r in part.itertuples()}
        lines.append(f"| {margin:g} | {cells.get('held-out', '')} | {cells.get('same', '')} |")
    lines += ["", _footer(table, scale, code_version)]
    summary.to_csv(csv, index=False)
    write_text_atomic(md, "\n".join(lines) + "\n")
    return summary
