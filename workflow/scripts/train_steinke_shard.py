"""Snakemake adapter: one shard of a Steinke et al. image population (both worlds; Poisson DP-SGD with the Dirac
gradient canary of fig2/table2 or the label-flipped input canary of fig4; scores after every step; the final models'
test accuracy) via hsaudit.experiments.steinke.train.images.train_shard. Imports no audit code (docs/cluster.md)."""

import numpy as np
import torch

from hsaudit.engine.models import spec_of
from hsaudit.experiments.steinke.train.images import train_shard
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import atomic_savez

log = script_logging(snakemake)
torch.set_num_threads(snakemake.threads)
p, shard = snakemake.params, int(snakemake.wildcards.shard)
with np.load(snakemake.input.data) as f:
    X, y, source = f["X"], f["y"], str(f["data_source"])
with np.load(snakemake.input.test) as f:
    test = (f["X"], f["y"])
arch = spec_of(p.spec)
out = train_shard(p.canary, p.spec, shard, arch=arch, X=X, y=y, test=test, device=p.device, progress=True)
atomic_savez(snakemake.output.shard, {**out, "data_source": np.array(source)})
log.info("shard %d (%s canary, %s background): %d models x %d steps, q = %.4g (%s), test accuracy %.4f", shard,
         p.canary, p.spec["background"], len(out["bits"]), out["scores"].shape[1], float(out["sampling_rate"]), source,
         float(out["test_accuracy"].mean()))
