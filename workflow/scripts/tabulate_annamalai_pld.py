"""Snakemake adapter: PLD calibration table ε(σ), δ(ε′) of one (q, T) (computed once, interpolated later)."""

from hsaudit.experiments.annamalai.construction import pld_table
from hsaudit.util.io import write_csv_atomic
from hsaudit.pipeline.logs import script_logging

log = script_logging(snakemake)
p = snakemake.params
t = p.table
table = pld_table(
    steps=int(p.setting["steps"]),
    sampling_rate=float(p.setting["sampling_rate"]),
    delta=p.delta,
    epsilon_range=(float(t["epsilon_min"]), float(t["epsilon_max"])),
    n_sigmas=int(t["n_sigmas"]),
    value_discretization_interval=float(t["value_discretization_interval"]),
)
write_csv_atomic(table, snakemake.output[0])
log.info("wrote %d rows", len(table))
