"""A paper-scale Cebere ConvNet shard end to end on CUDA (default 500 models x 250 steps, B = 128, gc_r,
synthetic CIFAR-sized data), timed against the planner's price (models x steps x the calibration row).

Usage: python scripts/gpu_shard.py [MODELS STEPS]   (docs/benchmarks.md, "On a GPU")
"""

import json
import sys
import time

import numpy as np
import torch

from hsaudit.engine.dpsgd import DPSGDConfig, make_setup
from hsaudit.engine.models import model_spec
from hsaudit.experiments.cebere.train.adversaries import craft
from hsaudit.experiments.cebere.train.shards import train_shard
from hsaudit.pipeline.costs import calibration

models, steps = (int(sys.argv[1]), int(sys.argv[2])) if len(sys.argv) > 2 else (500, 250)
spec = model_spec("convnet")
rng = np.random.default_rng(0)
X = rng.standard_normal((50_000, 3, 32, 32), dtype=np.float32)
y = rng.integers(0, 10, 50_000)
cfg = DPSGDConfig(steps=steps, batch_size=128, lr=0.01, clip_norm=1.0, noise_multiplier=4.0, period=1)
setup = make_setup(spec=spec, n_train=len(X), config=cfg, seed=0)
crafted = craft("gc_r", spec=spec, X=X, y=y, setup=setup, config=cfg, seed=0)
torch.cuda.synchronize(); torch.cuda.reset_peak_memory_stats()
t0 = time.perf_counter()
obs = train_shard(spec=spec, X=X, y=y, setup=setup, config=cfg, crafted=crafted, bits=np.arange(models) % 2,
                  noise_key=5, device="cuda", progress=False)
torch.cuda.synchronize()
sec = time.perf_counter() - t0
row = calibration("convnet", "gpu", path="/nonexistent.json")
print(json.dumps(dict(models=models, steps=steps, seconds=sec, per_model_step=sec / models / steps,
                      planner_seconds=models * steps * row.seconds_per_model_step,
                      peak_gb=torch.cuda.max_memory_allocated() / 2**30, scores=list(obs.scores.shape))))
