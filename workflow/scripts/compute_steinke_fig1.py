"""Snakemake adapter: Steinke et al. fig1 table (heuristic / standard / full-batch ε across T)."""

from hsaudit.util.io import write_csv_atomic
from hsaudit.experiments.steinke.simulations import fig1_table
from hsaudit.pipeline.logs import script_logging

log = script_logging(snakemake)
p = snakemake.params
table = fig1_table(list(p.fig1["panels"]), list(p.fig1["steps"]), delta=p.fig1["delta"])
write_csv_atomic(table, snakemake.output[0])
log.info("wrote %d rows", len(table))
