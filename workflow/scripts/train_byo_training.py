"""Snakemake adapter: train one training of a few-runs audit (M canaries, each by its own coin; the check's family)
and score every canary in it into results/byo/{name}/trainings/{k}.csv, or one training of its positive control
(the design control.json holds) into results/byo/{name}/control/{k}.csv (hsaudit.experiments.byo.train.families)."""

import json

import numpy as np
import pandas as pd
import torch

from hsaudit.experiments.byo.train.families import FewCheck, FewRunsDesign, load_few, prepare_few, train_one
from hsaudit.experiments.byo.train.harness import Probe
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import write_csv_atomic

log = script_logging(snakemake)
torch.set_num_threads(snakemake.threads)
few = snakemake.params.few
if snakemake.wildcards.part == "control":  # the control's design, as plan_byo_few_control planned it
    with open(snakemake.input.control) as fh:
        few = json.load(fh)["design"]
design, loaded = load_few(FewRunsDesign.from_dict(few))
with open(snakemake.input.probe) as fh:
    found = Probe(**json.load(fh))
with np.load(snakemake.input.family) as f:
    checked = FewCheck.from_arrays(found, {k: f[k] for k in f.files})
columns = train_one(prepare_few(design, loaded, checked), int(snakemake.wildcards.k))
write_csv_atomic(pd.DataFrame(columns), snakemake.output.scores)
log.info("%s %s: %d canaries, %.3g s of the user's training", snakemake.wildcards.part, snakemake.wildcards.k,
         len(columns["canary"]), float(columns["train_seconds"][0]))  # fmt: skip
