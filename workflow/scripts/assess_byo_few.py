"""Snakemake adapter (a checkpoint): load a user's training and decide what a few-runs audit can say without
training — an accounting bug, or K·M canaries too few to exceed the claim — into results/byo/{name}/claim.json
(hsaudit.experiments.byo.few_runs.before_training)."""

import json

from hsaudit.experiments.byo.audit import AuditOptions
from hsaudit.experiments.byo.few_runs import before_training
from hsaudit.experiments.byo.train.families import FewRunsDesign, load_few
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import write_text_atomic

log = script_logging(snakemake)
design, loaded = load_few(FewRunsDesign.from_dict(snakemake.params.few))
options = AuditOptions.from_dict(snakemake.params.options)
claim, n = loaded.training.claim, loaded.n
early = before_training(claim, n, options, canaries=design.canaries, trainings=design.trainings,
                        fractions=snakemake.params.guesses)  # fmt: skip
log.info("%s: claim %s on %d examples; %s", design.entry, claim, n, early.verdict if early else "the trainings decide")
payload = {"claim": claim.to_dict(), "n": n, "early": None if early is None else early.to_dict()}
write_text_atomic(snakemake.output.claim, json.dumps(payload, indent=2) + "\n")
