"""Snakemake adapter: one Annamalai figure (fig1 or fig2) via hsaudit.experiments.annamalai.figures.FIGURES."""

import pandas as pd

from hsaudit.experiments.annamalai.figures import FIGURES
from hsaudit.pipeline.logs import script_logging

log = script_logging(snakemake)
p = snakemake.params
table = pd.concat([pd.read_csv(f) for f in snakemake.input.table], ignore_index=True)
facts = dict(p.facts, code_version=p.code_version)
FIGURES[p.figure](table, pdf=snakemake.output.pdf, csv=snakemake.output.csv, facts=facts)
log.info("wrote %s and %s", snakemake.output.pdf, snakemake.output.csv)
