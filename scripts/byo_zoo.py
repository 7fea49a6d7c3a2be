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

The few-runs mode (docs/byo.md, "When your training is expensive"): ``--few M[,M...] --trainings K[,K...]`` audits
each chosen entry (default :data:`FEW_ENTRIES`: the gross bugs, the controls and a wide linear mechanism where the
design works) with K trainings of M canaries of the family ``--few-canary`` (out_of_support), for every (M, K), and
writes OUT/few_runs.csv and OUT/few_table.{csv,md}: flagged, inconclusive and consistent k/n, median ε̂, ceiling and
power, and the model-steps each audit paid beside the population audit's (2R models × T steps, and as many again for
its control).

    python scripts/byo_zoo.py --few 100,1000 --trainings 1,2,4 --seeds 5 --out results/byo_zoo_few
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
from catalogue import ASSERT_RATIO, NEVER_CONSISTENT, ZOO  # noqa: E402

from hsaudit.experiments.byo.api import audit_training  # noqa: E402
from hsaudit.experiments.byo.plan import audit_setting  # noqa: E402
from hsaudit.experiments.byo.audit import AuditOptions  # noqa: E402
from hsaudit.experiments.byo.train.values import Design  # noqa: E402
from hsaudit.util.io import write_csv_atomic, write_text_atomic  # noqa: E402

from catalogue import ZooEntry  # noqa: E402

FLAG_AT_LEAST, CONTROL_AT_MOST = 0.95, 0.05

_USERS = "tests/experiments/byo/users"
FEW_EXTRA = (
    ZooEntry("opacus_optimizer_recreated", "bug", f"{_USERS}/opacus_seeded_buggy_auditable.py:make", "out_of_support",
             "data", 100, "Opacus: a plain SGD re-created after make_private (no clipping, no noise)"),
    ZooEntry("opacus_seeded_auditable", "control", f"{_USERS}/opacus_seeded_auditable.py:make", "out_of_support",
             "data", 100, "Opacus: correct, θ0 from init_seed"),
    ZooEntry("wide_linear", "control", "tests/experiments/byo/few_entry.py:make", "out_of_support", "data", 500,
             "the Gaussian mechanism along 2,048 input dimensions (full batch, T = 5, σ = 2), correct"),
    ZooEntry("wide_linear_noise_tenth", "bug", "tests/experiments/byo/few_entry.py:make_noise_tenth",
             "out_of_support", "data", 500, "the same with σ/10 behind the claim"),
)
"""The few-runs study's entries outside the zoo's catalogue (the re-created optimizer of docs/byo.md's Opacus users,
their correct script, and a wide linear mechanism whose canaries do not interfere)."""
FEW_ENTRIES = ("no_clipping", "noise_ignores_clip_norm", "opacus_sigma_tenth", "opacus_optimizer_recreated",
               "wide_linear_noise_tenth", "correct", "correct_mlp", "opacus_seeded_auditable", "wide_linear")
"""The few-runs study's default entries: the gross bugs of issue 37 (no clipping, noise not scaled by C, σ/10, the
optimizer re-created after make_private), a wide mechanism's σ/10, and the controls."""


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
            if entry.kind == "bug" and entry.expect == NEVER_CONSISTENT:
                ok = k["consistent"] == 0
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
                 f"seeds (a bug marked '{NEVER_CONSISTENT}': no seed consistent); every control violating in "
                 f"≤ {CONTROL_AT_MOST:.0%}; 'consistent' only with its power.")  # fmt: skip
    return "\n".join(lines) + "\n"


def run_few(entry, seed: int, canaries: int, trainings: int, canary: str) -> dict:
    """One few-runs audit of one entry at one seed: the row of few_runs.csv."""
    from hsaudit.experiments.byo.few_runs import audit_training_few
    from hsaudit.experiments.byo.train.families import FewRunsDesign
    from hsaudit.experiments.byo.train.harness import load_training

    design = FewRunsDesign.of(entry.entry, canaries, trainings, canary=canary, seed=seed,
                              setting=audit_setting() if entry.setting else None)  # fmt: skip
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = audit_training_few(design, AuditOptions(seed=seed)).report
        steps = load_training(entry.entry, setting=design.setting).claim.steps
    return {
        "entry": entry.name, "kind": entry.kind, "seed": seed, "canaries": canaries, "trainings": trainings,
        "verdict": rep.verdict, "flagged": rep.verdict == "violation", "epsilon_hat": rep.epsilon_hat,
        "epsilon_counting": None if rep.counting is None else rep.counting.epsilon,
        "epsilon_fdp": None if rep.fdp is None else rep.fdp.epsilon, "basis": rep.basis, "ceiling": rep.ceiling,
        "epsilon_claimed": rep.claim.epsilon, "power_probability": None if rep.power is None else rep.power.probability,
        "model_steps": rep.model_steps, "population_model_steps": 2 * 2 * entry.runs * steps,
        "population_runs": entry.runs, "seconds": time.perf_counter() - start, "reason": rep.reason,
    }  # fmt: skip


