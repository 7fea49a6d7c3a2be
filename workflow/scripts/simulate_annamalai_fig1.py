"""Snakemake adapter: Annamalai fig1 table (observed FPR/FNR, PLD curve, linear-loss curve per setting): the
construction simulated per setting (hsaudit.experiments.annamalai.construction.setting_statistics), its rates and
curves tabulated (hsaudit.experiments.annamalai.audit.fig1_table)."""

from hsaudit.experiments.annamalai import audit, construction
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import write_csv_atomic

log = script_logging(snakemake)
job = snakemake.params.job
table = audit.fig1_table(construction.setting_statistics(**job["simulation"]), **job["audit"])
write_csv_atomic(table, snakemake.output[0])
log.info("wrote %d rows", len(table))
