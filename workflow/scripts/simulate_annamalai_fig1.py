"""Snakemake adapter: Annamalai fig1 table (observed FPR/FNR, PLD curve, linear-loss curve per setting)."""

from hsaudit.experiments.annamalai.construction import fig1_table
from hsaudit.util.io import write_csv_atomic
from hsaudit.pipeline.logs import script_logging

log = script_logging(snakemake)
p = snakemake.params
table = fig1_table(
    [dict(s) for s in p.settings],
    runs=int(p.runs),
    delta=p.delta,
    seed=p.seed,
    dataset_size=float(p.dataset_size),
    update=p.update_rule,
    base_rule=p.encoding["base_rule"],
    base_sigmas=float(p.encoding["base_sigmas"]),
    value_discretization_interval=float(p.value_discretization_interval),
)
write_csv_atomic(table, snakemake.output[0])
log.info("wrote %d rows", len(table))
