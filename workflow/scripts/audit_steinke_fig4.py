"""Snakemake adapter: Steinke et al. fig4's audit table (σ̂ and GDP audits, heuristic, standard per T and background)
from the shards, via hsaudit.experiments.steinke.trained_audit.fig4_table."""

from hsaudit.experiments.steinke.trained_audit import fig4_table, load_shards, split_shards
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import write_csv_atomic

log = script_logging(snakemake)
p = snakemake.params
panels = dict(zip(p.panels, split_shards(load_shards(snakemake.input.shards), list(p.panels.values()))))
first = next(iter(panels.values()))[0]
table = fig4_table(
    panels,
    steps=list(p.steps),
    noise_multiplier=float(p.noise_multiplier),
    delta=float(p.delta),
    confidence=float(p.confidence),
    mode=p.mode,
    seed=int(p.seed),
    model=p.model,
    data_source=str(first["data_source"]),
    value_discretization_interval=float(p.value_discretization_interval),
)
write_csv_atomic(table, snakemake.output.table)
log.info("wrote %d rows", len(table))
