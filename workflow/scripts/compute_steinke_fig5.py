"""Snakemake adapter: Steinke et al. fig5, one panel (σ per q so one step is (ε₁, δ)-DP)."""

from hsaudit.util.io import write_csv_atomic
from hsaudit.experiments.steinke.simulations import Rounding, fig5_table
from hsaudit.pipeline.logs import script_logging

log = script_logging(snakemake)
p = snakemake.params
f = p.fig5
table = fig5_table(
    one_step_epsilons=[float(p.one_step_epsilon)],
    sampling_rates=list(f["sampling_rates"]),
    steps=list(f["steps"]),
    alpha=f["alpha"],
    delta=f["delta"],
    rounding=Rounding(**dict(f["rounding"])),
    exact_max_steps=int(f["exact_max_steps"]),
)
write_csv_atomic(table, snakemake.output[0])
log.info("wrote %d rows", len(table))
