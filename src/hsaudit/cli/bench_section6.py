"""``hsaudit bench section6``: time one (σ, B) cell of fig3 and extrapolate to the whole figure
(:mod:`hsaudit.bench.section6`); this module parses the command line and prints."""

from __future__ import annotations

import argparse
import json

from hsaudit.bench.section6 import measure
from hsaudit.experiments.section6.process import RULES


def register(sub) -> None:
    parser = sub.add_parser("section6", description="Time one (σ, B) cell of fig3 and extrapolate to the figure.")
    parser.add_argument("--sigma", type=float, default=4.0, help="σ of the timed cell (default 4)")
    parser.add_argument("--batch", type=int, default=4, help="B of the timed cell (default 4)")
    parser.add_argument("--runs", type=int, default=1_000_000, help="R per world (default 1e6, the paper scale)")
    parser.add_argument("--steps", type=int, default=25, help="T (default 25)")
    parser.add_argument("--reps", type=int, default=5, help="repetitions (default 5)")
    parser.add_argument("--rule", choices=RULES, default="divergent", help="sign rule (default divergent)")
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
