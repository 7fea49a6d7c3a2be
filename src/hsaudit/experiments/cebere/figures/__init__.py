"""Cebere et al.'s figures and tables: every one is ``fn(table, *, pdf, csv, facts)``, listed in :data:`FIGURES`.

``table`` is the tidy table the figure draws (built by the figure's module from what the jobs wrote), ``pdf`` the
document written (Markdown for Table 2), ``csv`` the tidy table of every plotted number, ``facts`` what the footer
states beside the table (scale, code version, and per figure the values it needs: its id where one function draws
several figures, the DP-SGD hyper-parameters, the panel σ, ...). Shared style: :mod:`hsaudit.experiments.plotting`.

- :mod:`~hsaudit.experiments.cebere.figures.housing`: fig1c, fig4, fig7 (FCNN on Housing).
- :mod:`~hsaudit.experiments.cebere.figures.cifar`: fig1, fig2, fig5, fig6a, fig8, fig11, fig12, fig13 (CIFAR-10).
- :mod:`~hsaudit.experiments.cebere.figures.table2`: Table 2 (the hyper-parameters that ran).
"""

from __future__ import annotations

from collections.abc import Callable

from hsaudit.experiments.cebere.figures import cifar, housing, table2

FIGURES: dict[str, Callable[..., object]] = {
    "fig1c": housing.plot_housing,
    "fig4": housing.plot_housing,
    "fig7": housing.plot_housing,
    "fig1": cifar.plot_fig1,
    "fig2": cifar.plot_epsilon,
    "fig5": cifar.plot_epsilon,
    "fig6a": cifar.plot_fig6a,
    "fig8": cifar.plot_fig8,
    "fig11": cifar.plot_fig11,
    "fig12": cifar.plot_epsilon,
    "fig13": cifar.plot_epsilon,
    "table2": table2.write_table2,
}
"""Figure (or table) id → the function that draws it."""
