"""The result tables of a target, rendered from the pipeline's CSVs, for the results journal (docs/journal/).

    python scripts/journal_tables.py TARGET [TARGET ...] [--results results] [--rule divergent]
    python scripts/journal_tables.py --list

TARGET is a figure or table as the workflow names it, without ``results/`` and the suffix: ``fig3``, ``fig1c``,
``table2``, ``steinke/fig2``, ``yoon/fig3``, ``yoon/crafting_runs`` (the per-run rows, as paired differences against
a_c), ``yoon/fig6_contrasts`` (the same rows, as differences between the figure's points), ``one_run/fig1``,
``annamalai/fig2``, ``byo/example`` (its report).
Each is read from ``RESULTS/<target>.csv`` (or the Markdown table the pipeline wrote, ``RESULTS/<target>.md``, and a
byo audit's ``RESULTS/byo/<name>/report.md``) and printed as Markdown on stdout, so a journal entry is regenerated
by a command instead of pasted: after a rerun, run the entry's command and replace its tables. Nothing is written.

Every table names the audit rule of each estimate and whether it is a valid bound (``paper`` and
``all_thresholds``, the best threshold on all scores, are not; ``held-out``, ``crossing``, ``rays``, ``grid``,
``bonferroni`` are; ``none`` is an accountant's number, not an audit). A verdict on a paper's claim is made from the
valid columns only (docs/audit.md).

Exit status: 0 when every target was found, 2 when one was not (the others are still printed).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from hsaudit.accounting.gaussian import gdp_epsilon
from hsaudit.audit.validity import RULE_VALID

# --------------------------------------------------------------------------------------------------------------
# validity of an audit rule, as the CSVs name it
# --------------------------------------------------------------------------------------------------------------
_OTHER_MODES = {
    "all_thresholds": "not valid",  # Steinke et al.'s σ̂ audit under the paper's rule (every threshold's point)
    "held_out": "valid",  # the σ̂ audit's held-out rule
    "none": "accountant",  # an upper bound or a heuristic, not an audit
    "exact_rates": "R → ∞ limit",  # an audit applied to the exact error rates (no sampling)
}


def validity(mode: object) -> str:
    """"valid", "not valid", "accountant", … for a rule as a CSV's ``threshold_rule`` column spells it (its spec;
    a name in CSVs written before, whose columns were ``mode`` / ``audit_mode``)."""
    name = str(mode).partition("@")[0]
    if name in RULE_VALID:
        return "valid" if RULE_VALID[name] else "not valid"
    return _OTHER_MODES.get(name, "?")


def rule_column(table: pd.DataFrame, *, valid: bool = False) -> str | None:
    """The column of ``table`` that names its audit's rule (``valid``: the valid companion's): ``threshold_rule`` /
    ``valid_threshold_rule``, or in CSVs written before ``mode`` (``audit_mode``, ``gdp_mode``) / ``valid_mode``;
    None when it has none."""
    names = ("valid_threshold_rule", "valid_mode") if valid else ("threshold_rule", "mode", "audit_mode", "gdp_mode")
    return next((name for name in names if name in table), None)


# --------------------------------------------------------------------------------------------------------------
# formatting
# --------------------------------------------------------------------------------------------------------------
def _num(x: object, digits: int = 3) -> str:
    """A number as the tables print it: integers as they are, floats with ``digits`` decimals below 100, ∞ and –
    for inf and NaN."""
    if isinstance(x, (bool, np.bool_)):
        return str(x)
    if isinstance(x, (int, np.integer)):
        return f"{int(x):,}" if abs(int(x)) >= 10_000 else str(int(x))
    try:
        v = float(x)
    except (TypeError, ValueError):
        return str(x)
    if np.isnan(v):
        return "–"
    if np.isinf(v):
        return "∞" if v > 0 else "−∞"
    return f"{v:.{digits}f}" if abs(v) < 100 else f"{v:,.1f}"


def _mean_sd(values: pd.Series, digits: int = 3) -> str:
    values = values.astype(float)
    if len(values) == 1:
        return _num(values.iloc[0], digits)
    return f"{_num(values.mean(), digits)} ± {_num(values.std(), digits)}"


def markdown(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table (a line break inside a cell, e.g. a two-line panel title, becomes a space)."""
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c).replace("\n", " ") for c in row) + " |" for row in rows]
    return "\n".join(out)


