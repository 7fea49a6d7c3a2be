"""Helpers of the tests of hsaudit.experiments.byo: the zoo's entries by path (and the zoo on the import path), and
the few-runs audit's figure checked against its report."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

from conftest import check_pdf

ZOO_DIR = Path(__file__).resolve().parent / "zoo"
if str(ZOO_DIR) not in sys.path:
    sys.path.insert(0, str(ZOO_DIR))


def zoo_entry(name: str) -> str:
    """The harness's entry string of a zoo training."""
    return f"{ZOO_DIR / 'entries.py'}:{name}"


def assert_few_figure_is_the_report(out: Path, report: dict) -> None:
    """OUT/fig.pdf of a few-runs audit is written and fig.csv holds its report's ε values (CLI and workflow alike)."""
    check_pdf(out / "fig.pdf")
    fig = pd.read_csv(out / "fig.csv").set_index("kind")
    assert fig.loc["claim", "epsilon"] == pytest.approx(report["epsilon_claimed"])
    assert fig.loc["ceiling", "epsilon"] == pytest.approx(report["ceiling"])
    if report["epsilon_hat"] is None:
        assert "lower bound" not in fig.index
    else:
        assert fig.loc["lower bound", "epsilon"] == pytest.approx(report["epsilon_hat"])
    assert set(fig["verdict"]) == {report["verdict"]} and set(fig["trainings"]) == {report["trainings"]}
