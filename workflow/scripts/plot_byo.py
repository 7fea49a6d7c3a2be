"""Snakemake adapter: results/byo/{name}/fig.pdf + fig.csv, the canary's scores in both worlds and ε̂ against the
claim (hsaudit.experiments.byo.figures)."""

import json

import pandas as pd

from hsaudit.experiments.byo.figures import FIGURES
from hsaudit.pipeline.logs import script_logging

script_logging(snakemake)
with open(snakemake.input.report) as fh:
    report = json.load(fh)
FIGURES["scores"](
    pd.read_csv(snakemake.input.scores),
    pdf=snakemake.output.pdf,
    csv=snakemake.output.csv,
    facts={"report": report, "scale": snakemake.params.scale, "code_version": snakemake.params.code_version},
)
