"""Snakemake adapter: the report of an audit of a user's training from its shards' scores (or the verdict that needed
no training: the claim's, or the check's reads of the data) into results/byo/{name}/report.json + scores.csv (hsaudit.experiments.byo.audit)."""

import json

import pandas as pd

from hsaudit.experiments.byo.advice import advice
from hsaudit.experiments.byo.audit import AuditOptions, Control, pre_training, report
from hsaudit.experiments.byo.values import Claim, Design, reads_text
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import write_csv_atomic, write_text_atomic

log = script_logging(snakemake)
with open(snakemake.input.claim) as fh:
    assessed = json.load(fh)
details = dict(snakemake.params.details)
claim = Claim.from_mapping(assessed["claim"])
options = AuditOptions.from_dict(snakemake.params.options)
scores = pd.DataFrame(columns=["model", "member", "seed", "score", "train_seconds", "harness_seconds"])
early = assessed["early"]
if early is not None and early["verdict"] == "violation":
    payload = early
    payload["details"].update(details)
else:
    with open(snakemake.input.probe) as fh:
        found = json.load(fh)
    reads = ("uses", "own_uses", "own_claim", "use_trainings", "whole", "own_whole")  # the data-use check's
    details.update({f"check: {k}": v for k, v in found.items() if k not in reads})
    own = found.get("own_claim") and Claim.from_mapping(found["own_claim"])
    for key, uses, whole, of in (
        ("check", found.get("uses"), found.get("whole", ()), claim),
        ("own configuration", found.get("own_uses"), found.get("own_whole", ()), own),
    ):
        if uses is not None or whole or key == "check":
            details[f"reads of each row ({key})"] = reads_text(uses, whole, found.get("use_trainings", 2), of)
    with open(snakemake.input.check) as fh:
        check = json.load(fh)
    design = Design.from_dict(check["design"])  # given, or chosen by the check's pilot
    details.update({"canary": design.canary, "background": design.background, **check["design details"]})
    if check.get("data use") is not None:  # the check's verdict before any audit model: no shard was trained
        payload = pre_training(claim, assessed["n"], options, runs=design.runs, data_use=check["data use"]).to_dict()
        payload["details"].update(details)
    elif early is not None:  # too few runs, and the check's reads of the data agree with the claim
        payload = early
        payload["details"].update(details)
    else:
        parts = {p: [f for f in snakemake.input.shards if f.split("/")[-2] == p] for p in ("shards", "control")}
        scores = pd.concat([pd.read_csv(p) for p in parts["shards"]], ignore_index=True)
        control = None
        if parts["control"]:
            table = pd.concat([pd.read_csv(p) for p in parts["control"]], ignore_index=True)
            planned = assessed["control"]
            control = Control(copies=planned["copies"], epsilon_worst=planned["epsilon_worst"], scores=table,
                              noise_factor=planned["noise_factor"])  # fmt: skip
        # (the check's reads of the data were judged once, in check_byo_entry: check["data use"] above)
        payload = report(scores, claim, assessed["n"], options, details=details, control=control,
                         same_model=check["same_model"], advice=advice(design, found.get("theta0", "not observed"))
                         ).to_dict()  # fmt: skip
write_csv_atomic(scores, snakemake.output.scores)
write_text_atomic(snakemake.output.report, json.dumps(payload, indent=2) + "\n")
log.info("%s: %s", snakemake.wildcards.name, payload["reason"])
