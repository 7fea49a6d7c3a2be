"""``hsaudit bench section6``: time one (σ, B) cell of fig3 end to end and extrapolate to the whole figure.

One cell = ``repetitions`` × (simulate both worlds of R runs for T steps + audit every step), as one
``audit_process`` job does per B. The benchmark also times the pieces (noise draws and updates, the fast
audit, the audit core's sort-based audit of one step for comparison), the Clopper–Pearson table and the exact
law of the cell, then extrapolates to ``len(sigmas) × len(batch_sizes) × len(rules)`` cells on ``cores`` cores
(jobs run one per core, as the workflow's ``threads: 1`` rules do) plus a per-job start-up cost.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np

from hsaudit.experiments.cebere import section6 as s6


def register(sub) -> None:
    parser = sub.add_parser("section6", description="Time one (σ, B) cell of fig3 and extrapolate to the figure.")
    parser.add_argument("--sigma", type=float, default=4.0, help="σ of the timed cell (default 4)")
    parser.add_argument("--batch", type=int, default=4, help="B of the timed cell (default 4)")
    parser.add_argument("--runs", type=int, default=1_000_000, help="R per world (default 1e6, the paper scale)")
    parser.add_argument("--steps", type=int, default=25, help="T (default 25)")
    parser.add_argument("--reps", type=int, default=5, help="repetitions (default 5)")
    parser.add_argument("--rule", choices=s6.RULES, default="divergent", help="sign rule (default divergent)")
    parser.add_argument("--cells", type=int, default=80, help="cells of the figure (default 8 σ × 5 B × 2 rules)")
    parser.add_argument(
        "--jobs",
        type=int,
        default=16 + 2 + 1 + 1,
        help="jobs of the figure (default 16 audit, 2 exact, 1 table, 1 plot)",
    )
    parser.add_argument("--startup", type=float, default=2.0, help="seconds of start-up per job (default 2)")
    parser.add_argument("--cores", type=int, default=2, help="cores the workflow runs on (default 2)")
    parser.add_argument("--seed", type=int, default=0, help="master seed")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(func=run)


def measure(
    *,
    sigma: float = 4.0,
    batch: int = 4,
    runs: int = 1_000_000,
    steps: int = 25,
    reps: int = 5,
    rule: str = "divergent",
    cells: int = 80,
    jobs: int = 20,
    startup: float = 2.0,
    cores: int = 2,
    seed: int = 0,
) -> dict:
    """Run the benchmark and return its numbers (seconds)."""
    if cores < 1 or cells < 1 or jobs < 1:
        raise ValueError(f"cores, cells and jobs must be >= 1, got {cores}, {cells}, {jobs}")
    proc = s6.Process(sigma=sigma, batch_size=batch, steps=steps, rule=rule)
    out: dict = {
        "sigma": sigma,
        "batch_size": batch,
        "runs_per_world": runs,
        "steps": steps,
        "repetitions": reps,
        "rule": rule,
    }

    t = time.perf_counter()
    tables = s6.gdp_tables(runs, runs, confidence=0.95, delta=1e-5, cp0=s6.cp_upper_table(runs, 0.95))
    out["cp_table_s"] = time.perf_counter() - t

    t = time.perf_counter()
    for _ in s6.iter_scores(proc, runs=runs, inserted=True, rng=s6.world_rng(seed, "bench", "sim")):
        pass
    out["simulate_world_s"] = time.perf_counter() - t  # one world, T steps

    worlds = [
        s6.simulate_scores(proc, runs=runs, inserted=bool(b), rng=s6.world_rng(seed, "bench", b))[-1] for b in (0, 1)
    ]
    t = time.perf_counter()
    fast = s6.gdp_audit_two_sample(worlds[0], worlds[1], tables)
    out["fast_audit_step_s"] = time.perf_counter() - t
    from hsaudit.audit.auditor import Paper, audit_scores

    scores = np.concatenate(worlds)
    members = np.repeat([False, True], runs)
    audit_scores(scores, members, rule=Paper())  # fill the audit core's lazy tables first (warm comparison)
    t = time.perf_counter()
    core = audit_scores(scores, members, rule=Paper())
    out["core_audit_step_s"] = time.perf_counter() - t
    out["fast_equals_core"] = bool(abs(fast.mu - core.mu) < 1e-9)

    t, c = time.perf_counter(), time.process_time()
    s6.audit_records(
        rule=rule,
        sigma=sigma,
        batch_sizes=[batch],
        steps=steps,
        clip_norm=1.0,
        switch_point=0.5,
        runs_per_world=runs,
        repetitions=reps,
        seed=seed,
        delta=1e-5,
        confidence=0.95,
        mode="paper",
        tables=tables,
    )
    out["cell_s"] = time.perf_counter() - t
    out["cell_cpu_s"] = time.process_time() - c  # robust to other processes competing for the cores

    t = time.perf_counter()
    s6.exact_epsilon_curve(proc, delta=1e-5)
    out["exact_cell_s"] = time.perf_counter() - t

    cpu = cells * (out["cell_cpu_s"] + out["exact_cell_s"]) + out["cp_table_s"] + jobs * startup
    out["extrapolated"] = {
        "cells": cells,
        "jobs": jobs,
        "cores": cores,
        "cpu_s": cpu,
        "wall_s": cpu / cores,
        "note": "CPU time of the cell (not wall), ideal packing of single-threaded jobs on idle cores",
    }
    out["machine"] = {"cpus": os.cpu_count(), "load_1min": os.getloadavg()[0], "python": platform.python_version()}
    return out


def run(args: argparse.Namespace) -> int:
    res = measure(
        sigma=args.sigma,
        batch=args.batch,
        runs=args.runs,
        steps=args.steps,
        reps=args.reps,
        rule=args.rule,
        cells=args.cells,
        jobs=args.jobs,
        startup=args.startup,
        cores=args.cores,
        seed=args.seed,
    )
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    ex = res["extrapolated"]
    print(
        f"cell σ={res['sigma']:g} B={res['batch_size']} rule={res['rule']}: R={res['runs_per_world']:,}/world, "
        f"T={res['steps']}, {res['repetitions']} reps"
    )
    print(f"  Clopper-Pearson table (once per R): {res['cp_table_s']:.2f} s")
    print(f"  simulate one world, T steps:        {res['simulate_world_s']:.2f} s")
    print(
        f"  fast audit of one step:             {1e3 * res['fast_audit_step_s']:.1f} ms "
        f"(audit core: {1e3 * res['core_audit_step_s']:.1f} ms; same μ̂: {res['fast_equals_core']})"
    )
    print(
        f"  whole cell (all reps and steps):    {res['cell_s']:.2f} s wall, {res['cell_cpu_s']:.2f} s CPU; "
        f"exact law: {res['exact_cell_s']:.2f} s"
    )
    print(
        f"fig3 extrapolated: {ex['cells']} cells + {ex['jobs']} job start-ups = {ex['cpu_s']:.0f} CPU s, "
        f"≈ {ex['wall_s']:.0f} s wall on {ex['cores']} cores (load now {res['machine']['load_1min']:.1f})"
    )
    return 0
