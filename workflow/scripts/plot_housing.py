"""Snakemake adapter: one Housing figure (fig1c, fig4 or fig7) from its audits' tables (hsaudit.figures.housing)."""

import logging

import pandas as pd

from hsaudit.figures.housing import figure_table, plot_housing_figure

# Our messages at INFO; other libraries (e.g. fontTools while writing PDFs) only from WARNING.
logging.basicConfig(filename=snakemake.log[0], filemode="w", level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
log = logging.getLogger("hsaudit.workflow")
log.setLevel(logging.INFO)
logging.captureWarnings(True)
params = snakemake.params
entries = [(ref, pd.read_csv(path)) for ref, path in zip(params.refs, snakemake.input.tables, strict=True)]
summary = plot_housing_figure(
    figure_table(entries),
    snakemake.output.pdf,
    snakemake.output.csv,
    figure=params.figure,
    scale=params.scale,
    code_version=params.code_version,
)
last = summary[summary["step"] == summary["step"].max()]
for row in last.itertuples():
    log.info("%s step %d: eps_hat %.3f ± %.3f over %d reps", row.adversary, row.step, row.mean, row.sd, row.reps)
