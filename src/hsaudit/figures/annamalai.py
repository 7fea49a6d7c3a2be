"""Figures 1 and 2 of Annamalai, "It's Our Loss", from the tables of :mod:`hsaudit.annamalai`. Each ``plot_*``
writes ``X.pdf`` (with the provenance footer) and ``X.csv`` (every plotted number, tidy)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from hsaudit.plotting import PALETTE, figure, footer_text, save, write_csv_atomic


def _footer(facts: dict, **extra) -> str:
    facts = dict(facts)
    scale = facts.pop("scale", "?")
    return footer_text(scale=scale, **facts, **extra)


def plot_fig1(table: pd.DataFrame, *, pdf: str, csv: str, facts: dict) -> None:
    """FNR vs FPR: observations, PLD curve (all iterates), linear-loss curve; one panel per setting."""
    names = list(dict.fromkeys(table["setting"]))
    fig, axes = figure(ncols=len(names), height=3.0)
    for ax, name in zip(axes[0], names):
        sub = table[table["setting"] == name]
        obs = sub[sub["curve"] == "observed"]
        ax.plot(obs["fpr"], obs["fnr"], ".", markersize=1.5, color=PALETTE[1], label="observations (last iterate)")
        pld = sub[sub["curve"] == "pld_all_iterates"]
        e_all = sub["epsilon_all_iterates"].iloc[0]
        e_lin = sub["epsilon_linear"].iloc[0]
        ax.plot(pld["fpr"], pld["fnr"], color="black", linewidth=1.0, label=f"PLD, all iterates (ε = {e_all:.2f})")
        lin = sub[sub["curve"] == "linear_loss"]
        ax.plot(
            lin["fpr"],
            lin["fnr"],
            color=PALETTE[0],
            linestyle="--",
            linewidth=1.0,
            label=f"linear loss amplification (ε = {e_lin:.2f})",
        )
        r = sub.iloc[0]
        ax.set_title(f"σ = {r['noise_multiplier']:g}, q = {r['sampling_rate']:g}, T = {int(r['steps'])}")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_xlabel("FPR")
        ax.set_ylabel("FNR")
        ax.legend(frameon=False, fontsize=6)
    runs = int(table["runs_per_world"].iloc[0])
    write_csv_atomic(table, csv)
    save(
        fig, pdf, footer=_footer(facts, R=f"{runs} per dataset", audit="none (raw rates)", delta=table["delta"].iloc[0])
    )


def fig2_summary(audits: pd.DataFrame) -> pd.DataFrame:
    """Mean, sd and ±2 sd of ε_emp per (setting, ε, update, method, tail floor)."""
    keys = ["sampling_rate", "steps", "epsilon", "noise_multiplier", "update", "method", "tail_floor"]
    a = audits.copy()
    a["tail_floor"] = a["tail_floor"].fillna(-1.0)
    g = a.groupby(keys)["epsilon_emp"]
    out = g.agg(mean="mean", sd="std", n="count").reset_index()
    out["sd"] = out["sd"].fillna(0.0)
    out["lower_2sd"] = out["mean"] - 2 * out["sd"]
    out["upper_2sd"] = out["mean"] + 2 * out["sd"]
    out["tail_floor"] = out["tail_floor"].where(out["tail_floor"] >= 0, np.nan)
    return out


def plot_fig2(audits: pd.DataFrame, *, pdf: str, csv: str, facts: dict, tail_floor: float) -> None:
    """ε_emp (mean ± 2 sd over repetitions) vs theoretical ε, one line per (q, T); y = x."""
    summ = fig2_summary(audits)
    fig, axes = figure(ncols=1, width=4.8, height=3.6)
    ax = axes[0][0]
    settings = summ[["sampling_rate", "steps"]].drop_duplicates().to_numpy()
    for i, (q, t) in enumerate(settings):
        sel = (summ["sampling_rate"] == q) & (summ["steps"] == t)
        col = PALETTE[i % len(PALETTE)]
        main = summ[
            sel
            & (summ["update"] == "ascent")
            & (summ["method"] == "paper")
            & np.isclose(summ["tail_floor"], tail_floor)
        ].sort_values("epsilon")
        ax.errorbar(
            main["epsilon"],
            main["mean"],
            yerr=2 * main["sd"],
            marker="o",
            markersize=4,
            capsize=3,
            color=col,
            label=f"q = {q:g}, T = {int(t)} (paper's audit)",
        )
        cp = summ[sel & (summ["update"] == "ascent") & (summ["method"] == "clopper_pearson")].sort_values("epsilon")
        ax.errorbar(
            cp["epsilon"],
            cp["mean"],
            yerr=2 * cp["sd"],
            marker="s",
            markersize=3,
            capsize=2,
            linestyle=":",
            color=col,
            alpha=0.8,
            label=f"q = {q:g}, T = {int(t)} (Clopper–Pearson)",
        )
        lit = summ[
            sel
            & (summ["update"] == "descent")
            & (summ["method"] == "paper")
            & np.isclose(summ["tail_floor"], tail_floor)
        ].sort_values("epsilon")
        if not lit.empty:
            ax.plot(
                lit["epsilon"],
                lit["mean"],
                marker="x",
                linestyle="none",
                color=col,
                alpha=0.6,
                label=f"q = {q:g}, T = {int(t)} (literal update)",
            )
    lim = max(float(summ["epsilon"].max()), float(np.nanmax(summ["upper_2sd"].replace(np.inf, np.nan)))) * 1.05
    ax.plot([0, lim], [0, lim], color="0.4", linewidth=0.8, label="y = x")
    ax.set_xlabel("theoretical ε")
    ax.set_ylabel("empirical ε_emp")
    ax.legend(frameon=False, fontsize=6)
    runs = int(audits["runs_per_world"].iloc[0])
    reps = int(audits["repetition"].max()) + 1
    write_csv_atomic(summ, csv)
    save(
        fig,
        pdf,
        footer=_footer(
            facts, R=f"{runs} per dataset × {reps} audits", audit=f"PLD-curve (tail floor {tail_floor:g}) + CP variant"
        ),
    )
