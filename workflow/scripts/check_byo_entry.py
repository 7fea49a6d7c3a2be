"""Snakemake adapter: check a user's training (deterministic in its seed, finite loss), choose its design when the
canary is auto (a pilot of each candidate's control, streams of its own) and build the audit's canary into
results/byo/{name}/probe.json + canary.npz, which every shard then reads, and check.json: the design (given or chosen,
which the shards train), how it was chosen, whether a training that gives the same model for every seed is
changed by the canary (a violation), and the data-use finding (a checkpoint: as in the CLI, the check's reads of
the data contradicting the claim's sampling are a violation that trains no shard, and no pilot)
(hsaudit.experiments.byo)."""

import dataclasses
import json

import torch

from hsaudit.engine.canaries import canary_arrays
from hsaudit.experiments.byo.train.harness import canary_changes_model, checked, data_use, load, prepare
from hsaudit.experiments.byo.train.pilot import choose, pilot_details, twin
from hsaudit.experiments.byo.values import Design
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import atomic_savez, write_text_atomic

log = script_logging(snakemake)
torch.set_num_threads(snakemake.threads)
design = Design.from_dict(snakemake.params.design)
loaded = load(design, own=True)
prepared = checked(design, loaded)  # a chosen design: its input-canary candidate, whose reads decide before the pilot
use = data_use(prepared)
pilot = []
if use is not None:
    log.info("data use: %s; no pilot, no shard", use)
elif design.chosen:  # each candidate's control as assess_byo_claim planned the audit's
    with open(snakemake.input.claim) as fh:
        assessed = json.load(fh)
    if assessed["early"] is None:  # (too few runs: no shard to train, no design to choose)
        planned = assessed["control"]
        design, pilot = choose(design, lambda c: twin(c, planned["copies"], planned["noise_factor"]), loaded=loaded)
        log.info("design chosen by the pilot: %s / %s", design.canary, design.background)
        prepared = prepare(design, loaded)
log.info("%s: %d parameters, seed changes the model: %s; canary: %s", design.entry, prepared.probe.parameters,
         prepared.probe.seed_sensitive, prepared.canary.origin)  # fmt: skip
atomic_savez(snakemake.output.canary, canary_arrays(prepared.canary))
write_text_atomic(snakemake.output.probe, json.dumps(dataclasses.asdict(prepared.probe), indent=2) + "\n")
same = use is None and not prepared.probe.seed_sensitive and canary_changes_model(prepared)
check = {"same_model": same, "design": prepared.design.to_dict(),
         "design details": pilot_details(prepared.design, pilot), "data use": use}  # fmt: skip
write_text_atomic(snakemake.output.check, json.dumps(check, indent=2) + "\n")
