"""Steinke, Nasr et al., the audit side of the trained-model targets: scores → tables.

Figures 2 and 4 and Tables 1 and 2 audit the scores of the training shards
(:mod:`hsaudit.experiments.steinke.train.images`, :mod:`hsaudit.experiments.steinke.train.language`) per T, beside the
heuristic and standard accounting. Per T, the scores after step T of the two worlds go through the one auditor
(:class:`hsaudit.audit.auditor.Auditor`):

* ``empirical_sigma_last_iterate`` — §3.1's audit: the adversary knows q and T and estimates σ (σ̂ = the largest σ
  whose last-iterate pair (Theorem 1) is consistent with every CP-bounded (FPR, FNR) point; ε̂ = heuristic ε(σ̂));
  the paper's rule (all thresholds, ``threshold_rule: all_thresholds``), which is *not* a valid 95 % bound;
* ``empirical_sigma_last_iterate_held_out`` — the same with one threshold chosen on half of the runs and its CP point
  from the other half (valid);
* ``empirical_gdp`` — the GDP audit of Nasr et al. 2023 (threshold rule ``audit.mode``; the paper's by default, which is
  *not* a valid bound);
* ``empirical_gdp_valid`` — the same GDP audit under a valid rule: ``audit.mode``'s when it is valid, else
  ``audit.valid_mode``'s (the crossing rule by default), so that every trained-model figure and table carries a
  valid estimate of the same scores beside the paper's;
* ``heuristic`` and ``standard`` — :func:`hsaudit.accounting.last_iterate.heuristic_epsilon` and
  :func:`~hsaudit.accounting.last_iterate.standard_epsilon` at (T, q, σ).

Every row says whether its ε is a valid lower bound (column ``valid``: True for the held-out σ̂ audit and
``empirical_gdp_valid``, and for ``empirical_gdp`` when its rule is valid; False for the paper-rule audits; empty for
the accounting rows), and which rule it used (``threshold_rule``: a GDP audit's rule spec; ``all_thresholds`` /
``held_out`` for the σ̂ audits, ``none`` for the accounting).

Score diagnostics per world (mean, variance, mean number of canary inclusions) are in every row: under the zero
background they must match :func:`hsaudit.experiments.steinke.train.images.zero_background_moments`.

Tables 1 and 2 put every accountant's standard (all-iterates) ε side by side (:func:`standard_epsilons`,
:data:`STANDARD_COLUMNS`): dp-accounting's PLD (``standard``) and RDP with the classic and the improved conversion,
each over the integer orders 2..256 and over Opacus' fractional grid; :func:`accountant_comparison` computes the
same columns for the paper's rows without any training (``scripts/steinke_accountants.py``), so that which accountant
the paper's printed standard ε came from can be judged from a command's output (docs/steinke.md).

Table 1's σ per row (:func:`privacy_plan`) is computed here too, once the number N of training blocks is known:
q = B/N, T = round(epochs · N/B) (App. D: "2 epochs ... for text"), and, without an explicit σ, the σ whose heuristic
ε_{T,q,σ}(δ) (Theorem 1) is the row's target (App. D: "calculating the noise parameters required to achieve a similar
privacy guarantee based on our heuristic"); :func:`table1` adds the final models' held-out perplexity.

This module imports the audit and accounting layers only: editing it reruns the audits and tables, never a training
job.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from hsaudit.accounting import last_iterate as H
from hsaudit.accounting import rdp as R
from hsaudit.audit.auditor import DEFAULT_RULE, Auditor, HeldOut, KnownFamily, Paper, ThresholdRule
from hsaudit.audit.validity import rule_words, valid_companion, with_valid
from hsaudit.util.schedule import training_steps
from hsaudit.util.seeding import derive_seed

METHODS = (
    "standard",
    "heuristic",
    "empirical_sigma_last_iterate",
    "empirical_sigma_last_iterate_held_out",
    "empirical_gdp",
    "empirical_gdp_valid",
)
COLUMNS = (
    "steps",
    "method",
    "epsilon",
    "mu",
    "sigma_hat",
    "threshold_rule",
    "valid",
    "confidence",
    "delta",
    "sampling_rate",
    "noise_multiplier",
    "runs_per_world",
    "model",
    "background",
    "data_source",
    "canary_dim",
    "mean_out",
    "var_out",
    "mean_in",
    "var_in",
    "inclusions_in",
)
# Figure 4's table: the canary is a label-flipped image (its label, not a coordinate), scores are −ℓ(θ_T; x*, y*),
# and the final models' test accuracy (both worlds) is recorded.
FIG4_COLUMNS = tuple(c for c in COLUMNS if c != "canary_dim") + ("canary_label", "test_accuracy_mean",
                                                                  "test_accuracy_sd", "n_test")


# fig4_spread's table: one block per canary (``panel``: dirac_0 …, label_flip_0 …; ``canary``: its type) with the
# Dirac canary's coordinate or the label-flipped image's index and label.
SPREAD_COLUMNS = ("panel", "canary", *FIG4_COLUMNS, "canary_dim", "canary_index")

_SCALARS = ("canary_dim", "canary_label", "canary_index", "sampling_rate", "batch_size", "n_train", "n_test")


def load_shards(paths: Sequence[str]) -> list[dict[str, np.ndarray]]:
    """The arrays of each training shard's ``.npz`` (what the fig2/fig4 training jobs write), in ``paths`` order."""
    out = []
    for path in paths:
        with np.load(path) as f:
            out.append({k: f[k] for k in f.files})
    return out


def split_shards(shards: Sequence[Mapping[str, np.ndarray]], counts: Sequence[int]) -> list[list]:
    """Cut a flat list of shards into consecutive groups of ``counts[i]`` (a rule's input lists each row's, or
    each background's, shards in turn).

    Raises:
        ValueError: the counts do not add up to the number of shards.
    """
    counts = [int(c) for c in counts]
    if sum(counts) != len(shards):
        raise ValueError(f"{len(shards)} shards cannot be split into groups of {counts}")
    ends = np.cumsum([0, *counts])
    return [list(shards[a:b]) for a, b in zip(ends[:-1], ends[1:])]


