"""One-run audits replicated over master seeds: one row per run of ``results/one_run/fig1.pdf`` (a workdir, or its
``fig1.csv``), the chosen score's one-run ε̂ at M models beside that run's own valid population ε̂, and their mean
± sd over the runs (docs/journal/one_run.md, "Pre-registered replication on fresh seeds").

    python scripts/one_run_seeds.py RUN [RUN ...] [--score calibrated] [--models 256] [--family housing]

RUN is a workdir (its ``results/one_run/fig1.csv`` is read) or a CSV written by the figure's rule; its label is the
master seed of the workdir's ``seed.yaml`` overlay, else of its ``config/config.yaml`` (a CSV: of its directory,
with the file's name), else the path. Every number comes from the CSVs; the
one-run bounds are valid, and the population column is the valid rule's (``population: GDP, valid rule``) at the
largest R. Printed as Markdown; nothing is written. Exit status 2 when a run lacks the row asked for.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import yaml

FDP, COUNTING, VALID = "one run: f-DP", "one run: counting", "population: GDP, valid rule"


def _label(run: Path) -> str:
    """``seed S`` from the workdir's ``seed.yaml`` overlay, else from its ``config/config.yaml``; a CSV is labelled by
    its directory's seed and its own name; the path where neither file is there."""
    workdir = run if run.is_dir() else run.parent
    for source in (workdir / "seed.yaml", workdir / "config" / "config.yaml"):
        if source.exists() and "seed" in (loaded := yaml.safe_load(source.read_text()) or {}):
            return f"seed {loaded['seed']}" + ("" if run.is_dir() else f" ({run.stem})")
    return str(run)


def _csv(run: Path) -> Path:
    return run / "results" / "one_run" / "fig1.csv" if run.is_dir() else run


def seed_rows(tables: dict[str, pd.DataFrame], *, score: str, models: int, family: str) -> pd.DataFrame:
    """Per run: the population's valid ε̂ at its largest R, the score's f-DP and counting ε̂ at ``models`` (with the
    f-DP row's right guesses), and the f-DP ε̂ over the population's.

    Raises:
        KeyError: naming the run and the row it lacks.
    """
    out = []
    for label, table in tables.items():
        t = table[table["family"] == family]
        pop = t[t["method"] == VALID]
        one = t[(t["score"] == score) & (t["models"] == models)]
        fdp, counting = one[one["method"].str.startswith(FDP)], one[one["method"].str.startswith(COUNTING)]
        if pop.empty or fdp.empty or counting.empty:
            raise KeyError(f"{label}: no valid population row, or no {score!r} rows at M = {models} ({family})")
        last = pop.loc[pop["models"].idxmax()]
        f = fdp.iloc[0]
        out.append({
            "run": label,
            "R": int(last["models"]),
            "population ε̂ (valid)": float(last["epsilon"]),
            "model_steps": int(f["model_steps"]),
            "f-DP ε̂": float(f["epsilon"]),
            "right guesses": f"{int(f['correct'])} of {int(f['guesses'])}",
            "counting ε̂": float(counting.iloc[0]["epsilon"]),
            "f-DP / population": float(f["epsilon"]) / float(last["epsilon"]),
        })  # fmt: skip
    return pd.DataFrame(out)


def markdown(rows: pd.DataFrame) -> str:
    """The runs, then a mean ± sd (ddof 1) row over them."""
    cols = list(rows.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, r in rows.iterrows():
        lines.append("| " + " | ".join(f"{v:.3f}" if isinstance(v, float) else str(v) for v in r) + " |")
    numeric = [c for c in cols if rows[c].dtype.kind == "f"]
    spread = {c: f"{rows[c].mean():.3f} ± {rows[c].std(ddof=1):.3f}" if len(rows) > 1 else f"{rows[c].mean():.3f}"
              for c in numeric}
    lines.append("| " + " | ".join(spread.get(c, f"mean ± sd over {len(rows)}" if c == "run" else "")
                                   for c in cols) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="workdirs or fig1.csv files")
    parser.add_argument("--score", default="calibrated", help="the one-run score (one_run.scores)")
    parser.add_argument("--models", type=int, default=256, help="M, the one-run point")
    parser.add_argument("--family", default="housing", help="the panel (one_run.families)")
    args = parser.parse_args(argv)
    tables = {_label(run): pd.read_csv(_csv(run)) for run in args.runs}
    try:
        rows = seed_rows(tables, score=args.score, models=args.models, family=args.family)
    except KeyError as err:
        print(f"error: {err.args[0]}", file=sys.stderr)
        return 2
    print(f"#### one_run/fig1 over runs: {args.score}, M = {args.models}, {args.family}\n")
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