def _facts(table: pd.DataFrame) -> str:
    """The line under a table: scale, data source, runs per world when the CSV records them."""
    parts = []
    for col, label in (("scale", "scale"), ("data_source", "data"), ("runs_per_world", "R per world"),
                       ("models_per_world", "models per world"), ("runs", "R (both worlds)"),
                       ("confidence", "confidence"), ("delta", "δ")):  # fmt: skip
        if col in table and table[col].notna().any() and table[col].nunique() <= 4:
            vals = sorted({f"{v:g}" if isinstance(v, float) else str(v) for v in table[col].dropna()})
            parts.append(f"{label} {', '.join(vals)}")
    return ("*" + "; ".join(parts) + "*") if parts else ""


# --------------------------------------------------------------------------------------------------------------
# renderers, one per table shape
# --------------------------------------------------------------------------------------------------------------
def step_table(table: pd.DataFrame) -> str:
    """Cebere et al.'s trained-model figures (one row per adversary, repetition, step): per panel, adversary and
    rule, ε̂ at a few steps, at the last step T (mean ± sd over repetitions, each repetition's value in brackets),
    the assumption-free ε and the upper bound there, and the mean ε̂/bound over the last fifth of the steps (and the
    same two of the valid rule's ε̂ when the CSV carries one beside a rule that is not valid). When the panels end
    at different T, the steps shown are named in each cell."""
    label = "label" if "label" in table else "adversary"
    mode = rule_column(table)
    keys = [c for c in ("panel", label) if c in table]
    keys += [c for c in ("theta0",) if c in table and table[c].nunique() > 1] + ([mode] if mode else [])
    groups = [(dict(zip(keys, k if isinstance(k, tuple) else (k,))), g) for k, g in table.groupby(keys, sort=False)]
    uniform = len({int(g["step"].max()) for _, g in groups}) == 1
    last = int(table["step"].max())
    marks = _marks(table["step"], last)
    extra = [c for c in keys if c not in ("panel", label, mode)]
    header = ["panel"] if "panel" in table else []
    header += ["adversary", *extra, "reps"]
    if uniform:
        header += [*(f"ε̂ step {s}" for s in marks), f"ε̂ step {last} (mean ± sd)", f"assumption-free ε step {last}",
                   f"bound step {last}", f"mean ε̂/bound, steps ≥ {int(0.8 * last)}"]  # fmt: skip
    else:
        header += ["T", "ε̂ at earlier steps", "ε̂ at T (mean ± sd)", "assumption-free ε at T", "bound at T",
                   "mean ε̂/bound, last fifth"]  # fmt: skip
    header += ["rule", "valid"]
    has_valid = "epsilon_valid" in table and "rule_valid" in table and not table["rule_valid"].astype(bool).all()
    if has_valid:  # the valid rule's ε̂ of the same scores (audit.valid_mode), beside a rule that is not valid
        valid_names = table[rule_column(table, valid=True)].astype(str)
        header += [f"valid ε̂ at T, {', '.join(sorted(set(valid_names)))} (mean ± sd)",
                   "valid mean ε̂/bound, last fifth"]
    rows = []
    for group, g in groups:
        t_end = int(g["step"].max())
        g_marks = marks if uniform else _marks(g["step"], t_end)
        end = g[g["step"] == t_end]
        end = end.sort_values("rep") if "rep" in end else end
        reps = g["rep"].nunique() if "rep" in g else 1
        cell = _mean_sd(end["epsilon"], 2)
        if 1 < reps <= 10:
            cell += " (" + ", ".join(_num(v, 2) for v in end["epsilon"]) + ")"
        tail = g[g["step"] >= 0.8 * t_end]
        ratio = (tail["epsilon"] / tail["epsilon_upper"]).replace([np.inf, -np.inf], np.nan).mean()
        earlier = [_num(g.loc[g["step"] == s, "epsilon"].mean(), 2) for s in g_marks]
        row = [group["panel"]] if "panel" in group else []
        row += [group[label], *(group[c] for c in extra), reps]
        if uniform:
            row += earlier
        else:
            row += [t_end, ", ".join(earlier) + " (t = " + ", ".join(str(s) for s in g_marks) + ")"]
        row += [cell, _num(end["epsilon_free"].mean(), 2) if "epsilon_free" in end else "–",
                _num(end["epsilon_upper"].iloc[0], 2), _num(ratio, 3)]
        row += [group[mode], validity(group[mode])] if mode else ["?", "?"]
        if has_valid:
            cell = _mean_sd(end["epsilon_valid"], 2)
            if 1 < reps <= 10:
                cell += " (" + ", ".join(_num(v, 2) for v in end["epsilon_valid"]) + ")"
            valid_ratio = (tail["epsilon_valid"] / tail["epsilon_upper"]).replace([np.inf, -np.inf], np.nan).mean()
            row += [cell, _num(valid_ratio, 3)]
        rows.append(row)
    return markdown(header, rows)


