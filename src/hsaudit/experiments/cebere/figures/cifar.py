"""The CIFAR-10 figures of Cebere et al.: fig1, fig2, fig5, fig6a, fig8, fig11, fig12, fig13.

Every figure is ``fn(table, *, pdf, csv, facts)``: a tidy table to ``results/<figure>.pdf`` plus a tidy
``<figure>.csv`` of every plotted number, both written atomically, the PDF with a footer stating the scale, R,
repetitions, threshold rule and data source. ``facts`` holds ``scale`` and ``code_version`` (left out of the footer
when empty), ``figure`` where one function draws several figures, and what a figure needs beside its table.

Tables (the contract with the workflow, built by the functions here from what the jobs wrote):

- :func:`cifar_table`: the audits of a figure stacked, from pairs (audit reference, audit table). The audit table
  is :func:`hsaudit.experiments.cebere.audit.audit_table`'s (step, insertions, runs, mu, epsilon, epsilon_free,
  threshold, fpr_upper, fnr_upper, mu_upper, epsilon_upper, threshold_rule, confidence, delta); the reference is a mapping
  or object with ``adversary`` (:data:`CIFAR_ADVERSARIES`), ``model`` (a registry name, :func:`hsaudit.engine.models.model_names`), ``clip_norm`` (C),
  ``period`` (k), ``theta0`` (:data:`THETA0_LABELS`), ``rep``, ``key`` and ``data_source`` (e.g.
  "cifar10:local"); ``figure`` and ``runs`` may be there and are not used.
- :func:`fig1_table`: the CIFAR-10 audits and fig1c's Housing audits (panel c) in one table.
- fig12's references also carry the crafted coordinate d and its layer (:func:`crafted_coordinate`, read from the
  adversary's file without torch).
- :func:`fig6a_table`: the scores of one audit at one step (:func:`hsaudit.experiments.cebere.scores.scores_table`:
  run, shard, bit, step, score; higher score ⇒ inserted), each row with its audit's values at that step.
- fig8 reads the canary's gradient norms (:func:`hsaudit.experiments.cebere.scores.norms_table` with a ``model``
  column).

Every ε-against-step figure draws, per panel, the μ-GDP upper bound (black, dashed) and ε̂ at δ (mean ± sd over
the repetitions; the band is absent with one repetition) in one colour per adversary, the same colours as the
Housing figures (:data:`hsaudit.experiments.cebere.figures.housing.ADVERSARY_COLOURS`). A series that the figure
expects but the table lacks (e.g. a laptop preset that skips ResNet18) is named in its panel as "not run at this
scale"; a row that fits no panel of the figure is an error, so nothing is dropped silently.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from hsaudit.experiments.cebere.figures.housing import (
    ADVERSARY_LABELS,
    adversary_colour,
    audit_facts,
    figure_table,
    plot_housing_panel,
    plot_mean_sd,
    plot_upper_bound,
    plot_valid_key,
    summarise,
)
from hsaudit.engine.models import model_names, model_spec

CIFAR_ADVERSARIES = ("gc_r", "gc_s", "label_flip")  # the adversaries the CIFAR-10 figures draw
THETA0_LABELS = {
    "known": "θ0 shared, known",
    "shared_unknown": "θ0 shared, unknown",
    "per_run_known": "θ0 per run, known",
    "unknown": "θ0 per run, unknown (paper)",
}
# fig12 tells its θ0 readings apart by colour and line style (one adversary, four readings).
THETA0_COLOURS = {"known": "#332288", "shared_unknown": "#44AA99", "per_run_known": "#DDCC77", "unknown": "#CC6677"}
# fig12's CSV also names where d was drawn (``coordinates``: all, or fixed_init: the coordinates whose θ0 is the same
# in every run), the crafted coordinate d of every audit and the layer that holds it.
CRAFTED_COLUMNS = ("coordinates", "coordinate", "layer")
# fig12's panels: d drawn over every coordinate (the paper's A_GC-R), then over the fixed-initialisation ones.
FIG12_PANELS = {
    "all": "(a) d over all coordinates",
    "fixed_init": "(b) d over fixed-init coordinates",  # θ0[d] the same in every run
}
LABELS = {**ADVERSARY_LABELS, "gc_s": "A_GC-S"}
# The reference fields every CIFAR-10 figure table carries as columns (beside adversary, label, rep, key).
REF_COLUMNS = ("model", "clip_norm", "period", "theta0", "data_source")
# Line styles of a second series variable within a panel (θ0 in fig12, the model in fig13); dashed is the bound's.
_STYLES = ("-", (0, (5, 1.5, 1, 1.5)), (0, (1, 1)))
# A_GC-S is drawn dash-dot so that it stays visible on A_GC-R where the two agree (fig5's claim).
_ADVERSARY_STYLES = {"gc_s": _STYLES[1]}
# fig8 colours each model by its spec's colour (no adversary there: every series is the A_L canary); a model
# without one is drawn in this grey.
NO_MODEL_COLOUR = "0.3"
NOT_RUN = "not run at this scale"


# ------------------------------------------------------------------------------------------------- tables


def cifar_table(
    entries: Sequence[tuple[Any, pd.DataFrame]], *, extra_columns: Sequence[str] = ()
) -> pd.DataFrame:
    """Stack CIFAR-10 audits into one tidy table (:func:`hsaudit.experiments.cebere.figures.housing.figure_table` + :data:`REF_COLUMNS`).

    Args:
        entries: pairs (audit reference, audit table), see the module docstring.
        extra_columns: more reference fields to carry (fig12: :data:`CRAFTED_COLUMNS`).

    Returns:
        Columns adversary, label, rep, key, model, clip_norm, period, theta0, data_source, the extra columns, then
        the audit table's.

    Raises:
        ValueError: no entries, a reference field missing, or an unknown model, adversary or θ0 (naming it).
    """
    table = figure_table(entries, ref_columns=(*REF_COLUMNS, *extra_columns))
    for column, known in (("model", model_names()), ("adversary", CIFAR_ADVERSARIES), ("theta0", THETA0_LABELS)):
        unknown = sorted(set(table[column]) - set(known))
        if unknown:
            raise ValueError(f"unknown {column} {unknown[0]!r} (known: {', '.join(known)})")
    table["label"] = table["adversary"].map(lambda a: LABELS.get(a, a))
    table["clip_norm"] = table["clip_norm"].astype(float)
    table["period"] = table["period"].astype(int)
    return table


HOUSING_PANEL = "(c) FCNN on Housing, C = 1"


def crafted_coordinate(path: str | os.PathLike) -> dict[str, object]:
    """``{"coordinate": d, "layer": name}`` of the crafted object at ``path`` (both ``None`` for an adversary without
    a d): the coordinate the canary gradient points along and the parameter that holds it.

    Reads the ``.npz`` of :func:`hsaudit.experiments.cebere.train.adversaries.save_crafted` with numpy only, so a
    plotting job loads no torch: the layer is the name the crafting job recorded (its ``layer`` entry).

    Raises:
        ValueError: a file with a d but no layer (written before crafting jobs recorded it: re-craft).
    """
    with np.load(path) as data:
        if "dim" not in data.files:
            return {"coordinate": None, "layer": None}
        if "layer" not in data.files:
            raise ValueError(f"{os.fspath(path)} names coordinate {int(data['dim'])} but no layer: re-run its crafting job")
        return {"coordinate": int(data["dim"]), "layer": str(data["layer"])}


def fig1_table(entries: Sequence[tuple[Any, pd.DataFrame]], housing_entries: Sequence[tuple[Any, pd.DataFrame]]) -> pd.DataFrame:
    """fig1's table: :func:`cifar_table` of the CIFAR-10 audits, then fig1c's Housing audits (panel c) with the
    same columns (model "fcnn", C = 1, k = 1, θ0 known, data_source "housing" unless their references give one).

    Args:
        entries: the CIFAR-10 audits (reference, audit table), model convnet or resnet18_gn.
        housing_entries: the Housing fig1c audits (references with adversary, rep, key; audit tables), as
            :func:`hsaudit.experiments.cebere.figures.housing.figure_table` takes them (none: panel c says so).
    """
    table = cifar_table(entries)
    if not housing_entries:
        return table
    housing = figure_table(housing_entries)
    ref = housing_entries[0][0]
    source = ref.get("data_source") if isinstance(ref, Mapping) else getattr(ref, "data_source", None)
    housing = housing.assign(model="fcnn", clip_norm=1.0, period=1, theta0="known", data_source=source or "housing")
    return pd.concat([table, housing], ignore_index=True)


def fig6a_table(ref: Any, audit: pd.DataFrame, scores: pd.DataFrame, *, step: int | None = None) -> pd.DataFrame:
    """fig6a's table: the scores of one audit at ``step`` (default: its audit table's last step), each row with the
    audit's values at that step (:func:`cifar_table` of the audit: μ̂, ε̂, the bound, the threshold's CP bounds).

    Raises:
        ValueError: ``step`` missing from the audit or the scores table (naming it).
    """
    table = cifar_table([(ref, audit)])
    step = int(table["step"].max()) if step is None else int(step)
    row = table[table["step"] == step]
    if row.empty:
        raise ValueError(f"step {step} is not in the audit table (steps {table['step'].min()}..{table['step'].max()})")
    at = scores[scores["step"] == step]
    if at.empty:
        raise ValueError(f"step {step} is not in the scores table")
    return at.merge(row, on="step", how="left", validate="many_to_one")


# ------------------------------------------------------------------------------------------- panel layouts


@dataclass(frozen=True)
class _Panel:
    """One ε-against-step panel: its grid cell, title, the rows it shows and the series it expects."""

    row: int
    col: int
    title: str
    where: tuple[tuple[str, Any], ...]
    series: tuple[tuple[str, Any], ...]  # (adversary, value of the style column or None)

    def select(self, table: pd.DataFrame) -> pd.Series:
        mask = pd.Series(True, index=table.index)
        for column, value in self.where:
            col = table[column]
            mask &= np.isclose(col.astype(float), float(value)) if isinstance(value, int | float) else col.eq(value)
        return mask


@dataclass(frozen=True)
class _Layout:
    nrows: int
    ncols: int
    panels: tuple[_Panel, ...]
    style_by: str | None = None
    width: float = 7.0
    row_height: float = 2.1


def _ab(i: int) -> str:
    return f"({'abcdefgh'[i]}) "


def _layout(figure: str) -> _Layout:
    """The panels of an ε-against-step figure, in the paper's arrangement (see :func:`plot_epsilon`)."""
    models = ("convnet", "resnet18_gn")
    if figure == "fig1":
        panels = [
            _Panel(r, c, f"{_ab(c)}{model_spec(m).label}, C = {clip:g}", (("model", m), ("clip_norm", clip), ("period", 1)),
                   (("gc_r", None), ("label_flip", None)))
            for r, clip in enumerate((1, 2, 4)) for c, m in enumerate(models)
        ]  # fmt: skip
        return _Layout(3, 3, tuple(panels), row_height=1.95)
    if figure in ("fig2", "fig5"):
        periods, adversaries = ((5, 25), ("gc_r", "label_flip")) if figure == "fig2" else ((1, 5), ("gc_r", "gc_s"))
        panels = [
            _Panel(r, c, f"{_ab(c) if figure == 'fig2' else ''}{model_spec(m).label}, k = {k}, C = 1",
                   (("model", m), ("period", k), ("clip_norm", 1)), tuple((a, None) for a in adversaries))
            for r, m in enumerate(models) for c, k in enumerate(periods)
        ]  # fmt: skip
        return _Layout(2, 2, tuple(panels), width=6.4)
    if figure == "fig12":
        where = (("model", "convnet"), ("period", 1), ("clip_norm", 1))
        panels = [
            _Panel(0, c, f"{title}\nConvNet, A_GC-R, k = 1, C = 1", (*where, ("coordinates", coordinates)),
                   tuple(("gc_r", t) for t in THETA0_LABELS))
            for c, (coordinates, title) in enumerate(FIG12_PANELS.items())
        ]  # fmt: skip
        return _Layout(1, 2, tuple(panels), style_by="theta0", width=7.0, row_height=3.2)
    if figure == "fig13":
        panels = [
            _Panel(0, c, f"{_ab(c)}{model_spec(m).label}, A_GC-R, k = 1", (("model", m), ("period", 1)), (("gc_r", None),))
            for c, m in enumerate(("alexnet_head", "convnet"))
        ]
        return _Layout(1, 2, tuple(panels), width=6.4, row_height=2.8)
    raise ValueError(f"figure must be one of fig1, fig2, fig5, fig12, fig13 for an ε-against-step plot, got {figure!r}")


