"""Shared figure helpers: atomic writes and tidy CSVs."""

from __future__ import annotations

import numpy as np
import pandas as pd

from hsaudit.papers.plotting import figure, save
from hsaudit.util.io import write_csv_atomic


def test_csv_counts_are_integers_and_values_untouched(tmp_path):
    frame = pd.DataFrame({"step": [1.0, np.nan, 25.0], "rep": [0.0, 1.0, 2.0], "epsilon": [1.0, 2.5, 3.0]})
    write_csv_atomic(frame, tmp_path / "t.csv")
    lines = (tmp_path / "t.csv").read_text().splitlines()
    assert lines == ["step,rep,epsilon", "1,0,1.0", ",1,2.5", "25,2,3.0"]
    assert frame["step"].dtype.kind == "f", "the caller's frame must not be modified"
    assert [p.name for p in tmp_path.iterdir()] == ["t.csv"], "no temporary file left behind"


def test_save_writes_a_pdf_atomically(tmp_path):
    fig, axes = figure()
    axes[0, 0].plot([0, 1], [0, 1])
    save(fig, tmp_path / "f.pdf", footer="scale=smoke")
    assert (tmp_path / "f.pdf").read_bytes()[:4] == b"%PDF"
    assert [p.name for p in tmp_path.iterdir()] == ["f.pdf"]
