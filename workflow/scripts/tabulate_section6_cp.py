"""Snakemake adapter: the one-sided Clopper–Pearson table for n trials (hsaudit.audit.two_sample.cp_upper_table)."""

import os

import numpy as np

from hsaudit.pipeline.logs import script_logging
from hsaudit.audit.two_sample import cp_upper_table

log = script_logging(snakemake)
n = int(snakemake.wildcards.n)
table = cp_upper_table(n, snakemake.params.confidence)
out = snakemake.output[0]
tmp = f"{out}.tmp{os.getpid()}.npy"
np.save(tmp, table)
os.replace(tmp, out)
log.info("Clopper-Pearson upper bounds for n = %d at confidence %s", n, snakemake.params.confidence)
