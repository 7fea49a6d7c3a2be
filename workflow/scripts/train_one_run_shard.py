"""Snakemake adapter: train one shard of one-run models, each with its m gradient canaries
(hsaudit.experiments.one_run.train.train_one_run_shard).

Model ``index·size + i`` draws its bits (canary_bits) and its noise (one_run_noise_key) by that global index, so a
shard never depends on the largest M.
"""

import torch

from hsaudit.data.datasets import load_dataset
from hsaudit.engine.dpsgd import DPSGDConfig, load_setup
from hsaudit.engine.models import spec_of
from hsaudit.experiments.one_run.train import (
    canary_bits,
    load_canaries,
    one_run_noise_key,
    save_one_run_shard,
    train_one_run_shard,
)
from hsaudit.pipeline.logs import script_logging

log = script_logging(snakemake)
torch.set_num_threads(snakemake.threads)
spec = snakemake.params.spec
setup_spec = spec["setup"]
dataset, key = snakemake.wildcards.dataset, snakemake.wildcards.key
size, index = int(snakemake.wildcards.size), int(snakemake.wildcards.index)
seed = snakemake.params.master_seed
first = index * size
canaries = load_canaries(snakemake.input.canaries)
bits = canary_bits(seed=seed, key=key, models=range(first, first + size), canaries=canaries.m, dataset=dataset)
data = load_dataset(snakemake.input.data)
scores = train_one_run_shard(
    spec=spec_of(setup_spec),
    X=data.X,
    y=data.y,
    setup=load_setup(snakemake.input.setup),
    config=DPSGDConfig(**setup_spec["dpsgd"]),
    canaries=canaries,
    bits=bits,
    noise_key=one_run_noise_key(seed=seed, key=key, dataset=dataset),
    first_model=first,
    device=snakemake.params.device,
)
save_one_run_shard(snakemake.output.shard, bits=bits, scores=scores, coordinates=canaries.coordinates)
log.info("%s one-run %s shard s%d/%d: %d models x %d canaries", dataset, key, size, index, size, canaries.m)
