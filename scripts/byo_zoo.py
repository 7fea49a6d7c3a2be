"""The bug-zoo study of hsaudit's audit of a user's training (docs/byo.md, "The bug zoo"): every zoo entry audited
over many seeds, each seed a fresh design (its bits, models' seeds and canary), and the table of how often each was
flagged.

    python scripts/byo_zoo.py                      # 20 seeds (100..119) of every entry
    python scripts/byo_zoo.py --entries correct,no_clipping --seeds 3

Resumable: every (entry, seed) lands as one row of OUT/runs.csv as soon as it is done, and a rerun skips the rows
already there. At the end it writes OUT/table.csv and OUT/table.md (per entry: flagged, inconclusive and consistent
k/n, the median power statement — the probability that the design flags the positive control, and the control's
multiple of the claim —, median ε̂, true ε / claim, R, time) and says whether the acceptance holds: every asserted bug
(true ε ≥ 1.5x the claim, or not computed) flagged in ≥ 95 % of seeds, every control violating in ≤ 5 %, and a
"consistent" verdict only with its power (probability ≥ the target).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "experiments" / "byo" / "zoo"))
from catalogue import ASSERT_RATIO, ZOO  # noqa: E402

from hsaudit.experiments.byo.api import audit_training  # noqa: E402
from hsaudit.experiments.byo.plan import audit_setting  # noqa: E402
from hsaudit.experiments.byo.audit import AuditOptions  # noqa: E402
from hsaudit.experiments.byo.train.values import Design  # noqa: E402
from hsaudit.util.io import write_csv_atomic, write_text_atomic  # noqa: E402

FLAG_AT_LEAST, CONTROL_AT_MOST = 0.95, 0.05


def run_one(entry, seed: int, runs: int | None = None) -> dict:
    """One audit of one zoo entry at one seed (at ``runs`` per world instead of the entry's, if given): the row of
    runs.csv."""
    runs = runs or entry.runs
    design = Design(entry=entry.entry, canary=entry.canary, background=entry.background, runs=runs, seed=seed,
                    setting=audit_setting() if entry.setting else None)  # fmt: skip
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = audit_training(design, AuditOptions(seed=seed, bootstrap=0)).report
    return {
        "entry": entry.name,
        "kind": entry.kind,
        "seed": seed,
        "verdict": rep.verdict,
        "flagged": rep.verdict == "violation",
        "epsilon_hat": rep.epsilon_hat,
        "epsilon_claimed": rep.claim.epsilon,
        "epsilon_ours": rep.accounting.epsilon,
        "epsilon_heuristic": rep.accounting.heuristic,
        "basis": rep.basis,
        "rule": rep.rule,
        "runs": runs,
        "runs_out": rep.runs_out,
        "runs_in": rep.runs_in,
        "power_probability": None if rep.power is None else rep.power.probability,
        "power_multiple": None if rep.power is None else rep.power.multiple,
        "power_target": None if rep.power is None else rep.power.target,
        "copies": None if rep.power is None else rep.power.copies,
        "seconds": time.perf_counter() - start,
        "reason": rep.reason,
    }


def table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per entry: flagged, inconclusive and consistent k/n, the median power statement, median ε̂, true ε /
    claim, R, the median time per seed, and the check."""
    rows = []
    for entry in ZOO:
        got = runs[runs["entry"] == entry.name]
        if got.empty:
            continue
        n = len(got)
        k = {v: int((got["verdict"] == v).sum()) for v in ("violation", "inconclusive", "consistent")}
        consistent = got[got["verdict"] == "consistent"]
        unpowered = int((consistent["power_probability"].isna()
                         | (consistent["power_probability"] < consistent["power_target"])).sum())  # fmt: skip
        if entry.kind == "control" or (entry.kind == "bug" and entry.asserted):
            ok = k["violation"] / n >= FLAG_AT_LEAST if entry.kind == "bug" else k["violation"] / n <= CONTROL_AT_MOST
            ok = ok and unpowered == 0
        else:
            ok = None
        eps = got["epsilon_hat"].dropna()
        power = got.dropna(subset=["power_probability"]) if "power_probability" in got else got.iloc[:0]
        claimed = float(got["epsilon_claimed"].iloc[0])
        true = entry.true_epsilon
        rows.append(
            {
                "entry": entry.name,
                "kind": entry.kind,
                "what": entry.what,
                "source": entry.source,
                "canary": f"{entry.canary} / {entry.background}",
                "flagged": f"{k['violation']}/{n}",
                "inconclusive": f"{k['inconclusive']}/{n}",
                "consistent": f"{k['consistent']}/{n}",
                "median_power": float(power["power_probability"].median()) if len(power) else np.nan,
                "median_multiple": float(power["power_multiple"].median()) if len(power) else np.nan,
                "median_epsilon_hat": float(eps.median()) if len(eps) else np.nan,
                "epsilon_claimed": claimed,
                "epsilon_true": np.nan if true is None else float(true),
                "true_over_claim": np.nan if true is None else float(true) / claimed,
                "R": int(got["runs"].iloc[0]),
                "median_seconds": float(got["seconds"].median()),
                "acceptance": "-" if ok is None else ("pass" if ok else "FAIL"),
            }
        )
    return pd.DataFrame(rows)


def markdown(tab: pd.DataFrame, *, seeds: str) -> str:
    def f(v: float) -> str:
        return "–" if not np.isfinite(v) and not np.isinf(v) else f"{v:.3g}"

    lines = [
        "| entry | kind | what | canary / background | flagged | inconclusive | consistent | median power (multiple) "
        "| median ε̂ | claimed ε | true ε / claim | R | s per seed | check |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in tab.itertuples():
        what = r.what + (f" ({r.source})" if r.source else "")
        power = "–" if not np.isfinite(r.median_power) else f"{r.median_power:.2f} ({r.median_multiple:.2g}x)"
        lines.append(
            f"| {r.entry} | {r.kind} | {what} | {r.canary} | {r.flagged} | {r.inconclusive} | {r.consistent} | "
            f"{power} | {f(r.median_epsilon_hat)} | {r.epsilon_claimed:.3g} | {f(r.true_over_claim)} | {r.R} | "
            f"{r.median_seconds:.3g} | {r.acceptance} |"
        )
    lines.append("")
    lines.append(f"Seeds {seeds}; generated by `python scripts/byo_zoo.py` (table.csv beside it). Acceptance: every bug "
                 f"whose true ε is ≥ {ASSERT_RATIO:g}x the claim (or not computed) flagged in ≥ {FLAG_AT_LEAST:.0%} of "
                 f"seeds; every control violating in ≤ {CONTROL_AT_MOST:.0%}; 'consistent' only with its power.")  # fmt: skip
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=20, help="seeds per entry (default 20)")
    parser.add_argument("--kinds", default="", help="comma-separated kinds (control, bug, limit; default: all)")
    parser.add_argument("--first-seed", type=int, default=100, help="the first seed (default 100)")
    parser.add_argument("--entries", default="", help="comma-separated entry names (default: all)")
    parser.add_argument("--out", default="results/byo_zoo", help="output directory (default results/byo_zoo)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--runs", type=int, default=None,
                        help="runs per world for every chosen entry instead of the catalogue's (use another --out)")  # fmt: skip
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    chosen = [z for z in ZOO if (not args.entries or z.name in args.entries.split(","))
              and (not args.kinds or z.kind in args.kinds.split(","))]  # fmt: skip
    if args.entries and not set(args.entries.split(",")) <= {z.name for z in ZOO}:
        known = ", ".join(z.name for z in ZOO)
        raise SystemExit(f"unknown entry in {args.entries!r}; known: {known}")
    out = Path(args.out)
    path = out / "runs.csv"
    done = pd.read_csv(path) if path.exists() else pd.DataFrame(columns=["entry", "seed"])
    have = set(zip(done["entry"], done["seed"]))
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    todo = [(z, s) for z in chosen for s in seeds if (z.name, s) not in have]
    rows = done.to_dict("records")
    for entry, seed in tqdm(todo, desc="zoo", unit="audit"):
        rows.append(run_one(entry, seed, args.runs))
        write_csv_atomic(pd.DataFrame(rows), path)
    runs = pd.DataFrame(rows)
    runs = runs[runs["seed"].isin(list(seeds)) & runs["entry"].isin([z.name for z in chosen])]
    if args.runs and (runs["runs"] != args.runs).any():
        raise SystemExit(f"{path} holds runs at another R than --runs {args.runs}: use another --out")
    tab = table(runs)
    write_csv_atomic(tab, out / "table.csv")
    text = markdown(tab, seeds=f"{seeds.start}..{seeds.stop - 1}")
    write_text_atomic(out / "table.md", text)
    print(text)
    failed = tab[tab["acceptance"] == "FAIL"]
    print("acceptance: " + ("FAIL: " + ", ".join(failed["entry"]) if len(failed) else "every asserted bug and control passes"))
    return 1 if len(failed) else 0


if __name__ == "__main__":
    sys.exit(main())
