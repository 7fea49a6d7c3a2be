"""Snakemake adapter (a checkpoint): load a user's training and decide what needs no training — an accounting bug
or an audit too small to exceed the claim — and the positive control's copies into results/byo/{name}/claim.json
(hsaudit.experiments.byo)."""

import json

from hsaudit.experiments.byo.api import control_design
from hsaudit.experiments.byo.audit import AuditOptions, pre_training
from hsaudit.experiments.byo.train.harness import load
from hsaudit.experiments.byo.values import Design
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import write_text_atomic

log = script_logging(snakemake)
design = Design.from_dict(snakemake.params.design)
options = AuditOptions.from_dict(snakemake.params.options)
loaded = load(design)
early = pre_training(loaded.training.claim, loaded.n, options, runs=design.runs,
                     looks=2 if loaded.training.records else 1)
log.info("%s: claim %s on %d examples; %s", design.entry, loaded.training.claim, loaded.n,
         early.verdict if early else "the models decide")  # fmt: skip
twin, worst = control_design(design, loaded.training.claim, loaded.n, options)
control = {"design": twin.to_dict(), "copies": twin.copies, "noise_factor": twin.noise_factor, "epsilon_worst": worst}
payload = {"claim": loaded.training.claim.to_dict(), "n": loaded.n, "early": None if early is None else early.to_dict(),
           "control": control}  # fmt: skip
write_text_atomic(snakemake.output.claim, json.dumps(payload, indent=2) + "\n")
