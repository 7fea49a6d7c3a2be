"""``hsaudit one-run SCORES.csv``: the one-training-run audit of canary scores — the counting bound of Steinke, Nasr
& Jagielski (2023, ``--method steinke``, the default) or the f-DP bound of Mahloujifar et al. (2024, ``--method fdp``:
μ̂ of μ-GDP and its ε at δ).

The CSV is the one ``hsaudit audit`` reads: a column ``score`` (higher ⇒ included) per canary and a column
``member`` (1 = the canary was included in the run, each independently with probability ½).
"""

from __future__ import annotations

import argparse
import json

from hsaudit.audit.one_run import one_run_audit, one_run_audit_search
from hsaudit.audit.one_run_fdp import one_run_fdp_audit
from hsaudit.cli.audit import read_scores_csv

# --method -> the one-choice audit (both return a OneRunResult; a Bonferroni search repeats it over several k).
METHODS = {"steinke": one_run_audit, "fdp": one_run_fdp_audit}


def _pairs(text: str) -> list[tuple[int, int]]:
    """``"100,200"`` → [(100, 100), (200, 200)]; ``"100:50"`` → [(100, 50)] (k_plus:k_minus)."""
    out = []
    for part in text.split(","):
        try:
            kp, _, km = part.strip().partition(":")
            out.append((int(kp), int(km or kp)))
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected k or k_plus:k_minus, comma-separated, got {part!r}") from None
    return out


def register(sub) -> None:
    parser = sub.add_parser(
        "one-run",
        description=(
            "One-run audit: guess 'in' on the k_plus highest canary scores and 'out' on the k_minus lowest, count "
            "the right guesses, and report the largest ε that (ε, δ)-DP rules out at the confidence (Steinke, Nasr "
            "& Jagielski 2023), or the largest μ that μ-GDP rules out and its ε at δ (--method fdp, Mahloujifar et "
            "al. 2024). Several k: the best, paid for with Bonferroni."
        ),
    )
    parser.add_argument("scores", metavar="SCORES.csv", help="CSV with columns score and member (one row per canary)")
    parser.add_argument("--k", type=_pairs, default=None, metavar="K[,K...]",
                        help="guesses per side (k, or k_plus:k_minus), comma-separated for a Bonferroni search "
                        "(default: a tenth of the canaries each side)")  # fmt: skip
    parser.add_argument("--method", choices=sorted(METHODS), default="steinke",
                        help="steinke: counting bound for (ε, δ)-DP (default); fdp: f-DP bound for μ-GDP, "
                        "reported as μ and its ε at --delta")  # fmt: skip
    parser.add_argument("--delta", type=float, default=1e-5, help="δ of the tested guarantee (default 1e-5)")
    parser.add_argument("--confidence", type=float, default=0.95, help="confidence of the bound (default 0.95)")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    scores, members = read_scores_csv(args.scores)
    ks = args.k or [(max(1, scores.size // 10),) * 2]
    audit = METHODS[args.method]
    if len(ks) == 1:
        res = audit(scores, members, k_plus=ks[0][0], k_minus=ks[0][1], delta=args.delta,
                    confidence=args.confidence)  # fmt: skip
    else:
        res = one_run_audit_search(scores, members, ks=ks, delta=args.delta, confidence=args.confidence, audit=audit)
    if args.json:
        print(json.dumps(res.to_dict(), indent=2))
    else:
        mu = "" if res.mu is None else f"  mu:         {res.mu:.6g} (mu-GDP rejected below it)\n"
        print(
            f"one-run audit of {args.scores} ({res.method})\n"
            f"  canaries:   {res.canaries} ({int(members.sum())} included)\n"
            f"  guesses:    {res.guesses} (top {res.k_plus} 'in', bottom {res.k_minus} 'out'), {res.correct} right\n"
            f"{mu}"
            f"  epsilon:    {res.epsilon:.6g} at delta = {res.delta:g}, confidence {res.confidence:g}"
        )
    return 0