def _assign_panels(table: pd.DataFrame, layout: _Layout, figure: str) -> pd.DataFrame:
    """``table`` with a ``panel`` column (the panel title); an entry that fits no panel is an error."""
    panel = pd.Series(None, index=table.index, dtype=object)
    for p in layout.panels:
        mask = p.select(table)
        series = (
            table["adversary"] if layout.style_by is None else list(zip(table["adversary"], table[layout.style_by]))
        )
        wanted = {a if layout.style_by is None else (a, s) for a, s in p.series}
        mask &= pd.Series([s in wanted for s in series], index=table.index)
        panel[mask & panel.isna()] = p.title
    if panel.isna().any():
        row = table[panel.isna()].iloc[0]
        raise ValueError(
            f"{figure} has no panel for audit {row['key']!r} (adversary={row['adversary']}, model={row['model']}, "
            f"clip_norm={row['clip_norm']:g}, period={row['period']}, theta0={row['theta0']})"
        )
    return table.assign(panel=panel)


def _series_label(adversary: str, style_by: str | None, value: Any) -> str:
    if style_by is None:
        return LABELS.get(adversary, adversary)
    name = THETA0_LABELS.get(value, value) if style_by == "theta0" else model_spec(value).label
    return f"{LABELS.get(adversary, adversary)}, {name}"