def merge_shards(shards: Sequence[Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Concatenate shards (``bits``, ``scores [m, T]``, ``canary_steps``, ``test_accuracy`` when evaluated); the
    scalars must agree.

    Raises:
        ValueError: no shards, or shards of different runs (canary coordinate, q, steps).
    """
    if not shards:
        raise ValueError("no shards to merge")
    first = shards[0]
    for s in shards[1:]:
        for k in _SCALARS:
            if (k in s) != (k in first) or (k in s and float(s[k]) != float(first[k])):
                raise ValueError(f"shards disagree on {k}: {s[k]} vs {first[k]}")
        if s["scores"].shape[1] != first["scores"].shape[1]:
            raise ValueError("shards disagree on the number of steps")
    arrays = ("bits", "scores", "canary_steps") + (("test_accuracy",) if "test_accuracy" in first else ())
    out = {k: np.concatenate([s[k] for s in shards]) for k in arrays}
    out.update({k: first[k] for k in (*_SCALARS, "parameters") if k in first})
    return out


def accuracy_summary(data: Mapping[str, np.ndarray]) -> dict[str, float]:
    """Mean and sd (ddof 1) of the models' test accuracy (both worlds) and n_test; NaN without an evaluation."""
    if "test_accuracy" not in data:
        return {"test_accuracy_mean": math.nan, "test_accuracy_sd": math.nan, "n_test": math.nan}
    acc = np.asarray(data["test_accuracy"], dtype=np.float64)
    return {"test_accuracy_mean": float(acc.mean()),
            "test_accuracy_sd": float(acc.std(ddof=1)) if acc.size > 1 else math.nan,
            "n_test": float(data["n_test"]) if "n_test" in data else math.nan}


def fig2_table(
    shards: Sequence[Mapping[str, np.ndarray]],
    *,
    steps: Sequence[int],
    noise_multiplier: float,
    delta: float,
    confidence: float,
    rule: ThresholdRule = Paper(),
    valid_rule: ThresholdRule = DEFAULT_RULE,
    seed: int,
    model: str = "",
    background: str = "natural",
    data_source: str = "",
    value_discretization_interval: float = 1e-3,
    columns: Sequence[str] = COLUMNS,
    select_label: str = "steinke-fig2-select",
) -> pd.DataFrame:
    """Figure 2's table: per T (≤ the shards' T_max), the accounting and the empirical audits (module docstring).

    Args:
        shards: the outputs of :func:`hsaudit.experiments.steinke.train.images.train_dirac_shard` (or their saved arrays).
        steps: the T values to audit (1-based; scores after step T).
        noise_multiplier: σ of the training.
        delta, confidence: δ of every ε and the one-sided CP confidence.
        rule: the GDP audit's threshold rule (the plan's, from ``audit.mode``; unseeded, as the config gives it).
        valid_rule: the valid rule of ``empirical_gdp_valid`` when ``rule`` is not valid (``audit.valid_mode``),
            seeded per T.
        seed: seeds the held-out splits (and the valid rule's split or calibration, for the rules that draw one).
        model, background, data_source: recorded in every row (the figure's footer names them).
        value_discretization_interval: of the standard accounting's PLD.
        columns: the columns kept (:data:`COLUMNS`; :data:`FIG4_COLUMNS` for Figure 4's shards).
        select_label: domain of the held-out splits' seeds.

    Returns:
        One row per (T, method) with ``columns``; higher score ⇒ canary present throughout. ``threshold_rule`` names
        each audit's rule and ``valid`` says whether its ε is a valid lower bound (NaN for the accounting rows).

    Raises:
        ValueError: a T beyond the trained steps, a world without runs, or a ``valid_rule`` (``audit.valid_mode``)
            that is not a valid rule.
    """
    gdp_rule = rule
    if not valid_rule.valid:
        raise ValueError(f"valid_mode {valid_rule.spec!r} is not a valid rule")
    data = merge_shards(shards)
    scores, bits, included = data["scores"], data["bits"].astype(bool), data["canary_steps"]
    q, sigma = float(data["sampling_rate"]), float(noise_multiplier)
    if (~bits).sum() == 0 or bits.sum() == 0:
        raise ValueError("both worlds need runs")
    rows = []
    nan = math.nan
    for t in sorted({int(s) for s in steps}):
        if not 1 <= t <= scores.shape[1]:
            raise ValueError(f"T = {t} is outside the trained steps 1..{scores.shape[1]}")
        out, inn = scores[~bits, t - 1], scores[bits, t - 1]
        base = {
            "steps": t,
            "confidence": confidence,
            "delta": delta,
            "sampling_rate": q,
            "noise_multiplier": sigma,
            "runs_per_world": int(min(out.size, inn.size)),
            "model": model,
            "background": background,
            "data_source": data_source,
            **{k: int(data[k]) for k in ("canary_dim", "canary_label", "canary_index") if k in data},
            **accuracy_summary(data),
            "mean_out": float(out.mean()),
            "var_out": float(out.var(ddof=1)) if out.size > 1 else nan,
            "mean_in": float(inn.mean()),
            "var_in": float(inn.var(ddof=1)) if inn.size > 1 else nan,
            "inclusions_in": float(included[bits, :t].sum(axis=1).mean()),
        }

        def row(method, epsilon, *, mu=nan, sigma_hat=nan, threshold_rule="none", valid=None):
            return {**base, "method": method, "epsilon": float(epsilon), "mu": mu, "sigma_hat": sigma_hat,
                    "threshold_rule": threshold_rule, "valid": valid}

        kw = dict(steps=t, sampling_rate=q, noise_multiplier=sigma)
        rows.append(row("standard", H.standard_epsilon(delta, value_discretization_interval=value_discretization_interval, **kw)))
        rows.append(row("heuristic", H.heuristic_epsilon(delta, **kw)))
        known = KnownFamily(family="last_iterate", **kw)
        paper = Auditor(delta=delta, confidence=confidence, rule=Paper()).known_family(out, inn, known)
        rows.append(row("empirical_sigma_last_iterate", paper["epsilon"], sigma_hat=paper["sigma_hat"],
                        threshold_rule="all_thresholds", valid=False))
        rule = HeldOut(seed=derive_seed(seed, select_label, t))
        held = Auditor(delta=delta, confidence=confidence, rule=rule).known_family(out, inn, known)
        rows.append(row("empirical_sigma_last_iterate_held_out", held["epsilon"], sigma_hat=held["sigma_hat"],
                        threshold_rule="held_out", valid=True))
        valid_t = valid_companion(gdp_rule, valid_rule.seeded(derive_seed(seed, select_label, "gdp-valid", t)))
        gdp, valid_gdp = with_valid(gdp_rule, valid_t,
                                    lambda r: Auditor(delta=delta, confidence=confidence, rule=r).gdp(out, inn))  # fmt: skip
        rows.append(row("empirical_gdp", gdp.epsilon, mu=max(float(gdp.mu), 0.0), threshold_rule=gdp_rule.spec,
                        valid=gdp_rule.valid))
        rows.append(row("empirical_gdp_valid", valid_gdp.epsilon, mu=max(float(valid_gdp.mu), 0.0),
                        threshold_rule=valid_t.spec, valid=True))
    table = pd.DataFrame(rows, columns=list(columns))
    table["valid"] = table["valid"].astype("boolean")  # True / False, <NA> (an empty cell) for the accounting rows
    return table


def fig4_table(
    panels: Mapping[str, Sequence[Mapping[str, np.ndarray]]], *, seed: int, **kwargs
) -> pd.DataFrame:
    """Figure 4's table: :func:`fig2_table`'s audits of the label-flip canary's scores −ℓ(θ_T; x*, y*), one block
    per background (``panels``: background → its shards), with :data:`FIG4_COLUMNS`.

    Args:
        panels: ``{"zero_gradient": shards, "natural": shards}`` (:func:`hsaudit.experiments.steinke.train.images.train_label_flip_shard`).
        seed: seeds the held-out splits (per background).
        **kwargs: :func:`fig2_table`'s other arguments (``steps``, ``noise_multiplier``, ``delta``, ...).
    """
    tables = [
        fig2_table(shards, seed=derive_seed(seed, "steinke-fig4", background), background=background,
                   columns=FIG4_COLUMNS, select_label="steinke-fig4-select", **kwargs)
        for background, shards in panels.items()
    ]
    return pd.concat(tables, ignore_index=True)


def fig2_panel_table(
    panels: Mapping[str, Sequence[Mapping[str, np.ndarray]]], *, seed: int, **kwargs
) -> pd.DataFrame:
    """Figure 2's table from its one panel ``{background: shards}``: :func:`fig2_table` with the panel's background,
    in :data:`TRAINED_TABLES`' signature.

    Raises:
        ValueError: not exactly one panel.
    """
    if len(panels) != 1:
        raise ValueError(f"fig2 has one panel (its background), got {list(panels)}")
    ((background, shards),) = panels.items()
    return fig2_table(shards, seed=seed, background=background, **kwargs)


def fig4_spread_table(
    panels: Mapping[str, Sequence[Mapping[str, np.ndarray]]], *, seed: int, **kwargs
) -> pd.DataFrame:
    """``fig4_spread``'s table: :func:`fig2_table`'s audits of every canary's population on natural data, one block
    per panel (``dirac_<i>``: a Dirac coordinate; ``label_flip_<i>``: a label-flipped image), with
    :data:`SPREAD_COLUMNS` (``canary`` is the panel's type). The spread over canaries is the figure's
    (:func:`hsaudit.experiments.steinke.figures.spread_summary`).

    Args:
        panels: panel → its shards (:func:`hsaudit.experiments.steinke.plan.plan_fig4_spread`'s order).
        seed: seeds the held-out splits and the valid rule's draws (per panel).
        **kwargs: :func:`fig2_table`'s other arguments.
    """
    tables = []
    for panel, shards in panels.items():
        table = fig2_table(shards, seed=derive_seed(seed, "steinke-fig4-spread", panel), background="natural",
                           columns=SPREAD_COLUMNS, select_label="steinke-fig4-spread-select", **kwargs)
        table["panel"], table["canary"] = panel, panel.rsplit("_", 1)[0]
        tables.append(table)
    return pd.concat(tables, ignore_index=True)


TRAINED_TABLES = {"fig2": fig2_panel_table, "fig4": fig4_table, "fig4_spread": fig4_spread_table}
"""The audit table of each trained-model figure, each ``fn(panels, *, seed, steps, noise_multiplier, delta,
confidence, rule, valid_rule, model, data_source, value_discretization_interval)`` with ``panels`` background →
shards."""


# ----------------------------------------------------------------------------- every accountant's standard ε

RDP_GRIDS: dict[str, tuple[str, tuple[float, ...]]] = {
    "": ("α = 2…256", R.INTEGER_ORDERS),
    "_fractional": ("Opacus' α = 1.1…63", R.OPACUS_ORDERS),
}
"""The grids of RDP orders the tables use, by column suffix: (how a header names it, the orders) — the integers
2, 3, …, 256 (:data:`hsaudit.accounting.rdp.INTEGER_ORDERS`) and Opacus' default 1.1, 1.2, …, 10.9, 12, …, 63
(:data:`hsaudit.accounting.rdp.OPACUS_ORDERS`). The grid is a choice of its own: at Table 1's small σ the integer
grid's optimum sits at its end (α = 2) and its ε is far above the fractional grid's (docs/steinke.md)."""

RDP_COLUMNS = tuple(f"standard_rdp_{conversion}{suffix}" for suffix in RDP_GRIDS for conversion in R.CONVERSIONS)
STANDARD_COLUMNS = ("standard", *RDP_COLUMNS)
"""The standard ε of every accountant, as Tables 1 and 2 name the columns: ``standard`` (dp-accounting PLD,
:func:`hsaudit.accounting.last_iterate.standard_epsilon`), ``standard_rdp_classic`` / ``standard_rdp_improved``
(RDP, integer orders 2..256) and ``standard_rdp_classic_fractional`` / ``standard_rdp_improved_fractional`` (RDP,
Opacus' orders; :mod:`hsaudit.accounting.rdp`)."""


def standard_epsilons(
    delta: float,
    *,
    steps: int,
    sampling_rate: float,
    noise_multiplier: float,
    value_discretization_interval: float = 1e-3,
) -> dict[str, float]:
    """The standard (all-iterates) ε of T Poisson-subsampled Gaussians (q, σ) at δ under every accountant.

    Args:
        delta: δ in (0, 1).
        steps, sampling_rate, noise_multiplier: T, q, σ.
        value_discretization_interval: of the PLD.

    Returns:
        ``{column: ε}`` for every column of :data:`STANDARD_COLUMNS`, plus ``"<column>_order"``: the optimal order
        α* of each RDP column (NaN for q = 0, where ε = 0). A warning is raised where α* is an end of its grid.
    """
    kw = dict(steps=steps, sampling_rate=sampling_rate, noise_multiplier=noise_multiplier)
    out = {"standard": H.standard_epsilon(delta, value_discretization_interval=value_discretization_interval, **kw)}
    for suffix, (_, orders) in RDP_GRIDS.items():
        rdp = R.subsampled_gaussian_rdp(noise_multiplier=noise_multiplier, compositions=steps,
                                        sampling_rate=sampling_rate, orders=orders)
        for conversion in R.CONVERSIONS:
            name = f"standard_rdp_{conversion}{suffix}"
            if sampling_rate == 0:
                out[name], out[f"{name}_order"] = 0.0, math.nan
            else:
                out[name], out[f"{name}_order"] = R.rdp_to_epsilon(rdp, orders=orders, delta=delta,
                                                                   conversion=conversion)
    return out


TABLE2_COLUMNS = (
    "batch_size",
    "sampling_rate",
    "noise_multiplier",
    "steps",
    "lr",
    "lr_tuned",
    "heuristic",
    *STANDARD_COLUMNS,
    "test_accuracy_mean",
    "test_accuracy_sd",
    "empirical_sigma_last_iterate",
    "empirical_sigma_last_iterate_held_out",
    "empirical_gdp",
    "empirical_gdp_valid",
    "delta",
    "confidence",
    "threshold_rule",
    "gdp_valid",
    "valid_threshold_rule",
    "runs_per_world",
    "n_test",
    "model",
    "data_source",
    "paper_heuristic",
    "paper_standard",
    "paper_accuracy",
    "paper_empirical",
)


def table_row(
    row: Mapping[str, Any],
    index: int,
    *,
    table: str,
    delta: float,
    confidence: float,
    rule: ThresholdRule,
    valid_rule: ThresholdRule = DEFAULT_RULE,
    seed: int,
    model: str,
    paper_keys: Sequence[str],
    value_discretization_interval: float,
) -> tuple[dict[str, np.ndarray], pd.DataFrame, dict[str, Any]]:
    """What every row of a trained-model table (Table 1, Table 2) computes alike: the row's shards merged,
    :func:`fig2_table`'s audits at its T (seeded by ``(seed, "steinke-<table>", index)``) and the columns the tables
    share (batch size, q, σ, T, each audit's ε, every accountant's standard ε (:data:`STANDARD_COLUMNS`), δ,
    confidence, the GDP audits' rules — ``threshold_rule`` of ``empirical_gdp``, ``gdp_valid`` whether it is a valid bound,
    ``valid_threshold_rule`` of ``empirical_gdp_valid`` — R, model, data source and the paper's printed ``paper_keys``, NaN
    where absent).

    Returns:
        ``(merged shards, the audit table, the shared columns)``.
    """
    data = merge_shards(row["shards"])
    t = int(row["steps"])
    audit = fig2_table(
        row["shards"], steps=[t], noise_multiplier=float(row["noise_multiplier"]), delta=delta,
        confidence=confidence, rule=rule, valid_rule=valid_rule, seed=derive_seed(seed, f"steinke-{table}", index),
        model=model, data_source=str(row.get("data_source", "")),
        value_discretization_interval=value_discretization_interval, select_label=f"steinke-{table}-select",
    )
    eps = dict(zip(audit["method"], audit["epsilon"]))
    rules = dict(zip(audit["method"], audit["threshold_rule"]))
    valid = dict(zip(audit["method"], audit["valid"]))
    paper = dict(row.get("paper") or {})
    standard = standard_epsilons(delta, steps=t, sampling_rate=float(data["sampling_rate"]),
                                 noise_multiplier=float(row["noise_multiplier"]),
                                 value_discretization_interval=value_discretization_interval)
    common = {
        "batch_size": int(data["batch_size"]),
        "sampling_rate": float(data["sampling_rate"]),
        "noise_multiplier": float(row["noise_multiplier"]),
        "steps": t,
        **{m: float(eps[m]) for m in METHODS},
        **{c: float(standard[c]) for c in RDP_COLUMNS},
        "delta": delta,
        "confidence": confidence,
        "threshold_rule": rules["empirical_gdp"],
        "gdp_valid": bool(valid["empirical_gdp"]),
        "valid_threshold_rule": rules["empirical_gdp_valid"],
        "runs_per_world": int(audit["runs_per_world"].iloc[0]),
        "model": model,
        "data_source": str(row.get("data_source", "")),
        **{f"paper_{k}": float(paper[k]) if paper.get(k) is not None else math.nan for k in paper_keys},
    }
    return data, audit, common


def table2(
    rows: Sequence[Mapping[str, object]],
    *,
    delta: float,
    confidence: float,
    rule: ThresholdRule = Paper(),
    valid_rule: ThresholdRule = DEFAULT_RULE,
    seed: int,
    model: str = "",
    value_discretization_interval: float = 1e-3,
) -> pd.DataFrame:
    """Table 2 of Steinke, Nasr et al.: per batch size, heuristic and standard ε, test accuracy (mean ± sd over the
    2R models of both worlds) and the empirical ε of the Dirac gradient canary at the row's T (σ̂ last-iterate audit
    under the paper's rule and held out, and the GDP audit under ``rule`` and a valid one;
    :func:`fig2_table`).

    Args:
        rows: one mapping per table row: ``shards`` (:func:`hsaudit.experiments.steinke.train.images.train_dirac_shard` with a
            test set), ``steps`` (T), ``noise_multiplier`` (σ), ``lr`` (η; ``None`` where it is tuned), ``grid`` (the
            candidate η values where η is tuned, else empty: the shards then carry the chosen η,
            :func:`hsaudit.experiments.steinke.train.tuning.train_tuned_shard`) and optionally the paper's printed
            values ``paper`` = ``{heuristic, standard, accuracy, empirical}`` (NaN where absent).
        delta, confidence, rule, valid_rule, seed, model, value_discretization_interval: as :func:`fig2_table`.

    Returns:
        One row per input row with :data:`TABLE2_COLUMNS`.

    Raises:
        ValueError: a row's shards without test accuracy.
    """
    out = []
    for i, row in enumerate(rows):
        data, audit, common = table_row(row, i, table="table2", delta=delta, confidence=confidence, rule=rule,
                                        valid_rule=valid_rule, seed=seed, model=model,
                                        paper_keys=("heuristic", "standard", "accuracy", "empirical"),
                                        value_discretization_interval=value_discretization_interval)
        if "test_accuracy" not in data:
            raise ValueError(f"table2 row {i}: the shards carry no test accuracy (train them with a test set)")
        out.append({**common, **row_lr(row, i), **accuracy_summary(data)})
    return pd.DataFrame(out, columns=list(TABLE2_COLUMNS))


def row_lr(row: Mapping[str, Any], index: int) -> dict[str, Any]:
    """A Table 2 row's ``lr`` and ``lr_tuned``: the η its shards record where it was tuned (``row["grid"]`` not
    empty), else ``row["lr"]`` (NaN when not given).

    Raises:
        ValueError: tuned shards that record no η, or different ones.
    """
    if not row.get("grid"):
        return {"lr": float(row["lr"]) if row.get("lr") is not None else math.nan, "lr_tuned": False}
    chosen = {float(s["lr"]) for s in row["shards"] if "lr" in s}
    if len(chosen) != 1 or any("lr" not in s for s in row["shards"]):
        raise ValueError(f"table2 row {index}: its shards must all record one tuned η, got {sorted(chosen)}")
    return {"lr": chosen.pop(), "lr_tuned": True}


TABLE2_LR_COLUMNS = (
    "batch_size",
    "noise_multiplier",
    "steps",
    "lr",
    "lr_tuned",
    "chosen",
    "validation_accuracy_mean",
    "validation_accuracy_sd",
    "validation_models",
    "n_validation",
    "n_train",
)


def table2_lr(
    table: pd.DataFrame, rows: Sequence[Mapping[str, Any]], candidates: Sequence[Sequence[Mapping[str, np.ndarray]]]
) -> pd.DataFrame:
    """Table 2's η per row and, where η was tuned, every candidate's validation accuracy (mean and sd, ddof 1, over
    its models; ``chosen`` marks the η the row trained with, the table's ``lr``).

    Args:
        table: :func:`table2`'s table (its ``batch_size``, ``lr``, ``lr_tuned``).
        rows: the rows as :func:`table2` takes them (``noise_multiplier``, ``steps``).
        candidates: per row the outputs of :func:`hsaudit.experiments.steinke.train.candidates.train_lr_candidate`
            (empty where η is fixed: one line with that η, validation columns NaN).

    Returns:
        One line per row and η with :data:`TABLE2_LR_COLUMNS`.
    """
    out = []
    for r, row, cands in zip(table.itertuples(index=False), rows, candidates):
        common = {"batch_size": int(r.batch_size), "noise_multiplier": float(row["noise_multiplier"]),
                  "steps": int(row["steps"]), "lr_tuned": bool(r.lr_tuned)}
        if not cands:
            out.append({**common, "lr": float(r.lr), "chosen": True, "validation_accuracy_mean": math.nan,
                        "validation_accuracy_sd": math.nan, "validation_models": 0, "n_validation": math.nan,
                        "n_train": math.nan})
        for c in sorted(cands, key=lambda c: float(c["lr"])):
            acc = np.asarray(c["validation_accuracy"], dtype=np.float64)
            out.append({**common, "lr": float(c["lr"]), "chosen": float(c["lr"]) == float(r.lr),
                        "validation_accuracy_mean": float(acc.mean()),
                        "validation_accuracy_sd": float(acc.std(ddof=1)) if acc.size > 1 else math.nan,
                        "validation_models": int(acc.size), "n_validation": float(c["n_validation"]),
                        "n_train": float(c["n_train"])})
    return pd.DataFrame(out, columns=list(TABLE2_LR_COLUMNS))


def gdp_rules(table: pd.DataFrame) -> str:
    """The rules of a Table 1 / Table 2 table's two GDP columns (``threshold_rule``, ``valid_threshold_rule``), as a footer names
    them: ``"paper rule (not a valid bound); valid: crossing rule"``."""
    first = table.iloc[0]
    return f"{rule_words(first['threshold_rule'], bool(first['gdp_valid']))}; valid: {first['valid_threshold_rule']} rule"


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """Cells as a Markdown table: the ``header`` line, the rule line, one line per row (no trailing newline)."""
    lines = ["| " + " | ".join(header) + " |", "|---" * len(header) + "|"]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def _trained_markdown(
    table: pd.DataFrame, lead: Sequence[tuple[str, Callable[[Any], str]]], quality: tuple[str, Callable[[Any], str]]
) -> str:
    """Table 1's and Table 2's columns as Markdown: each row's ``lead`` cells (header, cell of a row), every
    accountant's standard ε (PLD with the paper's value, then RDP classic / improved per grid of orders,
    :data:`RDP_GRIDS`), ``quality`` (accuracy or perplexity), the σ̂ audits (all thresholds / held out, the paper's
    value) and the two GDP columns (the GDP audit's rule and the valid rule, each header saying whether it is
    valid)."""
    first = table.iloc[0]
    header = [*(name for name, _ in lead), "Standard ε: PLD (paper)",
              *(f"Standard ε: RDP, classic / improved conversion, {label}" for label, _ in RDP_GRIDS.values()),
              quality[0], "Empirical ε: σ̂ audit, all thresholds (not a valid bound) / held-out (valid) (paper)",
              f"Empirical ε: GDP audit, {rule_words(first['threshold_rule'], bool(first['gdp_valid']))}",
              f"Empirical ε: GDP audit, {rule_words(first['valid_threshold_rule'], True)}"]  # fmt: skip
    rows = [[*(cell(r) for _, cell in lead), f"{r.standard:.2f}{paper_value(r.paper_standard, '{:g}')}",
             *(" / ".join(f"{getattr(r, f'standard_rdp_{c}{suffix}'):.2f}" for c in R.CONVERSIONS)
               for suffix in RDP_GRIDS),
             quality[1](r),
             f"{r.empirical_sigma_last_iterate:.2f} / {r.empirical_sigma_last_iterate_held_out:.2f}"
             f"{paper_value(r.paper_empirical, '{:g}')}",
             f"{r.empirical_gdp:.2f}", f"{r.empirical_gdp_valid:.2f}"]
            for r in table.itertuples(index=False)]  # fmt: skip
    return markdown_table(header, rows)


def paper_value(value: float, fmt: str) -> str:
    """`` (value)`` formatted with ``fmt``, the paper's printed value beside ours in a table; empty for NaN."""
    return "" if math.isnan(value) else f" ({fmt.format(value)})"


def table2_markdown(table: pd.DataFrame, *, footer: str, lr_table: pd.DataFrame | None = None) -> str:
    """Table 2 as Markdown: the paper's columns (batch size, heuristic ε, standard ε, accuracy, empirical ε) with
    the paper's printed values in parentheses where given, η (``tuned`` where it was), the standard ε of every
    accountant (PLD, then RDP classic / improved per grid of orders), the GDP audit under ``threshold_rule``'s rule and
    under the valid rule (each header says whether it is valid), then, where a row's η was tuned, the candidates'
    validation accuracy (``lr_table``, :func:`table2_lr`), then ``footer`` (scale, setup, audits)."""

    lead = [("Batch size", lambda r: f"{r.batch_size}"), ("q", lambda r: f"{r.sampling_rate:.4g}"),
            ("σ", lambda r: f"{r.noise_multiplier:g}"), ("T", lambda r: f"{r.steps}"),
            ("η", lambda r: f"{r.lr:g}{' (tuned)' if r.lr_tuned else ''}"),
            ("Heuristic ε (paper)", lambda r: f"{r.heuristic:.2f}{paper_value(r.paper_heuristic, '{:.2f}')}")]
    accuracy = ("Test accuracy, mean ± sd (paper)", lambda r: f"{100 * r.test_accuracy_mean:.1f}% ± "
                f"{100 * r.test_accuracy_sd:.1f}{paper_value(r.paper_accuracy, '{:.1%}')}")  # fmt: skip
    text = _trained_markdown(table, lead, accuracy)
    if lr_table is not None and bool(lr_table["lr_tuned"].any()):
        text += "\n\n" + _lr_markdown(lr_table)
    return text + f"\n\n{footer}\n"


def _lr_markdown(lr_table: pd.DataFrame) -> str:
    """The η tuning as Markdown: per tuned row, every candidate's validation accuracy (mean ± sd over its models),
    the chosen η in bold, and a † where the chosen η is an end of the row's grid (the best η may lie beyond it)."""
    tuned = lr_table[lr_table["lr_tuned"]]
    grid = sorted(set(tuned["lr"]))
    first = tuned.iloc[0]
    lines = [f"η tuning: validation accuracy, mean ± sd over {int(first['validation_models'])} models per η "
             f"(trained on {int(first['n_train'])} examples, scored on {int(first['n_validation'])} held out; "
             "no canary); the chosen η in bold", ""]
    ends, rows = [], []
    for b, group in tuned.groupby("batch_size", sort=False):
        cells = {float(r.lr): (f"{100 * r.validation_accuracy_mean:.1f}% ± {100 * r.validation_accuracy_sd:.1f}",
                               bool(r.chosen)) for r in group.itertuples(index=False)}
        (chosen,) = [v for v, (_, c) in cells.items() if c]
        end = chosen in (min(cells), max(cells))
        ends += [f"B = {b}"] if end else []
        rows.append([f"{b}", *("" if v not in cells else
                               (f"**{cells[v][0]}**" + ("†" if end else "") if cells[v][1] else cells[v][0])
                               for v in grid)])  # fmt: skip
    lines.append(markdown_table(["Batch size", *(f"η = {v:g}" for v in grid)], rows))
    if ends:
        lines += ["", f"† the chosen η is an end of the grid ({', '.join(ends)}): the best η may lie beyond it."]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------- Table 1

TABLE1_COLUMNS = (
    "batch_size",
    "sampling_rate",
    "noise_multiplier",
    "steps",
    *METHODS[:1],
    *RDP_COLUMNS,
    *METHODS[1:],
    "perplexity_mean",
    "perplexity_sd",
    "n_train",
    "n_eval",
    "delta",
    "confidence",
    "threshold_rule",
    "gdp_valid",
    "valid_threshold_rule",
    "runs_per_world",
    "score",
    "model",
    "data_source",
    "mean_out",
    "mean_in",
    "inclusions_in",
    "paper_heuristic",
    "paper_standard",
    "paper_perplexity",
    "paper_empirical",
)


def privacy_plan(
    rows: Sequence[Mapping[str, object]], *, n_train: int, epochs: float, delta: float
) -> list[dict[str, float]]:
    """(q, T, σ, heuristic ε) of every row for a training set of ``n_train`` examples.

    Args:
        rows: ``batch_size`` and either ``noise_multiplier`` or ``heuristic_epsilon`` (the calibration target).
        n_train: N.
        epochs: passes over the data; T = max(1, round(epochs · N / B)).
        delta: δ of the heuristic.

    Raises:
        ValueError: B > N, or a target the calibration cannot reach.
    """
    out = []
    for i, row in enumerate(rows):
        b = int(row["batch_size"])
        if not 1 <= b <= n_train:
            raise ValueError(f"table1 row {i}: batch_size must be in [1, N = {n_train}], got {b}")
        q, steps = b / n_train, training_steps(epochs=epochs, n_train=n_train, batch_size=b)
        kw = dict(steps=steps, sampling_rate=q)
        if row.get("noise_multiplier") is not None:
            sigma = float(row["noise_multiplier"])
        else:
            target = float(row["heuristic_epsilon"])
            sigma = H.calibrate(lambda s: H.heuristic_epsilon(delta, noise_multiplier=s, **kw), target,
                                lo=0.05, hi=1000.0, start=1.0, what=f"table1 row {i} noise multiplier")
        out.append({"batch_size": b, "sampling_rate": q, "steps": steps, "noise_multiplier": sigma,
                    "heuristic": H.heuristic_epsilon(delta, noise_multiplier=sigma, **kw)})
    return out


def table1(
    rows: Sequence[Mapping[str, object]],
    *,
    delta: float,
    confidence: float,
    rule: ThresholdRule = Paper(),
    valid_rule: ThresholdRule = DEFAULT_RULE,
    seed: int,
    model: str = "",
    score: str = "gradient",
    value_discretization_interval: float = 1e-3,
) -> pd.DataFrame:
    """Table 1 of Steinke, Nasr et al.: per batch size, heuristic and standard ε, the final models' held-out
    perplexity (mean ± sd over both worlds) and the empirical ε of the unused-token canary at the row's T.

    Args:
        rows: per row ``shards`` (:func:`hsaudit.experiments.steinke.train.language.train_table1_shard` outputs),
            ``noise_multiplier``, ``steps`` and optionally ``paper`` = ``{heuristic, standard, perplexity,
            empirical}`` and ``data_source``.
        delta, confidence, rule, valid_rule, seed, value_discretization_interval: as :func:`fig2_table`.
        model, score: recorded in every row.

    Returns:
        One row per input row with :data:`TABLE1_COLUMNS`.
    """
    out = []
    for i, row in enumerate(rows):
        data, audit, common = table_row(row, i, table="table1", delta=delta, confidence=confidence, rule=rule,
                                        valid_rule=valid_rule, seed=seed, model=model,
                                        paper_keys=("heuristic", "standard", "perplexity", "empirical"),
                                        value_discretization_interval=value_discretization_interval)
        ppl = [float(v) for s in row["shards"] for v in s["perplexity"]]
        first = audit.iloc[0]
        out.append({
            **common,
            "perplexity_mean": float(pd.Series(ppl).mean()),
            "perplexity_sd": float(pd.Series(ppl).std(ddof=1)) if len(ppl) > 1 else math.nan,
            "n_train": int(data["n_train"]),
            "n_eval": int(row["shards"][0]["n_eval"]),
            "score": score,
            "mean_out": float(first["mean_out"]),
            "mean_in": float(first["mean_in"]),
            "inclusions_in": float(first["inclusions_in"]),
        })
    return pd.DataFrame(out, columns=list(TABLE1_COLUMNS))


def table1_markdown(table: pd.DataFrame, *, footer: str) -> str:
    """Table 1 as Markdown: the paper's columns (batch size, heuristic ε, standard ε, perplexity, empirical ε) with
    its printed values in parentheses where given, every accountant's standard ε and the two GDP columns as
    :func:`table2_markdown`, then ``footer``."""

    lead = [("Batch size", lambda r: f"{r.batch_size}"), ("q", lambda r: f"{r.sampling_rate:.4g}"),
            ("σ", lambda r: f"{r.noise_multiplier:.4g}"), ("T", lambda r: f"{r.steps}"),
            ("Heuristic ε (paper)", lambda r: f"{r.heuristic:.2f}{paper_value(r.paper_heuristic, '{:.1f}')}")]
    perplexity = ("Perplexity, mean ± sd (paper)", lambda r: f"{r.perplexity_mean:.4g} ± {r.perplexity_sd:.2g}"
                  f"{paper_value(r.paper_perplexity, '{:g}')}")  # fmt: skip
    return _trained_markdown(table, lead, perplexity) + f"\n\n{footer}\n"


# ------------------------------------------------------------------- which accountant: the paper's rows, no training

ACCOUNTANT_COLUMNS = (
    "table",
    "n_train",
    "batch_size",
    "sampling_rate",
    "noise_multiplier",
    "steps",
    "heuristic",
    *STANDARD_COLUMNS,
    *(f"{c}_order" for c in RDP_COLUMNS),
    "delta",
    "paper_heuristic",
    "paper_standard",
)


def table2_accountant_rows(rows: Sequence[Mapping[str, Any]], *, n_train: int) -> list[dict[str, Any]]:
    """Table 2's configured rows (``steinke.table2.rows``: B, σ, T, ``paper``) as :func:`accountant_comparison`
    takes them, at q = B/N for a training set of ``n_train`` examples (CIFAR-10's 50,000 at paper scale)."""
    return [{"table": "Table 2", "n_train": int(n_train), "batch_size": int(r["batch_size"]),
             "sampling_rate": int(r["batch_size"]) / int(n_train), "noise_multiplier": float(r["noise_multiplier"]),
             "steps": int(r["steps"]), "paper": dict(r.get("paper") or {})} for r in rows]


def table1_accountant_rows(
    rows: Sequence[Mapping[str, Any]], *, n_train: int, epochs: float, delta: float
) -> list[dict[str, Any]]:
    """Table 1's configured rows (``steinke.table1.rows``) for N = ``n_train`` examples: q, T and σ (calibrated to
    the row's heuristic target) from :func:`privacy_plan`, with the row's ``paper`` values."""
    plan = privacy_plan(rows, n_train=n_train, epochs=epochs, delta=delta)
    return [{"table": "Table 1", "n_train": int(n_train), **{k: p[k] for k in ("batch_size", "sampling_rate",
             "noise_multiplier", "steps")}, "paper": dict(r.get("paper") or {})} for r, p in zip(rows, plan)]


def accountant_comparison(
    rows: Sequence[Mapping[str, Any]], *, delta: float, value_discretization_interval: float = 1e-3
) -> pd.DataFrame:
    """The heuristic and every accountant's standard ε (:func:`standard_epsilons`) of each row, beside the paper's
    printed values: which accountant the paper's standard ε came from, without training anything.

    Args:
        rows: :func:`table2_accountant_rows` / :func:`table1_accountant_rows` (``table``, ``n_train``,
            ``batch_size``, ``sampling_rate``, ``noise_multiplier``, ``steps``, optional ``paper``).
        delta: δ of every ε.
        value_discretization_interval: of the PLD.

    Returns:
        One row per input row with :data:`ACCOUNTANT_COLUMNS` (each RDP column's optimal order in ``<column>_order``).
    """
    out = []
    for r in rows:
        kw = dict(steps=int(r["steps"]), sampling_rate=float(r["sampling_rate"]),
                  noise_multiplier=float(r["noise_multiplier"]))
        with warnings.catch_warnings():  # an optimum at a grid's end is in the ``_order`` columns instead
            warnings.simplefilter("ignore", UserWarning)
            standard = standard_epsilons(delta, value_discretization_interval=value_discretization_interval, **kw)
        paper = r.get("paper") or {}
        out.append({**{k: r[k] for k in ("table", "n_train", "batch_size")}, **kw,
                    "heuristic": H.heuristic_epsilon(delta, **kw), **standard, "delta": delta,
                    **{f"paper_{k}": float(paper[k]) if paper.get(k) is not None else math.nan
                       for k in ("heuristic", "standard")}})
    return pd.DataFrame(out, columns=list(ACCOUNTANT_COLUMNS))


def accountant_fit(comparison: pd.DataFrame) -> pd.DataFrame:
    """How well each accountant reproduces the paper's printed standard ε, per (table, N): the root mean square of
    log(ours / paper's) over the table's rows (0 = every row exact; 0.1 ≈ 10 % off on average).

    Returns:
        One row per (table, n_train), in order of first appearance, with a column per :data:`STANDARD_COLUMNS`.
    """
    err = np.log(comparison[list(STANDARD_COLUMNS)].to_numpy(float) / comparison[["paper_standard"]].to_numpy(float))
    frame = pd.DataFrame(err**2, columns=list(STANDARD_COLUMNS))
    frame["table"], frame["n_train"] = comparison["table"].to_numpy(), comparison["n_train"].to_numpy()
    fit = frame.groupby(["table", "n_train"], sort=False)[list(STANDARD_COLUMNS)].mean() ** 0.5
    return fit.reset_index()


def _accountant_labels() -> list[str]:
    """The header of each :data:`STANDARD_COLUMNS` column in the accountant tables."""
    return ["PLD", *(f"RDP {c}, {label}" for label, _ in RDP_GRIDS.values() for c in R.CONVERSIONS)]


def _at_grid_end(order: float, suffix: str) -> bool:
    orders = RDP_GRIDS[suffix][1]
    return order in (min(orders), max(orders))


def accountants_markdown(comparison: pd.DataFrame) -> str:
    """:func:`accountant_comparison` as Markdown: per row the heuristic (paper's in parentheses), every
    accountant's standard ε and the paper's; † marks an RDP value whose optimal order is an end of its grid (the
    grid, not the mechanism, sets it)."""
    header = ["Table", "B", "N", "q", "σ", "T", "Heuristic ε (paper)", *_accountant_labels(), "Paper's standard ε"]
    rows = []
    for r in comparison.to_dict("records"):
        cells = [f"{r['standard']:.2f}"]
        for suffix in RDP_GRIDS:
            for c in R.CONVERSIONS:
                name = f"standard_rdp_{c}{suffix}"
                cells.append(f"{r[name]:.2f}" + ("†" if _at_grid_end(r[f"{name}_order"], suffix) else ""))
        printed = "" if math.isnan(r["paper_standard"]) else f"{r['paper_standard']:g}"
        heuristic = f"{r['heuristic']:.2f}{paper_value(r['paper_heuristic'], '{:g}')}"
        rows.append([f"{r['table']}", f"{r['batch_size']}", f"{r['n_train']:,}", f"{r['sampling_rate']:.4g}",
                     f"{r['noise_multiplier']:.4g}", f"{r['steps']}", heuristic, *cells, printed])
    return markdown_table(header, rows) + "\n"


def accountant_fit_markdown(fit: pd.DataFrame) -> str:
    """:func:`accountant_fit` as Markdown, the best N of each accountant per table in bold."""
    header = ["Table", "N", *_accountant_labels()]
    rows = []
    best = {(t, c): fit.loc[fit["table"] == t, c].min() for t in fit["table"].unique() for c in STANDARD_COLUMNS}
    multi = fit.groupby("table")["n_train"].transform("size") > 1
    for i, r in fit.iterrows():
        cells = [f"**{r[c]:.3f}**" if multi[i] and r[c] == best[(r["table"], c)] else f"{r[c]:.3f}"
                 for c in STANDARD_COLUMNS]
        rows.append([f"{r['table']}", f"{int(r['n_train']):,}", *cells])
    return markdown_table(header, rows) + "\n"


__all__ = [
    "ACCOUNTANT_COLUMNS",
    "COLUMNS",
    "FIG4_COLUMNS",
    "METHODS",
    "SPREAD_COLUMNS",
    "TABLE1_COLUMNS",
    "TABLE2_COLUMNS",
    "TABLE2_LR_COLUMNS",
    "RDP_COLUMNS",
    "RDP_GRIDS",
    "STANDARD_COLUMNS",
    "accountant_comparison",
    "accountant_fit",
    "accountant_fit_markdown",
    "accountants_markdown",
    "accuracy_summary",
    "TRAINED_TABLES",
    "fig2_panel_table",
    "fig2_table",
    "fig4_spread_table",
    "fig4_table",
    "gdp_rules",
    "load_shards",
    "markdown_table",
    "merge_shards",
    "paper_value",
    "privacy_plan",
    "row_lr",
    "split_shards",
    "standard_epsilons",
    "table1",
    "table1_accountant_rows",
    "table1_markdown",
    "table2",
    "table2_accountant_rows",
    "table2_lr",
    "table2_markdown",
    "table_row",
]
