"""Figures of the Section 6 process of Cebere et al.: fig3, fig14, fig6b, fig6c and fig10.

Each ``plot_*`` function is ``fn(table, *, pdf, csv, facts)``: it takes a tidy DataFrame (built by the workflow from :mod:`hsaudit.experiments.section6.records`
records), writes ``figN.pdf`` through :func:`hsaudit.experiments.plotting.save` (atomic, provenance footer) and
``figN.csv`` with every plotted number through :func:`hsaudit.util.io.write_csv_atomic`, and returns the CSV
table. Conventions: ε at δ = 1e−5 unless the data say otherwise; "ε̂" is the GDP audit of the Monte Carlo
scores (its mode is in the footer), "exact" is the ε of the last iterate from the exact law.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from hsaudit.experiments import plotting
from hsaudit.util.io import write_csv_atomic
from hsaudit.experiments.section6.exact import upper_bound_epsilon
from hsaudit.experiments.section6.process import Process, loss_landscape

_CURVE_COLUMNS = [
    "rule",
    "sigma",
    "batch_size",
    "step",
    "rep",
    "epsilon_audit",
    "epsilon_exact",
    "epsilon_upper",
    "epsilon_gdp_limit",
    "mu",
    "threshold",
    "fpr_upper",
    "fnr_upper",
    "epsilon_assumption_free",
    "epsilon_assumption_free_max",
    "runs_per_world",
    "threshold_rule",
    "confidence",
    "delta",
]


def curves_table(audits: pd.DataFrame, exact: pd.DataFrame) -> pd.DataFrame:
    """Join the per-(rep, step) audits with the exact ε of the same (rule, σ, B, step).

    Args:
        audits: rows of :func:`hsaudit.experiments.section6.records.audit_records`.
        exact: rows of :func:`hsaudit.experiments.section6.records.exact_records`.

    Returns:
        The fig3/fig14 table (columns ``_CURVE_COLUMNS``), rules in their order of appearance.

    Raises:
        ValueError: if an audited (rule, σ, B, step) has no exact value.
    """
    keys = ["rule", "sigma", "batch_size", "step"]
    merged = audits.merge(
        exact[[*keys, "epsilon_exact", "epsilon_gdp_limit"]], on=keys, how="left", validate="many_to_one"
    )
    if merged["epsilon_exact"].isna().any():
        missing = merged.loc[merged["epsilon_exact"].isna(), keys].drop_duplicates().head(3).to_dict("records")
        raise ValueError(f"no exact epsilon for audited cells, e.g. {missing}")
    return merged[_CURVE_COLUMNS]


def _provenance(facts: Mapping, table: pd.DataFrame | None = None) -> dict:
    """The Section 6 facts of a footer, as keyword arguments of :func:`hsaudit.experiments.plotting.footer_text`.

    ``facts``: the workflow's (scale, threshold_rule, confidence, delta, code_version); ``table``: R (runs per world)
    and the number of repetitions, where it has them.
    """
    out: dict = {"scale": facts.get("scale", "?"), "code_version": facts.get("code_version", "")}
    if table is not None and "runs_per_world" in table:
        out["R"] = "/".join(f"{r:,}" for r in sorted({int(r) for r in table["runs_per_world"]})) + " per world"
    out["audit"] = f"GDP, {facts.get('threshold_rule', 'paper')} rule, CP {facts.get('confidence', 0.95)}"
    if table is not None and "rep" in table:
        out["reps"] = int(table["rep"].nunique())
    out["δ"] = facts.get("delta", 1e-5)
    return out


def _summary(table: pd.DataFrame) -> pd.DataFrame:
    """Mean ± sd over repetitions of ε̂ per (rule, σ, B, step), with the exact ε and the bound."""
    g = table.groupby(["rule", "sigma", "batch_size", "step"], sort=True)
    return g.agg(
        mean=("epsilon_audit", "mean"),
        sd=("epsilon_audit", "std"),
        exact=("epsilon_exact", "first"),
        upper=("epsilon_upper", "first"),
        af_mean=("epsilon_assumption_free_max", "mean"),
    ).reset_index()


def _curve_panel(ax, summary: pd.DataFrame, *, rule: str, sigma: float, legend: bool, exact: bool = True) -> None:
    sub = summary[(summary["rule"] == rule) & np.isclose(summary["sigma"], sigma)]
    for i, (b, cur) in enumerate(sub.groupby("batch_size")):
        color = plotting.PALETTE[i % len(plotting.PALETTE)]
        sd = cur["sd"].fillna(0.0)
        ax.plot(cur["step"], cur["mean"], color=color, lw=1.4, label=f"B = {b}")
        ax.fill_between(cur["step"], cur["mean"] - sd, cur["mean"] + sd, color=color, alpha=0.2, lw=0)
        if exact:
            ax.plot(cur["step"], cur["exact"], color=color, lw=0.9, ls=(0, (2, 1.5)), alpha=0.9)
    if len(sub):
        ax.axhline(sub["upper"].iloc[0], **plotting.UPPER_BOUND_STYLE, label="upper bound")
    ax.set_title(f"σ = {sigma:g}" + ("" if rule == "divergent" else f"  ({rule} rule)"))
    ax.set_xlabel("step t")
    ax.set_ylabel("ε (δ = 1e−5)")
    ax.set_ylim(bottom=0)
    if legend:
        handles, labels = ax.get_legend_handles_labels()
        from matplotlib.lines import Line2D

        handles.append(Line2D([], [], color="0.3", lw=0.9, ls=(0, (2, 1.5))))
        labels.append("exact ε (dashed)")
        ax.legend(handles, labels, frameon=False, fontsize=6.5, ncol=2)


def _ratio_table(summary: pd.DataFrame) -> pd.DataFrame:
    first = summary[summary["step"] == summary["step"].min()].set_index(["rule", "sigma", "batch_size"])
    last = summary[summary["step"] == summary["step"].max()].set_index(["rule", "sigma", "batch_size"])
    out = pd.DataFrame(
        {
            "ratio": last["mean"] / first["mean"],
            "ratio_exact": last["exact"] / first["exact"],
            "epsilon_audit_first": first["mean"],
            "epsilon_audit_last": last["mean"],
            "epsilon_exact_first": first["exact"],
            "epsilon_exact_last": last["exact"],
        }
    )
    return out.reset_index()


def plot_fig3(table: pd.DataFrame, *, pdf: str, csv: str, facts: Mapping) -> pd.DataFrame:
    """Fig. 3 of Cebere et al.: (a) ε̂ vs t for σ ∈ ``facts["panel_sigmas"]``, one line per B (mean ± sd over the
    repetitions, exact ε dashed, upper bound); (b) heatmap of ε̂_{t=T}/ε̂_{t=1} (rows σ, columns B).

    The first rule of ``table`` is plotted; a second rule (``literal``) gets a small panel of its own at the
    first panel σ. Returns the CSV table: the per-repetition rows (``panel`` = "a") and the heatmap cells
    (``panel`` = "b", columns ratio / ratio_exact).
    """
    panel_sigmas: Sequence[float] = facts["panel_sigmas"]
    rules = list(dict.fromkeys(table["rule"]))
    primary = rules[0]
    summary = _summary(table)
    ratios = _ratio_table(summary)
    fig, axes = plotting.figure(ncols=2, nrows=2, height=6.2)
    for k, sigma in enumerate(panel_sigmas[:2]):
        _curve_panel(axes[0][k], summary, rule=primary, sigma=float(sigma), legend=k == 0)
        axes[0][k].set_title(f"(a) σ = {float(sigma):g}")
    heat = ratios[ratios["rule"] == primary].pivot(index="sigma", columns="batch_size", values="ratio")
    heat_exact = ratios[ratios["rule"] == primary].pivot(index="sigma", columns="batch_size", values="ratio_exact")
    ax = axes[1][0]
    im = ax.imshow(
        heat.to_numpy(), cmap="viridis", vmin=0, vmax=max(1.0, float(np.nanmax(heat.to_numpy()))), aspect="auto"
    )
    for i in range(heat.shape[0]):
        for j in range(heat.shape[1]):
            v, e = heat.iat[i, j], heat_exact.iat[i, j]
            ax.text(
                j, i - 0.12, f"{v:.2f}", ha="center", va="center", fontsize=7, color="white" if v < 0.6 else "black"
            )
            ax.text(
                j,
                i + 0.22,
                f"exact {e:.2f}",
                ha="center",
                va="center",
                fontsize=5,
                color="white" if v < 0.6 else "black",
            )
    ax.set_xticks(range(heat.shape[1]), [str(b) for b in heat.columns])
    ax.set_yticks(range(heat.shape[0]), [f"{s:g}" for s in heat.index])
    ax.set_xlabel("batch size B")
    ax.set_ylabel("σ")
    ax.grid(False)
    ax.set_title(f"(b) ε̂(t={int(summary['step'].max())}) / ε̂(t=1)")
    fig.colorbar(im, ax=ax, fraction=0.05, pad=0.02)
    ax = axes[1][1]
    if len(rules) > 1:
        _curve_panel(ax, summary, rule=rules[1], sigma=float(panel_sigmas[0]), legend=False)
        ax.set_title(f"{rules[1]} rule (mean-reverting), σ = {float(panel_sigmas[0]):g}")
    else:
        ax.axis("off")
    plotting.save(fig, pdf, footer=plotting.footer_text(**_provenance(facts, table), rule=primary))
    rows_a = table.assign(panel="a")
    rows_b = ratios.assign(panel="b")
    out = pd.concat([rows_a, rows_b], ignore_index=True, sort=False)
    write_csv_atomic(out, csv)
    return out


def plot_fig14(table: pd.DataFrame, *, pdf: str, csv: str, facts: Mapping) -> pd.DataFrame:
    """Fig. 14 of Cebere et al.: one panel per σ, the B-curves of ε̂ (mean ± sd), exact ε dashed, bound.

    Only the first rule of ``table`` is drawn; the CSV holds every rule. Returns the CSV table.
    """
    primary = list(dict.fromkeys(table["rule"]))[0]
    summary = _summary(table)
    sigmas = sorted(summary["sigma"].unique())
    ncols = min(4, len(sigmas))
    nrows = int(np.ceil(len(sigmas) / ncols))
    fig, axes = plotting.figure(ncols=ncols, nrows=nrows, height=2.3 * nrows + 0.5)
    flat = [ax for row in axes for ax in row]
    for k, sigma in enumerate(sigmas):
        _curve_panel(flat[k], summary, rule=primary, sigma=sigma, legend=k == 0)
    for ax in flat[len(sigmas) :]:
        ax.axis("off")
    plotting.save(fig, pdf, footer=plotting.footer_text(**_provenance(facts, table), rule=primary))
    write_csv_atomic(table, csv)
    return table


def plot_fig6b(table: pd.DataFrame, *, pdf: str, csv: str, facts: Mapping) -> pd.DataFrame:
    """Fig. 6b of Cebere et al.: empirical trade-off curves of A_S^{h*} (FNR vs FPR over all thresholds) per
    B against the Gaussian fit G_μ̂(α) = Φ(Φ⁻¹(1 − α) − μ̂), with the exact trade-off curve of the last
    iterate. Returns the CSV table (``table`` itself)."""
    batches = sorted(table["batch_size"].unique())
    ncols = min(3, len(batches))
    nrows = int(np.ceil(len(batches) / ncols))
    fig, axes = plotting.figure(ncols=ncols, nrows=nrows, height=2.4 * nrows + 0.5)
    flat = [ax for row in axes for ax in row]
    styles = {
        "empirical": dict(color=plotting.PALETTE[0], lw=1.6, label="empirical (MC)"),
        "gdp_fit": dict(color=plotting.PALETTE[1], lw=1.1, ls="--", label="G_μ̂ (GDP fit)"),
        "exact": dict(color="0.2", lw=0.9, ls=":", label="exact"),
    }
    for k, b in enumerate(batches):
        ax = flat[k]
        sub = table[table["batch_size"] == b]
        for name, style in styles.items():
            cur = sub[sub["curve"] == name]
            ax.plot(cur["fpr"], cur["fnr"], **style)
        row = sub.iloc[0]
        ax.set_title(
            f"B = {b}: μ̂ = {row['mu']:.3f}, ε̂ = {row['epsilon_audit']:.2f}, exact {row['epsilon_exact']:.2f}",
            fontsize=7.5,
        )
        ax.set_xlabel("FPR")
        ax.set_ylabel("FNR")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_aspect("equal")
        if k == 0:
            ax.legend(frameon=False, fontsize=6.5, loc="upper right")
        # inset: the tail, where ε at small δ is decided: log(TPR/FPR) against FPR (log scale). The GDP fit
        # grows without bound as FPR → 0; a real trade-off curve need not (the MC curve stops at FPR = 1/R).
        ins = ax.inset_axes([0.09, 0.09, 0.36, 0.36])
        for name, style in styles.items():
            cur = sub[(sub["curve"] == name) & (sub["fpr"] > 0) & (sub["fnr"] < 1)]
            ins.plot(cur["fpr"], np.log((1.0 - cur["fnr"]) / cur["fpr"]), **{**style, "label": None})
        ins.set_xscale("log")
        ins.set_xlim(1e-8, 1)
        ins.tick_params(labelsize=5, pad=1)
        ins.set_xlabel("FPR", fontsize=5, labelpad=0)
        ins.set_ylabel("log(TPR/FPR)", fontsize=5, labelpad=1)
    for ax in flat[len(batches) :]:
        ax.axis("off")
    row = table.iloc[0]
    plotting.save(
        fig,
        pdf,
        footer=plotting.footer_text(**_provenance(facts, table), σ=row["sigma"], t=int(row["step"])),
    )
    write_csv_atomic(table, csv)
    return table


def plot_fig6c(table: pd.DataFrame, *, pdf: str, csv: str, facts: Mapping) -> pd.DataFrame:
    """Fig. 6c (App. F) of Cebere et al.: the T = 2 threshold search vs h* = C/2 vs the upper bound.

    Top row (one panel per B): ε̂ against σ for the search (max over the α grid, per repetition, then mean ±
    sd), for h* (mean ± sd), the exact ε at h*, and the upper bound. Bottom row: ε̂(h) / ε̂(h*) and the exact
    ε(h) / ε(h*) against h/C for every σ, to show where the maximum lies. Returns the CSV table (one row per
    candidate and repetition plus the per-(σ, B) summary rows with ``candidate`` = "search-max").
    """
    batches = sorted(table["batch_size"].unique())
    fig, axes = plotting.figure(ncols=len(batches), nrows=2, height=5.6)
    rows = []
    for k, b in enumerate(batches):
        sub = table[table["batch_size"] == b]
        per_rep_max = sub[sub["candidate"] == "grid"].groupby(["sigma", "rep"])["epsilon_audit"].max()
        best = per_rep_max.groupby("sigma").agg(["mean", "std"])
        hstar = (
            sub[sub["candidate"] == "h*"]
            .groupby("sigma")
            .agg(mean=("epsilon_audit", "mean"), std=("epsilon_audit", "std"), exact=("epsilon_exact", "first"))
        )
        sig = best.index.to_numpy()
        delta = float(table["delta"].iloc[0])
        upper = [upper_bound_epsilon(sigma=s, delta=delta) for s in sig]
        ax = axes[0][k]
        ax.plot(sig, upper, **plotting.UPPER_BOUND_STYLE, marker="_", ms=8, label="upper bound")
        ax.errorbar(
            sig,
            best["mean"],
            yerr=best["std"].fillna(0),
            marker="o",
            ms=3,
            lw=1.2,
            capsize=2,
            label="threshold search (max)",
        )
        ax.errorbar(
            hstar.index,
            hstar["mean"],
            yerr=hstar["std"].fillna(0),
            marker="s",
            ms=3,
            lw=1.2,
            capsize=2,
            label="$A_S^{h^*}$, h* = C/2",
        )
        ax.plot(hstar.index, hstar["exact"], color="0.3", lw=0.9, ls=":", marker="x", ms=3, label="exact ε at h*")
        ax.set_xlabel("σ")
        ax.set_ylabel("ε (δ = 1e−5)")
        ax.set_title(f"B = {b}, T = {int(sub['steps'].iloc[0])}")
        ax.set_yscale("log")
        from matplotlib.ticker import FormatStrFormatter

        ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
        ax.yaxis.set_minor_formatter(FormatStrFormatter("%g"))
        ax.tick_params(axis="y", which="minor", labelsize=6)
        if k == 0:
            ax.legend(frameon=False, fontsize=6.5)
        ax = axes[1][k]
        grid = (
            sub[sub["candidate"] == "grid"]
            .groupby(["sigma", "h"])
            .agg(mean=("epsilon_audit", "mean"), exact=("epsilon_exact", "first"))
            .reset_index()
        )
        for i, (s, cur) in enumerate(grid.groupby("sigma")):
            color = plotting.PALETTE[i % len(plotting.PALETTE)]
            finite = np.isfinite(cur["h"])
            ref = hstar.loc[s]
            ax.plot(
                cur["h"][finite],
                cur["mean"][finite] / ref["mean"],
                color=color,
                marker="o",
                ms=2,
                lw=1,
                label=f"σ = {s:g}",
            )
            ax.plot(cur["h"][finite], cur["exact"][finite] / ref["exact"], color=color, lw=0.8, ls=":")
        ax.axvline(0.5 * float(sub["clip_norm"].iloc[0]), color="0.4", lw=0.8)
        ax.axhline(1.0, color="0.6", lw=0.6)
        ax.set_xlabel("switch point h (vertical line: h* = C/2)")
        ax.set_ylabel("ε̂(h) / ε̂(h*)  (dotted: exact)")
        ax.set_xlim(-1.5, 3.5)
        if k == 0:
            ax.legend(frameon=False, fontsize=6, ncol=2)
        for s in sig:
            rows.append(
                {
                    "candidate": "search-max",
                    "sigma": s,
                    "batch_size": b,
                    "epsilon_audit": best.loc[s, "mean"],
                    "epsilon_audit_sd": best.loc[s, "std"],
                    "epsilon_hstar": hstar.loc[s, "mean"],
                    "epsilon_hstar_sd": hstar.loc[s, "std"],
                    "epsilon_exact_hstar": hstar.loc[s, "exact"],
                    "epsilon_upper": upper_bound_epsilon(sigma=s, delta=delta),
                    "h_best": float(
                        sub[(sub["candidate"] == "grid") & (sub["sigma"] == s)]
                        .groupby("h")["epsilon_audit"]
                        .mean()
                        .idxmax()
                    ),
                }
            )
    plotting.save(fig, pdf, footer=plotting.footer_text(**_provenance(facts, table)))
    out = pd.concat([table, pd.DataFrame(rows)], ignore_index=True, sort=False)
    write_csv_atomic(out, csv)
    return out


def landscape_table(
    *, rules: Sequence[str], clip_norm: float, switch_point: float, range: Sequence[float], points: int, sigma: float
) -> pd.DataFrame:
    """fig10 data: the loss ℓ(θ) of every rule on a θ grid (units of C), with the step-1 densities
    N(0, σ²C²) (not inserted) and N(C, σ²C²) (inserted) for context."""
    theta = np.linspace(range[0] * clip_norm, range[1] * clip_norm, int(points))
    frames = []
    for rule in rules:
        proc = Process(sigma=sigma, batch_size=1, steps=1, clip_norm=clip_norm, rule=rule, switch_point=switch_point)
        frames.append(
            pd.DataFrame(
                {
                    "rule": rule,
                    "theta": theta,
                    "loss": loss_landscape(theta, proc),
                    "density_not_inserted": stats.norm.pdf(theta, 0.0, sigma * clip_norm),
                    "density_inserted": stats.norm.pdf(theta, clip_norm, sigma * clip_norm),
                    "switch_point": proc.h,
                    "sigma": sigma,
                    "clip_norm": clip_norm,
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def plot_fig10(table: pd.DataFrame, *, pdf: str, csv: str, facts: Mapping) -> pd.DataFrame:
    """Fig. 10 of Cebere et al.: the per-sample loss landscape of A_S^{h*} (C = 1): gradient descent on it moves
    θ away from h* (divergent rule; the literal reading gives the valley drawn thin). Returns ``table``."""
    rules = list(dict.fromkeys(table["rule"]))
    fig, axes = plotting.figure(ncols=1, nrows=1, width=4.2, height=3.0)
    ax = axes[0][0]
    for i, rule in enumerate(rules):
        cur = table[table["rule"] == rule]
        ax.plot(
            cur["theta"],
            cur["loss"],
            color=plotting.PALETTE[i],
            lw=1.8 if i == 0 else 0.9,
            ls="-" if i == 0 else "--",
            label=f"ℓ(θ), {rule} rule",
        )
    h = float(table["switch_point"].iloc[0])
    ax.axvline(h, color="0.4", lw=0.8, ls=":")
    ax.text(h, ax.get_ylim()[1], " h* = C/2", va="top", fontsize=7, color="0.3")
    ax.set_xlabel("θ")
    ax.set_ylabel("loss ℓ(θ)")
    twin = ax.twinx()
    cur = table[table["rule"] == rules[0]]
    twin.fill_between(
        cur["theta"],
        cur["density_not_inserted"],
        color=plotting.PALETTE[2],
        alpha=0.15,
        lw=0,
        label="θ₁ density, not inserted",
    )
    twin.fill_between(
        cur["theta"],
        cur["density_inserted"],
        color=plotting.PALETTE[3],
        alpha=0.15,
        lw=0,
        label="θ̄₁ density, inserted",
    )
    twin.set_ylabel("density of θ₁")
    twin.grid(False)
    twin.set_ylim(bottom=0)
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = twin.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, frameon=False, fontsize=6.5, loc="lower left")
    plotting.save(fig, pdf, footer=plotting.footer_text(**_provenance(facts), σ=table["sigma"].iloc[0]))
    write_csv_atomic(table, csv)
    return table


FIGURES: dict[str, Callable[..., object]] = {
    "fig3": plot_fig3,
    "fig6b": plot_fig6b,
    "fig6c": plot_fig6c,
    "fig10": plot_fig10,
    "fig14": plot_fig14,
}
"""Figure id → the function that draws it."""
