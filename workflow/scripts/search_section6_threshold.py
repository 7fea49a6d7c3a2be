"""Snakemake adapter: the T = 2 threshold search of Appendix F for one (σ, B) (fig6c)."""

import numpy as np
import pandas as pd

from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import write_csv_atomic
from hsaudit.audit.rules import parse_rule
from hsaudit.audit.two_sample import gdp_tables
from hsaudit.experiments.section6.audit import alpha_grid
from hsaudit.experiments.section6.records import threshold_search

log = script_logging(snakemake)
p = snakemake.params
sigma = float(snakemake.wildcards.sigma)
batch = int(snakemake.wildcards.batch)
tables = None
if snakemake.input.cp_table:
    cp = np.load(snakemake.input.cp_table[0])
    tables = gdp_tables(p.runs_per_world, p.runs_per_world, confidence=p.confidence, delta=p.delta, cp0=cp)
records = threshold_search(
    sigma=sigma,
    batch_size=batch,
    steps=p.steps,
    clip_norm=p.clip_norm,
    rule=p.rule,
    alphas=alpha_grid(sigma=sigma, clip_norm=p.clip_norm, count=p.alphas),
    runs_per_world=p.runs_per_world,
    repetitions=p.repetitions,
    seed=p.seed,
    delta=p.delta,
    confidence=p.confidence,
    audit_rule=parse_rule(p.audit_rule),
    tables=tables,
    exact=dict(p.grid),
)
frame = pd.DataFrame(records).assign(
    sigma=sigma, batch_size=batch, rule=p.rule, steps=p.steps, clip_norm=p.clip_norm, delta=p.delta
)
write_csv_atomic(frame, snakemake.output[0])
