"""Snakemake adapter: the canary-free, noise-free run of a one-run audit, whose scores s⁰ the ``noiseless`` score
subtracts (hsaudit.experiments.one_run.train.train_one_run_shard with σ = 0 and every bit 0).

The one-run trainer itself, on one model: the same θ0, batches, clipping, η and k as the audited models, without
noise and without canaries, so the run differs from theirs only by what the audit measures (the canaries) and by the
noise. It needs nothing the adversary lacks (θ0, batches, data, hyper-parameters are known; none depends on a bit),
and one run serves every model (they share θ0 and the batches): T model-steps. Saved as a one-model shard.
"""

import dataclasses

import numpy as np
import torch

from hsaudit.data.datasets import load_dataset
from hsaudit.engine.dpsgd import DPSGDConfig, load_setup
from hsaudit.engine.models import model_spec
from hsaudit.experiments.one_run.train import load_canaries, save_one_run_shard, train_one_run_shard
from hsaudit.pipeline.logs import script_logging

log = script_logging(snakemake)
torch.set_num_threads(snakemake.threads)
setup_spec = snakemake.params.spec["setup"]
canaries = load_canaries(snakemake.input.canaries)
bits = np.zeros((1, canaries.m), dtype=np.int64)
data = load_dataset(snakemake.input.data)
scores = train_one_run_shard(
    spec=model_spec(setup_spec["model"], **setup_spec["model_kwargs"]),
    X=data.X,
    y=data.y,
    setup=load_setup(snakemake.input.setup),
    config=dataclasses.replace(DPSGDConfig(**setup_spec["dpsgd"]), noise_multiplier=0.0),
    canaries=canaries,
    bits=bits,
    noise_key=0,  # unused: sigma = 0 draws no noise
    device=snakemake.params.device,
)
save_one_run_shard(snakemake.output.noiseless, bits=bits, scores=scores, coordinates=canaries.coordinates)
log.info("%s one-run %s: noiseless canary-free run, s0 in [%.4g, %.4g] over %d coordinates",
         snakemake.wildcards.dataset, snakemake.wildcards.key, scores.min(), scores.max(), canaries.m)
