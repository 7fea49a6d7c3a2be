"""Snakemake adapter: one η candidate of a Steinke et al. Table 2 row (the row's DP-SGD setting without the canary,
trained on the training set less the validation split, scored by validation accuracy) via
hsaudit.experiments.steinke.train.candidates.train_lr_candidate. Imports no audit code (docs/cluster.md)."""

import numpy as np
import torch

from hsaudit.engine.models import spec_of
from hsaudit.experiments.steinke.train.candidates import train_lr_candidate
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import atomic_savez

log = script_logging(snakemake)
torch.set_num_threads(snakemake.threads)
p = snakemake.params
with np.load(snakemake.input.data) as f:
    X, y, source = f["X"], f["y"], str(f["data_source"])
arch = spec_of(p.spec)
out = train_lr_candidate(p.spec, arch=arch, X=X, y=y, device=p.device, progress=True)
atomic_savez(snakemake.output.shard, {**out, "data_source": np.array(source)})
log.info("η = %g, B = %d, σ = %g, T = %d: validation accuracy %.4f ± %.4f over %d models (%d held out of %s)",
         float(out["lr"]), int(out["batch_size"]), float(out["noise_multiplier"]), int(out["steps"]),
         float(out["validation_accuracy"].mean()), float(out["validation_accuracy"].std()),
         len(out["validation_accuracy"]), int(out["n_validation"]), source)
