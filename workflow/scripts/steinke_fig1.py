"""Snakemake adapter: Steinke et al. fig1 table (heuristic / standard / full-batch ε across T)."""

import logging

from hsaudit.plotting import write_csv_atomic
from hsaudit.steinke import fig1_table

logging.basicConfig(filename=snakemake.log[0], filemode="w", level=logging.INFO, format="%(asctime)s %(message)s")
logging.captureWarnings(True)
p = snakemake.params
table = fig1_table(list(p.fig1["panels"]), list(p.fig1["steps"]), delta=p.fig1["delta"])
write_csv_atomic(table, snakemake.output[0])
logging.info("wrote %d rows", len(table))