def _marks(steps: pd.Series, last: int) -> list[int]:
    """The first recorded step and those nearest to T/5 and 2T/5 (fig1c's 1, 50 and 100 of 250), T left out."""
    return sorted({int(steps.min()), *_nearest_steps(steps, last)} - {last})


def _nearest_steps(steps: pd.Series, last: int) -> list[int]:
    """The recorded steps nearest to T/5 and 2T/5 (fig1c's 50 and 100 of 250)."""
    recorded = np.unique(steps.astype(int))
    return [int(recorded[np.abs(recorded - f * last).argmin()]) for f in (0.2, 0.4)]


def method_table(table: pd.DataFrame) -> str:
    """Steinke et al.'s tables (one row per setting and method): a setting per row, a method per column, each
    column named with its audit rule and whether it is valid."""
    index = [c for c in ("panel", "background", "batch_size", "sampling_rate", "noise_multiplier", "steps")
             if c in table and table[c].nunique() > 1 or c == "steps"]  # fmt: skip
    index = [c for c in index if c in table]
    rule = rule_column(table)
    modes = table.groupby("method", sort=False)[rule].first() if rule else None
    methods = list(dict.fromkeys(table["method"]))
    wide = table.pivot_table(index=index, columns="method", values="epsilon", aggfunc="first", sort=False)
    header = [*index]
    for m in methods:
        header.append(f"{m} ({modes[m]}: {validity(modes[m])})" if modes is not None else m)
    rows = [[*(_num(v, 4) if isinstance(v, float) else v for v in (k if isinstance(k, tuple) else (k,))),
             *(_num(r.get(m), 2) for m in methods)] for k, r in wide.iterrows()]  # fmt: skip
    return markdown(header, rows)


def one_run_table(table: pd.DataFrame) -> str:
    """The one-run study: one row per point (one-run bounds by models M and score, population audits by R), with
    the validity of each bound (the one-run bounds are valid; a population audit's is its rule's), then, where the
    CSV has a valid population point, the one-run bounds of every M and score as a percentage of it
    (:func:`one_run_against_population`)."""
    cols = [c for c in ("family", "method", "score", "models", "runs_per_world", "model_steps", "canaries", "epsilon",
                        "mu", "guesses", "correct", "bound") if c in table]  # fmt: skip

    def valid(bound: object) -> str:
        rule = re.search(r"rule (\S+?),", str(bound))
        return validity(rule.group(1)) if rule else "valid"

    text = ("family", "method", "score", "bound")
    out = markdown([*cols, "valid"], [[*(_num(r[c]) if c not in text else r[c] for c in cols), valid(r.get("bound"))]
                                      for _, r in table.iterrows()])  # fmt: skip
    against = one_run_against_population(table)
    return out if against is None else out + "\n\n" + against


