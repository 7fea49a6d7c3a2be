"""``hsaudit audit SCORES.csv``: GDP audit of scores from any model (Nasr et al. 2023; Cebere et al.).

The CSV has a column ``score`` (higher ⇒ member) and a column ``member`` (0/1, 1 = member / canary
inserted); other columns are ignored. ``--mode`` names the threshold rule (:mod:`hsaudit.audit.rules`); without it
the audit uses the crossing rule, valid for any scores (``paper`` reproduces the papers' numbers and is labelled
not valid). This module is where the CLI's strings become a rule value.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

from hsaudit.audit.auditor import DEFAULT_FPR_LEVELS, DIRECTIONS, AuditReport, Auditor
from hsaudit.audit.crossing import DEFAULT_CALIBRATION_DRAWS
from hsaudit.audit.rules import (
    AUDIT_MODES,
    DEFAULT_GRID_SIZE,
    DEFAULT_RULE,
    DEFAULT_SELECTION_FRACTION,
    RULES,
    Crossing,
    Rays,
    parse_rule,
)


def register(sub) -> None:
    parser = sub.add_parser(
        "audit",
        description=(
            "Empirical GDP audit (Nasr et al. 2023, Cebere et al. Algorithm 4) of a CSV with columns "
            "'score' (higher = member) and 'member' (0/1), by default under the crossing rule (a valid lower "
            "bound for any scores). Prints μ̂, ε̂ at δ, the threshold, the Clopper-Pearson bounds and the "
            "assumption-free (ε, δ) bound (under the Clopper-Pearson rules), and point estimates."
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
        default=DEFAULT_RULE.name,
        help=f"threshold rule (default {DEFAULT_RULE.name}): "
        + "; ".join(f"{cls.name} ({cls.description})" for cls in RULES),
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
    parser.add_argument(
        "--directions",
        choices=DIRECTIONS,
        default="one",
        help="one: higher score = member (default); both: also try lower score = member, each direction at "
        "confidence 1 - (1 - c)/2, so that the search over both is paid for",
    )
    parser.add_argument(
        "--fpr-levels",
        type=_levels,
        default=DEFAULT_FPR_LEVELS,
        help="FPRs at which the TPR is reported, comma-separated (default 0.001,0.01)",
    )
    parser.add_argument(
        "--bootstrap",
        type=int,
        default=0,
        help="stratified bootstrap resamples for intervals on the point estimates (AUROC, its mu, TPR at FPR) at "
        "--confidence (default 0: none; 1000 is usual)",
    )
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")
    parser.set_defaults(func=run)


def _levels(text: str) -> tuple[float, ...]:
    try:
        levels = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers in (0, 1), got {text!r}") from None
    if not levels or any(not 0.0 < f < 1.0 for f in levels):
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers in (0, 1), got {text!r}")
    return levels


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


def _estimates(report: AuditReport) -> list[str]:
    """The point estimates (not bounds), with their bootstrap intervals when there are any."""

    def fmt(name: str) -> str:
        lo_hi = report.intervals.get(name)
        ci = f" [{lo_hi[0]:.4g}, {lo_hi[1]:.4g}]" if lo_hi else ""
        return f"{report.estimates[name]:.4g}{ci}"

    tprs = ", ".join(f"{name.removeprefix('tpr_at_fpr_')}: {fmt(name)}" for name in report.estimates
                     if name.startswith("tpr_at_fpr_"))  # fmt: skip
    how = f" ({report.bootstrap} bootstrap resamples, {report.confidence:g} intervals)" if report.bootstrap else ""
    return [
        f"  point estimates (not bounds){how}:",
        f"    AUROC {fmt('auroc')}, its Gaussian mu {fmt('mu_auroc')}",
        f"    TPR at FPR {tprs}",
    ]


def summary(report: AuditReport, source: str = "") -> str:
    """Readable multi-line summary of an audit report."""
    res = report.gdp
    head = f"GDP audit{f' of {source}' if source else ''}"
    if report.directions == "both":
        side = "higher" if report.direction == "higher" else "lower"
        head += (f"\n  directions:  both tried, each at confidence {res.confidence:g}; the {side} scores are "
                 f"members (member iff score {'>' if side == 'higher' else '<'} threshold)")  # fmt: skip
    rule = report.rule
    if isinstance(rule, (Crossing, Rays)):
        return "\n".join(
            [
                head,
                f"  mode:        {rule.name} — {rule.description}",
                f"  runs:        {res.n_members} members, {res.n_nonmembers} non-members (all used)",
                f"  crossing of FPR = FNR: threshold {res.threshold:.6g}, FPR {res.fpr:.6g}, FNR {res.fnr:.6g}",
                f"  confidence:  {res.confidence:g} for the lower bound on mu (joint, any score distribution)",
                f"  mu:          {res.mu:.6g}",
                f"  epsilon:     {res.epsilon:.6g} at delta = {res.delta:g} (epsilon of the mu-GDP curve)",
                *_estimates(report),
            ]
        )
    per_bound = "jointly for every bound" if rule.name == "bonferroni" else "per one-sided Clopper-Pearson bound"
    lines = [
        head,
        f"  mode:        {rule.name} — {rule.description}",
        f"  runs:        {res.n_members} members, {res.n_nonmembers} non-members (used for the bounds)",
        f"  threshold:   {res.threshold:.6g} (member iff score {'<' if report.direction == 'lower' else '>'} "
        "threshold)",
        f"  FPR:         {res.fpr:.6g} (upper bound {res.fpr_upper:.6g})",
        f"  FNR:         {res.fnr:.6g} (upper bound {res.fnr_upper:.6g})",
        f"  confidence:  {res.confidence:g} {per_bound}",
        f"  mu:          {res.mu:.6g}",
        f"  epsilon:     {res.epsilon:.6g} at delta = {res.delta:g} (assumes a Gaussian trade-off curve)",
        f"  epsilon (assumption-free (eps, delta) bound): {res.epsilon_assumption_free:.6g}",
        *_estimates(report),
    ]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    scores, members = read_scores_csv(args.scores)
    rule = parse_rule(
        args.mode,
        selection_fraction=args.selection_fraction,
        grid_size=args.grid_size,
        seed=args.seed,
        calibration_draws=args.calibration_draws,
    )
    auditor = Auditor(
        delta=args.delta,
        confidence=args.confidence,
        rule=rule,
        directions=args.directions,
        fpr_levels=args.fpr_levels,
        bootstrap=args.bootstrap,
        bootstrap_seed=args.seed,
    )
    inserted = members.astype(bool)
    report = auditor.report(scores[~inserted], scores[inserted])
    if args.json:
        out = report.to_dict()
        out["seed"] = args.seed if hasattr(rule, "seed") else None
        out["selection_fraction"] = rule.fraction if hasattr(rule, "fraction") else None
        out["calibration_draws"] = rule.draws if hasattr(rule, "draws") else None
        print(json.dumps(_jsonable(out), indent=2))
    else:
        print(summary(report, source=str(args.scores)))
    return 0
