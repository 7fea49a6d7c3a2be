"""Snakemake adapter: one Housing figure (fig1c, fig4 or fig7) from its audits' tables
(hsaudit.experiments.cebere.figures.housing)."""

import pandas as pd

from hsaudit.experiments.cebere.figures.housing import figure_table, plot_housing
from hsaudit.pipeline.logs import script_logging

log = script_logging(snakemake)
params = snakemake.params
entries = [(ref, pd.read_csv(path)) for ref, path in zip(params.refs, snakemake.input.tables, strict=True)]
summary = plot_housing(
    figure_table(entries),
    pdf=snakemake.output.pdf,
    csv=snakemake.output.csv,
    facts=dict(params.facts, figure=params.figure, code_version=params.code_version),
)
last = summary[summary["step"] == summary["step"].max()]
for row in last.itertuples():
    log.info("%s step %d: eps_hat %.3f ± %.3f over %d reps", row.adversary, row.step, row.mean, row.sd, row.reps)
