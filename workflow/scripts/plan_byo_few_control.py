"""Snakemake adapter: the positive control of a few-runs audit — its design (σ/power_factor in the audit setting,
else every included canary repeated k times) and its worst case — into results/byo/{name}/control.json, which the
control's training jobs and the audit read (hsaudit.experiments.byo.api.control_design). The audit's own code is
not imported: an edit of the pooled bounds reruns the audit, not the control's trainings."""

import json

from hsaudit.experiments.byo.api import control_design
from hsaudit.experiments.byo.audit import AuditOptions
from hsaudit.experiments.byo.train.families import FewRunsDesign, load_few
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import write_text_atomic

log = script_logging(snakemake)
design, loaded = load_few(FewRunsDesign.from_dict(snakemake.params.few))
twin, worst = control_design(design, loaded.training.claim, loaded.n, AuditOptions.from_dict(snakemake.params.options))
log.info("%s: control with %d copies at σ/%g, worst case ε = %.4g", design.entry, twin.copies, twin.noise_factor, worst)
payload = {"design": twin.to_dict(), "epsilon_worst": worst}
write_text_atomic(snakemake.output.control, json.dumps(payload, indent=2) + "\n")