def _note(ax, text: str, *, centre: bool = False) -> None:
    """Say in a panel what is missing (centred when the whole panel is empty)."""
    where = dict(x=0.5, y=0.5, ha="center", va="center") if centre else dict(x=0.97, y=0.04, ha="right", va="bottom")
    box = dict(facecolor="white", edgecolor="none", alpha=0.85, pad=1.5)
    ax.text(s=text, transform=ax.transAxes, fontsize=6.5 if not centre else 7.5, color="0.3", bbox=box, **where)


def _epsilon_panel(ax, table: pd.DataFrame, panel: _Panel, style_by: str | None) -> pd.DataFrame:
    """Draw one panel (bound, then each expected series); return its summary (panel, series, step, mean, sd, reps)."""
    part = table[table["panel"] == panel.title]
    ax.set_title(panel.title)
    if part.empty:
        _note(ax, NOT_RUN, centre=True)
        return pd.DataFrame()
    by = ["adversary"] if style_by is None else ["adversary", style_by]
    summary = summarise(part, by=by)
    plot_upper_bound(ax, part)
    missing = []
    for i, (adversary, value) in enumerate(panel.series):
        rows = summary["adversary"] == adversary
        if style_by is not None:
            rows &= summary[style_by] == value
        label = _series_label(adversary, style_by, value)
        if not rows.any():
            missing.append(label)
            continue
        style = _STYLES[i % len(_STYLES)] if style_by is not None else _ADVERSARY_STYLES.get(adversary, "-")
        colour = THETA0_COLOURS.get(value) if style_by == "theta0" else adversary_colour(adversary, i)
        plot_mean_sd(ax, summary[rows], colour=colour, label=label, linestyle=style)
    plot_valid_key(ax, part)
    if missing:
        _note(ax, "\n".join(f"{m}: {NOT_RUN}" for m in missing))
    return summary.assign(panel=panel.title)


