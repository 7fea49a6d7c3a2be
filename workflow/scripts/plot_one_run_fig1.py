"""Snakemake adapter: results/one_run/fig1.pdf + .csv from the datasets' one-run tables
(hsaudit.experiments.one_run.figures.plot_fig1)."""

import pandas as pd

from hsaudit.data.datasets import dataset_source
from hsaudit.experiments.one_run.audit import stack_tables, summary_lines
from hsaudit.experiments.one_run.figures import plot_fig1
from hsaudit.pipeline.logs import script_logging

log = script_logging(snakemake)
params = snakemake.params
table = stack_tables([pd.read_csv(path) for path in snakemake.input.tables])
sources = {d: dataset_source(p) for d, p in zip(params.datasets, snakemake.input.data, strict=True)}
plot_fig1(
    table,
    pdf=snakemake.output.pdf,
    csv=snakemake.output.csv,
    facts=dict(params.facts, data_sources=sources, code_version=params.code_version),
)
for line in summary_lines(table):
    log.info("%s", line)
