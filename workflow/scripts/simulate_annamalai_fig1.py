"""Snakemake adapter: Annamalai fig1 table (observed FPR/FNR, PLD curve, linear-loss curve per setting;
hsaudit.experiments.annamalai.audit.fig1_table)."""

from hsaudit.experiments.annamalai.audit import fig1_table
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import write_csv_atomic

log = script_logging(snakemake)
table = fig1_table(**snakemake.params.job)
write_csv_atomic(table, snakemake.output[0])
log.info("wrote %d rows", len(table))
