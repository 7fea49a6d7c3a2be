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
    from hsaudit.experiments.cebere.train.adversaries import craft
    from hsaudit.experiments.cebere.train.shards import train_shard
    from hsaudit.engine.dpsgd import DPSGDConfig, make_setup
    from hsaudit.engine.models import model_spec

    rng = np.random.default_rng(0)
    if model == "fcnn":
        X, y = housing_like(256, 0)
    else:
        X = rng.standard_normal((64, *shape)).astype(np.float32)
        y = rng.integers(0, 10, 64)
    cfg = DPSGDConfig(steps=6, batch_size=16, lr=0.05, clip_norm=1.0, noise_multiplier=1.0, period=2)
    setup = make_setup(spec=model_spec(model), n_train=len(X), config=cfg, seed=0)
    crafted = craft("gc_r", spec=model_spec(model), X=X, y=y, setup=setup, config=cfg, seed=0)
    kw = dict(spec=model_spec(model), X=X, y=y, setup=setup, config=cfg, crafted=crafted,
              bits=np.arange(32) % 2, noise_key=5, progress=False)
    on_gpu = train_shard(device="cuda", **kw).scores
    again = train_shard(device="cuda", **kw).scores
    on_cpu = train_shard(device="cpu", **kw).scores
    np.testing.assert_array_equal(on_gpu, again)
    np.testing.assert_allclose(on_gpu, on_cpu, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("model", ["fcnn", "convnet"])
def test_cuda_poisson_population_matches_cpu(model):
    """Poisson subsampling on CUDA: the same batches and canary draws as on the CPU (integer hashing; the gaps'
    float64 logarithm could differ in the last ulp, which moves a gap with probability ≈ 10⁻¹⁶), the same final
    models up to float error, and a bit-for-bit rerun."""
    from hsaudit.engine.dpsgd import DPSGDConfig, train_population
    from hsaudit.engine.models import build_model, flat_parameters, model_spec
    from hsaudit.engine.psg import population_engine
    from hsaudit.engine.sampling import Poisson, PoissonSampler

    if model == "fcnn":
        X, y = (torch.as_tensor(a) for a in housing_like(256, 0))
    else:
        gen = torch.Generator().manual_seed(0)
        X, y = torch.randn(64, 3, 32, 32, generator=gen), torch.randint(0, 10, (64,), generator=gen)
    cfg = DPSGDConfig(steps=4, batch_size=16, lr=0.05, clip_norm=1.0, noise_multiplier=1.0,
                      sampling=Poisson(16 / len(X)))
    a = PoissonSampler(3, range(32), n=len(X), rate=16 / len(X), mask=torch.ones(32), canary_in_batch=True)
    b = PoissonSampler(3, range(32), n=len(X), rate=16 / len(X), mask=torch.ones(32, device="cuda"),
                       canary_in_batch=True, device="cuda")
    for t in range(1, 5):
        ba, bb = a(t), b(t)
        assert ba.counts == bb.counts
        np.testing.assert_array_equal(ba.index.numpy(), bb.index.cpu().numpy())
        np.testing.assert_array_equal(ba.canary.numpy(), bb.canary.cpu().numpy())
    theta0 = flat_parameters(build_model(model))

    def run(dev):
        gradient = torch.zeros(theta0.numel(), device=dev)
        gradient[0] = 1.0
        return train_population(
            engine=population_engine(model_spec(model), dev), theta0=theta0.to(dev), X=X.to(dev), y=y.to(dev),
            batches=None,
            config=cfg, noise_key=5, sampling_key=6, models=range(32), mask=(torch.arange(32) % 2).float().to(dev),
            gradient=gradient, keep_final=True,
        )

    on_gpu, again, on_cpu = run("cuda"), run("cuda"), run("cpu")
    np.testing.assert_array_equal(on_gpu.theta, again.theta)
    np.testing.assert_array_equal(on_gpu.canary_steps, on_cpu.canary_steps)
    np.testing.assert_allclose(on_gpu.theta, on_cpu.theta, rtol=1e-3, atol=1e-4)
