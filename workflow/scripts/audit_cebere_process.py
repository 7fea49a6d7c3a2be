"""Snakemake adapter: audit the §6 process at every step for one (rule, σ), all B and repetitions."""

import numpy as np
import pandas as pd

from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import write_csv_atomic
from hsaudit.experiments.cebere.section6 import audit_records, gdp_tables

log = script_logging(snakemake)
p = snakemake.params
tables = None
if snakemake.input.cp_table:
    cp = np.load(snakemake.input.cp_table[0])
    tables = gdp_tables(p.runs_per_world, p.runs_per_world, confidence=p.confidence, delta=p.delta, cp0=cp)
records = audit_records(
    rule=snakemake.wildcards.sign,
    sigma=float(snakemake.wildcards.sigma),
    batch_sizes=p.batch_sizes,
    steps=p.steps,
    clip_norm=p.clip_norm,
    switch_point=p.switch_point,
    runs_per_world=p.runs_per_world,
    repetitions=p.repetitions,
    seed=p.seed,
    delta=p.delta,
    confidence=p.confidence,
    mode=p.mode,
    selection_fraction=p.selection_fraction,
    tables=tables,
    log=log.info,
)
write_csv_atomic(pd.DataFrame(records), snakemake.output[0])
