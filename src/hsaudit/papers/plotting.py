"""Shared figure style: every figure of the project goes through :func:`figure` and :func:`save`.

Figures are sized for a paper column pair (width 7 in), use a colour-blind-safe palette, and carry a small
footer that states the scale preset, R and the audit method they were made with (every figure PDF
states the scale and R it was made with).
"""

from __future__ import annotations

import os
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


def footer_text(*, scale: str, **facts: object) -> str:
    """The provenance line printed under each figure, e.g. ``scale=paper · R=10⁶ per world · audit=paper``."""
    parts = [f"scale={scale}"] + [f"{k}={v}" for k, v in facts.items()]
    return "  ·  ".join(parts)


def save(fig, path: str | os.PathLike, *, footer: str | None = None, tight: bool = True) -> None:
    """Write ``fig`` to ``path`` atomically (temporary name, then rename) with an optional footer."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if footer:
        fig.text(0.5, 0.005, footer, ha="center", va="bottom", fontsize=6.5, color="0.35")
    if tight:
        fig.tight_layout(rect=(0, 0.03 if footer else 0, 1, 1))
    with atomic_path(path) as tmp:
        fig.savefig(tmp)
    plt.close(fig)
