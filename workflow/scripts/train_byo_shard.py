"""Snakemake adapter: train and score one shard of a user's training (the design, the canary and the check from
check_byo_entry) into results/byo/{name}/shards/{shard}.csv, or of its positive control (the design claim.json
holds: the canary repeated k times, or the audit setting at σ/f) into results/byo/{name}/control/{shard}.csv (hsaudit.experiments.byo.train.harness)."""

import json
from dataclasses import replace

import numpy as np
import pandas as pd
import torch

from hsaudit.engine.canaries import canary_from_arrays
from hsaudit.experiments.byo.train.harness import Probe, prepare, train_shard
from hsaudit.experiments.byo.values import Design
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import write_csv_atomic

log = script_logging(snakemake)
torch.set_num_threads(snakemake.threads)
with open(snakemake.input.check) as fh:  # the design the check gave or chose (canary auto)
    design = Design.from_dict(json.load(fh)["design"])
if snakemake.wildcards.part == "control":  # the control's design, as assess_byo_claim planned it, of that design
    with open(snakemake.input.claim) as fh:
        twin = Design.from_dict(json.load(fh)["control"]["design"])
    design = replace(twin, canary=design.canary, background=design.background)
with open(snakemake.input.probe) as fh:
    found = Probe(**json.load(fh))
with np.load(snakemake.input.canary) as f:
    canary = canary_from_arrays({k: f[k] for k in f.files})
columns = train_shard(prepare(design, found=found, canary=canary), int(snakemake.wildcards.shard), progress=True)
write_csv_atomic(pd.DataFrame(columns), snakemake.output.scores)
log.info("%s %s: %d models, %.3g s of the user's training per model", snakemake.wildcards.part, snakemake.wildcards.shard,
         len(columns["model"]), float(np.median(columns["train_seconds"])))  # fmt: skip
