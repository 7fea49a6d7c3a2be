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
its control) and its flagged k/n, read from the zoo's tables in ``--population`` (docs/journal/byo.md; a wide twin
reads its zoo counterpart's, :data:`TWIN_OF`). With a gradient family (``--few-canary dirac``) each entry is first
asked whether it takes it (:func:`dirac_fit`: its loss takes ``w * data.canary_term(model, k)`` and it has
:data:`DIRAC_MARGIN` × M parameters); an entry that does not gets a row saying why, and the Opacus twins keep their
input family (:data:`FEW_FAMILY`).

    python scripts/byo_zoo.py --few 100,1000 --trainings 1,2,4 --seeds 5 --out results/byo_zoo_few
    python scripts/byo_zoo.py --few 100 --few-canary dirac --trainings 1,2,4 --seeds 20 --entries WIDE_ENTRIES...
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
from hsaudit.experiments.byo.values import Design  # noqa: E402
from hsaudit.util.io import write_csv_atomic, write_text_atomic  # noqa: E402

from catalogue import ZooEntry  # noqa: E402

FLAG_AT_LEAST, CONTROL_AT_MOST = 0.95, 0.05

_USERS = "tests/experiments/byo/users"
_WIDE = "tests/experiments/byo/wide_zoo.py"
FEW_EXTRA = (
    ZooEntry("opacus_optimizer_recreated", "bug", f"{_USERS}/opacus_seeded_buggy_auditable.py:make", "out_of_support",
             "data", 100, "Opacus: a plain SGD re-created after make_private (no clipping, no noise)"),
    ZooEntry("opacus_seeded_auditable", "control", f"{_USERS}/opacus_seeded_auditable.py:make", "out_of_support",
             "data", 100, "Opacus: correct, θ0 from init_seed"),
    ZooEntry("wide_linear", "control", "tests/experiments/byo/few_entry.py:make", "out_of_support", "data", 500,
             "the Gaussian mechanism along 2,048 input dimensions (full batch, T = 5, σ = 2), correct"),
    ZooEntry("wide_linear_noise_tenth", "bug", "tests/experiments/byo/few_entry.py:make_noise_tenth",
             "out_of_support", "data", 500, "the same with σ/10 behind the claim"),
    *(ZooEntry(name, kind, f"{_WIDE}:{make}", "dirac", "data", 100, f"wide twin{'' if setting else ', own configuration'}"
               f": {what}", setting=setting) for name, kind, make, what, setting in (
        ("wide_dpsgd", "control", "make", "plain_dpsgd's loop on 512 features, correct; audit setting", True),
        ("wide_dpsgd_no_clipping", "bug", "make_no_clipping", "per-example clipping skipped", True),
        ("wide_dpsgd_noise_unscaled", "bug", "make_noise_unscaled", "noise σ, not σC, with C = 4", True),
        ("wide_dpsgd_noise_tenth", "bug", "make_noise_tenth", "σ/10 behind the claim", True),
        ("wide_dpsgd_batch_clipping", "bug", "make_batch_clipping", "the batch's mean gradient clipped, not each "
         "example's", True),
        ("wide_dpsgd_accumulation", "bug", "make_accumulation", "4 micro-batches accumulated per step, the rate of "
         "one claimed", True),
        ("wide_dpsgd_steps_doubled", "bug", "make_steps_doubled", "10 steps run, 5 claimed (1.5x)", True),
        ("wide_dpsgd_noise_sqrt2", "bug", "make_noise_sqrt2", "noise σ/√2 (1.5x)", True),
        ("wide_dpsgd_own", "control", "make", "correct (q = 0.1, T = 20, σ = 1)", False),
        ("wide_dpsgd_q_doubled", "bug", "make_q_doubled", "q = 0.2 run, 0.1 claimed", False),
        ("wide_dpsgd_shuffle_as_poisson", "bug", "make_shuffle_as_poisson", "shuffled batches accounted as Poisson",
         False),
        ("wide_dpsgd_normalise_by_batch", "bug", "make_normalise_by_batch", "the update divided by the batch's real "
         "size", False),
    )),
    ZooEntry("wide_opacus", "control", f"{_WIDE}:make_opacus", "out_of_support", "data", 100,
             "wide twin: opacus_dpsgd's loop on 2,048 features, lr 0.01, correct; audit setting", setting=True),
    ZooEntry("wide_opacus_optimizer_recreated", "bug", f"{_WIDE}:make_opacus_optimizer_recreated", "out_of_support",
             "data", 100, "wide twin: a plain SGD re-created after make_private", setting=True),
)
"""The few-runs study's entries outside the zoo's catalogue (the re-created optimizer of docs/byo.md's Opacus users,
their correct script, and a wide linear mechanism whose canaries do not interfere)."""
FEW_ENTRIES = ("no_clipping", "noise_ignores_clip_norm", "opacus_sigma_tenth", "opacus_optimizer_recreated",
               "wide_linear_noise_tenth", "correct", "correct_mlp", "opacus_seeded_auditable", "wide_linear")
