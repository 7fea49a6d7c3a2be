"""GPU checks (run where CUDA exists; skipped with a reason elsewhere): the device-native engine on CUDA.

CUDA and CPU runs draw the same counter-based noise (integer hashing is exact; only the Box–Muller floats may
differ in the last ulp), so a population trained on either device gives the same scores up to float error, and
a rerun on the same device is bit-for-bit identical.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from conftest import housing_like

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine"),
]


def test_noise_agrees_across_devices():
    from hsaudit.engine.noise import counter_normals

    cpu = counter_normals(7, torch.arange(64), 3, 10_001)
    gpu = counter_normals(7, torch.arange(64, device="cuda"), 3, 10_001).cpu()
    np.testing.assert_allclose(gpu.numpy(), cpu.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("model", "shape"), [("fcnn", (8,)), ("convnet", (3, 32, 32))])
def test_cuda_population_matches_cpu_and_reruns_bit_for_bit(model, shape):
    from hsaudit.papers.cebere.adversaries import craft
    from hsaudit.papers.cebere.shards import train_shard
    from hsaudit.engine.dpsgd import DPSGDConfig, make_setup

    rng = np.random.default_rng(0)
    if model == "fcnn":
        X, y = housing_like(256, 0)
    else:
        X = rng.standard_normal((64, *shape)).astype(np.float32)
        y = rng.integers(0, 10, 64)
    cfg = DPSGDConfig(steps=6, batch_size=16, lr=0.05, clip_norm=1.0, noise_multiplier=1.0, period=2)
    setup = make_setup(model=model, model_kwargs={}, n_train=len(X), config=cfg, seed=0)
    crafted = craft("gc_r", model=model, model_kwargs={}, X=X, y=y, setup=setup, config=cfg, seed=0)
    kw = dict(model=model, model_kwargs={}, X=X, y=y, setup=setup, config=cfg, crafted=crafted,
              bits=np.arange(32) % 2, noise_key=5, progress=False)
    on_gpu = train_shard(device="cuda", **kw).scores
    again = train_shard(device="cuda", **kw).scores
    on_cpu = train_shard(device="cpu", **kw).scores
    np.testing.assert_array_equal(on_gpu, again)
    np.testing.assert_allclose(on_gpu, on_cpu, rtol=1e-3, atol=1e-4)
