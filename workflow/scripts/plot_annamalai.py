"""Snakemake adapter: one Annamalai figure (fig1 or fig2) via hsaudit.experiments.annamalai.figures."""

import pandas as pd

from hsaudit.experiments.annamalai import figures as annamalai
from hsaudit.pipeline.logs import script_logging

log = script_logging(snakemake)
p = snakemake.params
table = pd.concat([pd.read_csv(f) for f in snakemake.input.table], ignore_index=True)
out = dict(pdf=snakemake.output.pdf, csv=snakemake.output.csv, facts=dict(p.facts, code_version=p.code_version))
if p.figure == "fig1":
    annamalai.plot_fig1(table, **out)
elif p.figure == "fig2":
    annamalai.plot_fig2(table, tail_floor=p.tail_floor, base_rule=p.base_rule, **out)
else:  # pragma: no cover - the rules only pass the names above
    raise ValueError(f"unknown figure {p.figure!r}")
log.info("wrote %s and %s", snakemake.output.pdf, snakemake.output.csv)
