"""Snakemake adapter: one Yoon et al. figure (or table1) from its audits' CSVs (hsaudit.experiments.yoon.figures)."""

import pandas as pd

from hsaudit.experiments.yoon import figures
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import write_csv_atomic

log = script_logging(snakemake)
params, inp, out = snakemake.params, snakemake.input, snakemake.output
table = figures.runs_table([pd.read_csv(p) for p in inp.tables], params.points, figure=params.figure)
write_csv_atomic(table, out.runs)
if inp.scores:
    scores = figures.runs_table([pd.read_csv(p) for p in inp.scores], params.points, figure=params.figure)
    table = figures.with_scores(table, scores)
facts = dict(params.facts, code_version=params.code_version)
summary = figures.FIGURES[params.figure](table, pdf=out.main, csv=out.csv, facts=facts)
log.info("%s:\n%s", params.figure, summary.to_string(max_rows=60))
