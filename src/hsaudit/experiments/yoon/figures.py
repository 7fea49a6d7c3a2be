"""Figures 2–8 and Table 1 of Yoon, Jeung & No (results/yoon/fig2..fig8.pdf, table1.md) from the audits' rows.

Input (the contract with ``workflow/scripts/plot_yoon.py``): the concatenation of the per-run audit CSVs
(``results/yoon/audits/<key>/run<r>.csv``, :func:`runs_table`). Every row is one audit of one run: a setting
(dataset, canary, init, clip_norm C, access, epsilon_theory ε, the crafting recipe's name ``craft_recipe`` and
options ``recipe``) × adversary (``a_c``: the canary itself; ``a_ude`` / ``a_ade``: a sample crafted from it,
``a_ade`` at margin α) × split (``held-out``: x_a crafted on one population and scored on a fresh one;
``same``: crafted and scored on the same models, the paper's reading), with ε̂ (``epsilon``, at δ) and μ̂ (``mu``)
under the audit's rule (``threshold_rule``, its spec; ``rule_valid``: whether it is a valid lower bound), the valid rule's ε̂ and μ̂ of
the same scores (``epsilon_valid``, ``mu_valid``, rule ``valid_threshold_rule``;
:func:`hsaudit.experiments.yoon.audit.audit_scores`) and the provenance columns (models_per_world, data_source,
confidence, delta). fig2 also takes the per-model scores (run, adversary, margin, split, model_index, member, score;
score = −loss; member = 1 for the models M′ trained on D′ = D ∪ {canary}), each row with its audit row's columns
(:func:`with_scores`).

Every figure function has the signature ``fn(table, *, pdf, csv, facts)`` (``pdf``: the main output, Markdown for
table1; ``facts``: the footer's ``scale`` and ``code_version``) and returns its CSV table; :data:`FIGURES` lists
them by figure id. Figure kinds, one function each:

- :func:`plot_loss_histograms` (fig2): the loss of x_a on M vs M′, one panel per adversary, held-out row and
  same row.
- :func:`plot_epsilon_curves` (fig3, fig4, fig5, fig7): ε̂ against the theoretical ε, one panel per dataset
  (and one row of panels per named recipe: fig3 shows the default and the paper's), mean ± sd over runs, held-out
  solid and same dashed, the diagonal ε̂ = ε as the upper bound.
- :func:`plot_epsilon_bars` (fig6, fig8, crafting): ε̂ at one ε as grouped bars (canary type, C or crafting
  recipe) × adversary, held-out plain and same hatched.
- :func:`write_table1` (table1): a_ade's ε̂ for every margin α (Markdown and CSV).

**Which rule a drawn ε̂ used** (:func:`_headline`). A valid audit of x_a needs the held-out split *and* a valid
threshold rule: the held-out split's ε̂ is the valid rule's (``valid_threshold_rule``, default crossing), the same split's is
the audit mode's (default the paper's, not valid), as the paper reports it and so comparable with its printed
values. Every legend, footer and table header names the rule of what it shows and whether it is valid, and the CSV
keeps both rules' numbers for every row.

Every figure works with whatever subset of the settings exists (a missing series is left out; one run has no
error bar; a NaN ε̂ is left out of the mean and counted apart in ``runs_finite``), is 7 in wide, and carries the
house footer (scale, N per world, runs, data source, the audit's rules, the named recipes' options, craft/audit
split). Its CSV holds every plotted number: one row per series (dataset, canary, init, clip_norm, access,
epsilon_theory, craft_recipe, recipe, adversary, margin, split) with ``epsilon`` (mean ε̂ over the runs of the drawn
estimate), ``epsilon_sd`` (ddof = 1; 0 for one run), ``mu`` (mean μ̂), ``runs``, ``runs_finite``, ``rule`` and
``rule_valid`` (the drawn estimate's rule and whether it is valid); ``epsilon_valid``, ``epsilon_valid_sd``,
``mu_valid``, ``runs_finite_valid`` (the valid rule's, named by ``valid_threshold_rule``); ``epsilon_mode``,
``epsilon_mode_sd``, ``mu_mode``, ``runs_finite_mode`` (the audit rule's, named by ``threshold_rule``, valid if
``mode_valid``); and ``epsilon_paper`` (the value the paper reports for that setting, NaN where it gives none).

The paper's values (:data:`PAPER`) are drawn only as reference markers labelled "paper". They come from the text
of Yoon, Jeung & No, "Adversarial Sample-Based Approach for Tighter Privacy Auditing in Final Model-Only
Scenarios" (arXiv:2412.01756), all at ε = 10, δ = 1e−5, blank canary, θ_avg, C = 1, white box unless stated: §5.2 (Fig. 3: MNIST a_c / a_ude / a_ade = 4.11 / 5.61 / 6.68,
CIFAR-10 0.30 / 1.05 / 4.10), §5.3 (Fig. 4, black box, MNIST: 4.11 / 4.40 / 4.51), §5.4 (Fig. 5, in-distribution
canary, MNIST: a_c 0, a_ude 4.05, a_ade 4.33; Fig. 6, a_c / a_ade per canary: in-distribution 0.00 / 3.03,
blank 1.29 / 3.94, mislabeled 0.93 / 3.96, ClipBKD 1.56 / 3.91), §5.5 (Fig. 7: MNIST a_c(θ_avg) 4.11,
a_c(θ_worst) 6.83, a_ade(θ_worst) 9.9; CIFAR-10 0.41 / 5.31 / 9.93), §5.6 (Fig. 8: C = 0.1: 5.90 / 7.81 / 7.85,
C = 10: 0.00 / 0.59 / 0.87; for C = 1 the figure repeats Fig. 3's 4.11 / 5.61 / 6.68, although the text quotes
4.24 for a_ade there) and Table 1 (a_ade on CIFAR-10 at ε = 4, mean ± sd over 10 runs: α = 0.05, 0.1, 0.15,
0.2, 0.25 → 1.90 ± 0.51, 1.84 ± 0.32, 1.83 ± 0.34, 1.87 ± 0.21, 2.03 ± 0.24). The paper crafts and scores on the
same models, so its values compare with our ``same`` split. Fig. 6's setting is not documented (its a_c values
differ from Figs. 3 and 5).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from hsaudit.audit.rules import parse_rule
from hsaudit.audit.validity import rule_words
from hsaudit.experiments.plotting import PALETTE, UPPER_BOUND_STYLE, figure, footer_text, reserve_footer, save
from hsaudit.util.io import write_csv_atomic, write_text_atomic

ADVERSARIES = ("a_c", "a_ude", "a_ade")
SPLITS = ("held-out", "same")
SETTING = ("dataset", "canary", "init", "clip_norm", "access", "epsilon_theory", "craft_recipe", "recipe")
"""A series' setting; ``craft_recipe`` is the recipe's name (``yoon.craft_recipes``), ``recipe`` its options."""
PAPER_SETTING = SETTING[:-2]
"""The setting of the paper's printed values (they hold for its recipe, whichever ours is: shown beside every recipe)."""
SERIES = (*SETTING, "adversary", "margin", "split")
"""The columns that name one plotted series (the rows of every figure's CSV)."""
REQUIRED = (*SERIES, "run", "epsilon", "mu", "models_per_world", "data_source", "threshold_rule")
UNNAMED_RECIPE = "adam lr=0.01 T=100"
"""The recipe of audit tables that do not name theirs (the paper's reading, the only one before the options)."""
RECIPE_NAMES = ("validation_stopped", "paper")
"""The named recipes of the config (``yoon.craft_recipes``), in the order figures show them; tables that do not
name theirs were crafted over the paper's reading (``paper``)."""
MAIN_MARGIN = 0.2
"""The ADE margin α of the figures (the paper's default); table1 shows every margin."""

