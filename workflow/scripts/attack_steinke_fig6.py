"""Snakemake adapter: Steinke et al. fig6, one T (malicious-dataset attack of App. C, GDP audit)."""

from hsaudit.util.io import write_csv_atomic
from hsaudit.experiments.steinke.simulations import MaliciousConstants, fig6_table
from hsaudit.pipeline.logs import script_logging

log = script_logging(snakemake)
p = snakemake.params
f = p.fig6
constants = MaliciousConstants(
    batch_size=float(f["batch_size"]),
    big_val=float(f["big_val"]),
    t_past=float(f["t_past"]),
    t_last=None if f["t_last"] is None else float(f["t_last"]),
)
table = fig6_table(
    steps=[int(snakemake.wildcards.steps)],
    sampling_rate=f["sampling_rate"],
    noise_multiplier=f["noise_multiplier"],
    runs=int(f["runs_per_world"]),
    delta=f["delta"],
    confidence=p.confidence,
    constants=constants,
    seed=p.seed,
    rule=p.rule,
    value_store=bool(f["compare_value_store"]),
)
if (table["clipped_fraction"] > 0).any() or (table["flipped_fraction"] > 0).any():
    log.warning(
        "the constants do not work: clipped %s, flipped %s",
        table["clipped_fraction"].max(),
        table["flipped_fraction"].max(),
    )
write_csv_atomic(table, snakemake.output[0])
log.info("wrote %d rows", len(table))