"""The few-runs study's default entries: the gross bugs of issue 37 (no clipping, noise not scaled by C, σ/10, the
optimizer re-created after make_private), a wide mechanism's σ/10, and the controls."""
WIDE_ENTRIES = ("wide_dpsgd_no_clipping", "wide_dpsgd_noise_unscaled", "wide_dpsgd_noise_tenth",
                "wide_opacus_optimizer_recreated", "wide_dpsgd", "wide_opacus")
"""The wide twin of the gross bugs and its controls (tests/experiments/byo/wide_zoo.py): the Dirac family's study."""
WIDE_OTHER = ("wide_dpsgd_batch_clipping", "wide_dpsgd_accumulation", "wide_dpsgd_steps_doubled",
              "wide_dpsgd_noise_sqrt2", "wide_dpsgd_q_doubled", "wide_dpsgd_shuffle_as_poisson",
              "wide_dpsgd_normalise_by_batch", "wide_dpsgd", "wide_dpsgd_own")
"""The wide twin of the zoo's other bug classes the population audit catches, and the controls of both
configurations (the three sampling bugs exist only below the full batch: their twins run the own configuration)."""
TWIN_OF = {"wide_dpsgd_no_clipping": "no_clipping", "wide_dpsgd_noise_unscaled": "noise_ignores_clip_norm",
           "wide_dpsgd_noise_tenth": "opacus_sigma_tenth", "wide_dpsgd": "correct", "wide_opacus": "opacus_example",
           "wide_opacus_optimizer_recreated": "opacus_optimizer_recreated", "wide_dpsgd_own": "correct",
           "wide_dpsgd_batch_clipping": "batch_clipping", "wide_dpsgd_accumulation": "accumulation_rate",
           "wide_dpsgd_steps_doubled": "boundary_steps_doubled", "wide_dpsgd_noise_sqrt2": "boundary_noise_sqrt2",
           "wide_dpsgd_q_doubled": "q_doubled", "wide_dpsgd_shuffle_as_poisson": "shuffle_as_poisson",
           "wide_dpsgd_normalise_by_batch": "normalise_by_batch"}
"""Each wide twin's zoo counterpart, whose population audit its row stands beside (the twin's own was not run)."""
FEW_FAMILY = {"wide_opacus": "out_of_support", "wide_opacus_optimizer_recreated": "out_of_support"}
"""Entries that keep an input family whatever ``--few-canary`` asks: Opacus' per-sample hooks see the module's
output, not a term added to the loss, so no Opacus training takes the Dirac family."""
DIRAC_MARGIN = 2.0
"""A Dirac family of M canaries runs on a model of at least this multiple of M parameters (the rest carry the
data's model; a model of M parameters would be all canaries)."""


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


