"""Snakemake adapter: the libraries table from its rows' byo reports (results/libraries/<row>/report.json) and
training shards into results/libraries/table.csv, fig.pdf (+ fig.csv) and report.md (hsaudit.experiments.libraries.audit,
.figures)."""

import json
from pathlib import Path

import pandas as pd

from hsaudit.experiments.libraries.audit import markdown, record, table, training_seconds
from hsaudit.experiments.libraries.figures import FIGURES
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import write_csv_atomic, write_text_atomic

script_logging(snakemake)
records = []
for row, root, path in zip(snakemake.params.rows, snakemake.params.roots, snakemake.input.reports):
    with open(path) as fh:
        report = json.load(fh)
    shards = [pd.read_csv(p) for p in snakemake.input.shards if p.startswith(root + "/")]
    records.append(record(row, report, training_seconds(shards)))
frame = table(records)
facts = {**snakemake.params.facts, "code_version": snakemake.params.code_version}
write_csv_atomic(frame, snakemake.output.csv)
FIGURES["table"](frame, pdf=snakemake.output.pdf, csv=snakemake.output.figcsv, facts=facts)
write_text_atomic(snakemake.output.markdown, markdown(frame, not_run=snakemake.params.not_run, facts=facts,
                                                      figure=Path(snakemake.output.pdf).name))  # fmt: skip
