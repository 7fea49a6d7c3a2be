"""Snakemake adapter: the m canary coordinates of a one-run audit (hsaudit.experiments.one_run.train.craft_canaries).

``least_moving`` ranks the coordinates by A_GC-S Noiseless-PS's simulation of training, Cebere et al.'s adversary
(hsaudit.experiments.cebere.train.adversaries.craft; deterministic: one simulation, no noise).
"""

import torch

from hsaudit.data.datasets import load_dataset
from hsaudit.engine.dpsgd import DPSGDConfig, load_setup
from hsaudit.engine.models import spec_of
from hsaudit.experiments.cebere.train.adversaries import craft, write_params_json
from hsaudit.experiments.one_run.train import craft_canaries, save_canaries
from hsaudit.pipeline.logs import script_logging

log = script_logging(snakemake)
torch.set_num_threads(snakemake.threads)
spec, seed = snakemake.params.spec, snakemake.params.seed
setup_spec = spec["setup"]
data = load_dataset(snakemake.input.data)
training = dict(
    spec=spec_of(setup_spec),
    X=data.X,
    y=data.y,
    setup=load_setup(snakemake.input.setup),
    config=DPSGDConfig(**setup_spec["dpsgd"]),
    seed=seed,
)
ranking = None
if spec["coordinates"] == "least_moving":
    ranking = craft("gc_s_noiseless_ps", **training, simulations=1, device=snakemake.params.device).ranking
canaries = craft_canaries(spec["coordinates"], canaries=spec["canaries"], ranking=ranking, **training)
save_canaries(canaries, snakemake.output.canaries)
write_params_json(spec, snakemake.output.params_json, key=snakemake.wildcards.key, derived_seed=seed)
log.info("one-run audit %s: %d canaries (%s), coordinates %s", snakemake.wildcards.key, canaries.m, canaries.rule,
         canaries.coordinates.tolist())