def few_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (entry, M, K): flagged, inconclusive, consistent k/n, medians, the model-steps."""
    rows = []
    for (name, m, k), got in runs.groupby(["entry", "canaries", "trainings"], sort=False):
        n = len(got)
        count = {v: int((got["verdict"] == v).sum()) for v in ("violation", "inconclusive", "consistent")}
        power = got["power_probability"].dropna()
        rows.append({
            "entry": name, "kind": got["kind"].iloc[0], "M": int(m), "K": int(k),
            "flagged": f"{count['violation']}/{n}", "inconclusive": f"{count['inconclusive']}/{n}",
            "consistent": f"{count['consistent']}/{n}", "median_epsilon_hat": float(got["epsilon_hat"].median()),
            "median_ceiling": float(got["ceiling"].median()), "epsilon_claimed": float(got["epsilon_claimed"].iloc[0]),
            "median_power": float(power.median()) if len(power) else np.nan,
            "model_steps": int(got["model_steps"].median()),
            "population_model_steps": int(got["population_model_steps"].iloc[0]),
            "median_seconds": float(got["seconds"].median()),
        })  # fmt: skip
    return pd.DataFrame(rows)


def few_markdown(tab: pd.DataFrame, *, seeds: str, canary: str) -> str:
    def f(v: float) -> str:
        return "–" if not np.isfinite(v) else f"{v:.3g}"

    lines = ["| entry | kind | M | K | flagged | inconclusive | consistent | median ε̂ | median ceiling | claimed ε "
             "| median power | model-steps (few runs, with control) | model-steps (population, 2R·T + control) "
             "| s per seed |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    for r in tab.itertuples():
        lines.append(f"| {r.entry} | {r.kind} | {r.M} | {r.K} | {r.flagged} | {r.inconclusive} | {r.consistent} | "
                     f"{f(r.median_epsilon_hat)} | {f(r.median_ceiling)} | {r.epsilon_claimed:.3g} | "
                     f"{f(r.median_power)} | {r.model_steps} | {r.population_model_steps} | "
                     f"{r.median_seconds:.3g} |")  # fmt: skip
    lines += ["", f"Seeds {seeds}; canary family {canary}; generated by `python scripts/byo_zoo.py --few ...` "
              "(few_table.csv beside it)."]  # fmt: skip
    return "\n".join(lines) + "\n"


def main_few(args: argparse.Namespace) -> int:
    """The few-runs study (module docstring)."""
    catalogue = {z.name: z for z in (*ZOO, *FEW_EXTRA)}
    names = args.entries.split(",") if args.entries else list(FEW_ENTRIES)
    unknown = [n for n in names if n not in catalogue]
    if unknown:
        raise SystemExit(f"unknown entry {', '.join(unknown)}; known: {', '.join(catalogue)}")
    sizes = [int(v) for v in args.few.split(",")]
    counts = [int(v) for v in args.trainings.split(",")]
    out = Path(args.out)
    path = out / "few_runs.csv"
    key = ["entry", "seed", "canaries", "trainings"]
    done = pd.read_csv(path) if path.exists() else pd.DataFrame(columns=key)
    have = set(map(tuple, done[key].itertuples(index=False)))
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    todo = [(catalogue[n], s, m, k) for n in names for m in sizes for k in counts for s in seeds
            if (n, s, m, k) not in have]  # fmt: skip
    rows = done.to_dict("records")
    for entry, seed, m, k in tqdm(todo, desc="few runs", unit="audit"):
        rows.append(run_few(entry, seed, m, k, args.few_canary))
        write_csv_atomic(pd.DataFrame(rows), path)
    runs = pd.DataFrame(rows)
    runs = runs[runs["seed"].isin(list(seeds)) & runs["entry"].isin(names) & runs["canaries"].isin(sizes)
                & runs["trainings"].isin(counts)]  # fmt: skip
    tab = few_table(runs)
    write_csv_atomic(tab, out / "few_table.csv")
    text = few_markdown(tab, seeds=f"{seeds.start}..{seeds.stop - 1}", canary=args.few_canary)
    write_text_atomic(out / "few_table.md", text)
    print(text)
    return 0


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
    parser.add_argument("--few", default=None, metavar="M[,M...]",
                        help="the few-runs study: canaries per training (with --trainings; module docstring)")
    parser.add_argument("--trainings", default="1,2,4", metavar="K[,K...]",
                        help="the few-runs study's trainings per audit (default 1,2,4)")
    parser.add_argument("--few-canary", default="out_of_support", help="the few-runs study's canary family")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.few:
        return main_few(args)
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
