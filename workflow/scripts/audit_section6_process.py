"""Snakemake adapter: audit the §6 process at every step for one (rule, σ), all B and repetitions."""

import numpy as np
import pandas as pd

from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import write_csv_atomic
from hsaudit.audit.rules import parse_rule
from hsaudit.audit.two_sample import gdp_tables
from hsaudit.experiments.section6.records import audit_records

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
    audit_rule=parse_rule(p.audit_rule),
    tables=tables,
    log=log.info,
)
write_csv_atomic(pd.DataFrame(records), snakemake.output[0])
