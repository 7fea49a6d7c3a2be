"""Snakemake adapter: PLD calibration table ε(σ), δ(ε′) of one (q, T), computed once and interpolated later
(hsaudit.experiments.annamalai.construction.pld_table)."""

from hsaudit.experiments.annamalai.construction import pld_table
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import write_csv_atomic

log = script_logging(snakemake)
table = pld_table(**snakemake.params.job)
write_csv_atomic(table, snakemake.output[0])
log.info("wrote %d rows", len(table))