def _legend_handles(axes: Sequence) -> tuple[list, list[str]]:
    """The handles of every axes, one per label, the upper bound first."""
    seen: dict[str, Any] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            seen.setdefault(label, handle)
    labels = sorted(seen, key=lambda s: s != "Upper bound")
    return [seen[s] for s in labels], labels


def _finish_axes(axes_grid, used: set[tuple[int, int]], *, ymax: float, delta: float) -> None:
    """Common y range (0 to ``ymax``); x labels on the lowest used panel of a column, y labels on the first column."""
    from matplotlib.ticker import MaxNLocator

    def right(cells) -> float | None:
        return max((axes_grid[r][c].get_xlim()[1] for r, c in cells if axes_grid[r][c].lines), default=None)

    for r, c in used:
        ax = axes_grid[r][c]
        ax.set_ylim(0, ymax)
        if not ax.lines:  # a panel that was not run: its column's step range (else the figure's), for the eye
            ax.set_xlim(0, right([(i, j) for i, j in used if j == c]) or right(used) or 1.0)
        ax.xaxis.set_major_locator(MaxNLocator(nbins=5, integer=True))
        if (r + 1, c) not in used:
            ax.set_xlabel("Training step")
        if c == 0 or (r, c - 1) not in used:
            ax.set_ylabel(f"ε (δ = {delta:g})")


def _ymax(*tables: pd.DataFrame) -> float:
    values = np.concatenate([t[["epsilon", "epsilon_upper"]].to_numpy(dtype=float).ravel() for t in tables])
    finite = values[np.isfinite(values)]
    return 1.08 * max(float(finite.max()) if finite.size else 0.0, 1.0)


def _save(fig, pdf_path, footer: str, *, top: float = 1.0) -> None:
    """Lay the panels out between the footer's band and ``top`` (room for a legend above), then save."""
    from hsaudit.experiments.plotting import reserve_footer, save

    fig.tight_layout(rect=(0, reserve_footer(fig, footer), 1, top))
    save(fig, pdf_path, footer=footer, tight=False)


# ----------------------------------------------------------------------------------------- ε against step