def dirac_fit(entry, canaries: int) -> str | None:
    """Whether ``entry`` takes M Dirac canaries: None, or why not. Its loss must take ``w * data.canary_term(model,
    k)`` (a training with one Dirac canary on an all-zero row must move that coordinate away from where the same seed
    leaves it without; a training that fails on the family's rows does not take it), and its model must hold
    :data:`DIRAC_MARGIN` × M parameters outside the biases."""
    from hsaudit.engine.canaries import DIRAC_NORM
    from hsaudit.experiments.byo.train.harness import (CanaryData, bias_coordinates, init_seed_for, model_parameters,
                                                       load, train_observed)  # fmt: skip

    design = Design(entry=entry.entry, canary="dirac", runs=1, seed=0,
                    setting=audit_setting() if entry.setting else None)  # fmt: skip
    loaded = load(design)
    training, x, y = loaded.training, torch.as_tensor(loaded.x), torch.as_tensor(loaded.y)
    n = x.shape[0]
    rows = (torch.cat([x, torch.zeros_like(x[:1])]), torch.cat([y, torch.zeros_like(y[:1])]))
    k, w = torch.full((n + 1,), -1), torch.zeros(n + 1)
    few = ""
    try:
        models, _ = train_observed(training, CanaryData(*rows, w, None, k.clone()), [1],
                                   init_seed=init_seed_for(design, training))  # fmt: skip
        theta, biases = model_parameters(models[0]), set(bias_coordinates(models[0]) or ())
        free = theta.numel() - len(biases)
        if free < DIRAC_MARGIN * canaries:
            few = f"{free} parameters outside the biases, fewer than {DIRAC_MARGIN:g} × M = {DIRAC_MARGIN * canaries:g}"
        k[-1] = next(i for i in range(theta.numel()) if i not in biases)
        w[-1] = DIRAC_NORM * float(training.claim.max_grad_norm)
        models, _ = train_observed(training, CanaryData(*rows, w, None, k), [1],
                                   init_seed=init_seed_for(design, training))  # fmt: skip
        moved = float(theta[k[-1]]) != float(model_parameters(models[0])[k[-1]])
    except Exception as error:  # noqa: BLE001  (a training that cannot take the rows says so in its own words)
        said = str(error).split(" (entry ")[0]
        return f"its training fails on a Dirac family's rows ({said})" + (f"; {few}" if few else "")
    if not moved:
        return ("its loss does not take w * data.canary_term(model, k) (the canary's coordinate does not move)"
                + (f"; {few}" if few else ""))  # fmt: skip
    return few or None


def run_few(entry, seed: int, canaries: int, trainings: int, canary: str) -> dict:
    """One few-runs audit of one entry at one seed: the row of few_runs.csv."""
    from hsaudit.experiments.byo.few_runs import audit_training_few
    from hsaudit.experiments.byo.train.families import FewRunsDesign

    design = FewRunsDesign.of(entry.entry, canaries, trainings, canary=canary, seed=seed,
                              setting=audit_setting() if entry.setting else None)  # fmt: skip
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = audit_training_few(design, AuditOptions(seed=seed)).report
    return {
        "entry": entry.name, "kind": entry.kind, "seed": seed, "canaries": canaries, "trainings": trainings,
        "family": canary, "verdict": rep.verdict, "flagged": rep.verdict == "violation", "epsilon_hat": rep.epsilon_hat,
        "epsilon_counting": None if rep.counting is None else rep.counting.epsilon,
        "epsilon_fdp": None if rep.fdp is None else rep.fdp.epsilon, "basis": rep.basis, "ceiling": rep.ceiling,
        "epsilon_claimed": rep.claim.epsilon, "power_probability": None if rep.power is None else rep.power.probability,
        "model_steps": rep.model_steps, "seconds": time.perf_counter() - start, "reason": rep.reason,
    }  # fmt: skip


def not_run(entry, seed: int, canaries: int, trainings: int, canary: str, why: str) -> dict:
    """The row of an entry that does not take the family (:func:`dirac_fit`)."""
    return {"entry": entry.name, "kind": entry.kind, "seed": seed, "canaries": canaries, "trainings": trainings,
            "family": canary, "verdict": "not run", "flagged": False, "model_steps": 0, "seconds": 0.0,
            "reason": why}  # fmt: skip


