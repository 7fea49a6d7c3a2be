"""Snakemake adapter: draw θ0 and the fixed minibatch schedule of one setup (hsaudit.engine.dpsgd.make_setup), and
record the setup's parameters beside it (params.json)."""

import json

import torch

from hsaudit.data.datasets import load_dataset
from hsaudit.engine.dpsgd import DPSGDConfig, make_setup, save_setup
from hsaudit.engine.models import spec_of
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import write_text_atomic

log = script_logging(snakemake)
torch.set_num_threads(snakemake.threads)
spec = snakemake.params.spec
data = load_dataset(snakemake.input.data)
setup = make_setup(
    spec=spec_of(spec),
    n_train=data.n,
    config=DPSGDConfig(**spec["dpsgd"]),
    seed=snakemake.params.seed,
    theta0_init=spec.get("theta0_init", "default"),
)
save_setup(setup, snakemake.output.setup)
record = {"key": snakemake.wildcards.setup, "derived_seed": snakemake.params.seed, **spec}
write_text_atomic(snakemake.output.params_json, json.dumps(record, indent=2, sort_keys=True, default=str) + "\n")
log.info("setup %s: %d parameters, batches %s", snakemake.wildcards.setup, setup.theta0.size, tuple(setup.batches.shape))