ADVERSARY_COLOURS = {"a_c": PALETTE[0], "a_ude": PALETTE[1], "a_ade": PALETTE[2]}
ADVERSARY_MARKERS = {"a_c": "o", "a_ude": "s", "a_ade": "^"}
SPLIT_LABELS = {"held-out": "held-out split", "same": "same split (paper's reading)"}
SPLIT_LINES = {"held-out": "-", "same": "--"}
SPLIT_HATCH = {"held-out": None, "same": "////"}
DATASET_LABELS = {"mnist": "MNIST", "cifar10": "CIFAR-10"}
CANARY_LABELS = {
    "in_distribution": "in-distribution",
    "blank": "blank",
    "mislabeled": "mislabeled",
    "clipbkd": "ClipBKD",
}
INIT_LABELS = {"avg": "θ_avg", "worst": "θ_worst"}
WORLD_COLOURS = {0: PALETTE[2], 1: PALETTE[0]}  # the paper's green M, blue M′
WORLD_LABELS = {0: "M: trained on D (member = 0)", 1: "M′: trained on D′ = D ∪ {canary} (member = 1)"}
PAPER_MARKER = {"marker": "*", "markersize": 10, "markeredgecolor": "black", "markeredgewidth": 0.7, "linestyle": ""}


def _paper_rows() -> pd.DataFrame:
    """:data:`PAPER`, built from the values quoted in the module docstring (sources there)."""
    rows = []

    def add(figure, adversaries, values, *, dataset="mnist", canary="blank", init="avg", clip=1.0, access="white",
            eps=10.0, margin=MAIN_MARGIN, sds=None):  # fmt: skip
        for i, (adversary, value) in enumerate(zip(adversaries, values, strict=True)):
            rows.append({"figure": figure, "dataset": dataset, "canary": canary, "init": init, "clip_norm": clip,
                         "access": access, "epsilon_theory": eps, "adversary": adversary,
                         "margin": margin if adversary == "a_ade" else np.nan, "epsilon_paper": value,
                         "epsilon_paper_sd": np.nan if sds is None else sds[i]})  # fmt: skip

    for fig in ("fig3", "fig8"):
        add(fig, ADVERSARIES, (4.11, 5.61, 6.68))
    add("fig3", ADVERSARIES, (0.30, 1.05, 4.10), dataset="cifar10")
    add("fig4", ADVERSARIES, (4.11, 4.40, 4.51), access="black")
    add("fig5", ADVERSARIES, (0.0, 4.05, 4.33), canary="in_distribution")
    for canary, values in {"in_distribution": (0.0, 3.03), "blank": (1.29, 3.94), "mislabeled": (0.93, 3.96),
                           "clipbkd": (1.56, 3.91)}.items():  # fmt: skip
        add("fig6", ("a_c", "a_ade"), values, canary=canary)
    for dataset, (avg, worst_c, worst_ade) in {"mnist": (4.11, 6.83, 9.9), "cifar10": (0.41, 5.31, 9.93)}.items():
        add("fig7", ("a_c",), (avg,), dataset=dataset)
        add("fig7", ("a_c", "a_ade"), (worst_c, worst_ade), dataset=dataset, init="worst")
    add("fig8", ADVERSARIES, (5.90, 7.81, 7.85), clip=0.1)
    add("fig8", ADVERSARIES, (0.0, 0.59, 0.87), clip=10.0)
    margins = (0.05, 0.1, 0.15, 0.2, 0.25)
    for margin, mean, sd in zip(margins, (1.90, 1.84, 1.83, 1.87, 2.03), (0.51, 0.32, 0.34, 0.21, 0.24), strict=True):
        add("table1", ("a_ade",), (mean,), dataset="cifar10", eps=4.0, margin=margin, sds=(sd,))
    return pd.DataFrame(rows)


PAPER = _paper_rows()
"""The values Yoon, Jeung & No report (figure, setting, adversary, margin, epsilon_paper, epsilon_paper_sd)."""


# ------------------------------------------------------------------------------------------------- tables


def _check(table: pd.DataFrame) -> pd.DataFrame:
    """The audit rows with typed columns; raises ValueError on a missing column or an unknown adversary/split."""
    if "recipe" not in table.columns:  # audit tables written before crafting recipes were options
        table = table.assign(recipe=UNNAMED_RECIPE)
    if "craft_recipe" not in table.columns:  # ... and before recipes had names
        table = table.assign(craft_recipe="paper")
    missing = [c for c in REQUIRED if c not in table.columns]
    if missing:
        raise ValueError(f"the audit table has no column {missing[0]!r}")
    if table.empty:
        raise ValueError("the audit table is empty")
    for column, known in (("adversary", ADVERSARIES), ("split", SPLITS)):
        unknown = sorted(set(table[column].astype(str)) - set(known))
        if unknown:
            raise ValueError(f"unknown {column} {unknown[0]!r} (known: {', '.join(known)})")
    table = table.copy()
    if "rule_valid" not in table.columns:  # audit tables written before the valid rule's columns
        table["rule_valid"] = table["threshold_rule"].map(lambda spec: parse_rule(spec).valid)
    if "valid_threshold_rule" not in table.columns:  # ... have a valid estimate only when their own rule is valid
        valid = table["rule_valid"].astype(bool)
        table["valid_threshold_rule"] = table["threshold_rule"].where(valid)
        table["mu_valid"] = table["mu"].where(valid)
        table["epsilon_valid"] = table["epsilon"].where(valid)
    table["rule_valid"] = table["rule_valid"].astype(bool)
    for column in ("clip_norm", "epsilon_theory", "margin", "epsilon", "mu", "epsilon_valid", "mu_valid"):
        table[column] = pd.to_numeric(table[column], errors="coerce").astype(float)
    table.loc[table["adversary"] != "a_ade", "margin"] = np.nan
    return table


