"""``hsaudit heuristic``: the last-iterate heuristic ε of Steinke et al. beside the two baselines.

Example::

    hsaudit heuristic --steps 3 --sampling-rate 0.1 --noise-multiplier 1 --delta 1e-6 --json
"""

from __future__ import annotations

import argparse
import json

from hsaudit.accounting import last_iterate as H


def register(sub) -> None:
    parser = sub.add_parser(
        "heuristic",
        description=(
            "Print the heuristic epsilon of DP-SGD with last-iterate release on linear losses (Steinke et al., "
            "Theorem 1), the standard all-iterates epsilon (dp-accounting PLD of T Poisson-subsampled Gaussians) "
            "and the full-batch proxy (mu = q*sqrt(T)/sigma GDP)."
        ),
    )
    parser.add_argument("--steps", "-T", type=int, required=True, help="number of iterations T >= 1")
    parser.add_argument("--sampling-rate", "-q", type=float, required=True, help="Poisson sampling rate q in [0, 1]")
    parser.add_argument("--noise-multiplier", "-s", type=float, required=True, help="noise multiplier sigma > 0")
    parser.add_argument("--delta", type=float, default=1e-6, help="delta in (0, 1) (default 1e-6)")
    parser.add_argument(
        "--method", choices=("bisection", "pld"), default="bisection", help="heuristic method (default bisection)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(func=run)


def compute(args: argparse.Namespace) -> dict:
    kw = dict(steps=args.steps, sampling_rate=args.sampling_rate, noise_multiplier=args.noise_multiplier)
    return {
        **kw,
        "delta": args.delta,
        "method": args.method,
        "epsilon": H.heuristic_epsilon(args.delta, method=args.method, **kw),
        "epsilon_standard": H.standard_epsilon(args.delta, **kw),
        "epsilon_full_batch": H.full_batch_epsilon(args.delta, **kw),
    }


def run(args: argparse.Namespace) -> int:
    out = compute(args)
    if args.json:
        print(json.dumps(out))
    else:
        print(
            f"T={out['steps']} q={out['sampling_rate']} sigma={out['noise_multiplier']} delta={out['delta']:g}\n"
            f"  heuristic (last iterate, linear loss): epsilon = {out['epsilon']:.4f}\n"
            f"  standard (all iterates, PLD):          epsilon = {out['epsilon_standard']:.4f}\n"
            f"  full-batch proxy (GDP, Eq. 4):         epsilon = {out['epsilon_full_batch']:.4f}"
        )
    return 0