def one_run_against_population(table: pd.DataFrame) -> str | None:
    """Per family, M and score: the counting and f-DP ε̂ of the one-run point, its model-steps as a fraction of the
    largest valid population's, and the better of the two bounds as a percentage of that population's valid ε̂
    (``population: GDP, valid rule`` at its largest R); the ceiling's ideal canaries are the rows of score
    ``ideal``. None when the CSV has no valid population point."""
    if "score" not in table:
        return None
    pops = table[table["method"] == "population: GDP, valid rule"]
    if pops.empty:
        return None
    rows = []
    for family, part in table.groupby("family", sort=False):
        pop = pops[pops["family"] == family]
        if pop.empty:
            continue
        ref = pop.loc[pop["model_steps"].idxmax()]
        one = part[part["method"].str.startswith(("one run", "ceiling"))]
        for (score, models), group in one.groupby(["score", "models"], sort=False):
            eps = {"counting" if "counting" in m else "f-DP": float(e) for m, e in zip(group["method"], group["epsilon"])}
            steps = float(group["model_steps"].max())
            best = max(eps.values()) if not all(np.isnan(v) for v in eps.values()) else np.nan
            rows.append([family, score, _num(int(models)), _num(int(steps)), f"{steps / ref['model_steps']:.3f}",
                         _num(eps.get("counting", np.nan), 2), _num(eps.get("f-DP", np.nan), 2),
                         "–" if np.isnan(best) else f"{100 * best / ref['epsilon']:.0f} %"])  # fmt: skip
    header = ["family", "score", "M", "model-steps", "÷ population's", "counting ε̂", "f-DP ε̂",
              f"best, % of valid population ε̂ (R = {int(pops['models'].max()):,})"]  # fmt: skip
    return markdown(header, rows)


def yoon_table(table: pd.DataFrame) -> str:
    """Yoon et al.'s figures (one row per series, adversary, margin and split): the drawn ε̂ mean ± sd over the runs
    with its rule and validity (``rule``: the valid rule on the held-out split, the audit mode on the same split;
    ``mode`` in CSVs written before), then, where the CSV has them, the valid rule's and the audit mode's ε̂ of the
    same scores, and the paper's value."""
    setting = [c for c in ("dataset", "canary", "init", "clip_norm", "access", "epsilon_theory", "craft_recipe")
               if c in table and table[c].nunique() > 1]  # fmt: skip
    keys = [*setting, *(c for c in ("adversary", "margin", "split") if c in table)]
    rule = "rule" if "rule" in table else rule_column(table)
    others = [(f"ε̂ {name}", column, by) for name, column, by in
              (("valid rule", "epsilon_valid", rule_column(table, valid=True)),
               ("audit mode", "epsilon_mode", rule_column(table)))
              if column in table and by in table]  # fmt: skip
    header = [*keys, "ε̂ (mean ± sd)", "rule", "valid", *(name for name, *_ in others), "runs", "models per world",
              "paper"]  # fmt: skip
    rows = []
    for _, r in table.iterrows():
        paper = _mean_sd(pd.Series([r["epsilon_paper"]]), 2) if pd.notna(r.get("epsilon_paper")) else "–"
        if pd.notna(r.get("epsilon_paper_sd")):
            paper += f" ± {_num(r['epsilon_paper_sd'], 2)}"
        other = [f"{_num(r[c], 2)} ± {_num(r.get(f'{c}_sd', np.nan), 2)} ({r[by]})" for _, c, by in others]
        rows.append([*(r[k] if pd.notna(r[k]) else "–" for k in keys),
                     f"{_num(r['epsilon'], 2)} ± {_num(r.get('epsilon_sd', np.nan), 2)}", r.get(rule, "?"),
                     validity(r.get(rule, "?")), *other, _num(r.get("runs")), _num(r.get("models_per_world")),
                     paper])  # fmt: skip
    return markdown(header, rows)


def _established(lo: float, hi: float) -> str:
    """An interval's verdict on a difference: "higher" or "lower" when it excludes 0, else "not established"."""
    if not (np.isfinite(lo) and (lo > 0 or hi < 0)):
        return "not established"
    return "higher" if lo > 0 else "lower"


def _point(key: object) -> str:
    """A figure's point as its groupby key prints (one value, or several joined)."""
    return ", ".join(map(str, key if isinstance(key, tuple) else (key,)))


