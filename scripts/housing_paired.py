"""Paired comparison of two adversaries of a Housing figure CSV (docs/journal/housing.md, "A_GC-R vs A_CotS").

Reads ``results/figN.csv`` (one row per adversary, repetition, step), pairs the two adversaries' audits by
repetition (same θ0 and minibatch schedule: the setup is shared within a repetition), and reports, for ε̂ at the
last step and for the mean of ε̂/bound over a step window, the per-repetition differences A − B, their mean with
a Student-t 95 % interval, a paired exact sign test and a percentile bootstrap interval of the mean difference.

    python scripts/housing_paired.py results/fig7.csv --a gc_r --b cots [--csv out.csv]

Only repetitions where both adversaries have an audit are used. No pipeline state is read or written.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import pandas as pd
from scipy import stats


def paired_values(table: pd.DataFrame, a: str, b: str, *, step: int, window: tuple[int, int]) -> pd.DataFrame:
    """One row per repetition with both audits: ε̂ at ``step`` and mean ε̂/bound over ``window`` for a and b."""
    rows = []
    lo, hi = window
    for adversary in (a, b):
        sub = table[table["adversary"] == adversary]
        for rep, g in sub.groupby("rep"):
            last = g[g["step"] == step]
            win = g[(g["step"] >= lo) & (g["step"] <= hi)]
            if last.empty or win.empty:
                continue
            rows.append(
                {
                    "adversary": adversary,
                    "rep": int(rep),
                    "key": last["key"].iloc[0],
                    "eps": float(last["epsilon"].iloc[0]),
                    "ratio": float((win["epsilon"] / win["epsilon_upper"]).mean()),
                }
            )
    long = pd.DataFrame(rows)
    wide = long.pivot(index="rep", columns="adversary", values=["eps", "ratio", "key"]).dropna()
    out = pd.DataFrame(
        {
            "rep": wide.index.astype(int),
            f"key_{a}": wide[("key", a)].values,
            f"key_{b}": wide[("key", b)].values,
            f"eps_{a}": wide[("eps", a)].astype(float).values,
            f"eps_{b}": wide[("eps", b)].astype(float).values,
            f"ratio_{a}": wide[("ratio", a)].astype(float).values,
            f"ratio_{b}": wide[("ratio", b)].astype(float).values,
        }
    )
    out["diff_eps"] = out[f"eps_{a}"] - out[f"eps_{b}"]
    out["diff_ratio"] = out[f"ratio_{a}"] - out[f"ratio_{b}"]
    return out.reset_index(drop=True)


def summarize(diff: np.ndarray, *, seed: int = 0, boot: int = 20000) -> dict[str, float]:
    """Mean, sd, t-interval (95 %), sign-test p (two-sided, ties dropped), bootstrap 95 % interval of the mean."""
    diff = np.asarray(diff, dtype=float)
    n = diff.size
    mean, sd = float(diff.mean()), float(diff.std(ddof=1)) if n > 1 else float("nan")
    half = float(stats.t.ppf(0.975, n - 1) * sd / np.sqrt(n)) if n > 1 else float("nan")
    pos, neg = int((diff > 0).sum()), int((diff < 0).sum())
    p_sign = float(stats.binomtest(pos, pos + neg, 0.5).pvalue) if pos + neg else float("nan")
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, n, size=(boot, n))].mean(axis=1)
    b_lo, b_hi = np.quantile(means, [0.025, 0.975])
    return {
        "n": n,
        "mean": mean,
        "sd": sd,
        "t_lo": mean - half,
        "t_hi": mean + half,
        "a_wins": pos,
        "b_wins": neg,
        "p_sign": p_sign,
        "boot_lo": float(b_lo),
        "boot_hi": float(b_hi),
    }


def coordinate(results: str, key: str) -> str:
    """The crafted coordinate of audit ``key`` as ``flat index: parameter[position]`` (e.g. ``18: 0.weight[2, 2]``),
    or "" where the audit has none (A_CotS, A_L) or is not crafted yet."""
    import json
    import os

    from hsaudit.engine.models import parameter_at, spec_of
    from hsaudit.experiments.cebere.train.adversaries import load_crafted

    path = os.path.join(results, "audits", key, "crafted.npz")
    if not os.path.exists(path):
        return ""
    crafted = load_crafted(path)
    if crafted.dim is None:
        return ""
    with open(os.path.join(results, "audits", key, "params.json")) as f:
        setup = json.load(f)["setup"]
    name, position = parameter_at(spec_of(setup).build(), crafted.dim)
    return f"{crafted.dim}: {name}[{', '.join(map(str, position))}]"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", help="a Housing figure CSV, e.g. results/fig7.csv")
    parser.add_argument("--a", default="gc_r")
    parser.add_argument("--b", default="cots")
    parser.add_argument("--step", type=int, default=250)
    parser.add_argument("--window", type=int, nargs=2, default=(200, 250))
    parser.add_argument("--out", help="write the per-repetition table here (CSV)")
    parser.add_argument(
        "--results", help="the family's results directory (e.g. results/housing): add A's crafted coordinate d"
    )
    args = parser.parse_args(argv)
    table = pd.read_csv(args.csv)
    paired = paired_values(table, args.a, args.b, step=args.step, window=tuple(args.window))
    if paired.empty:
        print("no repetition has both audits", file=sys.stderr)
        return 1
    if args.results:
        paired[f"d_{args.a}"] = [coordinate(args.results, key) for key in paired[f"key_{args.a}"]]
    if args.out:
        paired.to_csv(args.out, index=False, float_format="%.4f")
    a, b = args.a, args.b
    with pd.option_context("display.width", 200, "display.max_rows", 500):
        print(paired.drop(columns=[f"key_{a}", f"key_{b}"]).round(3).to_string(index=False))
    for label, col, cols in (
        (f"eps at step {args.step}", "diff_eps", (f"eps_{a}", f"eps_{b}")),
        (f"mean eps/bound, steps {args.window[0]}-{args.window[1]}", "diff_ratio", (f"ratio_{a}", f"ratio_{b}")),
    ):
        s = summarize(paired[col].to_numpy())
        r = float(np.corrcoef(paired[cols[0]], paired[cols[1]])[0, 1]) if len(paired) > 2 else float("nan")
        print(
            f"{label}: {a} {paired[cols[0]].mean():.3f} ± {paired[cols[0]].std(ddof=1):.3f}, "
            f"{b} {paired[cols[1]].mean():.3f} ± {paired[cols[1]].std(ddof=1):.3f} (mean ± sd); "
            f"diff {a} − {b}: n = {s['n']}, mean {s['mean']:.3f}, sd {s['sd']:.3f}, "
            f"95 % t-CI [{s['t_lo']:.3f}, {s['t_hi']:.3f}], bootstrap [{s['boot_lo']:.3f}, {s['boot_hi']:.3f}], "
            f"sign test {s['a_wins']}:{s['b_wins']} p = {s['p_sign']:.3f}; corr({a}, {b}) = {r:.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