def _headline(table: pd.DataFrame) -> pd.DataFrame:
    """The audit rows with the estimate a figure draws in ``epsilon`` and ``mu``, its rule in ``rule`` and whether
    that rule is valid in ``rule_valid``; the mode's own estimate moves to ``epsilon_mode`` and ``mu_mode``.

    The held-out split draws the valid rule's ε̂ (``valid_threshold_rule``; the audit rule's where a row has none): x_a
    is independent of those models, so under a valid rule the audit is a valid lower bound. The same split draws the
    mode's ε̂, the paper's reading (x_a crafted on the audited models: no rule makes that audit valid for a crafted sample), which
    compares with the paper's printed values. A table that has been through this already (a ``rule`` column) is
    returned as it is.
    """
    if "rule" in table.columns:
        return table
    table = _check(table)
    valid = (table["split"] == "held-out") & table["valid_threshold_rule"].notna()
    return table.assign(
        epsilon_mode=table["epsilon"],
        mu_mode=table["mu"],
        mode_valid=table["rule_valid"],
        epsilon=table["epsilon"].where(~valid, table["epsilon_valid"]),
        mu=table["mu"].where(~valid, table["mu_valid"]),
        rule=table["threshold_rule"].where(~valid, table["valid_threshold_rule"]),
        rule_valid=table["rule_valid"] | valid,
    )