def yoon_paired_table(table: pd.DataFrame) -> str:
    """A Yoon figure's per-run CSV (``<figure>_runs.csv``: one audit row per run, recipe, adversary, margin and split)
    as paired comparisons against the canary on the held-out split under the valid rule: per recipe and crafted
    sample, ε̂ mean ± sd over the runs, the paired difference x_a − a_c (same run, same audit) mean ± sd with its 95 %
    t interval and whether that interval excludes 0, the kept step and ‖x_a − x_c‖₂ where the CSV has them."""
    held = table[table["split"] == "held-out"].copy()
    value, rule = (("epsilon_valid", rule_column(held, valid=True)) if "epsilon_valid" in held
                   else ("epsilon", rule_column(held)))
    recipe = "craft_recipe" if "craft_recipe" in held else None
    held["_margin"] = held["margin"].fillna(-1.0)
    keys = [*([recipe] if recipe else []), "point_audit"] if "point_audit" in held else ([recipe] if recipe else [])
    # The figure's own axis (ε, canary type, C, …): the columns that tell its series apart, as in yoon_table.
    setting = [c for c in ("dataset", "canary", "init", "clip_norm", "access", "epsilon_theory")
               if c in held and held[c].nunique() > 1]  # fmt: skip
    header = [*(["recipe"] if recipe else []), *setting, "sample", "ε̂ (mean ± sd)", "rule", "valid",
              "x_a − a_c, paired", "95 % interval", "established", "kept step", "‖x_a − x_c‖₂", "runs"]  # fmt: skip
    rows = []
    for _, group in held.groupby(keys, sort=False) if keys else [(None, held)]:
        canary = group[group["adversary"] == "a_c"].set_index("run")[value]
        for (adversary, margin), part in group.groupby(["adversary", "_margin"], sort=False):
            mine = part.set_index("run")[value]
            label = adversary if margin < 0 else f"{adversary} (α = {margin:g})"
            cells = [*([part[recipe].iloc[0]] if recipe else []), *(part[c].iloc[0] for c in setting), label,
                     _mean_sd(mine, 2), part[rule].iloc[0], validity(part[rule].iloc[0])]  # fmt: skip
            if adversary == "a_c" or canary.empty:
                cells += ["–", "–", "–"]
            else:
                diff = (mine - canary.reindex(mine.index)).dropna()
                n = len(diff)
                mean, sd = float(diff.mean()), float(diff.std()) if n > 1 else float("nan")
                half = float(stats.t.ppf(0.975, n - 1) * sd / np.sqrt(n)) if n > 1 else float("nan")
                lo, hi = mean - half, mean + half
                cells += [f"{_num(mean, 2)} ± {_num(sd, 2)}", f"[{_num(lo, 2)}, {_num(hi, 2)}]", _established(lo, hi)]
            steps = sorted({int(v) for v in part["selected_step"].dropna()}) if "selected_step" in part else []
            cells.append(", ".join(map(str, steps)) if steps and adversary != "a_c" else "–")
            has_distance = "distance" in part and part["distance"].notna().any() and adversary != "a_c"
            cells.append(_mean_sd(part["distance"].dropna(), 2) if has_distance else "–")
            cells.append(_num(part["run"].nunique()))
            rows.append(cells)
    return markdown(header, rows)


def yoon_contrast_table(table: pd.DataFrame) -> str:
    """A Yoon figure's per-run CSV (``<figure>_runs.csv``) as contrasts between its points (canary types, clipping
    norms, …) for each sample: the difference of the ε̂ means (held-out split, valid rule) of every pair of points,
    Welch's t interval (95 %; the points' populations are trained apart, so runs are not paired across points) and
    whether it excludes 0. Pairs are in the figure's order: first point minus second."""
    held = table[table["split"] == "held-out"].copy()
    value = "epsilon_valid" if "epsilon_valid" in held else "epsilon"
    held["_margin"] = held["margin"].fillna(-1.0)
    setting = [c for c in ("dataset", "canary", "init", "clip_norm", "access", "epsilon_theory")
               if c in held and held[c].nunique() > 1]  # fmt: skip
    if not setting:
        return "(one point: nothing to contrast)"
    header = ["sample", "first", "second", "first − second", "95 % interval (Welch)", "established", "runs"]
    rows = []
    for (adversary, margin), part in held.groupby(["adversary", "_margin"], sort=False):
        points = list(part.groupby(setting, sort=False))
        label = adversary if margin < 0 else f"{adversary} (α = {margin:g})"
        for i, (first, a) in enumerate(points):
            for second, b in points[i + 1:]:
                x, y = a[value].to_numpy(float), b[value].to_numpy(float)
                diff = float(x.mean() - y.mean())
                if len(x) > 1 and len(y) > 1 and (x.std() > 0 or y.std() > 0):
                    ci = stats.ttest_ind(x, y, equal_var=False).confidence_interval(0.95)
                    lo, hi = float(ci.low), float(ci.high)
                else:
                    lo = hi = float("nan")
                rows.append([label, _point(first), _point(second), _num(diff, 2), f"[{_num(lo, 2)}, {_num(hi, 2)}]",
                             _established(lo, hi), f"{len(x)}, {len(y)}"])  # fmt: skip
    return markdown(header, rows)


