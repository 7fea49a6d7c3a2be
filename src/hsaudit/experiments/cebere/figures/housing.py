"""The Housing/FCNN figures of Cebere et al.: fig1c (§5), fig4 and fig7 (Appendix C).

ε̂ (δ = 1e−5) against the training step, mean ± sd over the repetitions, one series per adversary, and the μ-GDP
upper-bound curve. The audits come from the workflow (plan, keys, shards and per-step audit tables:
:mod:`hsaudit.experiments.cebere.plan`, re-exported here).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from hsaudit.experiments.cebere.plan import ADVERSARY_LABELS, FIGURE_TITLES, AuditRef

# ------------------------------------------------------------------------------------------------- figures

# One colour per adversary across every ε-against-step figure (Housing and CIFAR-10; colour-blind-safe palette,
# no yellow on white). A_GC-S on CIFAR-10 ("gc_s") is the default variant, Noiseless-PS, and shares its colour.
ADVERSARY_COLOURS = {
    "gc_r": "#0072B2",
    "gc_s_noiseless_ps": "#D55E00",
    "gc_s": "#D55E00",
    "label_flip": "#009E73",
    "cots": "#CC79A7",
    "gc_s_noiseless_fm": "#E69F00",
    "gc_s_noisy_ps": "#56B4E9",
    "gc_s_noisy_fm": "0.45",
}


def figure_table(
    entries: Sequence[tuple[AuditRef | Mapping[str, Any], pd.DataFrame]], *, ref_columns: Sequence[str] = ()
) -> pd.DataFrame:
    """Stack per-audit tables (:func:`audit_table`) into one tidy figure table.

    Args:
        entries: pairs (audit reference: with ``adversary``, ``rep``, ``key`` and every name in ``ref_columns``;
            its audit table).
        ref_columns: further reference fields to carry as columns, after ``key`` (e.g. ``model``, ``clip_norm``
            for the CIFAR-10 figures). None by default (the Housing tables).

    Returns:
        Columns adversary, label, rep, key, the ``ref_columns``, step, insertions, runs, mu, epsilon, epsilon_free,
        mu_upper, epsilon_upper, mode, confidence, delta.

    Raises:
        ValueError: no entries, or a reference without one of the ``ref_columns`` (naming it).
    """
    frames = []
    for ref, audit in entries:
        get = ref.get if isinstance(ref, Mapping) else lambda k, r=ref: getattr(r, k, None)
        frame = audit.copy()
        for position, name in enumerate(ref_columns):
            value = get(name)
            if value is None:
                raise ValueError(f"audit reference {get('key')!r} has no {name!r}")
            frame.insert(position, name, value)
        frame.insert(0, "key", get("key"))
        frame.insert(0, "rep", int(get("rep")))
        frame.insert(0, "label", ADVERSARY_LABELS.get(get("adversary"), get("adversary")))
        frame.insert(0, "adversary", get("adversary"))
        frames.append(frame)
    if not frames:
        raise ValueError("figure_table needs at least one audit")
    return pd.concat(frames, ignore_index=True)


def summarise(table: pd.DataFrame, *, by: Sequence[str] = ("adversary",)) -> pd.DataFrame:
    """Mean and standard deviation (ddof = 1; 0 for a single repetition) of ε̂ per series and step.

    Args:
        table: a :func:`figure_table`.
        by: the columns that name a series (default: the adversary).

    Returns:
        Columns ``by``, step, mean, sd, reps; series in their order of appearance.
    """
    grouped = table.groupby([*by, "step"], sort=False)["epsilon"]
    out = grouped.agg(mean="mean", sd=lambda s: float(s.std(ddof=1)) if len(s) > 1 else 0.0, reps="size")
    return out.reset_index()


def adversary_colour(adversary: str, index: int = 0) -> str:
    """The colour of ``adversary`` (:data:`ADVERSARY_COLOURS`); an unknown one gets palette entry ``index``."""
    from hsaudit.experiments.plotting import PALETTE

    return ADVERSARY_COLOURS.get(adversary, PALETTE[index % len(PALETTE)])


def plot_upper_bound(ax, table: pd.DataFrame, **style: Any) -> None:
    """Draw the μ-GDP upper bound ε(√⌊t/k⌋/σ) of ``table`` (one curve: the series of a panel share σ and k)."""
    from hsaudit.experiments.plotting import UPPER_BOUND_STYLE

    upper = table.drop_duplicates("step").sort_values("step")
    ax.plot(upper["step"], upper["epsilon_upper"], **{"label": "Upper bound", **UPPER_BOUND_STYLE, **style})


def plot_mean_sd(ax, part: pd.DataFrame, *, colour: str, label: str, linestyle: Any = "-") -> None:
    """Draw one series of a :func:`summarise` table: the mean line and a ± sd band."""
    part = part.sort_values("step")
    ax.plot(part["step"], part["mean"], color=colour, label=label, linewidth=1.3, linestyle=linestyle)
    ax.fill_between(
        part["step"], part["mean"] - part["sd"], part["mean"] + part["sd"], color=colour, alpha=0.2, linewidth=0
    )


def audit_facts(table: pd.DataFrame) -> dict[str, Any]:
    """What the footer of an ε-against-step figure says about its audits, as keyword arguments of
    :func:`hsaudit.experiments.plotting.footer_text`: R (every run count), the audit (mode, GDP, CP level), the
    repetitions (the most of any adversary) and, where the table has the column, the data sources.

    Args:
        table: a :func:`figure_table` (columns runs, adversary, rep, mode, confidence; data_source optional).
    """
    facts: dict[str, Any] = {
        "R": table["runs"].astype(int),
        "audit": f"{table['mode'].iloc[0]} (GDP, CP {float(table['confidence'].iloc[0]):g})",
        "reps": int(table.groupby("adversary")["rep"].nunique().max()),
    }
    if "data_source" in table:
        facts["data"] = table["data_source"].astype(str)
    return facts


def plot_housing_figure(
    table: pd.DataFrame,
    pdf_path: str | os.PathLike,
    csv_path: str | os.PathLike,
    *,
    figure: str,
    scale: str,
    code_version: str = "",
    hyper: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """Plot ε̂ against the step (mean ± sd over repetitions, one series per adversary) and the upper bound.

    Writes ``pdf_path`` (footer: scale, R, repetitions, audit mode, the DP-SGD hyper-parameters) and
    ``csv_path`` (the tidy ``table``, every plotted number: per-repetition ε̂ and the bound, from which the means
    and sds follow; plus one column per hyper-parameter). Both atomically.

    ``hyper``: the figure's DP-SGD values (``lr``, ``batch_size``, ``noise_multiplier``, ``clip_norm``, ``period``,
    ``steps``), so that two runs with different η say so on the page and in the CSV.

    Returns:
        The per-step summary that was plotted (:func:`summarise`).
    """
    from hsaudit.experiments.plotting import figure as new_figure, footer_text, save
    from hsaudit.util.io import write_csv_atomic

    if table.empty:
        raise ValueError("plot_housing_figure needs a non-empty table")
    summary = summarise(table)
    fig, axes = new_figure(1, 1, width=4.8, height=3.4)
    ax = axes[0][0]
    plot_housing_panel(ax, table, summary, title=FIGURE_TITLES.get(figure, figure))
    ax.legend(frameon=False, loc="upper left")
    hyper = dict(hyper or {})
    symbols = {"lr": "η", "batch_size": "B", "noise_multiplier": "σ", "clip_norm": "C", "period": "k"}
    facts = {symbols[k]: f"{v:g}" for k, v in hyper.items() if k in symbols}
    footer = footer_text(scale=scale, **audit_facts(table), **facts, code_version=code_version)
    write_csv_atomic(table.assign(**hyper, scale=scale), csv_path)
    save(fig, pdf_path, footer=footer)
    return summary


def plot_housing_panel(ax, table: pd.DataFrame, summary: pd.DataFrame | None = None, *, title: str) -> None:
    """Draw one Housing panel on ``ax``: the upper bound, then ε̂ mean ± sd per adversary (legend order).

    Args:
        ax: a matplotlib axes.
        table: a :func:`figure_table`.
        summary: its :func:`summarise` (computed when None).
        title: the panel title.
    """
    from matplotlib.ticker import MaxNLocator

    summary = summarise(table) if summary is None else summary
    plot_upper_bound(ax, table)
    for i, adversary in enumerate(dict.fromkeys(table["adversary"])):
        part = summary[summary["adversary"] == adversary]
        plot_mean_sd(ax, part, colour=adversary_colour(adversary, i), label=ADVERSARY_LABELS.get(adversary, adversary))
    delta = float(table["delta"].iloc[0])
    ax.set_xlabel("Training step")
    ax.set_ylabel(f"ε (δ = {delta:g})")
    ax.set_title(title)
    ax.set_ylim(bottom=0)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
