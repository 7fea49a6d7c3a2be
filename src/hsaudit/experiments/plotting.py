"""Shared figure style: every figure of the project goes through :func:`figure` and :func:`save`.

Figures are sized for a paper column pair (width 7 in), use a colour-blind-safe palette, and carry a small
provenance footer: :func:`footer_text` formats it (scale preset, R, data source, audit method, the paper's own
facts, code version) and :func:`save` draws it wrapped to the figure's width, in the band at the bottom that
:func:`reserve_footer` keeps free, so that it never runs off the page. The footer goes in the PDFs (and, as one
line, in the Markdown tables' provenance line), never in a CSV.
"""

from __future__ import annotations

import numbers
import os
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from hsaudit.util.io import atomic_path  # noqa: E402

PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000")
UPPER_BOUND_STYLE = {"color": "black", "linestyle": "--", "linewidth": 1.2}


def figure(ncols: int = 1, nrows: int = 1, *, width: float = 7.0, height: float | None = None, **kw):
    """Create a figure with the project's style. Returns ``(fig, axes)`` like :func:`plt.subplots`."""
    plt.rcParams.update(
        {
            "font.size": 9,
            "axes.titlesize": 9,
            "axes.labelsize": 9,
            "legend.fontsize": 7.5,
            "xtick.labelsize": 8,
            "ytick.labelsize": 8,
            "axes.prop_cycle": matplotlib.cycler(color=PALETTE),
            "axes.grid": True,
            "grid.alpha": 0.3,
            "pdf.fonttype": 42,
        }
    )
    if height is None:
        height = 2.6 * nrows + 0.4
    return plt.subplots(nrows, ncols, figsize=(width, height), squeeze=False, **kw)


FOOTER_SEPARATOR = "  ·  "
FOOTER_FONTSIZE = 6.5
FOOTER_GID = "footer"  # the gid of the footer's Text artist, so that tests and callers can find it
_FOOTER_PAD_IN = 0.05  # inches between the footer and the figure's left, right and bottom edges
_FOOTER_MAX_FRACTION = 0.4  # the most of a figure's height a footer may take before the figure grows


def footer_text(
    *,
    scale: str,
    R: object = None,  # noqa: N803 - the papers' symbol for the number of runs
    data: object = None,
    audit: object = None,
    code_version: str = "",
    **facts: object,
) -> str:
    """The provenance line of a figure: ``scale=… · R=… · data=… · audit=… · <facts> · code=…``.

    Values are written as text: floats in their shortest form (``1e-05``, integral floats as integers), and a
    list, array or Series as its distinct values joined by "/" (numbers ascending, anything else in order of
    appearance), so ``R=table["runs"]`` gives ``R=500/1000``. Entries whose value is ``None``, and an empty code
    version, are left out. The line is not wrapped: :func:`save` wraps it to the figure's width.

    Args:
        scale: the scale preset (always first).
        R: the number of runs (models per world, per dataset, ...), e.g. ``"1000 per world"`` or a column.
        data: the data source(s), e.g. ``"cifar10:local"`` or a column.
        audit: the audit method, e.g. ``"paper (GDP, CP 0.95)"``.
        code_version: the code version (always last, as ``code=``).
        **facts: further ``name=value`` entries, in the order given, after the audit (e.g. ``reps=2``, ``σ=4``).

    >>> footer_text(scale="smoke", R=[1000, 500, 1000], audit="GDP", reps=2, code_version="abc123")
    'scale=smoke  ·  R=500/1000  ·  audit=GDP  ·  reps=2  ·  code=abc123'
    """
    entries = {"scale": scale, "R": R, "data": data, "audit": audit, **facts, "code": code_version or None}
    return FOOTER_SEPARATOR.join(f"{k}={_fact(v)}" for k, v in entries.items() if v is not None)


