"""Snakemake adapter: the reference runs of a one-run audit's corrected scores, trained beside the audited models
(hsaudit.experiments.one_run.train.train_one_run_shard with bits that are not the audited ones).

- ``noiseless`` (rule simulate_one_run_noiseless): one model with σ = 0, whose scores s⁰ the ``noiseless`` score
  subtracts: the same θ0, batches, clipping, η and k as the audited models, without noise and without canaries, so
  it differs from them only by what the audit measures (the canaries) and by the noise. T model-steps.
- ``reference`` (rule train_one_run_reference): K models with the audited models' σ and noise of their own
  (reference_noise_key), whose per-coordinate mean and spread the ``reference`` score reads. K·T model-steps.
- ``calibration`` (rule train_one_run_reference, kind ``bits``): K models with the audited σ, noise of their own
  and canaries with their own bits (reference_bits), whose per-coordinate laws with and without the canary the
  ``calibrated`` score reads. K·T model-steps.

None needs anything the adversary lacks (θ0, batches, data and hyper-parameters are known; no audited bit enters),
and each serves every audited model (they share θ0 and the batches). Saved as a shard with its bits.
"""

import dataclasses

import numpy as np
import torch

from hsaudit.data.datasets import load_dataset
from hsaudit.engine.dpsgd import DPSGDConfig, load_setup
from hsaudit.engine.models import spec_of
from hsaudit.experiments.one_run.train import (
    load_canaries,
    reference_bits,
    reference_noise_key,
    save_one_run_shard,
    train_one_run_shard,
)
from hsaudit.pipeline.logs import script_logging

log = script_logging(snakemake)
torch.set_num_threads(snakemake.threads)
run, models = snakemake.params.run, int(snakemake.params.models)
setup_spec = snakemake.params.spec["setup"]
dataset, key = snakemake.wildcards.dataset, snakemake.wildcards.key
config = DPSGDConfig(**setup_spec["dpsgd"])
if run == "noiseless":
    config, noise_key = dataclasses.replace(config, noise_multiplier=0.0), 0  # σ = 0 draws no noise
elif run in ("reference", "calibration"):
    noise_key = reference_noise_key(seed=snakemake.params.master_seed, key=key, dataset=dataset,
                                    own_bits=run == "calibration")
else:
    raise ValueError(f"run must be 'noiseless', 'reference' or 'calibration', got {run!r}")
canaries = load_canaries(snakemake.input.canaries)
bits = (reference_bits(seed=snakemake.params.master_seed, key=key, models=models, canaries=canaries.m, dataset=dataset)
        if run == "calibration" else np.zeros((models, canaries.m), dtype=np.int64))
data = load_dataset(snakemake.input.data)
scores = train_one_run_shard(
    spec=spec_of(setup_spec),
    X=data.X,
    y=data.y,
    setup=load_setup(snakemake.input.setup),
    config=config,
    canaries=canaries,
    bits=bits,
    noise_key=noise_key,
    device=snakemake.params.device,
)
save_one_run_shard(snakemake.output.shard, bits=bits, scores=scores, coordinates=canaries.coordinates)
log.info("%s one-run %s: %s run, %d model(s), scores in [%.4g, %.4g] over %d coordinates",
         dataset, key, run, models, scores.min(), scores.max(), canaries.m)