def _order(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows in the figures' order: dataset, canary, init, C, access, ε, adversary, α, split (known values first)."""
    known = {"dataset": tuple(DATASET_LABELS), "canary": tuple(CANARY_LABELS), "init": tuple(INIT_LABELS),
             "adversary": ADVERSARIES, "split": SPLITS, "craft_recipe": RECIPE_NAMES}  # fmt: skip

    def rank(column: pd.Series) -> pd.Series:
        if column.name not in known:
            return column
        order = {v: i for i, v in enumerate(known[column.name])}
        return column.map(lambda v: (order.get(v, len(order)), str(v)))

    return frame.sort_values(list(SERIES), key=rank, na_position="first").reset_index(drop=True)


def _sd(s: pd.Series) -> float:
    """The sd (ddof = 1) of the finite values: 0 with one, NaN with none."""
    return float(s.std(ddof=1)) if s.count() > 1 else (0.0 if s.count() else np.nan)


def summarise(table: pd.DataFrame) -> pd.DataFrame:
    """Mean ± sd of ε̂ and mean μ̂ over the runs of every series (:data:`SERIES`), for the drawn estimate
    (:func:`_headline`), the valid rule's and the audit mode's.

    Non-finite ε̂ (NaN) are left out of the mean and sd; ``runs`` counts every run and ``runs_finite`` those
    with a finite drawn ε̂ (``runs_finite_valid``, ``runs_finite_mode``: of the other two). The sd has ddof = 1, and
    is 0 with a single finite run (NaN with none).

    Returns:
        Columns :data:`SERIES`, epsilon, epsilon_sd, mu, runs, runs_finite, rule, rule_valid (the drawn estimate),
        epsilon_valid, epsilon_valid_sd, mu_valid, runs_finite_valid, valid_threshold_rule (the valid rule's), epsilon_mode,
        epsilon_mode_sd, mu_mode, runs_finite_mode, threshold_rule, mode_valid (the audit rule's), n_members, n_nonmembers,
        models_per_world, data_source.
    """
    table = _headline(table)
    finite = {c: table[c].where(np.isfinite(table[c])) for c in ("epsilon", "epsilon_valid", "epsilon_mode")}
    grouped = table.assign(**finite).groupby(list(SERIES), sort=False, dropna=False)
    out = grouped.agg(
        epsilon=("epsilon", "mean"),
        epsilon_sd=("epsilon", _sd),
        mu=("mu", "mean"),
        runs=("run", "size"),
        runs_finite=("epsilon", "count"),
        rule=("rule", "first"),
        rule_valid=("rule_valid", "all"),
        epsilon_valid=("epsilon_valid", "mean"),
        epsilon_valid_sd=("epsilon_valid", _sd),
        mu_valid=("mu_valid", "mean"),
        runs_finite_valid=("epsilon_valid", "count"),
        valid_threshold_rule=("valid_threshold_rule", "first"),
        epsilon_mode=("epsilon_mode", "mean"),
        epsilon_mode_sd=("epsilon_mode", _sd),
        mu_mode=("mu_mode", "mean"),
        runs_finite_mode=("epsilon_mode", "count"),
        threshold_rule=("threshold_rule", "first"),
        mode_valid=("mode_valid", "all"),
        **{c: (c, "first") for c in ("n_members", "n_nonmembers") if c in table.columns},
        models_per_world=("models_per_world", "first"),
        data_source=("data_source", "first"),
    )
    return _order(out.reset_index())


def _with_paper(summary: pd.DataFrame, figure_name: str) -> pd.DataFrame:
    """``summary`` with the paper's value of each series' setting (``epsilon_paper``, NaN where none)."""
    paper = PAPER[PAPER["figure"] == figure_name].drop(columns="figure")
    keys = [*PAPER_SETTING, "adversary", "_margin"]

    def keyed(frame: pd.DataFrame) -> pd.DataFrame:
        return frame.assign(_margin=frame["margin"].round(9).fillna(-1.0))

    merged = keyed(summary).merge(keyed(paper).drop(columns="margin"), on=keys, how="left", validate="many_to_one")
    return merged.drop(columns="_margin")


def _main_margin(table: pd.DataFrame) -> float | None:
    """The a_ade margin the figures show: :data:`MAIN_MARGIN` if audited, else the nearest one (None: no a_ade)."""
    margins = table.loc[table["adversary"] == "a_ade", "margin"].dropna().unique()
    return float(margins[np.argmin(np.abs(margins - MAIN_MARGIN))]) if margins.size else None


def _one_margin(table: pd.DataFrame) -> pd.DataFrame:
    margin = _main_margin(table)
    keep = (table["adversary"] != "a_ade") | np.isclose(table["margin"].fillna(-1.0), margin or -1.0)
    return table[keep]


def _at_one_epsilon(table: pd.DataFrame) -> pd.DataFrame:
    """The rows at ε = 10 if audited, else at the largest ε audited (the bar and histogram figures show one ε)."""
    eps = table["epsilon_theory"].dropna().unique()
    if eps.size == 0:
        raise ValueError("the audit table has no finite epsilon_theory")
    shown = 10.0 if np.isclose(eps, 10.0).any() else float(eps.max())
    return table[np.isclose(table["epsilon_theory"], shown)]


def _adversary_label(adversary: str, margin: float | None = None) -> str:
    if adversary == "a_ade" and margin is not None and np.isfinite(margin):
        return f"a_ade (α = {margin:g})"
    return {"a_c": "a_c (canary)"}.get(adversary, adversary)


def _unique(table: pd.DataFrame, column: str, fmt: Callable[[Any], str] = str) -> str:
    return "/".join(dict.fromkeys(fmt(v) for v in table[column].dropna()))


def _recipes(table: pd.DataFrame) -> str | None:
    """"valid = adam lr=0.01 T=100, pixels in range, validation stop/10; paper = adam lr=0.01 T=100": each named
    recipe and its options, when every name has one set of options (None otherwise: a study over recipes names
    each one where it is drawn)."""
    pairs = table[["craft_recipe", "recipe"]].drop_duplicates()
    if pairs["craft_recipe"].duplicated().any():
        return None
    order = {n: i for i, n in enumerate(RECIPE_NAMES)}
    pairs = pairs.sort_values("craft_recipe", key=lambda c: c.map(lambda v: (order.get(v, len(order)), str(v))))
    return "; ".join(f"{name} = {label}" for name, label in pairs.itertuples(index=False))


def _split_rules(table: pd.DataFrame) -> dict[str, str]:
    """The rule of the ε̂ drawn for each split of ``table`` (:func:`_headline`), in :func:`hsaudit.audit.validity.rule_words`' words."""
    table = _headline(table)
    out = {}
    for split in SPLITS:
        part = table[table["split"] == split]
        if not part.empty:
            pairs = part[["rule", "rule_valid"]].drop_duplicates()
            out[split] = "/".join(rule_words(r, bool(v)) for r, v in pairs.itertuples(index=False))
    return out


def _provenance(table: pd.DataFrame) -> dict[str, Any]:
    """The Yoon facts of a footer, as keyword arguments of :func:`hsaudit.experiments.plotting.footer_text`: data
    source, the audit (its confidence and the rule of each split's drawn ε̂), N (models per world), runs per
    series, the crafting recipes and the craft/audit split."""
    level = _unique(table, "confidence", lambda v: f"{float(v):g}") if "confidence" in table else ""
    confidence = f" (confidence {level})" if level else ""
    rules = ", ".join(f"{split} {text}" for split, text in _split_rules(table).items())
    return {
        "data": table["data_source"].dropna(),
        "audit": f"GDP{confidence}; ε̂ drawn: {rules}; the CSV has both rules' ε̂",
        "N": f"{_unique(table, 'models_per_world', lambda v: str(int(v)))} per world",
        "runs": table.groupby(list(SERIES), dropna=False).size(),
        "recipe": _recipes(table),
        "craft/audit split": "held-out (main) and same (paper's reading)",
    }


def _write_csv(summary: pd.DataFrame, csv: str | os.PathLike, *, figure_name: str, scale: str) -> pd.DataFrame:
    out = summary.assign(figure=figure_name, scale=scale)
    write_csv_atomic(out, csv)
    return out


def _save(fig, pdf: str | os.PathLike, footer: str, *, legend_rows: int) -> None:
    """Lay out below ``legend_rows`` rows of figure legend and above the footer's band, then save."""
    band = reserve_footer(fig, footer)  # first: a long footer may make the figure taller
    fig.tight_layout(rect=(0, band, 1, 1 - (0.05 + 0.2 * legend_rows) / fig.get_figheight()))
    save(fig, pdf, footer=footer, tight=False)


def _panel_title(part: pd.DataFrame, columns: Sequence[str]) -> str:
    """"MNIST, white box, blank canary, θ_avg, C = 1": the setting values of a panel, those that are unique."""
    words = {
        "dataset": lambda v: DATASET_LABELS.get(v, v),
        "access": lambda v: f"{v} box",
        "canary": lambda v: f"{CANARY_LABELS.get(v, v)} canary",
        "init": lambda v: INIT_LABELS.get(v, v),
        "clip_norm": lambda v: f"C = {v:g}",
        "epsilon_theory": lambda v: f"ε = {v:g}",
        "craft_recipe": lambda v: f"{v} recipe",
        "recipe": lambda v: f"crafted by {v}",
    }
    return ", ".join(words[c](part[c].iloc[0]) for c in columns if part[c].nunique(dropna=False) == 1)


def _note(ax, text: str) -> None:
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", fontsize=7.5, color="0.3")


# ---------------------------------------------------------------------------------------- ε̂ against ε


@dataclass(frozen=True)
class _Series:
    """One coloured series of a curve or bar figure: an adversary, optionally at one initialisation."""

    adversary: str
    init: str | None = None
    colour: str | None = None
    alpha: float = 1.0
    marker: str | None = None

    def select(self, frame: pd.DataFrame) -> pd.Series:
        mask = frame["adversary"] == self.adversary
        return mask & (frame["init"] == self.init) if self.init is not None else mask

    def label(self, margin: float | None) -> str:
        text = _adversary_label(self.adversary, margin)
        return f"{text}, {INIT_LABELS.get(self.init, self.init)}" if self.init else text

    def style(self) -> dict[str, Any]:
        return {"color": self.colour or ADVERSARY_COLOURS[self.adversary], "alpha": self.alpha,
                "marker": self.marker or ADVERSARY_MARKERS[self.adversary]}  # fmt: skip


_PLAIN = tuple(_Series(a) for a in ADVERSARIES)
# fig7: a_c at θ_avg (light blue, open) against a_c, a_ade at θ_worst; a_ude at θ_worst lighter.
_WORST = (
    _Series("a_c", "avg", colour=PALETTE[5], marker="D"),
    _Series("a_c", "worst"),
    _Series("a_ade", "worst"),
    _Series("a_ude", "worst", alpha=0.45),
)


@dataclass(frozen=True)
class _Spec:
    """What a figure shows: its series, (bars) the column that groups the bars, the setting named in titles."""

    series: tuple[_Series, ...] = _PLAIN
    group_by: str | None = None
    setting: tuple[str, ...] = field(default=("dataset", "access", "canary", "init", "clip_norm"))


SPECS = {
    "fig3": _Spec(),
    "fig4": _Spec(),
    "fig5": _Spec(),
    "fig6": _Spec(group_by="canary", setting=("dataset", "access", "init", "clip_norm", "epsilon_theory")),
    "fig7": _Spec(series=_WORST, setting=("dataset", "access", "canary", "clip_norm")),
    "fig8": _Spec(group_by="clip_norm", setting=("dataset", "access", "canary", "init", "epsilon_theory")),
    # The crafting study (issue: does a recipe audited on held-out models make x_a beat the canary?): one group per recipe.
    "crafting": _Spec(group_by="recipe", setting=("dataset", "access", "canary", "init", "clip_norm", "epsilon_theory")),
}


def _series_rows(summary: pd.DataFrame, spec: _Spec) -> pd.DataFrame:
    """The summary rows a figure plots, with a ``series`` label column (rows of no series dropped)."""
    margin = _main_margin(summary)
    parts = [summary[s.select(summary)].assign(series=s.label(margin)) for s in spec.series]
    parts = [p for p in parts if not p.empty]
    return pd.concat(parts, ignore_index=True) if parts else summary.iloc[:0].assign(series=pd.Series(dtype=str))


def _known_first(values: pd.Series, known: Sequence[str]) -> list[Any]:
    present = list(dict.fromkeys(values))
    return [v for v in known if v in present] + [v for v in present if v not in known]


def _panels(summary: pd.DataFrame) -> list[list[tuple[str, pd.DataFrame]]]:
    """Rows of panels: one row per named recipe (the default, validation_stopped, first), one panel per dataset (MNIST
    first); a row's panels are ``(recipe name, rows)``."""
    datasets = _known_first(summary["dataset"], tuple(DATASET_LABELS))
    recipes = _known_first(summary["craft_recipe"], RECIPE_NAMES)
    return [[(r, summary[(summary["craft_recipe"] == r) & (summary["dataset"] == d)]) for d in datasets]
            for r in recipes]  # fmt: skip


def _legend(fig, axes, spec: _Spec, margin: float | None, *, bars: bool, rules: Mapping[str, str]) -> None:
    """A legend of three rows above the panels: series colours; the two splits (each with the rule of its drawn ε̂,
    ``rules`` as :func:`_split_rules` gives them); the bound and the paper's marker."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    present = {label for ax in axes for label in ax.get_legend_handles_labels()[1]}
    handles = []
    n_series = sum(s.label(margin) in present for s in spec.series)
    for s in spec.series:
        if s.label(margin) not in present:
            continue
        style = s.style()
        if bars:
            handles.append(Patch(facecolor=style["color"], alpha=style["alpha"], label=s.label(margin)))
        else:
            handles.append(Line2D([], [], **style, markersize=5, label=s.label(margin)))
    for split in SPLITS:
        label = f"{SPLIT_LABELS[split]}: {rules[split]}" if split in rules else SPLIT_LABELS[split]
        if bars:
            handles.append(Patch(facecolor="white", edgecolor="0.3", hatch=SPLIT_HATCH[split], label=label))
        else:
            handles.append(Line2D([], [], color="0.3", linestyle=SPLIT_LINES[split], label=label))
    handles.append(Line2D([], [], **UPPER_BOUND_STYLE, label="theoretical ε (bound)"))
    if "paper" in present:
        handles.append(Line2D([], [], markerfacecolor="0.6", **PAPER_MARKER, label="paper"))
    row = 0.2 / fig.get_figheight()  # one legend row, in figure fraction
    splits = n_series + len(SPLITS)  # series; the splits, each naming its rule; the bound and the paper
    for i, part in enumerate(p for p in (handles[:n_series], handles[n_series:splits], handles[splits:]) if p):
        fig.legend(handles=part, loc="upper center", ncol=len(part), frameon=False,
                   bbox_to_anchor=(0.5, 1.0 - i * row), borderaxespad=0.2)  # fmt: skip


def _draw_paper(ax, xs: Sequence[float], ys: Sequence[float], colour: str) -> None:
    """The paper's values: stars in the series colour with a black edge, labelled "paper"."""
    ax.plot(xs, ys, markerfacecolor=colour, label="paper", zorder=5, **PAPER_MARKER)


def _error_bars(ax, x: np.ndarray, rows: pd.DataFrame, colour: str, alpha: float) -> None:
    """± sd bars where there are two or more finite runs (none for one run)."""
    show = (rows["runs_finite"] > 1).to_numpy() & np.isfinite(rows["epsilon"].to_numpy())
    if show.any():
        ax.errorbar(x[show], rows["epsilon"].to_numpy()[show], yerr=rows["epsilon_sd"].to_numpy()[show], fmt="none",
                    ecolor=colour, alpha=alpha, capsize=2.5, elinewidth=0.9, zorder=3)  # fmt: skip


def _paper_points(paper: pd.DataFrame, spec: _Spec) -> list[tuple[_Series, pd.DataFrame]]:
    """The paper's values of each series of ``spec`` (series without any left out)."""
    out = []
    for s in spec.series:
        rows = paper[s.select(paper)]
        if not rows.empty:
            out.append((s, rows))
    return out


def _curves_panel(ax, part: pd.DataFrame, paper: pd.DataFrame, spec: _Spec, margin: float | None) -> None:
    """ε̂ (mean ± sd) against ε for every series × split of one dataset, the diagonal bound and the paper."""
    eps = np.sort(part["epsilon_theory"].unique())
    top = float(max(eps.max(), 1.0))
    ax.plot([0, top * 1.04], [0, top * 1.04], **UPPER_BOUND_STYLE)
    combos = [(s, split) for s in spec.series for split in SPLITS]
    shift = 0.012 * top
    for i, (s, split) in enumerate(combos):
        rows = part[s.select(part) & (part["split"] == split)].sort_values("epsilon_theory")
        rows = rows[np.isfinite(rows["epsilon"])]
        if rows.empty:
            continue
        x = rows["epsilon_theory"].to_numpy() + (i - (len(combos) - 1) / 2) * shift
        style = s.style()
        ax.plot(x, rows["epsilon"], linestyle=SPLIT_LINES[split], markersize=4, linewidth=1.2, zorder=4,
                label=s.label(margin), **style)  # fmt: skip
        _error_bars(ax, x, rows, style["color"], style["alpha"])
    shared = [c for c in PAPER_SETTING if c != "epsilon_theory"]
    ref = paper.merge(part[shared].drop_duplicates(), on=shared)
    ref = ref[ref["epsilon_theory"] <= top * 1.001]
    stars = len(combos) / 2 + 1  # the paper's stars right of the series, side by side
    for j, (s, rows) in enumerate(_paper_points(ref, spec)):
        x = rows["epsilon_theory"].to_numpy() + (stars + 1.2 * j) * shift
        _draw_paper(ax, x, rows["epsilon_paper"], s.style()["color"])
    ax.set_xlim(0, top + (stars + 1.2 * len(spec.series) + 1) * shift)
    ax.set_xticks(eps)
    ax.set_xlabel("theoretical ε")
    ax.set_ylabel("empirical ε̂ (mean ± sd over runs)")
    ax.set_ylim(bottom=-0.025 * ax.get_ylim()[1])  # a zero ε̂ stays visible


def plot_epsilon_curves(
    table: pd.DataFrame, *, pdf: str | os.PathLike, csv: str | os.PathLike, facts: Mapping[str, Any], figure_name: str
) -> pd.DataFrame:
    """fig3, fig4, fig5, fig7: ε̂ against the theoretical ε, one panel per dataset, one row of panels per named
    crafting recipe (fig3: the default ``validation_stopped`` recipe above, the paper's below; the footer gives their options).

    Every series (fig3–5: a_c, a_ude, a_ade at α = 0.2; fig7: a_c at θ_avg, a_c and a_ade at θ_worst, a_ude at
    θ_worst lighter) is drawn held-out solid (the valid rule's ε̂) and same dashed (the audit mode's, the paper's
    reading; :func:`_headline`, the legend names each rule), mean ± sd over runs (no bar with one run), with the
    theoretical ε as the diagonal upper bound and the paper's values at ε = 10 as black-edged stars ("paper").
    Claims: fig3 a_ade > a_ude > a_c on both datasets; fig4 the same order, closer, in the black box; fig5 a_c ≈ 0
    with an in-distribution canary while crafted samples audit; fig7 θ_worst with a_ade nearly reaches the bound.

    Returns:
        The CSV table: the plotted series (:func:`summarise` columns: the drawn ε̂ and its rule, the valid rule's and
        the audit mode's; series label, epsilon_paper, figure, scale).
    """
    return _epsilon_figure(figure_name, _check(table), pdf, csv, _curves_panel, facts=facts)


def _epsilon_figure(figure_name: str, table: pd.DataFrame, pdf, csv, draw_panel: Callable, *,
                    facts: Mapping[str, Any]) -> pd.DataFrame:  # fmt: skip
    """The frame shared by the curve and bar figures: one panel per dataset, legend above, footer, CSV."""
    spec = SPECS[figure_name]
    table = _one_margin(table)
    margin = _main_margin(table)
    summary = _series_rows(_with_paper(summarise(table), figure_name), spec)
    paper = PAPER[PAPER["figure"] == figure_name]
    rows = _panels(summary) or [[("", summary)]]
    height = 3.5 if len(rows) == 1 else 3.0 * len(rows) + 0.5
    fig, axes = figure(ncols=len(rows[0]), nrows=len(rows), width=7.0, height=height)
    for ax_row, panels in zip(axes, rows, strict=True):
        for ax, (recipe, part) in zip(ax_row, panels, strict=True):
            if part.empty:
                _note(ax, "no audit of this figure's series")
                continue
            draw_panel(ax, part, paper, spec, margin)
            # With several named recipes, each row says which one crafted its samples (the footer gives the options).
            named = f"\nx_a crafted by recipe '{recipe}'" if len(rows) > 1 else ""
            ax.set_title(_panel_title(part, spec.setting) + named)
    _legend(fig, axes.ravel(), spec, margin, bars=spec.group_by is not None, rules=_split_rules(table))
    _save(fig, pdf, footer_text(**facts, **_provenance(table)), legend_rows=3)
    return _write_csv(summary, csv, figure_name=figure_name, scale=facts["scale"])


# ------------------------------------------------------------------------------------------- grouped bars


def _group_label(column: str, value: Any) -> str:
    if column == "canary":
        return CANARY_LABELS.get(value, str(value))
    if column == "recipe":  # "adam lr=0.01 T=100, pixels in range" -> one short fact per line
        head, *rest = str(value).split(", ")
        return "\n".join([*head.split(" ", 1), *rest])
    return f"C = {float(value):g}"


def _bars_panel(ax, part: pd.DataFrame, paper: pd.DataFrame, spec: _Spec, margin: float | None) -> None:
    """Grouped bars: one group per ``spec.group_by`` value, one bar per series × split, ± sd, the paper's stars."""
    column = spec.group_by
    setting = [c for c in PAPER_SETTING if c != column]
    paper = paper.merge(part[setting].drop_duplicates(), on=setting)
    order = list(CANARY_LABELS) if column == "canary" else sorted(part[column].unique())
    groups = [g for g in order if (part[column] == g).any()]
    groups += [g for g in dict.fromkeys(part[column]) if g not in groups]
    present = [s for s in spec.series if s.select(part).any()]
    width = 0.8 / max(2 * len(present), 1)

    def x_of(group: Any, slot: float) -> float:
        return groups.index(group) + (slot - (2 * len(present) - 1) / 2) * width

    for j, s in enumerate(present):
        style = s.style()
        for k, split in enumerate(SPLITS):
            rows = part[s.select(part) & (part["split"] == split)]
            x = np.array([x_of(g, 2 * j + k) for g in rows[column]])
            heights = rows["epsilon"].to_numpy(dtype=float)
            keep = np.isfinite(heights)
            same = split == "same"
            ax.bar(
                x[keep],
                heights[keep],
                width=width * 0.95,
                color=style["color"],
                alpha=style["alpha"] * (0.55 if same else 1.0),
                hatch=SPLIT_HATCH[split],
                edgecolor="white" if same else style["color"],
                linewidth=0.5,
                label=s.label(margin),
                zorder=3,
            )
            for xi, h in zip(x, heights, strict=True):  # say what an invisible bar is: zero or not a number
                if not h > 1e-9:
                    ax.text(xi, 0.02, "0" if h == 0 else "n/a", rotation=90 if h != 0 else 0, ha="center",
                            va="bottom", fontsize=6, color="0.35")  # fmt: skip
            _error_bars(ax, x, rows, "0.15", 1.0)
    # (The paper's values are per setting; a study over our own options, e.g. recipes, has none of its own.)
    quoted = paper[paper[column].isin(groups)] if column in paper.columns else paper.iloc[:0]
    for s, rows in _paper_points(quoted, spec):
        j = next(i for i, p in enumerate(present) if p == s) if s in present else None
        if j is not None:
            _draw_paper(ax, [x_of(g, 2 * j + 0.5) for g in rows[column]], rows["epsilon_paper"], s.style()["color"])
    eps = part["epsilon_theory"].dropna().unique()
    for e in eps:
        ax.axhline(e, **UPPER_BOUND_STYLE, zorder=2)
    ax.set_xticks(range(len(groups)), [_group_label(column, g) for g in groups],
                  fontsize=6.5 if column == "recipe" else None)  # fmt: skip
    ax.set_xlim(-0.6, len(groups) - 0.4)
    ax.set_ylabel("empirical ε̂ (mean ± sd over runs)")
    ax.set_ylim(0, 1.1 * max([*eps, *part["epsilon"].dropna(), *paper["epsilon_paper"], 1.0]))
    ax.grid(axis="x", visible=False)


def plot_epsilon_bars(
    table: pd.DataFrame, *, pdf: str | os.PathLike, csv: str | os.PathLike, facts: Mapping[str, Any], figure_name: str
) -> pd.DataFrame:
    """fig6 (canary types) and fig8 (clipping norm C): ε̂ at one ε as grouped bars.

    One group per canary (in-distribution, blank, mislabeled, ClipBKD) or per C (0.1, 1, 10), one bar per
    adversary (a_c, a_ude, a_ade at α = 0.2) × split (held-out plain: the valid rule's ε̂; same hatched: the audit
    mode's; :func:`_headline`, the legend names each rule), mean ± sd over runs, the
    theoretical ε as a dashed line and the paper's values as black-edged stars between each adversary's two bars.
    The figure shows ε = 10 if audited, else the largest ε audited (its title says which). Claims: fig6 a_ade
    audits every canary type, a_c fails on the in-distribution one; fig8 ε̂ falls as C grows, a_ade least.

    Returns:
        The CSV table (as :func:`plot_epsilon_curves`).
    """
    return _epsilon_figure(figure_name, _at_one_epsilon(_check(table)), pdf, csv, _bars_panel, facts=facts)


# -------------------------------------------------------------------------------------- loss histograms


def _loss_bins(losses: np.ndarray) -> tuple[np.ndarray, bool]:
    """Shared bin edges of a panel's two worlds; log-spaced when positive losses span over two decades."""
    losses = losses[np.isfinite(losses)]
    count = int(np.clip(np.sqrt(losses.size) * 2, 8, 40))
    if losses.size == 0:
        return np.linspace(0, 1, count + 1), False
    low, high = float(losses.min()), float(losses.max())
    if low > 0 and high / low > 100:
        return np.geomspace(low, high, count + 1), True
    if high <= low:
        low, high = low - 0.5, high + 0.5
    return np.linspace(low, high, count + 1), False


def _estimates_text(row: pd.Series) -> str:
    """"ε̂ = 0.41, crossing rule (valid)" and, when the other rule differs, "paper rule (not a valid bound): 3.27": one
    run's ε̂ as :func:`_headline` draws it, then the other rule's (a valid rule there is the same split's: not
    tagged valid, since no rule makes the same split a valid audit of a crafted sample)."""
    text = f"ε̂ = {float(row['epsilon']):.2f}, {rule_words(row['rule'], bool(row['rule_valid']))}"
    if row["rule"] != row["valid_threshold_rule"] and pd.notna(row["valid_threshold_rule"]):
        return text + f"\n{row['valid_threshold_rule']} rule: {float(row['epsilon_valid']):.2f}"
    if row["rule"] != row["threshold_rule"]:
        return text + f"\n{rule_words(row['threshold_rule'], bool(row['mode_valid']))}: {float(row['epsilon_mode']):.2f}"
    return text


def plot_loss_histograms(
    table: pd.DataFrame, *, pdf: str | os.PathLike, csv: str | os.PathLike, facts: Mapping[str, Any]
) -> pd.DataFrame:
    """fig2: the loss of x_a (−score) on the models M trained on D (member = 0) and M′ trained on D′ (member = 1).

    One panel per adversary (a_c, a_ude, a_ade at α = 0.2), the held-out split in the top row and the same split
    (the only one the paper shows) below, for one run (the first: runs are separate populations) at ε = 10 if
    audited (else the largest ε); each panel states that run's ε̂ under both rules, the split's own first
    (:func:`_headline`: held-out the valid rule, same the audit mode). Claim: a_ude spreads the two distributions,
    a_ade separates their overlap best.

    Args:
        table: the per-model scores, each with its audit row (:func:`with_scores`).

    Returns:
        The CSV table: one row per panel × world × bin (split, adversary, margin, member, world, bin_left,
        bin_right, count, epsilon_run: ε̂ of the run shown, drawn as the figures draw it; epsilon_valid_run and
        epsilon_mode_run: the valid rule's and the audit mode's) with the panel's series summary (:func:`summarise`).
    """
    from matplotlib.patches import Patch
    from matplotlib.ticker import MaxNLocator

    table, scores = _split_scores(table)
    table = _at_one_epsilon(_one_margin(_check(table)))
    setting = table[list(SETTING)].drop_duplicates().iloc[0]
    table = table[(table[list(SETTING)] == setting).all(axis=1)]
    margin = _main_margin(table)
    summary = _with_paper(summarise(table), "fig2")
    shown = _headline(table)
    run = int(scores["run"].min())
    scores = scores[scores["run"] == run].assign(margin=pd.to_numeric(scores["margin"], errors="coerce"))
    adversaries = [a for a in ADVERSARIES if (scores["adversary"] == a).any()]
    fig, axes = figure(ncols=max(len(adversaries), 1), nrows=2, width=7.0, height=4.8)
    rows = []
    for r, split in enumerate(SPLITS):
        for c, adversary in enumerate(adversaries):
            ax = axes[r][c]
            mask = (scores["adversary"] == adversary) & (scores["split"] == split)
            if adversary == "a_ade":
                mask &= np.isclose(scores["margin"].fillna(-1.0), margin if margin is not None else -1.0)
            part = scores[mask]
            ax.set_title(f"{_adversary_label(adversary, margin)}: {split}")
            if part.empty:
                _note(ax, "not audited")
                continue
            loss = -part["score"].to_numpy(dtype=float)
            bins, log = _loss_bins(loss)
            for member in (0, 1):
                values = loss[part["member"].to_numpy() == member]
                counts, _ = np.histogram(values, bins=bins)
                ax.hist(values, bins=bins, color=WORLD_COLOURS[member], alpha=0.45, histtype="stepfilled",
                        edgecolor=WORLD_COLOURS[member], linewidth=1.0)  # fmt: skip
                rows.append(pd.DataFrame({"split": split, "adversary": adversary, "member": member,
                                          "world": "M'" if member else "M", "bin_left": bins[:-1],
                                          "bin_right": bins[1:], "count": counts}))  # fmt: skip
            if log:
                ax.set_xscale("log")
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
            hit = shown[(shown["run"] == run) & (shown["adversary"] == adversary) & (shown["split"] == split)]
            if not hit.empty:
                box = {"facecolor": "white", "edgecolor": "none", "alpha": 0.8}
                ax.text(0.97, 0.95, _estimates_text(hit.iloc[0]), transform=ax.transAxes, ha="right", va="top",
                        fontsize=7, bbox=box)  # fmt: skip
            if r == len(SPLITS) - 1:
                ax.set_xlabel("loss of x_a (−score)")
            ax.set_ylabel("models" if c else f"{SPLIT_LABELS[split]}\nmodels")
    if not adversaries:
        _note(axes[0][0], "no scores")
    worlds = [Patch(facecolor=WORLD_COLOURS[m], alpha=0.5, label=WORLD_LABELS[m]) for m in (0, 1)]
    fig.legend(handles=worlds, loc="upper center", ncol=2, frameon=False, bbox_to_anchor=(0.5, 0.995))
    title = _panel_title(table, SETTING)
    footer = footer_text(**facts, **_provenance(table), shown=f"run {run}, {title}")
    _save(fig, pdf, footer, legend_rows=1)
    hist = pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=["split", "adversary", "member"])
    for column in ("epsilon", "epsilon_valid", "epsilon_mode"):
        of_run = shown[shown["run"] == run].set_index(["adversary", "split"])[column]
        hist[f"{column}_run"] = [of_run.get((a, s), np.nan) for a, s in zip(hist["adversary"], hist["split"])]
    hist["run"] = run
    out = hist.merge(summary, on=["adversary", "split"], how="left")
    return _write_csv(out, csv, figure_name="fig2", scale=facts["scale"])


