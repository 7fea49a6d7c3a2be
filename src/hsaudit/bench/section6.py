"""Section 6 benchmark (``hsaudit bench section6``): one (σ, B) cell of fig3 end to end, extrapolated to the figure.

One cell = ``repetitions`` × (simulate both worlds of R runs for T steps + audit every step), as one
``audit_process`` job does per B. The benchmark also times the pieces (noise draws and updates, the fast
audit, the audit core's sort-based audit of one step for comparison), the Clopper–Pearson table and the exact
law of the cell, then extrapolates to ``len(sigmas) × len(batch_sizes) × len(rules)`` cells on ``cores`` cores
(jobs run one per core, as the workflow's ``threads: 1`` rules do) plus a per-job start-up cost.
"""

from __future__ import annotations

import os
import platform
import time

import numpy as np

from hsaudit.audit.two_sample import cp_upper_table, gdp_audit_two_sample, gdp_tables
from hsaudit.experiments.section6 import exact, process, records


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
    proc = process.Process(sigma=sigma, batch_size=batch, steps=steps, rule=rule)
    out: dict = {
        "sigma": sigma,
        "batch_size": batch,
        "runs_per_world": runs,
        "steps": steps,
        "repetitions": reps,
        "rule": rule,
    }

    t = time.perf_counter()
    tables = gdp_tables(runs, runs, confidence=0.95, delta=1e-5, cp0=cp_upper_table(runs, 0.95))
    out["cp_table_s"] = time.perf_counter() - t

    t = time.perf_counter()
    for _ in process.iter_scores(proc, runs=runs, inserted=True, rng=process.world_rng(seed, "bench", "sim")):
        pass
    out["simulate_world_s"] = time.perf_counter() - t  # one world, T steps

    worlds = [
        process.simulate_scores(proc, runs=runs, inserted=bool(b), rng=process.world_rng(seed, "bench", b))[-1] for b in (0, 1)
    ]
    t = time.perf_counter()
    fast = gdp_audit_two_sample(worlds[0], worlds[1], tables)
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
    records.audit_records(
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
        audit_rule=records.PAPER,
        tables=tables,
    )
    out["cell_s"] = time.perf_counter() - t
    out["cell_cpu_s"] = time.process_time() - c  # robust to other processes competing for the cores

    t = time.perf_counter()
    exact.exact_epsilon_curve(proc, delta=1e-5)
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
