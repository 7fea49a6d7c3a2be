"""Figures 1 and 2 of Annamalai, "It's Our Loss", from the tables of :mod:`hsaudit.experiments.annamalai.audit`.

Every figure function has the signature ``fn(table, *, pdf, csv, facts)`` and is listed in :data:`FIGURES`; each
writes ``X.pdf`` (with the provenance footer) and ``X.csv`` (every plotted number, tidy). ``facts``: the keyword
arguments of :func:`hsaudit.experiments.plotting.footer_text` (``scale``, ``code_version``), and for fig2 its
options ``tail_floor`` and ``base_rule`` (``figures`` of :class:`hsaudit.experiments.annamalai.plan.AnnamalaiPlan`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from hsaudit.experiments.plotting import PALETTE, figure, footer_text, save
from hsaudit.util.io import write_csv_atomic


def plot_fig1(table: pd.DataFrame, *, pdf: str, csv: str, facts: Mapping[str, Any]) -> pd.DataFrame:
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
    footer = footer_text(**facts, R=f"{runs} per dataset", audit="none (raw rates)", delta=table["delta"].iloc[0])
    save(fig, pdf, footer=footer)
    return table


_BASE_LABEL = {"three_sigma": "P = 10^⌈log10 3σ⌉ (printed)", "half_width": "P/2 ≥ 6σ + 1"}


def fig2_summary(audits: pd.DataFrame) -> pd.DataFrame:
    """Mean, sd and ±2 sd of ε_emp per (setting, ε, update, base rule, method, tail floor), with the mean wrap rates
    (fraction of runs on D / D′ in which some step's value left the decoding window) and whether the true ε lies
    within ±2 sd of the mean (the paper's claim)."""
    a = audits.copy()
    for col, default in (("base_rule", "three_sigma"), ("wrap_rate_out", np.nan), ("wrap_rate_in", np.nan)):
        if col not in a:
            a[col] = default
    a["base_rule"] = a["base_rule"].fillna("three_sigma")
    keys = ["sampling_rate", "steps", "epsilon", "noise_multiplier", "update", "base_rule", "method", "tail_floor"]
    if "encoding_base" in a:
        keys.insert(4, "encoding_base")
    a["tail_floor"] = a["tail_floor"].fillna(-1.0)
    g = a.groupby(keys, dropna=False)
    out = g["epsilon_emp"].agg(mean="mean", sd="std", n="count").reset_index()
    rates = g[["wrap_rate_out", "wrap_rate_in"]].mean().reset_index(drop=True)
    out = pd.concat([out, rates], axis=1)
    out["sd"] = out["sd"].fillna(0.0)
    out["lower_2sd"] = out["mean"] - 2 * out["sd"]
    out["upper_2sd"] = out["mean"] + 2 * out["sd"]
    out["epsilon_within_2sd"] = (out["lower_2sd"] <= out["epsilon"]) & (out["epsilon"] <= out["upper_2sd"])
    out["tail_floor"] = out["tail_floor"].where(out["tail_floor"] >= 0, np.nan)
    return out


def plot_fig2(table: pd.DataFrame, *, pdf: str, csv: str, facts: Mapping[str, Any]) -> pd.DataFrame:
    """ε_emp (mean ± 2 sd over repetitions) vs theoretical ε, one line per (q, T); y = x.

    Lines: the configured encoding-base rule (paper's audit, and its Clopper–Pearson variant); markers: the other
    base rule (open circles), the literal update (crosses) and the ideal statistic Σ λ(v_t) (small diamonds).

    Args:
        facts: the footer's facts, with ``tail_floor`` (the paper's audit's floor that the lines show) and
            ``base_rule`` (the configured encoding-base rule; default ``half_width``).
    """
    facts = dict(facts)
    tail_floor = float(facts.pop("tail_floor"))
    base_rule = facts.pop("base_rule", "half_width")
    summ = fig2_summary(table)
    fig, axes = figure(ncols=1, width=7.0, height=3.8)
    ax = axes[0][0]
    settings = summ[["sampling_rate", "steps"]].drop_duplicates().to_numpy()
    floor_ok = np.isclose(summ["tail_floor"], tail_floor)
    paper = (summ["method"] == "paper") & floor_ok
    for i, (q, t) in enumerate(settings):
        sel = (summ["sampling_rate"] == q) & (summ["steps"] == t)
        col = PALETTE[i % len(PALETTE)]
        tag = f"q = {q:g}, T = {int(t)}"
        default = sel & (summ["update"] == "ascent") & (summ["base_rule"] == base_rule)
        main = summ[default & paper].sort_values("epsilon")
        ax.errorbar(
            main["epsilon"],
            main["mean"],
            yerr=2 * main["sd"],
            marker="o",
            markersize=4,
            capsize=3,
            color=col,
            label=f"{tag}: paper's audit, {_BASE_LABEL.get(base_rule, base_rule)}",
        )
        cp = summ[default & (summ["method"] == "clopper_pearson")].sort_values("epsilon")
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
            label=f"{tag}: Clopper–Pearson, all thresholds (not a valid bound)",
        )
        held = summ[default & (summ["method"] == "clopper_pearson_held_out")].sort_values("epsilon")
        if not held.empty:
            ax.errorbar(
                held["epsilon"] * 0.97,
                held["mean"],
                yerr=2 * held["sd"],
                marker="x",
                markersize=4,
                capsize=2,
                linestyle="-.",
                color=col,
                alpha=0.9,
                label=f"{tag}: Clopper–Pearson, held-out threshold (valid)",
            )
        other = summ[sel & (summ["update"] == "ascent") & (summ["base_rule"] != base_rule) & paper].sort_values(
            "epsilon"
        )
        if not other.empty:
            ax.errorbar(
                other["epsilon"] * 1.03,
                other["mean"],
                yerr=2 * other["sd"],
                marker="o",
                markerfacecolor="white",
                markersize=5,
                capsize=2,
                linestyle="none",
                color=col,
                label=f"{tag}: paper's audit, {_BASE_LABEL.get(other['base_rule'].iloc[0], '?')}",
            )
        ideal = summ[default & (summ["method"] == "paper_ideal")].sort_values("epsilon")
        if not ideal.empty:
            ax.plot(
                ideal["epsilon"] * 0.97,
                ideal["mean"],
                marker="d",
                markersize=3.5,
                linestyle="none",
                color=col,
                alpha=0.7,
                label=f"{tag}: paper's audit on Σ λ(v_t) (no encoding)",
            )
        lit = summ[sel & (summ["update"] == "descent") & paper].sort_values("epsilon")
        if not lit.empty:
            ax.plot(
                lit["epsilon"],
                lit["mean"],
                marker="x",
                linestyle="none",
                color=col,
                alpha=0.6,
                label=f"{tag}: literal (descent) update",
            )
    lim = max(float(summ["epsilon"].max()), float(np.nanmax(summ["upper_2sd"].replace(np.inf, np.nan)))) * 1.05
    ax.plot([0, lim], [0, lim], color="0.4", linewidth=0.8, label="y = x")
    ax.set_xlabel("theoretical ε")
    ax.set_ylabel("empirical ε_emp")
    ax.legend(frameon=False, fontsize=5.5, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # off the data
    runs = int(table["runs_per_world"].iloc[0])
    reps = int(table["repetition"].max()) + 1
    conf = float(table["confidence"].iloc[0]) if "confidence" in table else float("nan")
    write_csv_atomic(summ, csv)
    save(
        fig,
        pdf,
        footer=footer_text(
            **facts,
            R=f"{runs}×{reps}",
            audit=f"PLD curve, floor {tail_floor:g}; CP {conf:g}",
            P=base_rule,
        ),
    )
    return summ


FIGURES: dict[str, Callable[..., pd.DataFrame]] = {"fig1": plot_fig1, "fig2": plot_fig2}
"""The Annamalai figures by id, each ``fn(table, *, pdf, csv, facts)``."""
