"""Snakemake adapter: one shard of a Steinke et al. Table 2 row whose η is tuned (the η of the row's candidates with
the best mean validation accuracy, then the Dirac-canary population with it; test accuracy of the final models) via
hsaudit.experiments.steinke.train.tuning.train_tuned_shard. Imports no audit code (docs/cluster.md)."""

import numpy as np
import torch

from hsaudit.engine.models import spec_of
from hsaudit.experiments.steinke.train.tuning import train_tuned_shard
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import atomic_savez

log = script_logging(snakemake)
torch.set_num_threads(snakemake.threads)
p, shard = snakemake.params, int(snakemake.wildcards.shard)
with np.load(snakemake.input.data) as f:
    X, y, source = f["X"], f["y"], str(f["data_source"])
with np.load(snakemake.input.test) as f:
    test = (f["X"], f["y"])
candidates = []
for path in snakemake.input.candidates:
    with np.load(path) as f:
        candidates.append({k: f[k] for k in f.files})
arch = spec_of(p.spec)
out = train_tuned_shard(p.spec, shard, arch=arch, X=X, y=y, test=test, candidates=candidates, device=p.device,
                        progress=True)
atomic_savez(snakemake.output.shard, {**out, "data_source": np.array(source)})
log.info("shard %d: η = %g chosen from %s (mean validation accuracy %s); %d models x %d steps, q = %.4g (%s), "
         "test accuracy %.4f", shard, float(out["lr"]), out["lr_grid"].tolist(),
         np.round(out["validation_accuracy_mean"], 4).tolist(), len(out["bits"]), out["scores"].shape[1],
         float(out["sampling_rate"]), source, float(out["test_accuracy"].mean()))
