"""Snakemake adapter: one shard of Steinke et al. Table 1 (both worlds; Poisson DP-SGD fine-tuning of the causal LM
by path with the unused-token canary; scores after every step; the final models' held-out perplexity) via
hsaudit.experiments.steinke.train.language. Imports no audit or accounting code (σ comes from the calibration job's JSON)."""

import json

import numpy as np
import torch

from hsaudit.experiments.steinke.train.language import load_causal_lm, train_table1_shard
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import atomic_savez

log = script_logging(snakemake)
torch.set_num_threads(snakemake.threads)
p, shard = snakemake.params, int(snakemake.wildcards.shard)
with open(snakemake.input.privacy) as fh:
    privacy = json.load(fh)["rows"][int(p.row)]
with np.load(snakemake.input.data) as f:
    data = {k: f[k] for k in f.files}
module = load_causal_lm(p.model)
out = train_table1_shard(p.spec, shard, privacy=privacy, data=data, module=module, device=p.device, progress=True)
atomic_savez(snakemake.output.shard, {**out, "noise_multiplier": np.float64(privacy["noise_multiplier"]),
                                      "data_source": np.array(p.data_source)})
log.info("shard %d: %d models x %d steps, q = %.4g, sigma = %.4g, perplexity %s", shard, len(out["bits"]),
         out["scores"].shape[1], float(out["sampling_rate"]), privacy["noise_multiplier"],
         np.round(out["perplexity"], 2).tolist())
