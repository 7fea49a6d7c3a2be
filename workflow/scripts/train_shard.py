"""Snakemake adapter: train one shard of an audit's population and record its scores (hsaudit.train.train_shard).

The shard's membership bits are an exact half split seeded by (audit key, shard size, shard index); its noise
seed likewise (hsaudit.figures.housing_plan.shard_bits / shard_seed), so a shard never depends on R.
"""

import logging

import torch

from hsaudit.adversaries import load_crafted
from hsaudit.data import load_dataset
from hsaudit.figures.housing_plan import insertion_steps, save_shard, shard_bits, shard_seed
from hsaudit.train import DPSGDConfig, load_setup, train_shard

# Our messages at INFO; other libraries (e.g. fontTools while writing PDFs) only from WARNING.
logging.basicConfig(filename=snakemake.log[0], filemode="w", level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
log = logging.getLogger("hsaudit.workflow")
log.setLevel(logging.INFO)
logging.captureWarnings(True)
torch.set_num_threads(snakemake.threads)
spec = snakemake.params.spec
setup_spec = spec["setup"]
key, size, index = snakemake.wildcards.audit, int(snakemake.wildcards.size), int(snakemake.wildcards.index)
seed = snakemake.params.master_seed
bits = shard_bits(seed=seed, key=key, shard_size=size, index=index)
data = load_dataset(snakemake.input.data)
scores = train_shard(
    model=setup_spec["model"],
    model_kwargs=setup_spec["model_kwargs"],
    X=data.X,
    y=data.y,
    setup=load_setup(snakemake.input.setup),
    config=DPSGDConfig(**setup_spec["dpsgd"]),
    crafted=load_crafted(snakemake.input.crafted),
    bits=bits,
    seed=shard_seed(seed=seed, key=key, shard_size=size, index=index),
    device=None if snakemake.params.device == "auto" else snakemake.params.device,
    progress=False,
)
steps = insertion_steps(steps=setup_spec["dpsgd"]["steps"], period=setup_spec["dpsgd"]["period"])
save_shard(snakemake.output.shard, bits=bits, scores=scores, steps=steps)
log.info("audit %s shard s%d/%d: %d models, %d recorded steps", key, size, index, bits.size, steps.size)
