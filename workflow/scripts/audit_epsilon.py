"""Snakemake adapter: audit every recorded step of one audit's scores (hsaudit.experiments.cebere.audit.audit_table)."""

import pandas as pd

from hsaudit.audit.rules import parse_rule
from hsaudit.experiments.cebere.audit import audit_table
from hsaudit.util.io import write_csv_atomic
from hsaudit.pipeline.logs import script_logging

log = script_logging(snakemake)
params = snakemake.params
table = audit_table(
    pd.read_parquet(snakemake.input.scores),
    delta=params.delta,
    confidence=params.confidence,
    rule=parse_rule(params.rule),
    valid_rule=parse_rule(params.valid_rule),
    noise_multiplier=params.noise_multiplier,
    period=params.period,
    seed=params.seed,
)
write_csv_atomic(table, snakemake.output.table)
last = table.iloc[-1]
log.info("step %d: eps_hat %.3f (mu %.3f, %s), valid eps_hat %.3f (%s), upper %.3f", last["step"], last["epsilon"], last["mu"], last["threshold_rule"], last["epsilon_valid"], last["valid_threshold_rule"], last["epsilon_upper"])