def annamalai_fig1_table(table: pd.DataFrame) -> str:
    """Annamalai's fig1: per setting the all-iterates ε and the linear (last-iterate) ε of the construction."""
    cols = [c for c in ("setting", "noise_multiplier", "sampling_rate", "steps", "epsilon_all_iterates",
                        "epsilon_linear", "runs_per_world", "encoding_base", "max_below_se", "max_above_se")
            if c in table]  # fmt: skip
    per = table.groupby("setting", sort=False)[cols].first()
    return markdown(cols, [[_num(v) if not isinstance(v, str) else v for v in r] for _, r in per.iterrows()])


def columns_table(columns: Sequence[str]) -> Callable[[pd.DataFrame], str]:
    """A renderer that prints the given columns (those present) of every row."""

    def render(table: pd.DataFrame) -> str:
        cols = [c for c in columns if c in table]
        return markdown(cols, [[_num(r[c]) if not isinstance(r[c], str) else r[c] for c in cols]
                               for _, r in table.iterrows()])  # fmt: skip

    return render


def curve_summary(keys: Sequence[str], values: Sequence[str]) -> Callable[[pd.DataFrame], str]:
    """A renderer for curve CSVs (many rows per curve): the first row's ``values`` per group of ``keys``, with the
    rule of the audit and its validity when the CSV names it (:func:`rule_column`)."""

    def render(table: pd.DataFrame) -> str:
        k = [c for c in keys if c in table]
        v = [c for c in values if c in table]
        mode = rule_column(table)
        per = table.groupby(k, sort=False)[v + ([mode] if mode else [])].first().reset_index()
        header = [*k, *v] + (["rule", "valid"] if mode else [])
        rows = [[*(_num(r[c]) if not isinstance(r[c], str) else r[c] for c in (*k, *v)),
                 *((r[mode], validity(r[mode])) if mode else ())] for _, r in per.iterrows()]  # fmt: skip
        return markdown(header, rows)

    return render


def any_table(table: pd.DataFrame, *, max_rows: int = 60) -> str:
    """Any CSV: its rows as they are (the first ``max_rows``)."""
    text = markdown(list(table.columns), [[_num(v) if not isinstance(v, str) else v for v in r]
                                          for _, r in table.head(max_rows).iterrows()])  # fmt: skip
    if len(table) > max_rows:
        text += f"\n\n({len(table) - max_rows} more rows in the CSV)"
    return text


# --------------------------------------------------------------------------------------------------------------
# Section 6 of Cebere et al. (the tables docs/section6.md shows)
# --------------------------------------------------------------------------------------------------------------
def fig3_table(table: pd.DataFrame, *, rule: str = "divergent") -> str:
    """σ | bound | B | ε̂(t=1) | ε̂(t=T) | ratio | AF max | GDP limit | exact | exact ratio (means ± sd over reps)."""
    rows = table[(table["panel"] == "a") & (table["rule"] == rule)] if "panel" in table else table[table["rule"] == rule]
    last = int(rows["step"].max())
    mode = rows[rule_column(rows)].iloc[0] if rule_column(rows) else "?"
    header = ["σ", "bound", "B", "ε̂(t=1)", f"ε̂(t={last})", "ratio", f"AF max (t={last})",
              f"GDP limit (t={last})", f"exact (t={last})", "exact ratio"]  # fmt: skip
    out = []
    for (sigma, batch), g in rows.groupby(["sigma", "batch_size"]):
        first, end = g[g["step"] == 1], g[g["step"] == last]
        e1, e_last = first["epsilon_audit"], end["epsilon_audit"]
        exact1, exact_last = first["epsilon_exact"].iloc[0], end["epsilon_exact"].iloc[0]
        out.append([f"{sigma:g}", f"{end['epsilon_upper'].iloc[0]:.3f}", batch, f"{e1.mean():.3f} ± {e1.std():.3f}",
                    f"{e_last.mean():.3f} ± {e_last.std():.3f}", f"{e_last.mean() / e1.mean():.2f}",
                    f"{end['epsilon_assumption_free_max'].mean():.3f}", f"{end['epsilon_gdp_limit'].iloc[0]:.3f}",
                    f"{exact_last:.3f}", f"{exact_last / exact1:.2f}"])  # fmt: skip
    note = f"ε̂: GDP audit, rule `{mode}` ({validity(mode)}); exact and GDP limit are not estimates."
    return markdown(header, out) + "\n\n" + note