# ------------------------------------------------------------------------------------------------- table 1


def _cell(mean: float, sd: float, runs: int) -> str:
    """"1.87 ± 0.21" (two or more runs), "1.87" (one), "n/a" (no finite ε̂)."""
    if not np.isfinite(mean):
        return "n/a"
    return f"{mean:.2f} ± {sd:.2f}" if runs > 1 else f"{mean:.2f}"


def _table1_columns(summary: pd.DataFrame) -> list[tuple[str, str, str]]:
    """Table 1's ε̂ columns as (split, suffix of the summary's columns, title): per split the drawn estimate
    (:func:`_headline`), then the other rule's where it differs. A title names the rule in
    :func:`hsaudit.audit.validity.rule_words`' words where it is not valid, or valid on the held-out split (a valid
    lower bound); a valid rule on the same split gets no tag (the caption: not a valid audit of a crafted sample
    under any rule)."""

    def title(split: str, rule: str, valid: bool) -> str:
        tagged = not valid or split == "held-out"
        return f"ε̂ {split}, {rule_words(rule, valid) if tagged else f'{rule} rule'}"

    out = []
    for split in SPLITS:
        part = summary[summary["split"] == split]
        if part.empty:
            continue
        first = part.iloc[0]
        out.append((split, "", title(split, first["rule"], bool(first["rule_valid"]))))
        if pd.notna(first["valid_threshold_rule"]) and first["rule"] != first["valid_threshold_rule"]:
            out.append((split, "_valid", title(split, first["valid_threshold_rule"], True)))
        elif first["rule"] != first["threshold_rule"]:
            out.append((split, "_mode", title(split, first["threshold_rule"], bool(first["mode_valid"]))))
    return out


