"""The result tables of docs/section6.md, from the pipeline's CSVs (Cebere et al. §6: fig3/fig14, fig6b, fig6c).

    python scripts/section6_tables.py [--results results] [--rule divergent]

Reads ``results/fig3.csv`` (per-repetition rows, ``panel`` = "a"), ``results/fig6b.csv`` and ``results/fig6c.csv``
when present, and prints the markdown tables that docs/section6.md shows, so that the page can be refreshed after
any change that moves the Monte Carlo (its random streams, R, the audit). Nothing is written.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from hsaudit.accounting.gaussian import gdp_epsilon


def fig3_table(table: pd.DataFrame, *, rule: str) -> str:
    """σ | bound | B | ε̂(t=1) | ε̂(t=T) | ratio | AF max | GDP limit | exact | exact ratio (means ± sd over reps)."""
    rows = table[(table["panel"] == "a") & (table["rule"] == rule)]
    last = int(rows["step"].max())
    out = [
        f"| σ | bound | B | ε̂(t=1) | ε̂(t={last}) | ratio | AF max (t={last}) | GDP limit (t={last}) | exact (t={last}) "
        "| exact ratio |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (sigma, batch), g in rows.groupby(["sigma", "batch_size"]):
        first, end = g[g["step"] == 1], g[g["step"] == last]
        e1, e_last = first["epsilon_audit"], end["epsilon_audit"]
        exact1, exact_last = first["epsilon_exact"].iloc[0], end["epsilon_exact"].iloc[0]
        out.append(
            f"| {sigma:g} | {end['epsilon_upper'].iloc[0]:.3f} | {batch} | {e1.mean():.3f} ± {e1.std():.3f} "
            f"| {e_last.mean():.3f} ± {e_last.std():.3f} | {e_last.mean() / e1.mean():.2f} "
            f"| {end['epsilon_assumption_free_max'].mean():.3f} | {end['epsilon_gdp_limit'].iloc[0]:.3f} "
            f"| {exact_last:.3f} | {exact_last / exact1:.2f} |"
        )
    return "\n".join(out)


def fig6b_table(table: pd.DataFrame) -> str:
    """B | μ̂ | ε̂ | exact ε, one row per B (the audit's point of each curve)."""
    cols = {"batch_size", "mu", "epsilon_audit", "epsilon_exact"}
    if not cols <= set(table.columns):
        return f"(fig6b.csv lacks {sorted(cols - set(table.columns))})"
    per_b = table.groupby("batch_size")[["mu", "epsilon_audit", "epsilon_exact"]].first()
    out = ["| B | μ̂ | ε̂ | exact ε |", "|---|---|---|---|"]
    for batch, r in per_b.iterrows():
        out.append(f"| {batch} | {r['mu']:.3f} | {r['epsilon_audit']:.3f} | {r['epsilon_exact']:.3f} |")
    return "\n".join(out)


def fig6c_table(table: pd.DataFrame) -> str:
    """The threshold search against h*: per (B, σ) the search's max ε̂, ε̂ at h*, the best grid h, exact ε."""
    out = [
        "| B | σ | bound | search max ε̂ | ε̂ at h* | best grid h (mean ε̂) | exact ε at h* | exact ε range over grid h "
        "| argmax_h of R→∞ audit limit |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
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
        out.append(
            f"| {batch} | {sigma:g} | {bound:.3f} | {search.mean():.3f} ± {search.std():.3f} "
            f"| {at_star.mean():.3f} ± {at_star.std():.3f} | {'∞' if np.isinf(best_h) else f'{best_h:.2f}'} | {star['epsilon_exact'].iloc[0]:.3f} "
            f"| {exact_grid.min():.3f}–{exact_grid.max():.3f} | {limit_h:.2f} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=Path("results"), help="the results folder (default: results)")
    parser.add_argument("--rule", default="divergent", help="sign rule of the fig3 table (default: divergent)")
    args = parser.parse_args(argv)
    found = False
    for name, make in (
        ("fig3.csv", lambda t: fig3_table(t, rule=args.rule)),
        ("fig6b.csv", fig6b_table),
        ("fig6c.csv", fig6c_table),
    ):
        path = args.results / name
        if path.exists():
            found = True
            print(f"### {name}\n\n{make(pd.read_csv(path))}\n")
    if not found:
        print(f"no fig3.csv, fig6b.csv or fig6c.csv under {args.results}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
