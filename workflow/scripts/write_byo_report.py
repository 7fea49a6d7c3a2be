"""Snakemake adapter: results/byo/{name}/report.md, the verdict and every number of the audit, beside its figure
(hsaudit.experiments.byo.audit.markdown)."""

import json
from pathlib import Path

from hsaudit.experiments.byo.audit import markdown
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import write_text_atomic

script_logging(snakemake)
with open(snakemake.input.report) as fh:
    report = json.load(fh)
write_text_atomic(snakemake.output.markdown, markdown(report, figure=Path(snakemake.input.pdf).name))