def population_tables(path: Path) -> dict[str, tuple[str, int]]:
    """Each entry's flagged k/n and R in the zoo tables (as :func:`markdown` writes them) of a markdown page; the
    last table naming an entry wins (a journal is in date order)."""
    out, header = {}, None
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] == "entry":
            header = cells if {"what", "flagged", "R"} <= set(cells) else None
        elif header is not None and len(cells) == len(header) and not set(cells[0]) <= set("-:"):
            row = dict(zip(header, cells))
            out[row["entry"]] = (row["flagged"], int(row["R"]))
    return out


def population(entry, tables: dict[str, tuple[str, int]]) -> dict:
    """The population audit beside a few-runs row: the entry's (a wide twin's: its counterpart's, :data:`TWIN_OF`)
    flagged k/n from ``tables`` and its model-steps, 2R models × T and as many for its control."""
    from hsaudit.experiments.byo.train.harness import load_training

    catalogue = {z.name: z for z in (*ZOO, *FEW_EXTRA)}
    name = TWIN_OF.get(entry.name, entry.name)
    zoo = catalogue[name]
    flagged, runs = tables.get(name, ("–", zoo.runs))
    steps = load_training(zoo.entry, setting=audit_setting() if zoo.setting else None).claim.steps
    return {"population_entry": name, "population_flagged": flagged, "population_model_steps": 2 * 2 * runs * steps}


def few_table(runs: pd.DataFrame, tables: dict[str, tuple[str, int]]) -> pd.DataFrame:
    """One row per (entry, M, K): the family, flagged, inconclusive, consistent k/n, medians, the model-steps, the
    population audit's flagged k/n and model-steps (:func:`population`), and why an entry was not run."""
    catalogue = {z.name: z for z in (*ZOO, *FEW_EXTRA)}
    rows = []
    for (name, m, k), got in runs.groupby(["entry", "canaries", "trainings"], sort=False):
        n = len(got)
        count = {v: int((got["verdict"] == v).sum()) for v in ("violation", "inconclusive", "consistent")}
        power = got["power_probability"].dropna()
        skipped = got[got["verdict"] == "not run"]
        rows.append({
            "entry": name, "kind": got["kind"].iloc[0], "family": got["family"].iloc[0], "M": int(m), "K": int(k),
            "flagged": f"{count['violation']}/{n}", "inconclusive": f"{count['inconclusive']}/{n}",
            "consistent": f"{count['consistent']}/{n}", "median_epsilon_hat": float(got["epsilon_hat"].median()),
            "median_ceiling": float(got["ceiling"].median()), "epsilon_claimed": float(got["epsilon_claimed"].median()),
            "median_power": float(power.median()) if len(power) else np.nan,
            "model_steps": int(got["model_steps"].median()), **population(catalogue[name], tables),
            "median_seconds": float(got["seconds"].median()),
            "not_run": str(skipped["reason"].iloc[0]) if len(skipped) else "",
        })  # fmt: skip
    return pd.DataFrame(rows)