def fig6b_table(table: pd.DataFrame) -> str:
    """B | μ̂ | ε̂ | exact ε, one row per B (the audit's point of each curve)."""
    cols = {"batch_size", "mu", "epsilon_audit", "epsilon_exact"}
    if not cols <= set(table.columns):
        return f"(fig6b.csv lacks {sorted(cols - set(table.columns))})"
    per_b = table.groupby("batch_size")[["mu", "epsilon_audit", "epsilon_exact"]].first()
    return markdown(["B", "μ̂", "ε̂", "exact ε"],
                    [[b, f"{r['mu']:.3f}", f"{r['epsilon_audit']:.3f}", f"{r['epsilon_exact']:.3f}"]
                     for b, r in per_b.iterrows()])  # fmt: skip


def fig6c_table(table: pd.DataFrame) -> str:
    """The threshold search against h*: per (B, σ) the search's max ε̂, ε̂ at h*, the best grid h, exact ε."""
    header = ["B", "σ", "bound", "search max ε̂", "ε̂ at h*", "best grid h (mean ε̂)", "exact ε at h*",
              "exact ε range over grid h", "argmax_h of R→∞ audit limit"]  # fmt: skip
    out = []
    for (batch, sigma), g in table.groupby(["batch_size", "sigma"]):
        grid, star = g[g["candidate"] == "grid"], g[g["candidate"] == "h*"]
        search = grid.groupby("rep")["epsilon_audit"].max()
        at_star = star["epsilon_audit"]
        by_h = grid.groupby("h")
        best_h = by_h["epsilon_audit"].mean().idxmax()
        exact_grid = by_h["epsilon_exact"].first()
        limit_h = by_h["mu_limit"].first().idxmax()
        delta = float(g["delta"].iloc[0]) if "delta" in g else 1e-5
        bound = gdp_epsilon(mu=1.0 / float(sigma), delta=delta)  # one step of the Gaussian mechanism (fig3's bound)
        out.append([batch, f"{sigma:g}", f"{bound:.3f}", f"{search.mean():.3f} ± {search.std():.3f}",
                    f"{at_star.mean():.3f} ± {at_star.std():.3f}", "∞" if np.isinf(best_h) else f"{best_h:.2f}",
                    f"{star['epsilon_exact'].iloc[0]:.3f}", f"{exact_grid.min():.3f}–{exact_grid.max():.3f}",
                    f"{limit_h:.2f}"])  # fmt: skip
    mode = table[rule_column(table)].iloc[0] if rule_column(table) else "?"
    return markdown(header, out) + f"\n\nε̂: GDP audit, rule `{mode}` ({validity(mode)})."


# --------------------------------------------------------------------------------------------------------------
# targets
# --------------------------------------------------------------------------------------------------------------
STEP_FIGURES = ("fig1c", "fig4", "fig7", "fig1", "fig2", "fig5", "fig12", "fig13")

