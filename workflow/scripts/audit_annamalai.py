"""Snakemake adapter: repeated audits of Annamalai's construction at one (q, T, ε), update sign and base rule
(hsaudit.experiments.annamalai.audit.audit_cell)."""

import pandas as pd

from hsaudit.experiments.annamalai.audit import audit_cell
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import write_csv_atomic

log = script_logging(snakemake)
audits = audit_cell(pd.read_csv(snakemake.input.table), **snakemake.params.job)
write_csv_atomic(audits, snakemake.output[0])
log.info("sigma %.6g; wrote %d rows", audits["noise_multiplier"].iloc[0], len(audits))
