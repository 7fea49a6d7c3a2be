"""Snakemake adapter: results/one_run/fig1.pdf + .csv from the families' one-run tables
(hsaudit.experiments.cebere.figures.one_run.plot_one_run_figure)."""

import pandas as pd

from hsaudit.data.datasets import dataset_source
from hsaudit.experiments.cebere.figures.one_run import plot_one_run_figure
from hsaudit.experiments.cebere.one_run_tables import stack_tables, summary_lines
from hsaudit.pipeline.logs import script_logging

log = script_logging(snakemake)
params = snakemake.params
table = stack_tables([pd.read_csv(path) for path in snakemake.input.tables])
plot_one_run_figure(
    table,
    snakemake.output.pdf,
    snakemake.output.csv,
    scale=params.scale,
    data_sources={f: dataset_source(p) for f, p in zip(params.families, snakemake.input.data, strict=True)},
    code_version=params.code_version,
)
for line in summary_lines(table):
    log.info("%s", line)
