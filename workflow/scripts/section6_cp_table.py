"""Snakemake adapter: the one-sided Clopper–Pearson table for n trials (hsaudit.process1d.cp_upper_table)."""

import logging
import os

import numpy as np

from hsaudit.process1d import cp_upper_table

logging.basicConfig(filename=snakemake.log[0], filemode="w", level=logging.INFO, format="%(asctime)s %(message)s")
n = int(snakemake.wildcards.n)
table = cp_upper_table(n, snakemake.params.confidence)
out = snakemake.output[0]
tmp = f"{out}.tmp{os.getpid()}.npy"
np.save(tmp, table)
os.replace(tmp, out)
logging.info("Clopper-Pearson upper bounds for n = %d at confidence %s", n, snakemake.params.confidence)
