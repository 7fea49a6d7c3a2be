"""Snakemake adapter: the libraries table from its rows' records into results/libraries/table.csv, fig.pdf (+ fig.csv)
and report.md (hsaudit.experiments.libraries.audit, .figures)."""

import json
from pathlib import Path

from hsaudit.experiments.libraries.audit import markdown, table
from hsaudit.experiments.libraries.figures import FIGURES
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import write_csv_atomic, write_text_atomic

script_logging(snakemake)
records = []
for path in snakemake.input.records:
    with open(path) as fh:
        records.append(json.load(fh))
frame = table(records)
facts = {**snakemake.params.facts, "code_version": snakemake.params.code_version}
write_csv_atomic(frame, snakemake.output.csv)
FIGURES["table"](frame, pdf=snakemake.output.pdf, csv=snakemake.output.figcsv, facts=facts)
write_text_atomic(snakemake.output.markdown, markdown(frame, not_run=snakemake.params.not_run, facts=facts,
                                                      figure=Path(snakemake.output.pdf).name))  # fmt: skip
