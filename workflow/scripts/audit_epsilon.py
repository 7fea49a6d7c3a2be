"""Snakemake adapter: audit every recorded step of one audit's scores (hsaudit.figures.housing.audit_table)."""

import logging

import pandas as pd

from hsaudit.figures.housing import audit_table
from hsaudit.plotting import write_csv_atomic

logging.basicConfig(filename=snakemake.log[0], filemode="w", level=logging.INFO, format="%(asctime)s %(message)s")
logging.captureWarnings(True)
params = snakemake.params
table = audit_table(
    pd.read_parquet(snakemake.input.scores),
    delta=params.delta,
    confidence=params.confidence,
    mode=params.mode,
    noise_multiplier=params.noise_multiplier,
    period=params.period,
)
write_csv_atomic(table, snakemake.output.table)
last = table.iloc[-1]
logging.info("step %d: eps_hat %.3f (mu %.3f), upper %.3f, mode %s", last["step"], last["epsilon"], last["mu"], last["epsilon_upper"], last["mode"])
