"""Snakemake adapter: Steinke et al. Table 1's (q, T, σ) per row once N is known (σ calibrated to the row's heuristic
ε, hsaudit.experiments.steinke.audit.privacy_plan) -> privacy.json."""

import json

import numpy as np

from hsaudit.experiments.steinke.audit import privacy_plan
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import write_text_atomic

log = script_logging(snakemake)
p = snakemake.params
with np.load(snakemake.input.data) as f:
    n_train = int(len(f["train"]))
plan = privacy_plan(p.rows, n_train=n_train, epochs=float(p.epochs), delta=float(p.delta))
write_text_atomic(snakemake.output.privacy, json.dumps({"n_train": n_train, "rows": plan}, indent=1) + "\n")
for row in plan:
    log.info("B = %d: q = %.4g, T = %d, sigma = %.4g, heuristic %.3f", row["batch_size"], row["sampling_rate"],
             row["steps"], row["noise_multiplier"], row["heuristic"])
