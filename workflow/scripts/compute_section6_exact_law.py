"""Snakemake adapter: exact ε of the §6 process at every step, all (σ, B) of one rule (density propagation)."""

import pandas as pd

from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import write_csv_atomic
from hsaudit.experiments.section6.records import exact_records

log = script_logging(snakemake)
p = snakemake.params
frame = pd.DataFrame(
    exact_records(
        rule=snakemake.wildcards.sign,
        sigmas=p.sigmas,
        batch_sizes=p.batch_sizes,
        steps=p.steps,
        clip_norm=p.clip_norm,
        switch_point=p.switch_point,
        delta=p.delta,
        grid=dict(p.grid),
    )
)
log.info("largest grid mass lost: %.3g", frame["lost_mass"].max())
write_csv_atomic(frame, snakemake.output[0])
