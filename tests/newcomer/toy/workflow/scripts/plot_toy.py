"""Snakemake adapter: a toy figure via hsaudit.experiments.toy.figures.FIGURES."""

import pandas as pd

from hsaudit.experiments.toy.figures import FIGURES
from hsaudit.pipeline.logs import script_logging

log = script_logging(snakemake)
p = snakemake.params
facts = dict(p.facts, code_version=p.code_version)
FIGURES[p.figure](pd.read_csv(snakemake.input.table), pdf=snakemake.output.pdf, csv=snakemake.output.csv, facts=facts)
log.info("wrote %s", snakemake.output.pdf)
