"""A training that is exactly the Gaussian mechanism composed T times along every input, in a space wide enough for
many canaries (D = 2048): θ = Σ_t (Σ_i clip_C(x_i) + σC·ξ_t), the full batch; loss(θ, x, y) = −⟨θ, x⟩, so the score
of an input canary x* beyond C is ‖x*‖ (T·C·[x* in] + N(0, Tσ²C²) + the other rows' ⟨clip(x_i), x̂*⟩): μ-GDP in each
canary with μ = √T/σ. ``make`` is correct; ``make_noise_tenth`` runs σ/10 behind the same claim (a gross bug)."""
import math
from types import SimpleNamespace

import torch

from hsaudit.accounting.gaussian import gdp_epsilon

N, D, C, DELTA = 20, 2048, 1.0, 1e-5


def dataset():
    g = torch.Generator().manual_seed(0)
    return torch.randn(N, D, generator=g) * 0.01, torch.randint(0, 2, (N,), generator=g)


def make(setting=None, noise_scale=1.0):
    steps, sigma = (5, 2.0) if setting is None else (setting.steps, setting.noise_multiplier)

    def train(data, seed):
        x = data.tensors[0]
        clipped = x * (C / (x.norm(dim=1, keepdim=True) + 1e-6)).clamp(max=1.0)
        g = torch.Generator().manual_seed(int(seed))
        return steps * clipped.sum(0) + noise_scale * sigma * C * torch.randn(steps, D, generator=g).sum(0)

    claim = dict(epsilon=gdp_epsilon(mu=math.sqrt(steps) / sigma, delta=DELTA), delta=DELTA, noise_multiplier=sigma,
                 max_grad_norm=C, sampling="poisson", sample_rate=1.0, steps=steps, neighbouring="add-remove")
    return SimpleNamespace(claim=claim, train=train, dataset=dataset, loss=lambda theta, x, y: -(x @ theta),
                           classes=2)


def make_noise_tenth(setting=None):
    return make(setting, noise_scale=0.1)