def _fact(value: object) -> str:
    """One footer value as text (:func:`footer_text`'s rules)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        v = float(value)
        return str(int(v)) if v.is_integer() and abs(v) < 1e15 else f"{v:g}"
    if isinstance(value, Iterable):
        values = list(dict.fromkeys(v for v in value if v is not None))
        if values and all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in values):
            values = sorted(values)
        return "/".join(dict.fromkeys(_fact(v) for v in values))
    return str(value)


def wrap_footer(fig, text: str) -> str:
    """``text`` broken into lines that fit the width of ``fig`` (less a margin) at the footer's font size.

    Lines break at the :data:`FOOTER_SEPARATOR` between facts (the separator is dropped there), inside a fact at
    spaces, and inside a word only when the word alone is too wide. Existing line breaks are kept. Widths are
    measured from the font (:func:`_width_test`), so the lines fit in the PDF as on screen.
    """
    available = fig.get_figwidth() * fig.dpi - 2 * _FOOTER_PAD_IN * fig.dpi
    fits = _width_test(fig, available)
    lines: list[str] = []
    for paragraph in str(text).split("\n"):
        current: str | None = None
        for part in paragraph.split(FOOTER_SEPARATOR):
            if current is not None and fits(current + FOOTER_SEPARATOR + part):
                current += FOOTER_SEPARATOR + part
                continue
            if current is not None:
                lines.append(current)
            pieces = [part] if fits(part) else _break(part, fits)
            lines.extend(pieces[:-1])
            current = pieces[-1]
        lines.append(current or "")
    return "\n".join(lines)


def _width_test(fig, available: float) -> Callable[[str], bool]:
    """A predicate: does a line of footer text fit in ``available`` figure pixels?

    A line must fit by both measures matplotlib uses: the unhinted outline widths that the PDF backend lays text
    out with, and the hinted widths of the canvas's raster renderer (a few % apart either way, glyph by glyph).
    """
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath

    prop = FontProperties(size=FOOTER_FONTSIZE)
    outline = TextToPath()
    renderer = fig.canvas.get_renderer() if hasattr(fig.canvas, "get_renderer") else None

    def fits(line: str) -> bool:
        width = outline.get_text_width_height_descent(line, prop, ismath=False)[0] * fig.dpi / 72  # points -> px
        if renderer is not None:
            hinted = renderer.get_text_width_height_descent(line, prop, ismath=False)[0]
            width = max(width, hinted * fig.dpi / renderer.points_to_pixels(72))  # renderer px -> figure px
        return width <= available

    return fits


def _break(part: str, fits: Callable[[str], bool]) -> list[str]:
    """Greedy lines of ``part`` that each pass ``fits``: at spaces, and within a word that is too wide alone."""
    lines: list[str] = []
    current = ""
    for word in part.split(" "):
        candidate = f"{current} {word}" if current else word
        if fits(candidate):
            current = candidate
            continue
        if current:
            lines.append(current)
        current = ""
        for char in word:  # a word too wide for a line is cut where it reaches the edge
            if current and not fits(current + char):
                lines.append(current)
                current = ""
            current += char
    lines.append(current)
    return lines


def draw_footer(fig, text: str):
    """Draw ``text`` as the footer of ``fig``: wrapped to its width (:func:`wrap_footer`), centred at the bottom.

    Returns:
        The :class:`matplotlib.text.Text` (gid :data:`FOOTER_GID`).
    """
    return fig.text(
        0.5,
        _FOOTER_PAD_IN / fig.get_figheight(),
        wrap_footer(fig, text),
        ha="center",
        va="bottom",
        multialignment="center",
        fontsize=FOOTER_FONTSIZE,
        color="0.35",
        gid=FOOTER_GID,
        parse_math=False,
    )


def reserve_footer(fig, text: str | None) -> float:
    """Make room for the footer ``text`` at the bottom of ``fig``; returns the fraction of its height to keep free.

    The band is the wrapped footer's height plus padding (0 without a footer), measured at the figure's current
    width. A footer that would take more than 40% of the height (a narrow, short figure with a long footer)
    does not squeeze the panels: the figure grows taller (with a warning) until the band is 40% of it, so the
    footer always fits. Call it before laying the panels out, e.g.
    ``fig.tight_layout(rect=(0, reserve_footer(fig, footer), 1, 1))`` for ``save(..., tight=False)``; calling it
    again gives the same band.
    """
    if not text:
        return 0.0
    artist = draw_footer(fig, text)
    try:
        band = artist.get_window_extent().height / fig.dpi + 2 * _FOOTER_PAD_IN  # inches; the canvas's renderer
    finally:
        artist.remove()
    height = fig.get_figheight()
    if band > _FOOTER_MAX_FRACTION * height * (1 + 1e-9):
        grown = band / _FOOTER_MAX_FRACTION
        warnings.warn(
            f"the footer needs {band:.2f} in of a {fig.get_figwidth():g} x {height:g} in figure: "
            f"the figure grows to {grown:.2f} in tall",
            stacklevel=2,
        )
        fig.set_figheight(grown)
        height = grown
    return band / height


def add_footer(fig, footer: str | None, *, tight: bool = True):
    """Lay out ``fig`` around its footer and draw it (:func:`draw_footer`); what :func:`save` does before writing.

    With ``tight`` the panels are laid out (``tight_layout``) above the footer's band; without, the caller has
    laid them out, leaving :func:`reserve_footer`'s band free at the bottom.

    Returns:
        The footer's :class:`matplotlib.text.Text`, or ``None`` without a footer.
    """
    if tight:
        fig.tight_layout(rect=(0, reserve_footer(fig, footer), 1, 1))
    return draw_footer(fig, footer) if footer else None


def save(fig, path: str | os.PathLike, *, footer: str | None = None, tight: bool = True) -> None:
    """Write ``fig`` to ``path`` atomically (temporary name, then rename) with an optional footer, then close it.

    The footer is laid out and drawn inside the figure by :func:`add_footer` (``tight`` as there).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    add_footer(fig, footer, tight=tight)
    with atomic_path(path) as tmp:
        fig.savefig(tmp)
    plt.close(fig)
