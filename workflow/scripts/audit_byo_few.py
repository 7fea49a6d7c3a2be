"""Snakemake adapter: the few-runs audit of a user's training — both one-run bounds pooled over its trainings' scores,
the control's power (or the verdict that needed no training: the claim's, or the check's reads of the data against
the claim's sampling) — into results/byo/{name}/report.json, report.md, scores.csv, control.csv and fig.pdf
(+ fig.csv), the files `hsaudit audit-training --canaries M` writes (hsaudit.experiments.byo.few_runs,
hsaudit.experiments.byo.figures)."""

import dataclasses
import json

import pandas as pd

from hsaudit.experiments.byo.audit import AuditOptions
from hsaudit.experiments.byo.few_runs import audit_tables, before_training, check_reads, markdown_few
from hsaudit.experiments.byo.figures import FIGURES
from hsaudit.experiments.byo.train.families import TABLE_COLUMNS, FewRunsDesign
from hsaudit.experiments.byo.values import Claim
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import write_csv_atomic, write_text_atomic

log = script_logging(snakemake)
with open(snakemake.input.claim) as fh:
    assessed = json.load(fh)
details = dict(snakemake.params.details)
empty = pd.DataFrame(columns=list(TABLE_COLUMNS))
scores, control_scores = empty, empty
design = FewRunsDesign.from_dict(snakemake.params.few)
claim = Claim.from_mapping(assessed["claim"])
options = AuditOptions.from_dict(snakemake.params.options)
use = None
if "probe" in snakemake.input.keys():  # the check ran: its reads of the data against the claim's sampling
    with open(snakemake.input.probe) as fh:
        use, reads = check_reads(json.load(fh), claim, design.setting is not None)
    details.update(reads)
if assessed["early"] is not None:
    payload = assessed["early"]
    payload["details"].update(details)
elif use is not None:  # the check's verdict before any training: none was trained
    payload = before_training(claim, assessed["n"], options, canaries=design.canaries, trainings=design.trainings,
                              fractions=snakemake.params.guesses, data_use=use, details=details).to_dict()  # fmt: skip
else:
    parts = {p: [f for f in snakemake.input.trainings if f.split("/")[-2] == p] for p in ("trainings", "control")}
    scores = pd.concat([pd.read_csv(p) for p in parts["trainings"]], ignore_index=True)
    details["score baseline"] = str(scores["baseline"].iloc[0])
    control = None
    if parts["control"]:
        control_scores = pd.concat([pd.read_csv(p) for p in parts["control"]], ignore_index=True)
        with open(snakemake.input.control) as fh:
            planned = json.load(fh)
        control = (control_scores, FewRunsDesign.from_dict(planned["design"]), planned["epsilon_worst"])
    found = audit_tables(scores, claim, assessed["n"], options,
                         fractions=snakemake.params.guesses, details=details, in_setting=design.setting is not None,
                         control=control)  # fmt: skip
    trained = len(parts["trainings"]) + len(parts["control"])  # every training runs the claim's steps
    payload = dataclasses.replace(found, model_steps=trained * int(claim.steps)).to_dict()
write_csv_atomic(scores, snakemake.output.scores)
write_csv_atomic(control_scores, snakemake.output.control)
write_text_atomic(snakemake.output.report, json.dumps(payload, indent=2) + "\n")
write_text_atomic(snakemake.output.markdown, markdown_few(payload))
FIGURES["few"](scores, pdf=snakemake.output.pdf, csv=snakemake.output.csv,
               facts={"report": payload, "scale": snakemake.params.scale,
                      "code_version": snakemake.params.code_version})
log.info("%s: %s", snakemake.wildcards.name, payload["reason"])