#: (target pattern, renderer of its CSV); the first match wins. Markdown targets are printed as the pipeline made
#: them (see :func:`render`).
RENDERERS: tuple[tuple[str, Callable[..., str]], ...] = (
    (r"fig3|fig14", fig3_table),
    (r"fig6b", fig6b_table),
    (r"fig6c", fig6c_table),
    ("|".join(STEP_FIGURES), step_table),
    (r"fig11", curve_summary(("period", "curve"), ("step", "mu", "runs", "reps"))),
    (r"fig6a", curve_summary(("model", "adversary", "period", "clip_norm"), ("step", "mu", "mu_upper", "runs"))),
    (r"fig8", columns_table(("model", "step", "runs", "mean", "sd", "lower", "upper", "world", "data_source"))),
    (r"steinke/fig[12346]", method_table),
    (r"steinke/fig4_spread", columns_table(("steps", "canary", "canaries", "threshold_rule", "audit_mode", "mean",
                                            "sd", "min", "max", "heuristic", "standard", "values"))),  # fmt: skip
    (r"steinke/fig5", columns_table(("sampling_rate", "noise_multiplier", "one_step_epsilon", "rounding_direction",
                                     "steps", "epsilon_quadratic", "epsilon_quadratic_exact", "epsilon_linear_max",
                                     "ratio", "ratio_exact", "ratio_other_direction"))),  # fmt: skip
    (r"one_run/fig1", one_run_table),
    (r"annamalai/fig1", annamalai_fig1_table),
    (r"annamalai/fig2", columns_table(("sampling_rate", "steps", "epsilon", "noise_multiplier", "update",
                                       "base_rule", "method", "tail_floor", "mean", "sd", "n", "wrap_rate_out", "wrap_rate_in",
                                       "epsilon_within_2sd"))),  # fmt: skip
    (r"yoon/(fig[3-8]|crafting)", yoon_table),
    (r"yoon/(fig[3-8]|crafting)_runs", yoon_paired_table),
    (r"yoon/fig[3-8]_contrasts", yoon_contrast_table),
)
CONTRASTS = "_contrasts"
"""A target ``yoon/figN_contrasts`` reads ``yoon/figN_runs.csv`` (:func:`yoon_contrast_table`)."""
MARKDOWN_TARGETS = (r"table2", r"steinke/table[12]", r"yoon/table1")


def render(target: str, results: Path, *, rule: str = "divergent") -> str:
    """The Markdown of one target: a heading, the table(s), the facts line.

    Raises:
        FileNotFoundError: neither the target's CSV nor its Markdown table is under ``results``.
    """
    target = re.sub(r"^results/|\.(pdf|csv|md)$", "", target)
    heading = f"#### {target}"
    if target.startswith("byo/"):
        report = results / target / "report.md"
        if not report.exists():
            raise FileNotFoundError(report)
        return f"{heading} (`{report}`)\n\n" + report.read_text().strip()
    if any(re.fullmatch(p, target) for p in MARKDOWN_TARGETS) and (results / f"{target}.md").exists():
        return f"{heading} (as the pipeline wrote it)\n\n" + (results / f"{target}.md").read_text().strip()
    path = results / f"{target.removesuffix(CONTRASTS) + '_runs' if target.endswith(CONTRASTS) else target}.csv"
    if not path.exists():
        raise FileNotFoundError(path)
    table = pd.read_csv(path)
    for pattern, make in RENDERERS:
        if re.fullmatch(pattern, target):
            body = make(table, rule=rule) if make is fig3_table else make(table)
            break
    else:
        body = any_table(table)
    facts = _facts(table)
    return "\n\n".join(part for part in (heading, body, facts) if part)


def known_targets() -> list[str]:
    return [p for p, _ in RENDERERS] + list(MARKDOWN_TARGETS) + ["byo/NAME", "(any other: its CSV as it is)"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="*", help="figure or table ids: fig3, steinke/fig2, yoon/table1, byo/NAME …")
    parser.add_argument("--results", type=Path, default=Path("results"), help="the results folder (default: results)")
    parser.add_argument("--rule", default="divergent", help="Section 6 sign rule of the fig3/fig14 table")
    parser.add_argument("--list", action="store_true", help="print the target patterns with a renderer and exit")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(known_targets()))
        return 0
    if not args.targets:
        parser.error("name at least one target (or --list)")
    status = 0
    for target in args.targets:
        try:
            print(render(target, args.results, rule=args.rule) + "\n")
        except FileNotFoundError as err:
            print(f"journal_tables: {target}: no {err.args[0]}", file=sys.stderr)
            status = 2
    return status


if __name__ == "__main__":
    sys.exit(main())
