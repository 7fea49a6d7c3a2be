"""The Housing/FCNN figures of Cebere et al.: fig1c (§5), fig4 and fig7 (Appendix C).

ε̂ (δ = 1e−5) against the training step, mean ± sd over the repetitions, one series per adversary, and the μ-GDP
upper-bound curve. The audits come from the workflow (plan, keys, shards and per-step audit tables:
:mod:`hsaudit.experiments`, re-exported here).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from hsaudit.experiments import ADVERSARY_LABELS, FIGURE_TITLES, AuditRef


# ------------------------------------------------------------------------------------------------- figures


def figure_table(entries: Sequence[tuple[AuditRef | Mapping[str, Any], pd.DataFrame]]) -> pd.DataFrame:
    """Stack per-audit tables (:func:`audit_table`) into one tidy figure table.

    Args:
        entries: pairs (audit reference: with ``adversary``, ``rep``, ``key``; its audit table).

    Returns:
        Columns adversary, label, rep, key, step, insertions, runs, mu, epsilon, epsilon_free, mu_upper,
        epsilon_upper, mode, confidence, delta.
    """
    frames = []
    for ref, audit in entries:
        get = ref.get if isinstance(ref, Mapping) else lambda k, r=ref: getattr(r, k)
        frame = audit.copy()
        frame.insert(0, "key", get("key"))
        frame.insert(0, "rep", int(get("rep")))
        frame.insert(0, "label", ADVERSARY_LABELS.get(get("adversary"), get("adversary")))
        frame.insert(0, "adversary", get("adversary"))
        frames.append(frame)
    if not frames:
        raise ValueError("figure_table needs at least one audit")
    return pd.concat(frames, ignore_index=True)


def summarise(table: pd.DataFrame) -> pd.DataFrame:
    """Mean and standard deviation (ddof = 1; 0 for a single repetition) of ε̂ per adversary and step."""
    grouped = table.groupby(["adversary", "step"], sort=False)["epsilon"]
    out = grouped.agg(mean="mean", sd=lambda s: float(s.std(ddof=1)) if len(s) > 1 else 0.0, reps="size")
    return out.reset_index()


def plot_housing_figure(
    table: pd.DataFrame,
    pdf_path: str | os.PathLike,
    csv_path: str | os.PathLike,
    *,
    figure: str,
    scale: str,
    code_version: str = "",
) -> pd.DataFrame:
    """Plot ε̂ against the step (mean ± sd over repetitions, one series per adversary) and the upper bound.

    Writes ``pdf_path`` (footer: scale, R, repetitions, audit mode) and ``csv_path`` (the tidy ``table``,
    every plotted number: per-repetition ε̂ and the bound, from which the means and sds follow). Both atomically.

    Returns:
        The per-step summary that was plotted (:func:`summarise`).
    """
    from hsaudit.plotting import PALETTE, UPPER_BOUND_STYLE, figure as new_figure, footer_text, save, write_csv_atomic

    from matplotlib.ticker import MaxNLocator

    if table.empty:
        raise ValueError("plot_housing_figure needs a non-empty table")
    summary = summarise(table)
    fig, axes = new_figure(1, 1, width=4.8, height=3.4)
    ax = axes[0][0]
    upper = table.drop_duplicates("step").sort_values("step")
    ax.plot(upper["step"], upper["epsilon_upper"], label="Upper bound", **UPPER_BOUND_STYLE)
    # One colour per adversary across fig1c, fig4 and fig7 (colour-blind-safe palette; no yellow on white).
    colours = {
        "gc_r": PALETTE[0],
        "gc_s_noiseless_ps": PALETTE[1],
        "label_flip": PALETTE[2],
        "cots": PALETTE[3],
        "gc_s_noiseless_fm": PALETTE[4],
        "gc_s_noisy_ps": PALETTE[5],
        "gc_s_noisy_fm": "0.45",
    }
    for i, adversary in enumerate(dict.fromkeys(table["adversary"])):
        part = summary[summary["adversary"] == adversary].sort_values("step")
        colour = colours.get(adversary, PALETTE[i % len(PALETTE)])
        label = ADVERSARY_LABELS.get(adversary, adversary)
        ax.plot(part["step"], part["mean"], color=colour, label=label, linewidth=1.3)
        ax.fill_between(part["step"], part["mean"] - part["sd"], part["mean"] + part["sd"], color=colour, alpha=0.2, linewidth=0)
    delta = float(table["delta"].iloc[0])
    ax.set_xlabel("Training step")
    ax.set_ylabel(f"ε (δ = {delta:g})")
    ax.set_title(FIGURE_TITLES.get(figure, figure))
    ax.set_ylim(bottom=0)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(frameon=False, loc="upper left")
    runs = sorted(set(table["runs"].astype(int)))
    reps = int(table.groupby("adversary")["rep"].nunique().max())
    footer = footer_text(
        scale=scale,
        R="/".join(str(r) for r in runs),
        reps=reps,
        audit=f"{table['mode'].iloc[0]} (GDP, CP {float(table['confidence'].iloc[0]):g})",
        **({"code": code_version} if code_version else {}),
    )
    write_csv_atomic(table.assign(scale=scale), csv_path)
    save(fig, pdf_path, footer=footer)
    return summary
