"""``results/one_run/fig1.pdf``: audits in one training run against population audits of the same DP-SGD
configuration (docs/one_run.md).

One panel per audited dataset (Housing FCNN, CIFAR-10 ConvNet): ε̂ (δ of the audit) against the compute in
model-steps on a log axis, one series per method (:data:`hsaudit.experiments.one_run.audit.METHODS`) and, for the
one-run bounds, per score (:data:`hsaudit.experiments.one_run.audit.SCORES`: colour by score, marker by bound), and
the configuration's μ-GDP upper bound as a reference line. The CSV holds every point
(:data:`hsaudit.experiments.one_run.audit.COLUMNS`, plus the scale and data source).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from hsaudit.experiments.one_run.audit import METHODS, SCORES

PANEL_TITLES = {"housing": "FCNN on Housing", "cifar10": "ConvNet on CIFAR-10"}
METHOD_STYLES = {
    METHODS["counting"]: {"color": "#0072B2", "marker": "o", "linestyle": "-"},
    METHODS["fdp"]: {"color": "#56B4E9", "marker": "s", "linestyle": "-"},
    METHODS["population_gdp"]: {"color": "#D55E00", "marker": "^", "linestyle": "--"},
    METHODS["population_free"]: {"color": "#E69F00", "marker": "v", "linestyle": "--"},
    METHODS["population_gdp_valid"]: {"color": "#D55E00", "marker": "^", "linestyle": ":", "markerfacecolor": "none"},
    METHODS["ceiling_counting"]: {"color": "0.55", "marker": "o", "linestyle": ":", "markerfacecolor": "none"},
    METHODS["ceiling_fdp"]: {"color": "0.55", "marker": "s", "linestyle": ":", "markerfacecolor": "none"},
}
SCORE_STYLES = {
    "median_centred": {METHODS["counting"]: "#009E73", METHODS["fdp"]: "#7FD6B9"},
    "noiseless": {METHODS["counting"]: "#CC79A7", METHODS["fdp"]: "#E8B9D5"},
    "standardised": {METHODS["counting"]: "#8C6D1F", METHODS["fdp"]: "#D9B44A"},
    "reference": {METHODS["counting"]: "#3B3B98", METHODS["fdp"]: "#9A9AD6"},
    "calibrated": {METHODS["counting"]: "#A23B3B", METHODS["fdp"]: "#E0A0A0"},
}
"""Colours of the one-run bounds under a drift-corrected score (the raw score keeps :data:`METHOD_STYLES`)."""
SCORE_LABELS = {"median_centred": "median-centred", "noiseless": "noiseless-subtracted", "standardised": "standardised",
                "reference": "reference-model likelihood ratio", "calibrated": "calibrated likelihood ratio"}


def series(part: pd.DataFrame) -> list[tuple[str, dict, pd.DataFrame]]:
    """(label, style, rows) of every series of one panel: each method, and each one-run bound per score."""
    out = []
    scores = part["score"] if "score" in part else pd.Series("raw", index=part.index)
    for method in METHODS.values():
        for score in (*SCORES, "ideal"):
            rows = part[(part["method"] == method) & (scores == score)].dropna(subset=["epsilon"])
            if rows.empty:
                continue
            style = dict(METHOD_STYLES[method])
            label = method
            if score in SCORE_STYLES and method in SCORE_STYLES[score]:
                style["color"] = SCORE_STYLES[score][method]
                label = f"{method}, {SCORE_LABELS[score]}"
            out.append((label, style, rows.sort_values("model_steps")))
    return out


def plot_fig1(table: pd.DataFrame, *, pdf: str, csv: str, facts: Mapping[str, Any]) -> pd.DataFrame:
    """Plot ε̂ against model-steps per audited dataset and write the PDF and the CSV (both atomically).

    Args:
        table: the datasets' :func:`hsaudit.experiments.one_run.audit.one_run_table` stacked.
        pdf, csv: outputs.
        facts: ``scale`` (footer, CSV), ``data_sources`` (dataset -> data source, e.g. ``housing:local``, for the
            footer and the CSV), ``code_version`` (footer; optional).
    """
    from hsaudit.experiments.plotting import UPPER_BOUND_STYLE, footer_text, save
    from hsaudit.experiments.plotting import figure as new_figure
    from hsaudit.util.io import write_csv_atomic

    if table.empty:
        raise ValueError("plot_fig1 needs a non-empty table")
    scale, data_sources = facts["scale"], facts["data_sources"]
    families = list(dict.fromkeys(table["family"]))
    fig, axes = new_figure(len(families), 1, width=4.6 * len(families) + 3.0, height=3.6)  # + the legend
    for ax, family in zip(axes[0], families):
        part = table[table["family"] == family]
        upper = float(part["epsilon_upper"].iloc[0])
        ax.axhline(upper, label="μ-GDP upper bound (theory)", **UPPER_BOUND_STYLE)
        for label, style, rows in series(part):
            ax.plot(rows["model_steps"], rows["epsilon"], label=label, markersize=4, **style)
        ax.set_xscale("log")
        ax.set_xlabel("compute (model-steps)")
        ax.set_ylabel(f"ε̂ (δ = {float(part['delta'].iloc[0]):g})")
        m, steps = int(part["canaries_per_model"].iloc[0]), int(part["steps"].iloc[0])
        ax.set_title(f"{PANEL_TITLES.get(family, family)}: m = {m} canaries/model, T = {steps}", fontsize=9)
        ax.set_ylim(bottom=0, top=max(upper, float(part["epsilon"].max(skipna=True))) * 1.1 + 1e-9)
    axes[0][-1].legend(frameon=False, fontsize=6, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    pop = table[table["method"].isin([METHODS["population_gdp"], METHODS["population_free"]])]
    one = table[table["method"].isin([METHODS["counting"], METHODS["fdp"]])]
    rule = pop["bound"].iloc[0].split(",")[1].strip() if not pop.empty else None
    valid_pop = table[table["method"] == METHODS["population_gdp_valid"]]
    if rule is not None and not valid_pop.empty:
        rule += f", not valid; valid: {valid_pop['bound'].iloc[0].split(',')[1].strip()}"
    footer = footer_text(
        scale=scale,
        R=[f"{int(r)} per world" for r in pop["runs_per_world"].dropna().unique()],
        data=[data_sources.get(f, f) for f in families],
        audit=(
            f"one run: counting + f-DP, best of guesses (Bonferroni), confidence {one['confidence'].iloc[0]:g}; "
            f"population: GDP ({rule})"
        ),
        m=[int(v) for v in table["canaries_per_model"].unique()],
        M=[int(v) for v in one["models"].unique()],
        coordinates=list(table["coordinates"].unique()),
        scores=[s for s in SCORES if "score" in table and s in set(table["score"])] or None,
        code_version=facts.get("code_version", ""),
    )
    written = table.assign(scale=scale, data_source=table["family"].map(lambda f: data_sources.get(f, f)))
    write_csv_atomic(written, csv)
    save(fig, pdf, footer=footer)
    return written


FIGURES: dict[str, Callable[..., pd.DataFrame]] = {"one_run/fig1": plot_fig1}
"""Figure id → the function that draws it (``fn(table, *, pdf, csv, facts)``)."""