def few_markdown(tab: pd.DataFrame, *, seeds: str, population_page: str) -> str:
    def f(v: float) -> str:
        return "–" if not np.isfinite(v) else f"{v:.3g}"

    lines = ["| entry | kind | family | M | K | flagged | inconclusive | consistent | median ε̂ | median ceiling "
             "| claimed ε | median power | model-steps (few runs, with control) | population: entry, flagged "
             "| model-steps (population, 2R·T + control) | s per seed |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|"]  # fmt: skip
    said = set()
    for r in tab.itertuples():
        if r.not_run:  # one row for every K: the family does not fit the entry
            if (r.entry, r.M) in said:
                continue
            said.add((r.entry, r.M))
            lines.append(f"| {r.entry} | {r.kind} | {r.family} | {r.M} | any | not run: {r.not_run} | | | | | | | "
                         f"0 | {r.population_entry}, {r.population_flagged} | "
                         f"{r.population_model_steps} | |")  # fmt: skip
            continue
        lines.append(f"| {r.entry} | {r.kind} | {r.family} | {r.M} | {r.K} | {r.flagged} | {r.inconclusive} | "
                     f"{r.consistent} | {f(r.median_epsilon_hat)} | {f(r.median_ceiling)} | {f(r.epsilon_claimed)} | "
                     f"{f(r.median_power)} | {r.model_steps} | {r.population_entry}, {r.population_flagged} | "
                     f"{r.population_model_steps} | {r.median_seconds:.3g} |")  # fmt: skip
    lines += ["", f"Seeds {seeds}; generated by `python scripts/byo_zoo.py --few ...` (few_table.csv beside it); the "
              f"population audit's flagged k/n from the zoo tables of {population_page} (a wide twin: its zoo "
              "counterpart's)."]  # fmt: skip
    return "\n".join(lines) + "\n"


def main_few(args: argparse.Namespace) -> int:
    """The few-runs study (module docstring)."""
    from hsaudit.engine.canaries import canary_type

    catalogue = {z.name: z for z in (*ZOO, *FEW_EXTRA)}
    names = args.entries.split(",") if args.entries else list(FEW_ENTRIES)
    unknown = [n for n in names if n not in catalogue]
    if unknown:
        raise SystemExit(f"unknown entry {', '.join(unknown)}; known: {', '.join(catalogue)}")
    sizes = [int(v) for v in args.few.split(",")]
    counts = [int(v) for v in args.trainings.split(",")]
    out = Path(args.out)
    path = out / "few_runs.csv"
    key = ["entry", "seed", "canaries", "trainings", "family"]
    done = pd.read_csv(path) if path.exists() else pd.DataFrame(columns=key)
    if "family" not in done:
        raise SystemExit(f"{path} predates the family column: use another --out")
    have = set(map(tuple, done[key].itertuples(index=False)))
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    family = {n: FEW_FAMILY.get(n, args.few_canary) for n in names}
    todo = [(catalogue[n], s, m, k) for n in names for m in sizes for k in counts for s in seeds
            if (n, s, m, k, family[n]) not in have]  # fmt: skip
    why: dict[tuple[str, int], str | None] = {}
    rows = done.to_dict("records")
    for entry, seed, m, k in tqdm(todo, desc="few runs", unit="audit"):
        canary = family[entry.name]
        if canary_type(canary).kind == "gradient" and (entry.name, m) not in why:
            why[entry.name, m] = dirac_fit(entry, m)
        reason = why.get((entry.name, m))
        rows.append(not_run(entry, seed, m, k, canary, reason) if reason else run_few(entry, seed, m, k, canary))
        write_csv_atomic(pd.DataFrame(rows), path)
    columns = dict.fromkeys([*rows[0], "epsilon_hat", "ceiling", "epsilon_claimed", "power_probability"])
    runs = pd.DataFrame(rows).reindex(columns=list(columns))
    runs = runs[runs["seed"].isin(list(seeds)) & runs["entry"].isin(names) & runs["canaries"].isin(sizes)
                & runs["trainings"].isin(counts) & (runs["family"] == runs["entry"].map(family))]  # fmt: skip
    runs = runs.sort_values("entry", key=lambda e: e.map(names.index), kind="stable")
    page = Path(args.population) if Path(args.population).exists() else REPO / args.population
    tab = few_table(runs, population_tables(page))
    write_csv_atomic(tab, out / "few_table.csv")
    text = few_markdown(tab, seeds=f"{seeds.start}..{seeds.stop - 1}", population_page=args.population)
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
    parser.add_argument("--few-canary", default="out_of_support",
                        help="the few-runs study's canary family (dirac: where the entry takes it; module docstring)")
    parser.add_argument("--population", default="docs/journal/byo.md",
                        help="the page whose zoo tables give the population audit's flagged k/n (few-runs study)")
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
