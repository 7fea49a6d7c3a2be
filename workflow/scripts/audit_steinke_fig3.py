"""Snakemake adapter: Steinke et al. fig3, one sampling rate (σ per T, simulation, σ̂ and GDP audits, heuristic)."""

from hsaudit.util.io import write_csv_atomic
from hsaudit.experiments.steinke.simulations import fig3_table
from hsaudit.pipeline.logs import script_logging

log = script_logging(snakemake)
p = snakemake.params
table = fig3_table(
    sampling_rates=[float(p.sampling_rate)],
    steps=list(p.fig3["steps"]),
    target_epsilon=p.fig3["target_epsilon"],
    delta=p.fig3["delta"],
    runs=int(p.fig3["runs_per_world"]),
    confidence=p.confidence,
    seed=p.seed,
    rule=p.rule,
    sigma_families=list(p.fig3["sigma_families"]),
    population=bool(p.fig3["population"]),
)
write_csv_atomic(table, snakemake.output[0])
log.info("wrote %d rows", len(table))
