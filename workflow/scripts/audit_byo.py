"""Snakemake adapter: the report of an audit of a user's training from its shards' scores (or the verdict that needed
no training) into results/byo/{name}/report.json + scores.csv (hsaudit.experiments.byo.audit)."""

import json

import pandas as pd

from hsaudit.experiments.byo.advice import advice
from hsaudit.experiments.byo.audit import AuditOptions, Control, data_use_of, report
from hsaudit.experiments.byo.values import Claim, Design
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import write_csv_atomic, write_text_atomic

log = script_logging(snakemake)
with open(snakemake.input.claim) as fh:
    assessed = json.load(fh)
details = dict(snakemake.params.details)
if assessed["early"] is not None:
    payload = assessed["early"]
    payload["details"].update(details)
    scores = pd.DataFrame(columns=["model", "member", "seed", "score", "train_seconds", "harness_seconds"])
else:
    with open(snakemake.input.probe) as fh:
        found = json.load(fh)
    reads = ("uses", "own_uses", "own_claim", "use_trainings")  # the data-use check's, read below
    details.update({f"check: {k}": v for k, v in found.items() if k not in reads})
    with open(snakemake.input.check) as fh:
        check = json.load(fh)
    design = Design.from_dict(check["design"])  # given, or chosen by the check's pilot
    details.update({"canary": design.canary, "background": design.background, **check["design details"]})
    parts = {p: [f for f in snakemake.input.shards if f.split("/")[-2] == p] for p in ("shards", "control")}
    scores = pd.concat([pd.read_csv(p) for p in parts["shards"]], ignore_index=True)
    control = None
    if parts["control"]:
        table = pd.concat([pd.read_csv(p) for p in parts["control"]], ignore_index=True)
        planned = assessed["control"]
        control = Control(copies=planned["copies"], epsilon_worst=planned["epsilon_worst"], scores=table,
                          noise_factor=planned["noise_factor"])  # fmt: skip
    options = AuditOptions.from_dict(snakemake.params.options)
    payload = report(scores, Claim.from_mapping(assessed["claim"]), assessed["n"], options, details=details,
                     control=control, same_model=check["same_model"],
                     advice=advice(design, found.get("theta0", "not observed")),
                     data_use=data_use_of(Claim.from_mapping(assessed["claim"]), found.get("uses"),
                                          found.get("use_trainings", 2),
                                          found.get("own_claim") and Claim.from_mapping(found["own_claim"]),
                                          found.get("own_uses"))).to_dict()  # fmt: skip
write_csv_atomic(scores, snakemake.output.scores)
write_text_atomic(snakemake.output.report, json.dumps(payload, indent=2) + "\n")
log.info("%s: %s", snakemake.wildcards.name, payload["reason"])
