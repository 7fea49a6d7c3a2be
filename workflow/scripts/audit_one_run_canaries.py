"""Snakemake adapter: one dataset's one-run and population points (hsaudit.experiments.one_run.audit.one_run_table)."""

import pandas as pd

from hsaudit.experiments.one_run.audit import load_one_run_shards, one_run_table, summary_lines
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import write_csv_atomic

log = script_logging(snakemake)
params = snakemake.params
bits, scores = load_one_run_shards(snakemake.input.shards)
# s0 [m]: the canary-free, noise-free run's scores (simulate_one_run_noiseless), when the noiseless score is audited.
noiseless = load_one_run_shards(list(snakemake.input.noiseless))[1][0] if snakemake.input.noiseless else None
# [K, m]: the canary-free reference models' scores (train_one_run_reference), when the reference score is audited.
reference = load_one_run_shards(list(snakemake.input.reference))[1] if snakemake.input.reference else None
# (bits, scores) [K, m]: the reference models with their own bits (train_one_run_reference, kind bits), when the
# calibrated score is audited; their bits are theirs, never the audited models'.
calibration = load_one_run_shards(list(snakemake.input.calibration)) if snakemake.input.calibration else None
table = one_run_table(
    dataset=snakemake.wildcards.dataset,
    bits=bits,
    scores=scores,
    population=[pd.read_csv(path) for path in snakemake.input.population],
    models=params.models,
    steps=params.steps,
    guess_fractions=params.guess_fractions,
    delta=params.delta,
    confidence=params.confidence,
    coordinates=params.coordinates,
    guess_counts=params.guess_counts,
    ceiling=params.ceiling,
    seed=params.seed,
    score_names=params.scores,
    noiseless=noiseless,
    reference=reference,
    shift=params.shift,
    calibration=calibration,
)
write_csv_atomic(table, snakemake.output.table)
for line in summary_lines(table):
    log.info("%s", line)
