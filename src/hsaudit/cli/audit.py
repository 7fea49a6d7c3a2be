"""``hsaudit audit SCORES.csv``: GDP audit of scores from any model (Nasr et al. 2023; Cebere et al.).

The CSV has a column ``score`` (higher ⇒ member) and a column ``member`` (0/1, 1 = member / canary
inserted); other columns are ignored.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

from hsaudit.audit.crossing import DEFAULT_CALIBRATION_DRAWS
from hsaudit.audit.gdp import (
    AUDIT_MODES,
    DEFAULT_GRID_SIZE,
    DEFAULT_SELECTION_FRACTION,
    MODE_DESCRIPTIONS,
    SPLIT_MODES,
    TEST_MODES,
    AuditResult,
    audit_scores,
)


def register(sub) -> None:
    parser = sub.add_parser(
        "audit",
        description=(
            "Empirical GDP audit (Nasr et al. 2023, Cebere et al. Algorithm 4) of a CSV with columns "
            "'score' (higher = member) and 'member' (0/1). Prints μ̂, ε̂ at δ, the threshold, the "
            "Clopper-Pearson bounds and the assumption-free (ε, δ) bound."
        ),
    )
    parser.add_argument("scores", metavar="SCORES.csv", help="CSV with columns score and member")
    parser.add_argument("--delta", type=float, default=1e-5, help="δ at which ε is reported (default 1e-5)")
    parser.add_argument(
        "--confidence",
        type=float,
        default=0.95,
        help="confidence of each one-sided Clopper-Pearson bound (default 0.95)",
    )
    parser.add_argument(
        "--mode",
        choices=AUDIT_MODES,
        default="paper",
        help="threshold selection: paper (same scores, the papers' method, not a valid bound), "
        "held-out (valid), grid (valid, Bonferroni over a few candidates), crossing (exact joint test where the "
        "empirical curve crosses FPR = FNR; valid for any scores, no split), rays (Monte Carlo exact test on 9 "
        "rays around FPR = FNR; valid for any scores, the tightest on Gaussian-like scores) (default paper)",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the held-out/grid split and the rays simulations (default 0)"
    )
    parser.add_argument(
        "--selection-fraction",
        type=float,
        default=DEFAULT_SELECTION_FRACTION,
        help="share of each class that chooses the threshold in held-out/grid modes (default 0.5; 0.1 is "
        "tighter on Gaussian pairs, see docs/audit.md)",
    )
    parser.add_argument("--grid-size", type=int, default=DEFAULT_GRID_SIZE, help="candidate thresholds of --mode grid")
    parser.add_argument(
        "--calibration-draws",
        type=int,
        default=DEFAULT_CALIBRATION_DRAWS,
        help=f"simulated Gaussian pairs of --mode rays (default {DEFAULT_CALIBRATION_DRAWS}; at least "
        "1/(1 - confidence) - 1)",
    )
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")
    parser.set_defaults(func=run)


def read_scores_csv(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """Read ``score`` and ``member`` columns; errors name the problem (ValueError / FileNotFoundError)."""
    import pandas as pd

    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"no such file: {p}")
    if p.is_dir():
        raise ValueError(f"{p} is a directory, not a CSV file")
    try:
        df = pd.read_csv(p)
    except pd.errors.EmptyDataError:
        raise ValueError(f"{p} is empty") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as err:
        raise ValueError(f"{p} is not a readable CSV: {str(err).splitlines()[0]}") from None
    missing = [c for c in ("score", "member") if c not in df.columns]
    if missing:
        raise ValueError(
            f"{p} lacks column(s) {', '.join(missing)} (found: {', '.join(map(str, df.columns)) or 'none'})"
        )
    if len(df) == 0:
        raise ValueError(f"{p} has no rows")
    scores = pd.to_numeric(df["score"], errors="coerce")
    bad = scores.isna() & df["score"].notna()
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise ValueError(f"column score has a non-numeric value {df['score'].iloc[row]!r} (data row {row + 1})")
    if scores.isna().any():
        row = int(np.flatnonzero(scores.isna().to_numpy())[0])
        raise ValueError(
            f"column score has {int(scores.isna().sum())} missing/NaN value(s) (first at data row {row + 1})"
        )
    member = df["member"]
    if member.dtype == bool:
        labels = member.to_numpy().astype(np.int8)
    else:
        num = pd.to_numeric(member, errors="coerce")
        ok = num.isin([0, 1])
        if not ok.all():
            bad_vals = sorted({str(v) for v in member[~ok].tolist()})[:5]
            raise ValueError(f"column member must hold 0/1 labels, found {', '.join(bad_vals)}")
        labels = num.to_numpy().astype(np.int8)
    return scores.to_numpy(dtype=float), labels


def _jsonable(d: dict) -> dict:
    """Non-finite floats become null (strict JSON)."""
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in d.items()}


def summary(res: AuditResult, source: str = "") -> str:
    """Readable multi-line summary of an audit result."""
    if res.mode in TEST_MODES:
        return "\n".join(
            [
                f"GDP audit{f' of {source}' if source else ''}",
                f"  mode:        {res.mode} — {MODE_DESCRIPTIONS[res.mode]}",
                f"  runs:        {res.n_members} members, {res.n_nonmembers} non-members (all used)",
                f"  crossing of FPR = FNR: threshold {res.threshold:.6g}, FPR {res.fpr:.6g}, FNR {res.fnr:.6g}",
                f"  confidence:  {res.confidence:g} for the lower bound on mu (joint, any score distribution)",
                f"  mu:          {res.mu:.6g}",
                f"  epsilon:     {res.epsilon:.6g} at delta = {res.delta:g} (epsilon of the mu-GDP curve)",
            ]
        )
    lines = [
        f"GDP audit{f' of {source}' if source else ''}",
        f"  mode:        {res.mode} — {MODE_DESCRIPTIONS[res.mode]}",
        f"  runs:        {res.n_members} members, {res.n_nonmembers} non-members (used for the bounds)",
        f"  threshold:   {res.threshold:.6g} (member iff score > threshold)",
        f"  FPR:         {res.fpr:.6g} (upper bound {res.fpr_upper:.6g})",
        f"  FNR:         {res.fnr:.6g} (upper bound {res.fnr_upper:.6g})",
        f"  confidence:  {res.confidence:g} per one-sided Clopper-Pearson bound",
        f"  mu:          {res.mu:.6g}",
        f"  epsilon:     {res.epsilon:.6g} at delta = {res.delta:g} (assumes a Gaussian trade-off curve)",
        f"  epsilon (assumption-free (eps, delta) bound): {res.epsilon_assumption_free:.6g}",
    ]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    scores, members = read_scores_csv(args.scores)
    res = audit_scores(
        scores,
        members,
        delta=args.delta,
        confidence=args.confidence,
        mode=args.mode,
        rng=args.seed,
        selection_fraction=args.selection_fraction,
        grid_size=args.grid_size,
        calibration_draws=args.calibration_draws,
    )
    if args.json:
        out = res.to_dict()
        out["seed"] = args.seed if args.mode in SPLIT_MODES or args.mode == "rays" else None
        out["selection_fraction"] = args.selection_fraction if args.mode in SPLIT_MODES else None
        out["calibration_draws"] = args.calibration_draws if args.mode == "rays" else None
        out["mode_description"] = MODE_DESCRIPTIONS[res.mode]
        print(json.dumps(_jsonable(out), indent=2))
    else:
        print(summary(res, source=str(args.scores)))
    return 0
