"""Snakemake adapter: Steinke et al. fig2's audit table (σ̂ and GDP audits, heuristic, standard per T) from the shards."""

from hsaudit.experiments.steinke.trained_audit import fig2_table, load_shards
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import write_csv_atomic

log = script_logging(snakemake)
p = snakemake.params
shards = load_shards(snakemake.input.shards)
table = fig2_table(
    shards,
    steps=list(p.steps),
    noise_multiplier=float(p.noise_multiplier),
    delta=float(p.delta),
    confidence=float(p.confidence),
    mode=p.mode,
    seed=int(p.seed),
    model=p.model,
    background=p.background,
    data_source=str(shards[0]["data_source"]),
    value_discretization_interval=float(p.value_discretization_interval),
)
write_csv_atomic(table, snakemake.output.table)
log.info("wrote %d rows", len(table))