def write_table1(
    table: pd.DataFrame, *, pdf: str | os.PathLike, csv: str | os.PathLike, facts: Mapping[str, Any]
) -> pd.DataFrame:
    """Table 1: ε̂ of a_ade (mean ± sd over runs) for every margin α, held-out and same, beside the paper's.

    Markdown (written to ``pdf``, the target's main output): a caption line (the setting, runs, δ), the table (α |
    held-out under the valid rule, then under the audit mode's | same under the mode's, then under the valid rule |
    paper; a split's second column only where the rules differ; settings that vary get a column of their own) and
    the footer line. Each ε̂ column names its rule, and "(valid)" marks the one that is a valid lower bound (the
    held-out split under a valid rule). Claim: ε̂ hardly depends on α (the paper: CIFAR-10, ε = 4).

    Returns:
        The CSV table: one row per setting × margin × split (:func:`summarise` columns, epsilon_paper,
        epsilon_paper_sd, figure, scale).
    """
    table = _check(table)
    table = table[table["adversary"] == "a_ade"]
    if table.empty:
        raise ValueError("table1 needs a_ade audits")
    summary = _with_paper(summarise(table), "table1")
    varying = [c for c in SETTING if summary[c].nunique(dropna=False) > 1]
    words = {"dataset": "dataset", "canary": "canary", "init": "init", "clip_norm": "C", "access": "access",
             "epsilon_theory": "ε", "craft_recipe": "recipe name", "recipe": "recipe"}  # fmt: skip
    columns = _table1_columns(summary)
    head = [words[c] for c in varying] + ["α", *(title for *_, title in columns), "paper (same models)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for _, part in summary.groupby([*varying, "margin"], sort=False, dropna=False):
        first = part.iloc[0]
        cells = [str(first[c]) if not isinstance(first[c], float) else f"{first[c]:g}" for c in varying]
        cells.append(f"{first['margin']:g}")
        for split, suffix, _ in columns:
            row = part[part["split"] == split]
            keys = [f"epsilon{suffix}", f"epsilon{suffix}_sd", f"runs_finite{suffix}"]
            cells.append(_cell(*row[keys].iloc[0]) if not row.empty else "–")
        paper = first["epsilon_paper"]
        cells.append(f"{paper:.2f} ± {first['epsilon_paper_sd']:.2f}" if np.isfinite(paper) else "–")
        lines.append("| " + " | ".join(cells) + " |")
    runs = _unique(summary, "runs", lambda v: str(int(v)))
    caption = (
        f"Table 1: ε̂ of a_ade (mean ± sd over {runs} run(s), δ = {_unique(table, 'delta', lambda v: f'{v:g}')}) "
        f"for each ADE margin α; {_panel_title(summary, SETTING) or 'several settings'}. Held-out: x_a scored on "
        "models it was not crafted on; same: crafted and scored on the same models (the paper's reading, not a valid "
        "audit under any rule). (valid): a valid lower bound at the audit's confidence. "
        "Paper: Yoon et al., Table 1 (CIFAR-10, ε = 4, 10 runs)."
    ) if "delta" in table else f"Table 1: ε̂ of a_ade (mean ± sd over {runs} run(s)) for each ADE margin α."
    footer = footer_text(**facts, **_provenance(table))
    text = caption + "\n\n" + "\n".join(lines) + "\n\n" + footer
    write_text_atomic(pdf, text + "\n")
    return _write_csv(summary, csv, figure_name="table1", scale=facts["scale"])


# ------------------------------------------------------------------------------------------------ inputs


SCORE_COLUMNS = ("model_index", "member", "score")
"""The per-model columns of a scores file beside the keys of its audit row (run, adversary, margin, split)."""
_ROW_KEYS = ("point_audit", "run", "adversary", "margin", "split")


def runs_table(frames: Sequence[pd.DataFrame], points: Sequence[Mapping[str, Any]], *, figure: str) -> pd.DataFrame:
    """The rows of a figure's runs, in point order: ``frames`` holds one frame per run of every point (``runs``
    of each, as :meth:`hsaudit.experiments.yoon.plan.YoonPlan.audit_paths` lists them), each marked with the
    figure, its audit's key (``point_audit``) and its recipe's name (``craft_recipe``; the rows hold its options,
    in ``recipe``)."""
    out, start = [], 0
    for point in points:
        runs = int(point["runs"])
        if start + runs > len(frames):
            raise ValueError(f"{figure}: {len(frames)} run tables for points that need {start + runs} or more")
        for frame in frames[start : start + runs]:
            out.append(frame.assign(figure=figure, point_audit=point["audit"],
                                    craft_recipe=point["values"].get("craft_recipe", "paper")))  # fmt: skip
        start += runs
    if start != len(frames):
        raise ValueError(f"{figure}: {len(frames)} run tables for points that need {start}")
    return pd.concat(out, ignore_index=True)


def with_scores(runs: pd.DataFrame, scores: pd.DataFrame) -> pd.DataFrame:
    """The per-model scores (:func:`runs_table` of the ``run<r>_scores.csv`` frames), each with the columns of its
    audit row in ``runs`` (a score without its audit row is an error)."""
    rows = runs.drop(columns=[c for c in SCORE_COLUMNS if c in runs.columns])
    keep = [*_ROW_KEYS, *SCORE_COLUMNS]
    missing = [c for c in keep if c not in scores.columns]
    if missing:
        raise ValueError(f"the scores have no column {missing[0]!r}")
    merged = scores[keep].merge(rows, on=list(_ROW_KEYS), how="left", validate="many_to_one", indicator=True)
    if (merged["_merge"] != "both").any():
        raise ValueError("some scores have no audit row")
    return merged.drop(columns="_merge")


def _split_scores(table: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(:func:`with_scores`' table →) the audit rows, in order of appearance, and the per-model scores."""
    missing = [c for c in SCORE_COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(f"fig2 needs the per-model scores: the table has no column {missing[0]!r}")
    if table.empty:
        raise ValueError("fig2 needs the per-model scores: the table is empty")
    keys = [c for c in _ROW_KEYS if c in table.columns]
    rows = table.drop(columns=list(SCORE_COLUMNS)).drop_duplicates(subset=keys).reset_index(drop=True)
    return rows, table[["run", "adversary", "margin", "split", *SCORE_COLUMNS]].reset_index(drop=True)


# ------------------------------------------------------------------------------------------------ registry

FIGURES: dict[str, Callable[..., pd.DataFrame]] = {
    "fig2": plot_loss_histograms,
    **{name: partial(plot_epsilon_bars if spec.group_by else plot_epsilon_curves, figure_name=name)
       for name, spec in SPECS.items()},  # fmt: skip
    "table1": write_table1,
}
"""Every Yoon et al. target by figure id, each ``fn(table, *, pdf, csv, facts)`` → its CSV table."""
