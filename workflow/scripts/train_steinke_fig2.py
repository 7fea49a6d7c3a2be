"""Snakemake adapter: one shard of Steinke et al. fig2 / table2 (both worlds; Poisson DP-SGD with the Dirac gradient
canary; scores after every step; the final models' test accuracy) via hsaudit.experiments.steinke.trained. Imports no
audit code (docs/cluster.md)."""

import numpy as np
import torch

from hsaudit.experiments.steinke.trained import train_fig2_shard
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import atomic_savez

log = script_logging(snakemake)
torch.set_num_threads(snakemake.threads)
spec, shard = snakemake.params.spec, int(snakemake.wildcards.shard)
with np.load(snakemake.input.data) as f:
    X, y, source = f["X"], f["y"], str(f["data_source"])
with np.load(snakemake.input.test) as f:
    test = (f["X"], f["y"])
out = train_fig2_shard(spec, shard, X=X, y=y, test=test, device=snakemake.params.device, progress=True)
atomic_savez(snakemake.output.shard, {**out, "data_source": np.array(source)})
log.info("shard %d: %d models x %d steps, d = %d, q = %.4g (%s), test accuracy %.4f", shard, len(out["bits"]),
         out["scores"].shape[1], int(out["canary_dim"]), float(out["sampling_rate"]), source,
         float(out["test_accuracy"].mean()))
