"""Snakemake adapter: check a user's training for a few-runs audit (deterministic in its seed, finite loss) and build
its M canaries into results/byo/{name}/probe.json + family.npz, which every training job of the audit and of its
control reads (hsaudit.experiments.byo.train.families.check_few)."""

import dataclasses
import json

import torch

from hsaudit.experiments.byo.train.families import FewRunsDesign, check_few, load_few
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import atomic_savez, write_text_atomic

log = script_logging(snakemake)
torch.set_num_threads(snakemake.threads)
design, loaded = load_few(FewRunsDesign.from_dict(snakemake.params.few))
checked = check_few(design, loaded)
log.info("%s: %d parameters; %d canaries: %s", design.entry, checked.probe.parameters, len(checked.family),
         checked.family.origin)  # fmt: skip
atomic_savez(snakemake.output.family, checked.arrays())
write_text_atomic(snakemake.output.probe, json.dumps(dataclasses.asdict(checked.probe), indent=2) + "\n")