def plot_epsilon(table: pd.DataFrame, *, pdf: str, csv: str, facts: Mapping[str, Any]) -> pd.DataFrame:
    """Plot an ε-against-step CIFAR-10 figure of Cebere et al.: fig2, fig5, fig12, fig13 (fig1: :func:`plot_fig1`).

    Layouts (ε̂ at δ against the training step, the upper bound in every panel, a shared legend above):

    - fig2: columns (a) k = 5, T = 1250 and (b) k = 25, T = 6250; rows ConvNet, ResNet18-GN; C = 1;
      A_GC-R vs A_L. Claim: A_GC beats A_L by far but stays under the bound, the gap growing with k.
    - fig5: columns k = 1, 5; rows ConvNet, ResNet18-GN; C = 1; A_GC-S vs A_GC-R. Claim: equivalent there.
    - fig12: ConvNet, A_GC-R, k = 1, C = 1; panels (a) d over all coordinates and (b) d over the
      fixed-initialisation coordinates (:data:`FIG12_PANELS`, column ``coordinates``; a table without it is all
      (a)); in each, the four θ0 readings (shared or per run, known to the scorer or not; :data:`THETA0_LABELS`),
      each a colour and line style, mean ± sd over repetitions, every reading with the same crafted coordinate d
      and noise in a repetition (its CSV has ``coordinate`` and ``layer`` when the table carries them). Claim:
      unknown θ0 makes no meaningful difference.
    - fig13: A_GC-R, k = 1; panels (a) AlexNet, last layer fine-tuned, and (b) ConvNet from scratch, side by side
      (each is claimed tight against its own bound; overlaid, two tight curves of one colour would hide each other).
      Claim: tight.

    Args:
        table: a :func:`cifar_table` of the figure's audits.
        pdf, csv: the outputs (written atomically).
        facts: ``figure`` (one of fig2, fig5, fig12, fig13), ``scale``, ``code_version`` (optional).

    Returns:
        The plotted summary: panel, adversary (and theta0 for fig12), step, mean, sd, reps.

    Raises:
        ValueError: an unknown figure, or a row that fits no panel (naming it).
    """
    from hsaudit.experiments.plotting import figure as new_figure, footer_text
    from hsaudit.util.io import write_csv_atomic

    figure, scale = facts["figure"], facts["scale"]
    if figure == "fig1":
        raise ValueError("figure 'fig1' has a Housing panel: use plot_fig1")
    if figure == "fig11":
        raise ValueError("figure 'fig11' is a privacy profile: use plot_fig11")
    layout = _layout(figure)
    if figure == "fig12" and "coordinates" not in table:  # tables made before the fixed-init reading
        table = table.assign(coordinates="all")
    table = _assign_panels(table, layout, figure)
    fig, axes = new_figure(
        layout.ncols, layout.nrows, width=layout.width, height=layout.row_height * layout.nrows + 0.7
    )
    summaries = [_epsilon_panel(axes[p.row][p.col], table, p, layout.style_by) for p in layout.panels]
    _finish_axes(axes, {(p.row, p.col) for p in layout.panels}, ymax=_ymax(table), delta=float(table["delta"].iloc[0]))
    handles, labels = _legend_handles([ax for row in axes for ax in row])
    ncol = 3 if figure == "fig12" else len(labels) if layout.ncols > 1 else 2  # fig12's labels are long
    top = 1.0 - (0.08 + 0.15 * -(-len(labels) // ncol)) / (layout.row_height * layout.nrows + 0.7)
    fig.legend(handles, labels, loc="upper center", ncol=ncol, frameon=False, bbox_to_anchor=(0.5, 1.0))
    write_csv_atomic(table.assign(scale=scale), csv)
    footer = footer_text(scale=scale, **audit_facts(table), code_version=facts.get("code_version", ""))
    _save(fig, pdf, footer, top=top)
    return pd.concat([s for s in summaries if not s.empty], ignore_index=True)


def plot_fig1(table: pd.DataFrame, *, pdf: str, csv: str, facts: Mapping[str, Any]) -> pd.DataFrame:
    """Fig. 1 of Cebere et al.: (a) ConvNet and (b) ResNet18-GN at k = 1, C ∈ {1, 2, 4}; (c) FCNN on Housing.

    Layout: a 3 × 3 grid. Columns (a) ConvNet and (b) ResNet18-GN hold one panel per C (rows C = 1, 2, 4), each
    with A_GC-R, A_L and the upper bound, on a y range common to every panel. One panel per (model, C) rather
    than line styles for C: A_GC-R is claimed tight for every C, so its three curves would lie on one another
    and on the bound, and the reader could not check the claim for each C; separate panels also keep the
    ± sd bands apart. Column (c) holds the Housing panel (A_GC-R, A_GC-S, A_L; the Housing fig1c's audits) in
    the top row and the shared legend in the free cells below it, so no legend covers data.

    Claims: A_GC-R tight on ConvNet and ResNet18 for every C, A_L loose; on the FCNN A_GC-R is not tight but
    beats A_L, and A_GC-S is nearly tight.

    Args:
        table: a :func:`fig1_table` (the Housing rows are those of model "fcnn"; none: panel (c) says so).
        pdf, csv: the outputs (written atomically). The CSV stacks the CIFAR-10 rows (panel a/b) and the Housing
            rows (panel c).
        facts: ``scale``, ``code_version`` (optional).

    Returns:
        The plotted summary: panel, adversary, step, mean, sd, reps.

    Raises:
        ValueError: a CIFAR-10 row that fits no panel (naming it).
    """
    from hsaudit.experiments.plotting import figure as new_figure, footer_text
    from hsaudit.util.io import write_csv_atomic

    scale = facts["scale"]
    is_housing = table["model"] == "fcnn"
    layout = _layout("fig1")
    cifar = _assign_panels(table[~is_housing], layout, "fig1")
    housing = table[is_housing].assign(panel=HOUSING_PANEL)
    fig, axes = new_figure(
        layout.ncols, layout.nrows, width=layout.width, height=layout.row_height * layout.nrows + 0.4
    )
    summaries = [_epsilon_panel(axes[p.row][p.col], cifar, p, None) for p in layout.panels]
    hax = axes[0][2]
    if not housing.empty:
        plot_housing_panel(hax, housing, title=HOUSING_PANEL)
        hax.set_ylabel(f"ε (δ = {float(housing['delta'].iloc[0]):g})")
        summaries.append(summarise(housing).assign(panel=HOUSING_PANEL))
    else:
        hax.set_title(HOUSING_PANEL)
        _note(hax, NOT_RUN, centre=True)
    used = {(p.row, p.col) for p in layout.panels} | {(0, 2)}
    _finish_axes(axes, used, ymax=_ymax(cifar, housing), delta=float(cifar["delta"].iloc[0]))
    handles, labels = _legend_handles([ax for row in axes for ax in row])
    for r in (1, 2):
        axes[r][2].axis("off")
    axes[1][2].legend(handles, labels, loc="upper left", frameon=False, fontsize=8, title="All panels (mean ± sd)")
    both = pd.concat([cifar, housing], ignore_index=True)
    write_csv_atomic(both.assign(scale=scale), csv)
    shown = audit_facts(cifar) | {"data": both["data_source"].astype(str)}
    if not housing.empty:  # the Housing panel's own R and repetitions
        own = audit_facts(housing)
        shown |= {"(c) R": own["R"], "(c) reps": own["reps"]}
    _save(fig, pdf, footer_text(scale=scale, **shown, code_version=facts.get("code_version", "")))
    return pd.concat([s for s in summaries if not s.empty], ignore_index=True)


# --------------------------------------------------------------------------------------- privacy profiles


def plot_fig11(table: pd.DataFrame, *, pdf: str, csv: str, facts: Mapping[str, Any]) -> pd.DataFrame:
    """Fig. 11 of Cebere et al.: privacy profiles δ(ε) (log y) of A_GC-R, ConvNet, C = 1, at the last step.

    One panel per k: the empirical profile δ(ε) of μ̂-GDP (μ̂ at the last audited step, averaged over the
    repetitions) against the theoretical profile of the upper bound μ = √⌊T/k⌋/σ (``mu_upper``), both through
    :func:`hsaudit.accounting.gdp_delta` (Dong et al. 2022, Corollary 2.13), on ε from 0 to 1.25 × the largest
    bound ε; a grey line marks the audit's δ. Claim: tight at k = 1 for every ε; not for k > 1.

    Args:
        table: a :func:`cifar_table` of audits of adversary gc_r, model convnet, clip_norm 1, one period per panel.
        pdf, csv: the outputs; the CSV has period, step, curve ("empirical" | "theoretical"), mu, epsilon, delta
            (δ(ε)), audit_delta, reps, runs, threshold_rule, data_source, scale.
        facts: ``scale``, ``code_version`` (optional), ``periods`` (the k of the panels; default: the table's),
            ``points`` (ε grid size; default 241).

    Returns:
        Per period: period, step, reps, mu (mean μ̂), mu_sd, mu_upper, epsilon (mean ε̂), epsilon_upper.

    Raises:
        ValueError: a row of another adversary, model, C or period (naming it), points < 2.
    """
    from hsaudit.accounting.gaussian import gdp_delta
    from hsaudit.experiments.plotting import UPPER_BOUND_STYLE, figure as new_figure, footer_text
    from hsaudit.util.io import write_csv_atomic

    scale = facts["scale"]
    periods = tuple(facts.get("periods") or sorted(int(k) for k in table["period"].unique()))
    points = int(facts.get("points", 241))
    if points < 2:
        raise ValueError(f"points must be >= 2, got {points}")
    panels = tuple(
        _Panel(0, i, f"{_ab(i)}k = {k}", (("model", "convnet"), ("clip_norm", 1), ("period", k)), (("gc_r", None),))
        for i, k in enumerate(periods)
    )
    table = _assign_panels(table, _Layout(1, len(periods), panels), "fig11")
    last = table[table["step"] == table.groupby("period")["step"].transform("max")]
    summary = (
        last.groupby("period", sort=True)
        .agg(step=("step", "first"), reps=("rep", "nunique"), mu=("mu", "mean"),
             mu_sd=("mu", lambda s: float(s.std(ddof=1)) if len(s) > 1 else 0.0), mu_upper=("mu_upper", "first"),
             epsilon=("epsilon", "mean"), epsilon_upper=("epsilon_upper", "first"))  # fmt: skip
        .reset_index()
    )
    audit_delta = float(table["delta"].iloc[0])
    grid = np.linspace(0.0, 1.25 * float(summary["epsilon_upper"].max()), int(points))
    fig, axes = new_figure(len(periods), 1, width=7.0, height=2.9, sharey=True)
    rows, floor = [], 1.0
    colour = adversary_colour("gc_r")
    for i, k in enumerate(periods):
        ax = axes[0][i]
        ax.set_title(panels[i].title)
        ax.set_xlabel("ε")
        if i == 0:
            ax.set_ylabel("δ(ε)")
        found = summary[summary["period"] == k]
        if found.empty:
            _note(ax, NOT_RUN, centre=True)
            continue
        s = found.iloc[0]
        curves = {"theoretical": float(s["mu_upper"]), "empirical": float(s["mu"])}
        for curve, mu in curves.items():
            delta = np.asarray(gdp_delta(grid, mu=mu), dtype=float)
            rows.append(pd.DataFrame({"period": k, "step": int(s["step"]), "curve": curve, "mu": mu, "epsilon": grid,
                                      "delta": delta, "reps": int(s["reps"])}))  # fmt: skip
            positive = delta > 0
            floor = min(floor, float(delta[positive].min()) if positive.any() else floor)
            if curve == "theoretical":
                ax.plot(grid[positive], delta[positive], label=f"Upper bound (μ = {mu:.2f})", **UPPER_BOUND_STYLE)
            else:
                ax.plot(grid[positive], delta[positive], color=colour, linewidth=1.4, label=f"A_GC-R (μ̂ = {mu:.2f})")
        ax.axhline(audit_delta, color="0.55", linewidth=0.8, linestyle=":", label=f"δ = {audit_delta:g}")
        ax.set_yscale("log")
        ax.legend(frameon=False, loc="lower left", fontsize=6.5)
        ax.text(0.97, 0.97, f"T = {int(s['step'])}", transform=ax.transAxes, ha="right", va="top", fontsize=7)
    for ax in axes[0]:
        ax.set_ylim(max(floor, 1e-12) / 2, 2.0)
    meta = table.drop_duplicates("period").set_index("period")
    out = pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=["period", "curve", "epsilon", "delta"])
    out = out.assign(
        audit_delta=audit_delta,
        runs=out["period"].map(meta["runs"]),
        threshold_rule=out["period"].map(meta["threshold_rule"]),
        data_source=out["period"].map(meta["data_source"]),
        scale=scale,
    )
    write_csv_atomic(out, csv)
    _save(fig, pdf, footer_text(scale=scale, **audit_facts(table), code_version=facts.get("code_version", "")))
    return summary


# --------------------------------------------------------------------------------------------- trade-off


def plot_fig6a(table: pd.DataFrame, *, pdf: str, csv: str, facts: Mapping[str, Any]) -> pd.DataFrame:
    """Fig. 6a (Appendix E) of Cebere et al.: the empirical trade-off curve of A_GC-R's scores against G_μ̂.

    Left: FNR against FPR over every threshold (:func:`hsaudit.audit.empirical_tradeoff`, higher score ⇒
    inserted) at the table's step, with the Gaussian trade-off G_μ̂(α) = Φ(Φ⁻¹(1 − α) − μ̂) of the audit's μ̂
    (:func:`hsaudit.accounting.gdp_tradeoff`), G of the upper bound's μ, and the audit's threshold (its
    Clopper–Pearson upper bounds). Right: the same curves as TPR = 1 − FNR against FPR on log–log axes, where
    ε at small δ is decided. Claim: the GDP approximation error is negligible (the paper: ConvNet, k = 5, T = 1250).

    Args:
        table: a :func:`fig6a_table` (the scores of one audit at one step, with the audit's values).
        pdf, csv: the outputs; the CSV has curve ("empirical" | "gdp_fit" | "upper_bound" | "audit_threshold"),
            fpr, fnr, and the step, μ̂, μ_upper, ε̂, runs, members, key, model, adversary, period, clip_norm, mode,
            data_source, scale.
        facts: ``scale``, ``code_version`` (optional).

    Returns:
        One row: step, mu, mu_upper, epsilon, epsilon_upper, runs, n_members, n_nonmembers, points.

    Raises:
        ValueError: a table of several steps or none (naming them).
    """
    from hsaudit.accounting.gaussian import gdp_tradeoff
    from hsaudit.audit.tradeoff import empirical_tradeoff
    from hsaudit.experiments.plotting import UPPER_BOUND_STYLE, figure as new_figure, footer_text
    from hsaudit.util.io import write_csv_atomic

    scale = facts["scale"]
    steps = sorted(int(t) for t in table["step"].unique())
    if len(steps) != 1:
        raise ValueError(f"fig6a plots the scores of one step, got steps {steps}")
    step = steps[0]
    row, at = table.iloc[0], table
    members = at["bit"].to_numpy().astype(bool)
    fpr, fnr = empirical_tradeoff(at["score"].to_numpy(dtype=float), members)
    n1, n0 = int(members.sum()), int((~members).sum())
    alpha = np.unique(np.concatenate([np.logspace(np.log10(0.5 / max(n0, 1)), 0, 200), np.linspace(0, 1, 201)]))
    mu, mu_upper = float(row["mu"]), float(row["mu_upper"])
    curves = {
        "empirical": (fpr, fnr),
        "gdp_fit": (alpha, gdp_tradeoff(alpha, mu=mu)),
        "upper_bound": (alpha, gdp_tradeoff(alpha, mu=mu_upper)),
        "audit_threshold": (np.array([row["fpr_upper"]]), np.array([row["fnr_upper"]])),
    }
    styles = {
        "empirical": dict(color=adversary_colour("gc_r"), linewidth=1.6, label="empirical (A_GC-R scores)"),
        "gdp_fit": dict(color="#D55E00", linewidth=1.1, linestyle=(0, (5, 1.5, 1, 1.5)), label=f"GDP fit G(μ̂), μ̂ = {mu:.2f}"),
        "upper_bound": dict(**UPPER_BOUND_STYLE, label=f"Upper bound G(μ), μ = {mu_upper:.2f}"),
        "audit_threshold": dict(color="black", marker="o", markersize=3.5, linestyle="none",
                                label="audit threshold (CP upper bounds)"),
    }  # fmt: skip
    fig, axes = new_figure(2, 1, width=7.0, height=3.4)
    lin, log = axes[0]
    for name, (x, y) in curves.items():
        lin.plot(x, y, **styles[name])
        keep = (x > 0) & (y < 1)
        log.plot(x[keep], 1.0 - y[keep], **{**styles[name], "label": None})
    lin.set(xlim=(0, 1), ylim=(0, 1), xlabel="FPR (α)", ylabel="FNR (β)", aspect="equal")
    lin.set_title(f"{model_spec(row['model']).label}, k = {row['period']}, C = {row['clip_norm']:g}, step {step}")
    lin.legend(frameon=False, loc="upper right", fontsize=6.5)
    log.set(xscale="log", yscale="log", xlabel="FPR (α)", ylabel="TPR (1 − β)", xlim=(0.5 / max(n0, 1), 1))
    log.set_title(f"log–log: ε̂ = {row['epsilon']:.2f}, bound {row['epsilon_upper']:.2f}")
    out = pd.concat(
        [pd.DataFrame({"curve": name, "fpr": x, "fnr": y}) for name, (x, y) in curves.items()], ignore_index=True
    ).assign(step=step, mu=mu, mu_upper=mu_upper, epsilon=float(row["epsilon"]), runs=n0 + n1, n_members=n1,
             key=row["key"], rep=int(row["rep"]), model=row["model"], adversary=row["adversary"],
             period=int(row["period"]), clip_norm=float(row["clip_norm"]), threshold_rule=row["threshold_rule"],
             data_source=row["data_source"], scale=scale)  # fmt: skip
    write_csv_atomic(out, csv)
    footer = footer_text(scale=scale, **audit_facts(table), step=step, code_version=facts.get("code_version", ""))
    _save(fig, pdf, footer)
    return pd.DataFrame(
        [{"step": step, "mu": mu, "mu_upper": mu_upper, "epsilon": float(row["epsilon"]),
          "epsilon_upper": float(row["epsilon_upper"]), "runs": n0 + n1, "n_members": n1, "n_nonmembers": n0,
          "points": int(fpr.size)}]
    )  # fmt: skip


# ---------------------------------------------------------------------------------------- gradient norms


def plot_fig8(table: pd.DataFrame, *, pdf: str, csv: str, facts: Mapping[str, Any]) -> pd.DataFrame:
    """Fig. 8 of Cebere et al.: the unclipped gradient norm of the A_L canary along training, per model.

    Mean ± 2 sd (ddof = 1) over the runs at each step, one colour per model; a grey line marks the clipping
    norm C when given (a canary gradient below C enters the sum unclipped, so smaller than the crafted C·e_d).
    Claim: the canary's gradient norm varies along the optimisation path and between architectures.

    Only the runs that trained with the canary (``bit == 1``) are plotted: a shard's other half never saw it, so
    its norms describe a different optimisation path. (The paper's 30 runs are therefore 60 at paper scale.)

    Args:
        table: the canary's gradient norms: columns model, run, step, norm, and bit (1 = the canary was inserted;
            a table without the column is taken as canary runs only).
        pdf, csv: the outputs; the CSV has model, step, runs, mean, sd, lower (mean − 2 sd), upper (mean + 2 sd),
            world (canary), data_source, scale: every plotted number.
        facts: ``scale``, ``data_source`` (e.g. "cifar10:local"; footer and CSV), ``clip_norm`` (C, drawn as a
            reference line when given), ``models`` (the models the figure expects, a missing one is named in the
            panel; default ConvNet and ResNet18-GN), ``code_version`` (optional).

    Returns:
        The CSV table.

    Raises:
        ValueError: a missing column, an unknown model, or an empty table (naming it).
    """
    norms, scale, data_source = table, facts["scale"], facts["data_source"]
    clip_norm = facts.get("clip_norm")
    models = tuple(facts.get("models") or ("convnet", "resnet18_gn"))
    from hsaudit.experiments.plotting import figure as new_figure, footer_text
    from hsaudit.util.io import write_csv_atomic

    missing = [c for c in ("model", "run", "step", "norm") if c not in norms.columns]
    if missing:
        raise ValueError(f"norms needs column {missing[0]!r}")
    if "bit" in norms.columns:
        norms = norms[norms["bit"].astype(int) == 1]
    if norms.empty:
        raise ValueError("plot_fig8 needs a non-empty norms table (with canary runs, bit = 1)")
    specs = {m: model_spec(m) for m in sorted(set(norms["model"]))}  # an unknown model: the registry's error
    grouped = norms.groupby(["model", "step"], sort=True)["norm"]
    out = grouped.agg(runs="size", mean="mean", sd=lambda s: float(s.std(ddof=1)) if len(s) > 1 else 0.0)
    out = out.reset_index()
    out["lower"] = out["mean"] - 2.0 * out["sd"]
    out["upper"] = out["mean"] + 2.0 * out["sd"]
    order = [m for m in models if m in set(out["model"])] + sorted(set(out["model"]) - set(models))
    out["model"] = pd.Categorical(out["model"], categories=order, ordered=True)
    out = out.sort_values(["model", "step"]).reset_index(drop=True)
    out["model"] = out["model"].astype(str)
    fig, axes = new_figure(1, 1, width=4.8, height=3.3)
    ax = axes[0][0]
    for i, model in enumerate(order):
        part = out[out["model"] == model]
        colour = specs[model].colour or NO_MODEL_COLOUR
        runs = int(part["runs"].max())
        ax.plot(part["step"], part["mean"], color=colour, linewidth=1.4, linestyle=_STYLES[i % len(_STYLES)],
                label=f"{specs[model].label} (mean ± 2 sd, {runs} runs)")  # fmt: skip
        ax.fill_between(part["step"], part["lower"], part["upper"], color=colour, alpha=0.18, linewidth=0)
    if clip_norm is not None:
        ax.axhline(float(clip_norm), color="0.45", linewidth=0.9, linestyle=":", label=f"C = {float(clip_norm):g}")
    absent = [model_spec(m).label for m in models if m not in order]
    if absent:
        _note(ax, "\n".join(f"{m}: {NOT_RUN}" for m in absent))
    ax.set_xlabel("Training step")
    ax.set_ylabel("Canary gradient norm (unclipped)")
    ax.set_title("A_L canary gradient norm along training")
    ax.set_ylim(bottom=0)
    ax.legend(frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=1)
    out = out.assign(world="canary", data_source=data_source, scale=scale)
    write_csv_atomic(out, csv)
    footer = footer_text(scale=scale, data=data_source, audit="none (gradient norms)", runs=out["runs"].astype(int),
                         world="canary runs only", code_version=facts.get("code_version", ""))  # fmt: skip
    _save(fig, pdf, footer)
    return out
