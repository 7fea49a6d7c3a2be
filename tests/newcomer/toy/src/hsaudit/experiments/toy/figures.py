"""The toy figure: ε̂ of the rule beside the mechanism's ε (``FIGURES``, the one figure signature)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from hsaudit.experiments.plotting import figure, footer_text, save
from hsaudit.util.io import write_csv_atomic


def fig1(table: pd.DataFrame, *, pdf: str, csv: str, facts: Mapping[str, Any]) -> pd.DataFrame:
    """Bars: ε (μ = 1/σ) and the audit's ε̂."""
    row = table.iloc[0]
    fig, axes = figure(width=3.0)
    axes[0][0].bar(["ε", f"ε̂ ({row['rule']})"], [row["epsilon"], row["epsilon_hat"]])
    axes[0][0].set_title(f"Gaussian mechanism, σ = {row['sigma']:g}")
    write_csv_atomic(table, csv)
    save(fig, pdf, footer=footer_text(**facts, R=int(row["runs"]), audit=row["rule"], delta=row["delta"]))
    return table


FIGURES: dict[str, Callable[..., pd.DataFrame]] = {"fig1": fig1}
