"""The libraries table's figure: per configuration, the verdict's ε̂ (a one-sided lower bound) and the point
estimate with its bootstrap interval, against the library's claimed ε. One signature, ``fn(table, *, pdf, csv,
facts)``, as every figure (:data:`FIGURES`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from hsaudit.experiments.plotting import PALETTE, figure, footer_text, save
from hsaudit.util.io import write_csv_atomic

COLUMNS = ("row", "verdict", "planted", "epsilon_claimed", "epsilon_hat", "epsilon_point", "epsilon_lo", "epsilon_hi")


def plot_table(table: pd.DataFrame, *, pdf: str, csv: str, facts: Mapping[str, Any]) -> pd.DataFrame:
    """One line per row (planted controls last, marked): the claim (|), ε̂ (▶: the verdict's lower bound) and the
    AUROC's ε with its interval (●); returns the table written to ``csv``."""
    data = table.loc[:, list(COLUMNS)].copy()
    for col in COLUMNS[3:]:
        data[col] = pd.to_numeric(data[col], errors="coerce").astype(float)
    write_csv_atomic(data, csv)
    y = np.arange(len(data))[::-1]
    fig, axes = figure(1, 1, height=0.6 + 0.32 * max(len(data), 1))
    ax = axes[0][0]
    ax.scatter(data["epsilon_claimed"], y, marker="|", s=200, color="black", label="claimed ε", zorder=3)
    ax.scatter(data["epsilon_hat"], y, marker=">", color=PALETTE[1], label="ε̂ (lower bound, verdict)", zorder=4)
    err = np.vstack([(data["epsilon_point"] - data["epsilon_lo"]).clip(lower=0),
                     (data["epsilon_hi"] - data["epsilon_point"]).clip(lower=0)])  # fmt: skip
    ax.errorbar(data["epsilon_point"], y, xerr=np.nan_to_num(err), fmt="o", color=PALETTE[0], ms=3, capsize=2,
                label="ε of the AUROC (estimate, interval)")  # fmt: skip
    labels = [f"{r} ({v}{', planted' if p else ''})" for r, v, p in zip(data["row"], data["verdict"], data["planted"])]
    ax.set_yticks(y, labels)
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xlabel("ε")
    ax.legend(loc="lower right", fontsize="small")
    save(fig, pdf, footer=footer_text(scale=facts.get("scale", "-"), R=facts.get("runs"), canary=facts.get("canary"),
                                      code_version=facts.get("code_version", "")))  # fmt: skip
    return data


FIGURES: dict[str, Callable[..., pd.DataFrame]] = {"table": plot_table}
"""Figure id → function (``results/libraries/fig.pdf`` is ``table``)."""
