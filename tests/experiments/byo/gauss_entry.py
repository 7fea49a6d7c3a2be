"""A training that is exactly the Gaussian mechanism composed T times along every input, for the tests of the
verdict's power: θ = Σ_t (Σ_i clip_C(x_i) + σC·ξ_t), flat, the full batch; loss(θ, x, y) = −⟨θ, x⟩, so an input
canary's score ⟨θ, x*⟩ is μ-GDP with μ = √T/σ exactly (x* beyond C is clipped to C along its direction). ``make``
is correct; ``make_sigma_sqrt2`` adds σ/√2 behind its claim (true ε 1.41× the claim's μ). ``width`` widens the inputs
(few_entry.py: many canaries)."""
import math
from types import SimpleNamespace

import torch

from hsaudit.accounting.gaussian import gdp_epsilon

N, D, C, DELTA = 50, 5, 1.0, 1e-5


def dataset(width=D):
    g = torch.Generator().manual_seed(0)
    return torch.randn(N, width, generator=g) * 0.1, torch.randint(0, 2, (N,), generator=g)


def make(setting=None, noise_scale=1.0, width=D):
    steps, sigma = (5, 2.0) if setting is None else (setting.steps, setting.noise_multiplier)

    def train_batch(data, seeds):
        x = data.tensors[0]
        clipped = x * (C / (x.norm(dim=1, keepdim=True) + 1e-6)).clamp(max=1.0)
        out = []
        for s in seeds:
            g = torch.Generator().manual_seed(int(s))
            noise = torch.randn(steps, width, generator=g).sum(0)
            out.append(steps * clipped.sum(0) + noise_scale * sigma * C * noise)
        return torch.stack(out)

    claim = dict(epsilon=gdp_epsilon(mu=math.sqrt(steps) / sigma, delta=DELTA), delta=DELTA, noise_multiplier=sigma,
                 max_grad_norm=C, sampling="poisson", sample_rate=1.0, steps=steps, neighbouring="add-remove")
    return SimpleNamespace(claim=claim, train_batch=train_batch, dataset=lambda: dataset(width),
                           loss=lambda theta, x, y: -(x @ theta), classes=2)


def make_sigma_sqrt2(setting=None):
    return make(setting, noise_scale=0.5**0.5)
