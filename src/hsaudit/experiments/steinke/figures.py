"""Figures of Steinke, Nasr et al. ("The Last Iterate Advantage") from the tables of
:mod:`hsaudit.experiments.steinke.simulations` (fig1, fig3, fig5, fig6) and :mod:`hsaudit.experiments.steinke.audit`
(fig2, fig4).

Every figure function has the signature ``fn(table, *, pdf, csv, facts)`` and is listed in :data:`FIGURES`; it writes
``pdf`` (with the provenance footer) and ``csv`` (every plotted number, tidy). ``facts`` holds the footer's entries
(:func:`hsaudit.experiments.plotting.footer_text`: ``scale``, ``code_version``, ``setup``, ...) and the settings a
figure reads (named in its docstring, e.g. ``delta``), which the footer leaves out; the plan fills them
(the ``facts`` of :class:`hsaudit.experiments.steinke.plan.Figure`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from hsaudit.audit.validity import rule_words
from hsaudit.experiments.plotting import PALETTE, UPPER_BOUND_STYLE, figure, footer_text, reserve_footer, save
from hsaudit.util.io import write_csv_atomic

_METHOD_STYLE = {
    "heuristic": dict(color=PALETTE[0], marker="o", linestyle="-", label="heuristic (last iterate, linear)"),
    "standard": dict(color="black", linestyle="--", label="standard (all iterates, PLD)"),
    "full_batch": dict(
        color=PALETTE[1], marker="s", linestyle="-.", markerfacecolor="none", label="full-batch proxy (Eq. 4)"
    ),
    "empirical_gdp": dict(color=PALETTE[1], marker="^", label="empirical (GDP audit)"),
    "empirical_pld_cp": dict(color=PALETTE[5], marker="D", label="empirical (known-q,T σ̂ audit, CP)"),
    "empirical_linear_gdp": dict(color=PALETTE[3], marker="v", linestyle=":", label="linear canary (GDP audit)"),
    "empirical_all_iterates_gdp": dict(
        color=PALETTE[4], marker="x", linestyle=":", label="all-iterates LLR attack (GDP audit)"
    ),
    "empirical_all_iterates_pld_cp": dict(
        color=PALETTE[4], marker="+", linestyle="-", alpha=0.7, label="all-iterates LLR attack (σ̂ audit, CP)"
    ),
    "empirical_pld_cp_value_store": dict(
        color=PALETTE[5], marker="D", markerfacecolor="none", linestyle="--", label="value-store variant (σ̂ audit)"
    ),
}


def _split(facts: Mapping[str, Any], *settings: str) -> tuple[list[Any], dict[str, Any]]:
    """(the values of ``settings`` in ``facts``, the rest: the footer's entries).

    Raises:
        ValueError: a setting missing from ``facts``.
    """
    missing = [s for s in settings if s not in facts]
    if missing:
        raise ValueError(f"facts must hold {missing}, got {sorted(facts)}")
    return [facts[s] for s in settings], {k: v for k, v in facts.items() if k not in settings}


def _legend_below(fig, ax, *, ncol: int, footer: str, space: float = 0.17) -> None:
    """One legend for the whole figure, below the panels (off the data), above the provenance footer.

    ``space``: the fraction of the figure's height kept for the legend, above the footer's band.
    """
    handles, labels = ax.get_legend_handles_labels()
    band = reserve_footer(fig, footer)
    fig.tight_layout(rect=(0, band + space, 1, 1))
    fig.legend(handles, labels, loc="lower center", ncol=ncol, frameon=False, fontsize=6.5, bbox_to_anchor=(0.5, band))


def plot_fig1(table: pd.DataFrame, *, pdf: str, csv: str, facts: Mapping[str, Any]) -> pd.DataFrame:
    """Figure 1: ε at δ vs T, one panel per (q, σ). ``facts["delta"]``: δ of the table's ε."""
    (delta,), facts = _split(facts, "delta")
    panels = list(dict.fromkeys(table["panel"]))
    fig, axes = figure(ncols=len(panels), height=3.0)
    for ax, name in zip(axes[0], panels):
        sub = table[table["panel"] == name]
        for method in ("standard", "heuristic", "full_batch"):
            d = sub[sub["method"] == method].sort_values("steps")
            st = dict(_METHOD_STYLE[method])
            ax.plot(d["steps"], d["epsilon"], markersize=3, **st)
        q, s = sub["sampling_rate"].iloc[0], sub["noise_multiplier"].iloc[0]
        ax.set_title(f"({name}) q = {q:g}, σ = {s:g}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("iterations T")
        ax.set_ylabel(f"ε at δ = {delta:g}")
    footer = footer_text(**facts, R="analytic", audit="none (accounting only)")
    _legend_below(fig, axes[0][0], ncol=3, footer=footer, space=0.10)
    write_csv_atomic(table, csv)
    save(fig, pdf, footer=footer, tight=False)
    return table


_FAMILY_LABEL = {"last_iterate": "last-iterate family", "all_iterates": "all-iterates family"}


def plot_fig3(table: pd.DataFrame, *, pdf: str, csv: str, facts: Mapping[str, Any]) -> pd.DataFrame:
    """Figure 3: gradient canary with an adversarial zero dataset; ε vs T per q (σ fixes standard ε).

    The configured audit (``facts["audit"]``: ``pld_sigma``, the σ̂ audit of ``facts["sigma_family"]``, or ``gdp``)
    is the solid line; the other audits of the same scores are drawn thinner and dashed. The infinite-run limits stay
    in the CSV.
    """
    (audit, sigma_family), facts = _split(facts, "audit", "sigma_family")
    main = f"empirical_sigma_{sigma_family}" if audit == "pld_sigma" else "empirical_gdp"
    others = [m for m in dict.fromkeys(table["method"]) if m.startswith("empirical_") and m != main]
    qs = sorted(table["sampling_rate"].unique())
    fig, axes = figure(ncols=len(qs), height=3.3)
    for ax, q in zip(axes[0], qs):
        sub = table[table["sampling_rate"] == q]
        for method in ["standard", "heuristic", main, *others]:
            d = sub[sub["method"] == method].sort_values("steps")
            if d.empty:
                continue
            ax.plot(d["steps"], d["epsilon"], **_fig3_style(method, primary=method == main))
        ax.set_xscale("log")
        ax.set_title(f"q = {q:g}")
        ax.set_xlabel("iterations T")
        ax.set_ylabel("ε")
    runs = int(table["runs_per_world"].iloc[0])
    conf = float(table["confidence"].iloc[0]) if "confidence" in table else float("nan")
    gdp_rule = table.loc[table["method"] == "empirical_gdp", "threshold_rule"]
    what = f"σ̂ {sigma_family}" if audit == "pld_sigma" else "GDP"
    footer = footer_text(
        **facts, R=f"{runs}/world", audit=f"{what} + GDP ({gdp_rule.iloc[0] if len(gdp_rule) else '?'})", CP=conf
    )
    _legend_below(fig, axes[0][0], ncol=3, footer=footer)
    write_csv_atomic(table, csv)
    save(fig, pdf, footer=footer, tight=False)
    return table


def _fig3_style(method: str, *, primary: bool) -> dict:
    """Line style of a fig3 series: the configured audit solid and bold, the others thin and dashed."""
    if method in ("standard", "heuristic"):
        return dict(_METHOD_STYLE[method], markersize=4)
    held_out = method.endswith("_held_out")
    valid_gdp = method == "empirical_gdp_valid"  # the valid rule's GDP audit: empirical_gdp's colour, open marker
    method = method.removesuffix("_held_out").removesuffix("_valid")
    label = {
        "empirical_gdp": "empirical, GDP audit (Nasr et al. 2023)",
        "empirical_sigma_last_iterate": "empirical, σ̂ audit, last-iterate family (§3.1)",
        "empirical_sigma_all_iterates": "empirical, σ̂ audit, all-iterates family",
    }.get(method, method)
    if method.startswith("empirical_sigma_"):
        label += ", held-out threshold (valid)" if held_out else ", all thresholds (not a valid bound)"
    colour = {
        "empirical_gdp": PALETTE[1],
        "empirical_sigma_last_iterate": PALETTE[5],
        "empirical_sigma_all_iterates": PALETTE[3],
    }.get(method, "0.5")
    marker = {"empirical_gdp": "^", "empirical_sigma_last_iterate": "D", "empirical_sigma_all_iterates": "v"}.get(
        method, "."
    )
    if held_out:
        marker = "x"
    if primary:
        return dict(color=colour, marker=marker, markersize=4, linewidth=1.6, label=label)
    if valid_gdp:
        return dict(color=colour, marker=marker, markersize=4, markerfacecolor="none", linewidth=1.1, linestyle=":",
                    label=label)
    return dict(color=colour, marker=marker, markersize=3, linewidth=0.9, linestyle="--", alpha=0.8, label=label)


def plot_fig5(table: pd.DataFrame, *, pdf: str, csv: str, facts: Mapping[str, Any]) -> pd.DataFrame:
    """Figure 5: ε(quadratic, α)/max_{t≤T} ε_t(linear) vs T, one line per q; one panel per one-step ε.
    ``facts["delta"]``: δ of one step's ε."""
    (delta,), facts = _split(facts, "delta")
    e1s = sorted(table["one_step_epsilon"].unique())
    fig, axes = figure(ncols=len(e1s), height=4.8)
    for ax, e1 in zip(axes[0], e1s):
        sub = table[table["one_step_epsilon"] == e1]
        for i, q in enumerate(sorted(sub["sampling_rate"].unique())):
            d = sub[sub["sampling_rate"] == q].sort_values("steps")
            ax.plot(
                d["steps"],
                d["ratio"],
                marker="o",
                markersize=3,
                color=PALETTE[i % len(PALETTE)],
                label=f"q = {q:g} (rounded, upper bound)",
            )
            if "ratio_exact" in d and d["ratio_exact"].notna().any():
                ax.plot(
                    d["steps"],
                    d["ratio_exact"],
                    marker="x",
                    linestyle=":",
                    markersize=4,
                    color=PALETTE[i % len(PALETTE)],
                    label=f"q = {q:g} (exact atoms)",
                )
            if "ratio_other_direction" in d and d["ratio_other_direction"].notna().any():
                ax.plot(
                    d["steps"],
                    d["ratio_other_direction"],
                    marker="+",
                    linestyle="none",
                    markersize=4,
                    color=PALETTE[i % len(PALETTE)],
                    label=f"q = {q:g} (rounded {d['rounding_direction'].iloc[0] == 'up' and 'to nearest' or 'up'})",
                )
        ax.axhline(1.0, **UPPER_BOUND_STYLE)
        ax.axhline(1.03, color="0.5", linestyle=":", linewidth=0.8)
        ax.set_title(f"one step is ({e1:g}, {delta:g})-DP")
        ax.set_xlabel("iterations T")
        ax.set_ylabel("ε(α = 0.5) / max_{t≤T} ε_t")
    footer = footer_text(**facts, R="analytic", audit="none (exact ε, rounding)")
    _legend_below(fig, axes[0][0], ncol=3, footer=footer, space=0.33)
    write_csv_atomic(table, csv)
    save(fig, pdf, footer=footer, tight=False)
    return table


def plot_fig6(table: pd.DataFrame, *, pdf: str, csv: str, facts: Mapping[str, Any]) -> pd.DataFrame:
    """Figure 6: malicious-dataset attack (App. C) vs standard and heuristic ε."""
    fig, axes = figure(ncols=1, width=7.0, height=3.4)
    ax = axes[0][0]
    for method in (
        "standard",
        "heuristic",
        "empirical_pld_cp",
        "empirical_gdp",
        "empirical_all_iterates_gdp",
        "empirical_linear_gdp",
        "empirical_all_iterates_pld_cp",
        "empirical_pld_cp_value_store",
    ):
        d = table[table["method"] == method].sort_values("steps")
        if d.empty:
            continue
        st = dict(_METHOD_STYLE[method])
        if method == "empirical_gdp":
            st["label"] = "malicious dataset, last iterate (GDP audit)"
        if method == "empirical_pld_cp":
            st["label"] = "malicious dataset, last iterate (σ̂ audit, CP)"
        ax.plot(d["steps"], d["epsilon"], markersize=4, **st)
    q, s = table["sampling_rate"].iloc[0], table["noise_multiplier"].iloc[0]
    ax.set_xscale("log")
    ax.set_title(f"malicious-dataset attack, q = {q:g}, σ = {s:g}")
    ax.set_xlabel("iterations T")
    ax.set_ylabel("ε")
    ax.legend(frameon=False, fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # off the data
    runs = int(table["runs_per_world"].iloc[0])
    conf = float(table["confidence"].iloc[0]) if "confidence" in table else float("nan")
    rule = (table.loc[table["method"] == "empirical_gdp", "threshold_rule"] if "threshold_rule" in table
            else pd.Series([]))
    write_csv_atomic(table, csv)
    save(
        fig,
        pdf,
        footer=footer_text(
            **facts, R=f"{runs}/world", audit=f"σ̂ all_iterates + GDP ({rule.iloc[0] if len(rule) else '?'})", CP=conf
        ),
    )
    return table


_TRAINED_MAIN = "empirical_sigma_last_iterate"


_GDP_METHODS = ("empirical_gdp", "empirical_gdp_valid")


def _gdp_rule(table: pd.DataFrame, method: str) -> str | None:
    """``"<rule> rule (valid)"`` / ``"<rule> rule (not a valid bound)"`` of a GDP series
    (:func:`hsaudit.audit.validity.rule_words`), read off its rows' ``threshold_rule`` and ``valid`` ("validity not
    recorded" for a table without it); None where the table lacks the method."""
    rows = table[table["method"] == method]
    if rows.empty:
        return None
    first = rows.iloc[0]
    valid = first["valid"] if "valid" in rows else None
    if pd.isna(valid):
        return f"{first['threshold_rule']} rule (validity not recorded)"
    return rule_words(first["threshold_rule"], bool(valid))


def _trained_curves(ax, table: pd.DataFrame) -> None:
    """ε vs T of every method of a trained-model audit table (fig2, fig4): accounting, the σ̂ audit (solid) and
    held out, and the GDP audit under ``audit.mode``'s rule (dashed, filled triangles) and under the valid rule
    (``empirical_gdp_valid``: dotted, open triangles); each GDP label names its rule and whether it is valid."""
    main = _TRAINED_MAIN
    for method in ("standard", "heuristic", main, f"{main}_held_out", *_GDP_METHODS):
        d = table[table["method"] == method].sort_values("steps")
        if d.empty:
            continue
        style = _fig3_style(method, primary=method == main)
        if method in _GDP_METHODS:
            style["label"] = f"empirical, GDP audit (Nasr et al. 2023), {_gdp_rule(table, method)}"
        ax.plot(d["steps"], d["epsilon"], **style)


def _trained_audit_label(table: pd.DataFrame) -> str:
    """The footer's audit entry of fig2 and fig4: the σ̂ audit's two rules and the GDP audit's (``audit.mode``'s and
    the valid one), each read off the table with whether it is valid."""
    gdp = "; ".join(rule for rule in (_gdp_rule(table, m) for m in _GDP_METHODS) if rule) or "?"
    return f"σ̂ last_iterate (all thresholds, not a valid bound; held-out, valid) + GDP ({gdp})"


def plot_fig2(table: pd.DataFrame, *, pdf: str, csv: str, facts: Mapping[str, Any]) -> pd.DataFrame:
    """Figure 2: the Dirac gradient canary in trained models; ε vs T (fixed q, σ) for the σ̂ audit (the paper's rule,
    solid; held-out threshold, valid), the GDP audit under ``audit.mode``'s rule and under a valid rule
    (``empirical_gdp_valid``, open markers), the heuristic and standard accounting.

    ``table``: :func:`hsaudit.experiments.steinke.audit.fig2_table`. The footer names the scale, R, the model, the
    background, the data source and the audits; ``facts`` as the other figures (``scale``, ``code_version``, and
    ``setup``: what was trained, beside the paper's model).
    """
    fig, axes = figure(ncols=1, width=5.5, height=4.4)
    ax = axes[0][0]
    _trained_curves(ax, table)
    q, s = float(table["sampling_rate"].iloc[0]), float(table["noise_multiplier"].iloc[0])
    ax.set_xscale("log")
    ax.set_title(f"Dirac gradient canary, {table['background'].iloc[0]} background (q = {q:.3g}, σ = {s:g})",
                 fontsize=8)
    ax.set_xlabel("iterations T")
    ax.set_ylabel(f"ε at δ = {float(table['delta'].iloc[0]):g}")
    footer = footer_text(
        **facts,
        R=f"{int(table['runs_per_world'].min())}/world",
        data=table["data_source"].iloc[0],
        audit=_trained_audit_label(table),
        CP=float(table["confidence"].iloc[0]),
        model=table["model"].iloc[0],
        d=int(table["canary_dim"].iloc[0]),
    )
    _legend_below(fig, ax, ncol=1, footer=footer, space=0.24)
    write_csv_atomic(table, csv)
    save(fig, pdf, footer=footer, tight=False)
    return table


def plot_fig4(table: pd.DataFrame, *, pdf: str, csv: str, facts: Mapping[str, Any]) -> pd.DataFrame:
    """Figure 4: the label-flipped input canary (score −ℓ(θ_T; x*, y*)); ε vs T, one panel per background —
    (a) zero-gradient inputs (or blank images, the other reading), (b) the data — with the same audits and bounds as
    Figure 2.

    ``table``: :func:`hsaudit.experiments.steinke.audit.fig4_table`. The footer names the scale, R, the model,
    the data source, the audits, the canary's label and the models' mean test accuracy per background.
    """
    order = [b for b in ("zero_gradient", "blank", "natural") if b in set(table["background"])]
    fig, axes = figure(ncols=len(order), width=4.2 * len(order), height=3.8, sharey=True)
    titles = {"zero_gradient": "(a) zero-gradient inputs", "blank": "(a) blank images", "natural": "(b) natural data"}
    for ax, background in zip(axes[0], order):
        part = table[table["background"] == background]
        _trained_curves(ax, part)
        q, s = float(part["sampling_rate"].iloc[0]), float(part["noise_multiplier"].iloc[0])
        ax.set_xscale("log")
        ax.set_title(f"{titles[background]}: label-flip canary (q = {q:.3g}, σ = {s:g})", fontsize=8)
        ax.set_xlabel("iterations T")
    axes[0][0].set_ylabel(f"ε at δ = {float(table['delta'].iloc[0]):g}")
    accuracy = "; ".join(
        f"{b} {table.loc[table['background'] == b, 'test_accuracy_mean'].iloc[0]:.3f}" for b in order
    )
    footer = footer_text(
        **facts,
        R=f"{int(table['runs_per_world'].min())}/world",
        data=table["data_source"].iloc[0],
        audit=_trained_audit_label(table),
        CP=float(table["confidence"].iloc[0]),
        model=table["model"].iloc[0],
        score="-loss(x*, y*)",
        y_star=int(table["canary_label"].iloc[0]),
        test_accuracy=accuracy,
    )
    _legend_below(fig, axes[0][0], ncol=len(order), footer=footer, space=0.2)
    write_csv_atomic(table, csv)
    save(fig, pdf, footer=footer, tight=False)
    return table


SPREAD_METHOD = "empirical_gdp_valid"
"""The audit the spread is taken of: the GDP audit under the valid rule (``audit.valid_mode``)."""


def spread_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per T and canary type (``dirac``, ``label_flip``) of a ``fig4_spread`` table
    (:func:`hsaudit.experiments.steinke.audit.fig4_spread_table`): the number of canaries, the mean, sd, min and max
    of their valid ε̂ (:data:`SPREAD_METHOD`), the heuristic and standard ε there, and every canary's ε̂ (``values``:
    ``d=<coordinate>`` or ``image <index>→<label>``, ``: ε̂``, in panel order)."""
    rows = []
    for (t, canary), part in table.groupby(["steps", "canary"], sort=True):
        valid = part[part["method"] == SPREAD_METHOD]
        eps = valid["epsilon"].astype(float)

        def name(r) -> str:
            if canary == "dirac":
                return f"d={int(r['canary_dim'])}"
            return f"image {int(r['canary_index'])}→{int(r['canary_label'])}"

        rows.append({
            "steps": int(t),
            "canary": canary,
            "canaries": int(len(valid)),
            "threshold_rule": valid["threshold_rule"].iloc[0],
            "valid": True,
            "mean": float(eps.mean()),
            "sd": float(eps.std(ddof=1)) if len(eps) > 1 else float("nan"),
            "min": float(eps.min()),
            "max": float(eps.max()),
            "heuristic": float(part.loc[part["method"] == "heuristic", "epsilon"].iloc[0]),
            "standard": float(part.loc[part["method"] == "standard", "epsilon"].iloc[0]),
            "runs_per_world": int(valid["runs_per_world"].min()),
            "data_source": valid["data_source"].iloc[0],
            "confidence": float(valid["confidence"].iloc[0]),
            "delta": float(valid["delta"].iloc[0]),
            "values": "; ".join(f"{name(r)}: {float(r['epsilon']):.3f}" for _, r in valid.iterrows()),
        })
    return pd.DataFrame(rows)


def plot_fig4_spread(table: pd.DataFrame, *, pdf: str, csv: str, facts: Mapping[str, Any]) -> pd.DataFrame:
    """``fig4_spread``: the valid GDP ε̂ vs T of every canary (thin lines), the mean over the canaries of each type
    (thick) and their min–max band, the Dirac gradient canary against the label-flipped input canary on natural
    data, with the heuristic. The CSV is :func:`spread_summary`.

    ``table``: :func:`hsaudit.experiments.steinke.audit.fig4_spread_table`.
    """
    summary = spread_summary(table)
    fig, axes = figure(ncols=1, width=5.0, height=3.8)
    ax = axes[0][0]
    labels = {"dirac": "Dirac gradient canary", "label_flip": "label-flipped input canary"}
    valid = table[table["method"] == SPREAD_METHOD]
    for i, canary in enumerate(c for c in ("dirac", "label_flip") if c in set(summary["canary"])):
        color = PALETTE[i % len(PALETTE)]
        for _, part in valid[valid["canary"] == canary].groupby("panel", sort=False):
            ax.plot(part["steps"], part["epsilon"], color=color, lw=0.6, alpha=0.45)
        s = summary[summary["canary"] == canary]
        ax.fill_between(s["steps"], s["min"], s["max"], color=color, alpha=0.12, lw=0)
        ax.plot(s["steps"], s["mean"], color=color, lw=2.0, marker="o", ms=3,
                label=f"{labels[canary]}: mean of {int(s['canaries'].iloc[0])} (band: min–max)")
    heuristic = summary.drop_duplicates("steps")
    ax.plot(heuristic["steps"], heuristic["heuristic"], label="heuristic (Theorem 1)", **UPPER_BOUND_STYLE)
    ax.set_xscale("log")
    ax.set_xlabel("iterations T")
    ax.set_ylabel(f"valid ε̂ at δ = {float(table['delta'].iloc[0]):g}")
    q, sigma = float(table["sampling_rate"].iloc[0]), float(table["noise_multiplier"].iloc[0])
    ax.set_title(f"natural data: gradient vs input canary (q = {q:.3g}, σ = {sigma:g})", fontsize=8)
    footer = footer_text(
        **facts,
        R=f"{int(table['runs_per_world'].min())}/world",
        data=table["data_source"].iloc[0],
        audit=f"GDP ({_gdp_rule(table, SPREAD_METHOD)})",
        CP=float(table["confidence"].iloc[0]),
        model=table["model"].iloc[0],
    )
    _legend_below(fig, ax, ncol=1, footer=footer, space=0.2)
    write_csv_atomic(summary, csv)
    save(fig, pdf, footer=footer, tight=False)
    return summary


FIGURES: dict[str, Callable[..., pd.DataFrame]] = {
    "fig1": plot_fig1,
    "fig2": plot_fig2,
    "fig3": plot_fig3,
    "fig4": plot_fig4,
    "fig4_spread": plot_fig4_spread,
    "fig5": plot_fig5,
    "fig6": plot_fig6,
}
"""Every figure of the paper by id (``results/steinke/<id>.pdf``), each ``fn(table, *, pdf, csv, facts)``."""
