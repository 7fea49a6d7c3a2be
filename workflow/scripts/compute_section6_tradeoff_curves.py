"""Snakemake adapter: fig6b data, trade-off curves of A_S^{h*} at one σ and step for every B."""

import pandas as pd

from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import write_csv_atomic
from hsaudit.experiments.section6.records import tradeoff_records

log = script_logging(snakemake)
p = snakemake.params
frame = pd.DataFrame(
    tradeoff_records(
        sigma=p.sigma,
        step=p.step,
        batch_sizes=p.batch_sizes,
        steps=p.steps,
        clip_norm=p.clip_norm,
        switch_point=p.switch_point,
        rule=p.rule,
        runs_per_world=p.runs_per_world,
        seed=p.seed,
        delta=p.delta,
        confidence=p.confidence,
        max_points=p.max_points,
        grid=dict(p.grid),
    )
)
write_csv_atomic(frame, snakemake.output[0])
