"""Shared figure helpers: atomic writes, tidy CSVs and the provenance footer (formatted, wrapped, inside)."""

from __future__ import annotations

import re
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.font_manager import FontProperties
from matplotlib.textpath import TextToPath

from conftest import check_footer_inside
from hsaudit.experiments.plotting import (
    FOOTER_FONTSIZE,
    FOOTER_SEPARATOR,
    add_footer,
    figure,
    footer_text,
    reserve_footer,
    save,
)
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


# ------------------------------------------------------------------------------------------------ footers


def test_footer_text_formats_the_common_facts_in_order():
    text = footer_text(
        scale="paper",
        R=pd.Series([1000, 500, 1000, 500]),  # distinct counts, ascending
        data=["cifar10:local", "housing", "cifar10:local"],  # distinct sources, in order of appearance
        audit="paper (GDP, CP 0.95)",
        code_version="0123456789ab",
        reps=np.int64(5),
        δ=1e-5,
        CP=1.0,
        skipped=None,
    )
    assert text.split(FOOTER_SEPARATOR) == [
        "scale=paper",
        "R=500/1000",
        "data=cifar10:local/housing",
        "audit=paper (GDP, CP 0.95)",
        "reps=5",
        "δ=1e-05",
        "CP=1",
        "code=0123456789ab",
    ]


def test_footer_text_leaves_out_what_is_not_given():
    assert footer_text(scale="smoke") == "scale=smoke"
    assert footer_text(scale="smoke", code_version="", R="analytic") == f"scale=smoke{FOOTER_SEPARATOR}R=analytic"
    assert footer_text(scale="smoke", runs=np.array([30.0, 30.0]), σ=np.float64(4)) == (
        f"scale=smoke{FOOTER_SEPARATOR}runs=30{FOOTER_SEPARATOR}σ=4"
    )


def _long_footer() -> str:
    return footer_text(
        scale="paper",
        R="1,000/2,000 per world",
        data="cifar10:local/housing",
        audit="paper (GDP, CP 0.95)",
        code_version="0123456789ab" * 4,
        reps=5,
        **{"craft/audit split": "held-out (main) and same (paper's reading)"},
        shown="run 0, MNIST, white box, blank canary, θ_avg, C = 1, ε = 10",
        note="x" * 160,  # one word longer than a narrow figure is wide
    )


@pytest.mark.parametrize(("width", "height", "tight"), [(2.6, 4.5, True), (2.6, 4.5, False), (12.0, 2.6, True)])
def test_long_footer_is_wrapped_inside_the_figure(width, height, tight):
    """A footer far wider than the figure is wrapped to its width and drawn inside it, below the panels.

    Unwrapped, the footer (about 450 characters at 6.5 pt) is wider than either figure: it would run off both
    edges, as fig12's did.
    """
    text = _long_footer()
    fig, axes = figure(width=width, height=height)
    axes[0, 0].plot([0, 1], [0, 1])
    axes[0, 0].set(xlabel="step", ylabel="ε")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the footer fits without squeezing the panel
        if not tight:  # the caller lays the panels out, keeping the footer's band free
            fig.tight_layout(rect=(0, reserve_footer(fig, text), 1, 1))
        artist = add_footer(fig, text, tight=tight)
    renderer = fig.canvas.get_renderer()
    unwrapped = fig.text(0.5, 0.5, text, fontsize=FOOTER_FONTSIZE, ha="center")
    assert unwrapped.get_window_extent(renderer).width > fig.bbox.width
    unwrapped.remove()
    check_footer_inside(fig)
    wrapped = artist.get_text()
    for line in wrapped.split("\n"):  # the PDF lays text out with the fonts' unhinted outlines
        points = TextToPath().get_text_width_height_descent(line, FontProperties(size=FOOTER_FONTSIZE), False)[0]
        assert points / 72 <= width, (line, points / 72, width)
    assert wrapped.count("\n") >= (4 if width < 3 else 1)
    squeeze = lambda s: re.sub(r"[\s·]", "", s)  # noqa: E731 - lines break at separators, spaces or in a word
    assert squeeze(wrapped) == squeeze(text)
    plt.close(fig)


def test_footer_taller_than_the_figure_can_spare_grows_the_figure():
    """A footer that would take more than 40% of the height makes the figure taller (with a warning), once."""
    fig, _ = figure(width=2.0, height=1.5)
    with pytest.warns(UserWarning, match="grows"):
        band = reserve_footer(fig, _long_footer())
    assert fig.get_figheight() > 1.5 and band == pytest.approx(0.4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert reserve_footer(fig, _long_footer()) == pytest.approx(band)  # the same band, no second growth
        add_footer(fig, _long_footer())
    check_footer_inside(fig)
    plt.close(fig)


def test_short_footer_stays_one_line():
    fig, _ = figure(width=7.0)
    artist = add_footer(fig, footer_text(scale="smoke", R=200, audit="GDP"))
    assert artist.get_text() == f"scale=smoke{FOOTER_SEPARATOR}R=200{FOOTER_SEPARATOR}audit=GDP"
    check_footer_inside(fig)
    plt.close(fig)
