"""Snakemake adapter: train one shard of an audit's population and record its observations
(hsaudit.experiments.cebere.train.shards.train_shard).

The shard's membership bits are an exact half split seeded by (the audit's stream key, shard size, shard index);
model ``index·size + i`` of the audit draws the noise (and, with θ0 unknown, the initialisation) of that global
index (hsaudit.experiments.cebere.train.shards.shard_bits / noise_key / theta0_key), so a shard never depends on R.
Audits that differ only in their θ0 reading share one stream key (params.stream, from the plan), hence bits, noise
and per-run θ0 draws.
"""

import torch

from hsaudit.data.datasets import load_dataset
from hsaudit.engine.dpsgd import DPSGDConfig, load_setup, population_theta0
from hsaudit.engine.models import spec_of
from hsaudit.experiments.cebere.train.adversaries import load_crafted
from hsaudit.experiments.cebere.train.shards import (
    insertion_steps,
    noise_key,
    per_run_scheme,
    save_shard,
    shard_bits,
    theta0_key,
    theta0_known,
    theta0_shared,
    train_shard,
)
from hsaudit.pipeline.logs import script_logging

log = script_logging(snakemake)
torch.set_num_threads(snakemake.threads)
params = snakemake.params
spec, stream, seed = params.spec, params.stream, params.master_seed
dataset = snakemake.wildcards.dataset
setup_spec = spec["setup"]
arch = spec_of(setup_spec)
key, size, index = snakemake.wildcards.audit, int(snakemake.wildcards.size), int(snakemake.wildcards.index)
bits = shard_bits(seed=seed, key=stream, shard_size=size, index=index, dataset=dataset)
data = load_dataset(snakemake.input.data)
first = index * size
reading = spec.get("theta0", "known")
theta0 = None
if not theta0_shared(reading):
    theta0 = population_theta0(
        arch,
        scheme=per_run_scheme(setup_spec.get("theta0_init", "default")),
        key=theta0_key(seed=seed, key=stream, dataset=dataset),
        models=range(first, first + size),
    )
obs = train_shard(
    spec=arch,
    X=data.X,
    y=data.y,
    setup=load_setup(snakemake.input.setup),
    config=DPSGDConfig(**setup_spec["dpsgd"]),
    crafted=load_crafted(snakemake.input.crafted),
    bits=bits,
    noise_key=noise_key(seed=seed, key=stream, dataset=dataset),
    first_model=first,
    theta0=theta0,
    known_theta0=theta0_known(reading),
    canary_norms=bool(spec.get("canary_norms")),
    device=params.device,
    progress=False,
)
steps = insertion_steps(steps=setup_spec["dpsgd"]["steps"], period=setup_spec["dpsgd"]["period"])
save_shard(snakemake.output.shard, bits=bits, scores=obs.scores, steps=steps, grad_norms=obs.grad_norms)
log.info("%s audit %s shard s%d/%d: %d models, %d recorded steps", dataset, key, size, index, bits.size, steps.size)
