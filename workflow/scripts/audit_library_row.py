"""Snakemake adapter: one configuration of a DP library audited in the audit setting, its record into
results/libraries/rows/{row}.json (hsaudit.experiments.libraries.train)."""

import json

import torch

from hsaudit.experiments.libraries.plan import LibraryRow
from hsaudit.experiments.libraries.train import audit_row
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import write_text_atomic

log = script_logging(snakemake)
torch.set_num_threads(snakemake.threads)
row = LibraryRow.from_dict(snakemake.params.row)
rec = audit_row(row)
write_text_atomic(snakemake.output.record, json.dumps(rec, indent=2) + "\n")
log.info("%s: %s in %.0f s", row.name, rec["reason"], rec["seconds"])
