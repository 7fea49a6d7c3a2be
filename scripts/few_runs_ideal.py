"""The most a few-runs audit's positive control can show with ideal canaries: the power's ceiling for any family.

An ideal canary's score is the DP mechanism's own statistic along its direction (a Dirac coordinate of a blank
background, Steinke et al.'s canary): in the audit setting (full batch, T steps at σ) the control at σ/f scores
N(f·μ·b, 1), μ = √T/σ; in the training's own configuration (Poisson rate q, T steps, σ) the copies control (k copies
of each included canary, :func:`hsaudit.experiments.byo.audit.control_copies`) scores k·Binomial(T, q)·b + N(0, σ²T)
(units of C). A real canary's score is a post-processing of the trained model and the coins, so it separates in and
out no better; ``m`` = K·M canaries are audited with the verdict's bounds (:func:`hsaudit.experiments.byo.few_runs.
bounds`, the guesses ``--guesses``), ``--reps`` times per m: the share whose ε̂ exceeds the claim. The verdict's power
is the same share for half-samples (m/2 canaries): read it at m/2.

    python scripts/few_runs_ideal.py --entry examples/byo/cifar_convnet.py:laptop --m 1000,10000,100000
    python scripts/few_runs_ideal.py --entry examples/byo/cifar_convnet.py:laptop --audit-setting --m 1000,70000 \\
        --guesses 0.001,0.0025,0.005,0.01,0.025,0.05
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from hsaudit.experiments.byo.audit import GUESS_FRACTIONS, AuditOptions, control_copies
from hsaudit.experiments.byo.few_runs import bounds
from hsaudit.experiments.byo.plan import audit_setting
from hsaudit.experiments.byo.train.harness import load


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entry", required=True)
    parser.add_argument("--audit-setting", action="store_true")
    parser.add_argument("--m", default="1000,10000,100000", help="canaries in all, K·M (comma-separated)")
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--guesses", default=None, help="guess fractions (default: the audit's)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    fractions = GUESS_FRACTIONS if args.guesses is None else tuple(float(v) for v in args.guesses.split(","))
    options, rng = AuditOptions(), np.random.default_rng(args.seed)
    if args.audit_setting:
        setting = audit_setting()
        epsilon, delta, gdp = setting.epsilon, setting.delta, True
        mu = np.sqrt(setting.steps) / setting.noise_multiplier
        what = f"audit setting: ε = {epsilon:g}, μ = {mu:.3g}; control σ/{options.power_factor:g}"

        def scores(b: np.ndarray) -> np.ndarray:
            return rng.normal(options.power_factor * mu * b, 1.0)
    else:
        from hsaudit.experiments.byo.values import Design

        loaded = load(Design(entry=args.entry, canary="out_of_support", background="data", runs=1))
        claim = loaded.training.claim
        epsilon, delta, gdp = float(claim.epsilon), float(claim.delta), False
        copies, worst = control_copies(claim, loaded.n, options.power_factor)
        q, steps, sigma = float(claim.sample_rate), int(claim.steps), float(claim.noise_multiplier)
        what = (f"own configuration: ε = {epsilon:.4g}, q = {q:.4g}, T = {steps}, σ = {sigma:g}; control {copies} "
                f"copies (worst case {worst:.3g})")  # fmt: skip

        def scores(b: np.ndarray) -> np.ndarray:
            return copies * rng.binomial(steps, q, size=b.size) * b + rng.normal(0.0, sigma * np.sqrt(steps), b.size)

    print(f"{args.entry}, {what}; guesses {', '.join(f'{f:g}' for f in fractions)}; {args.reps} reps per m")
    print("| m = K·M | control's median ε̂ | share with ε̂ > the claim | s |")
    print("|---:|---:|---:|---:|")
    for m in (int(v) for v in args.m.split(",")):
        start, found = time.perf_counter(), []
        for _ in range(args.reps):
            b = rng.integers(0, 2, size=m).astype(bool)
            found.append(bounds(scores(b), b, delta=delta, confidence=options.confidence, fractions=fractions,
                                gdp=gdp).epsilon_hat)  # fmt: skip
        found = np.asarray(found)
        print(f"| {m} | {np.median(found):.3g} | {np.mean(found > epsilon):.2f} | {time.perf_counter() - start:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
