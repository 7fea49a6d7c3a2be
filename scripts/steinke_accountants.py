"""Which accountant Steinke, Nasr et al.'s standard ε came from: every accountant's standard ε of the paper's Table 1
and Table 2 rows, without training (docs/steinke.md, "Which accountant the paper used").

    PYTHONPATH=src python scripts/steinke_accountants.py [--config config/config.yaml] [--table1-n 16000 17878]
        [--fit-n 10000 11000 ...]

Reads the paper-scale sections ``steinke.table2`` (B, σ, T and the printed values of each row; q = B/N with N the
training set of ``steinke.fig2.data``, CIFAR-10's 50,000) and ``steinke.table1`` (B, the heuristic target, epochs,
δ, the printed values; σ is calibrated to the target for N examples,
:func:`hsaudit.experiments.steinke.audit.privacy_plan`) of the config file as written, scale presets not applied,
and prints two Markdown tables on stdout:

1. per row, the heuristic and the standard ε under dp-accounting's PLD and RDP with the classic and the improved
   conversion, over the integer orders 2..256 and over Opacus' orders, beside the paper's printed standard ε
   (Table 1 at each ``--table1-n``);
2. per table and N, each accountant's root-mean-square log error against the paper's printed standard ε (Table 1 at
   every ``--table1-n`` and ``--fit-n``; the best N of each accountant in bold).

Nothing is written. About 10 s per Table 1 N on one core (the calibration of σ), so ≈ 2 minutes with the defaults.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd
import yaml

from hsaudit.data.datasets import DATASETS
from hsaudit.experiments.steinke import audit as A

# N of Table 1 shown row by row besides the config's `steinke.table1.plan.examples`: 17,878, the training records of
# the HF dataset bavard/personachat_truecased (docs/journal/steinke.md, "How many examples did the paper have?").
PERSONACHAT_RECORDS = 17878
FIT_N = tuple(range(10000, 19000, 1000))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="config/config.yaml", help="the config file (paper-scale sections)")
    parser.add_argument("--table1-n", type=int, nargs="*", default=None,
                        help="Table 1's N shown row by row (default: steinke.table1.plan.examples and 17,878)")
    parser.add_argument("--fit-n", type=int, nargs="*", default=list(FIT_N),
                        help="further N of Table 1 in the fit table only (default 10,000, 11,000, …, 18,000)")
    args = parser.parse_args(argv)

    steinke = yaml.safe_load(Path(args.config).read_text())["steinke"]
    t1, t2, data = steinke["table1"], steinke["table2"], steinke["fig2"]["data"]
    n2 = int(data["subset"] or DATASETS[data["dataset"]].n_train)
    shown = args.table1_n if args.table1_n is not None else [int(t1["plan"]["examples"]), PERSONACHAT_RECORDS]
    delta2, delta1, disc = float(t2["delta"]), float(t1["delta"]), float(steinke["value_discretization_interval"])

    def table1_rows(n: int) -> list[dict]:
        return A.table1_accountant_rows(t1["rows"], n_train=n, epochs=float(t1["epochs"]), delta=delta1)

    main_frame = pd.concat([
        A.accountant_comparison(A.table2_accountant_rows(t2["rows"], n_train=n2), delta=delta2,
                                value_discretization_interval=disc),
        *(A.accountant_comparison(table1_rows(n), delta=delta1, value_discretization_interval=disc) for n in shown),
    ], ignore_index=True)
    extra = [n for n in sorted(set(args.fit_n)) if n not in shown]
    fit_frame = pd.concat([main_frame, *(A.accountant_comparison(table1_rows(n), delta=delta1,
                                                                   value_discretization_interval=disc)
                                         for n in extra)], ignore_index=True)
    fit_frame = fit_frame.sort_values(["table", "n_train"], ascending=[False, True], kind="stable")
    print(f"Standard ε at δ = {delta2:g} (Table 2) / {delta1:g} (Table 1); † the optimal order is an end of its "
          "grid.\n")
    print(A.accountants_markdown(main_frame))
    print("Root-mean-square log(ours / paper's standard ε) over each table's three rows (bold: the best N of each "
          "accountant).\n")
    print(A.accountant_fit_markdown(A.accountant_fit(fit_frame)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
