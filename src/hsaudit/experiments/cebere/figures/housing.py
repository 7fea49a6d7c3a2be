"""The Housing/FCNN figures of Cebere et al.: fig1c (§5), fig4 and fig7 (Appendix C).

ε̂ (δ = 1e−5) against the training step, mean ± sd over the repetitions, one series per adversary, and the μ-GDP
upper-bound curve. The table is :func:`figure_table` of the figure's audits (their references from
:class:`hsaudit.experiments.cebere.plan.AuditRef`, their per-step tables from
:func:`hsaudit.experiments.cebere.audit.audit_table`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

# Legend labels, in the paper's notation.
ADVERSARY_LABELS = {
    "gc_r": "A_GC-R",
    "gc_s_noiseless_ps": "A_GC-S (Noiseless-PS)",
    "gc_s_noiseless_fm": "A_GC-S (Noiseless-FM)",
    "gc_s_noisy_ps": "A_GC-S (Noisy-PS)",
    "gc_s_noisy_fm": "A_GC-S (Noisy-FM)",
    "cots": "A_CotS",
    "label_flip": "A_L",
    "gc_s": "A_GC-S",
}

FIGURE_TITLES = {
    "fig1c": "FCNN on Housing (Fig. 1c)",
    "fig4": "FCNN on Housing: A_GC-S variants (Fig. 4)",
    "fig7": "FCNN on Housing: A_GC vs A_CotS vs A_L (Fig. 7)",
}

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
    entries: Sequence[tuple[Any, pd.DataFrame]], *, ref_columns: Sequence[str] = ()
) -> pd.DataFrame:
    """Stack per-audit tables (:func:`audit_table`) into one tidy figure table.

    Args:
        entries: pairs (audit reference, a mapping or an :class:`hsaudit.experiments.cebere.plan.AuditRef`, with
            ``adversary``, ``rep``, ``key`` and every name in ``ref_columns``; its audit table).
        ref_columns: further reference fields to carry as columns, after ``key`` (e.g. ``model``, ``clip_norm``
            for the CIFAR-10 figures). None by default (the Housing tables).

    Returns:
        Columns adversary, label, rep, key, the ``ref_columns``, step, insertions, runs, mu, epsilon, epsilon_free,
        mu_upper, epsilon_upper, threshold_rule, confidence, delta.

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
        Columns ``by``, step, mean, sd, reps (and valid_mean, valid_sd of ``epsilon_valid`` when
        :func:`shows_valid`); series in their order of appearance.
    """
    def sd(s: pd.Series) -> float:
        return float(s.std(ddof=1)) if len(s) > 1 else 0.0

    grouped = table.groupby([*by, "step"], sort=False)
    out = grouped["epsilon"].agg(mean="mean", sd=sd, reps="size")
    if shows_valid(table):
        out = out.join(grouped["epsilon_valid"].agg(valid_mean="mean", valid_sd=sd))
    return out.reset_index()


def shows_valid(table: pd.DataFrame) -> bool:
    """Whether a figure table carries a valid rule's ε̂ beside a rule that is not valid (the paper's): then the
    figures draw it dotted (:func:`plot_mean_sd`) and the summaries have ``valid_mean`` and ``valid_sd``."""
    return "epsilon_valid" in table and "rule_valid" in table and not table["rule_valid"].astype(bool).all()


def valid_label(table: pd.DataFrame) -> str:
    """The legend entry of the dotted valid-rule lines."""
    from hsaudit.audit.validity import rule_words

    return f"dotted: {rule_words(table['valid_threshold_rule'].iloc[0], True)}"


def plot_valid_key(ax, table: pd.DataFrame) -> None:
    """A legend-only grey dotted line naming the valid rule, when the table shows one (:func:`shows_valid`)."""
    if shows_valid(table):
        ax.plot([], [], color="0.35", linestyle=":", linewidth=1.3, label=valid_label(table))


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
    """Draw one series of a :func:`summarise` table: the mean line and a ± sd band (and, dotted, the valid
    rule's mean when the summary has it)."""
    part = part.sort_values("step")
    ax.plot(part["step"], part["mean"], color=colour, label=label, linewidth=1.3, linestyle=linestyle)
    ax.fill_between(
        part["step"], part["mean"] - part["sd"], part["mean"] + part["sd"], color=colour, alpha=0.2, linewidth=0
    )
    if "valid_mean" in part:  # the valid rule's mean ε̂ of the same scores, dotted (no band)
        ax.plot(part["step"], part["valid_mean"], color=colour, linewidth=1.3, linestyle=":")


def audit_facts(table: pd.DataFrame) -> dict[str, Any]:
    """What the footer of an ε-against-step figure says about its audits, as keyword arguments of
    :func:`hsaudit.experiments.plotting.footer_text`: R (every run count), the audit (threshold rule, GDP, CP level), the
    repetitions (the most of any adversary) and, where the table has the column, the data sources.

    Args:
        table: a :func:`figure_table` (columns runs, adversary, rep, threshold_rule, confidence; data_source optional).
    """
    facts: dict[str, Any] = {
        "R": table["runs"].astype(int),
        "audit": f"{table['threshold_rule'].iloc[0]} (GDP, CP {float(table['confidence'].iloc[0]):g}"
        + (f", not valid; dotted: {table['valid_threshold_rule'].iloc[0]}, valid)" if shows_valid(table) else ")"),
        "reps": int(table.groupby("adversary")["rep"].nunique().max()),
    }
    if "data_source" in table:
        facts["data"] = table["data_source"].astype(str)
    return facts


def plot_housing(table: pd.DataFrame, *, pdf: str, csv: str, facts: Mapping[str, Any]) -> pd.DataFrame:
    """Plot ε̂ against the step (mean ± sd over repetitions, one series per adversary) and the upper bound.

    Writes ``pdf`` (footer: scale, R, repetitions, threshold rule, the DP-SGD hyper-parameters) and ``csv`` (the tidy
    ``table``, every plotted number: per-repetition ε̂ and the bound, from which the means and sds follow; plus one
    column per hyper-parameter). Both atomically.

    Args:
        table: a :func:`figure_table`.
        pdf, csv: the outputs.
        facts: ``figure`` (its title), ``scale``, ``code_version`` (footer; optional) and ``hyper``, the figure's
            DP-SGD values (``lr``, ``batch_size``, ``noise_multiplier``, ``clip_norm``, ``period``), so that two
            runs with different η say so on the page and in the CSV.

    Returns:
        The per-step summary that was plotted (:func:`summarise`).
    """
    from hsaudit.experiments.plotting import figure as new_figure, footer_text, save
    from hsaudit.util.io import write_csv_atomic

    if table.empty:
        raise ValueError("plot_housing needs a non-empty table")
    figure, scale = facts["figure"], facts["scale"]
    summary = summarise(table)
    fig, axes = new_figure(1, 1, width=4.8, height=3.4)
    ax = axes[0][0]
    plot_housing_panel(ax, table, summary, title=FIGURE_TITLES.get(figure, figure))
    ax.legend(frameon=False, loc="upper left")
    hyper = dict(facts.get("hyper") or {})
    symbols = {"lr": "η", "batch_size": "B", "noise_multiplier": "σ", "clip_norm": "C", "period": "k"}
    shown = {symbols[k]: f"{v:g}" for k, v in hyper.items() if k in symbols}
    footer = footer_text(scale=scale, **audit_facts(table), **shown, code_version=facts.get("code_version", ""))
    write_csv_atomic(table.assign(**hyper, scale=scale), csv)
    save(fig, pdf, footer=footer)
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
    plot_valid_key(ax, table)
    delta = float(table["delta"].iloc[0])
    ax.set_xlabel("Training step")
    ax.set_ylabel(f"ε (δ = {delta:g})")
    ax.set_title(title)
    ax.set_ylim(bottom=0)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
