"""The wide twin of the zoo's gross bugs, for the few-runs study (issue 37, item 3; ``scripts/byo_zoo.py --few``).

The zoo's models (22–1,800 parameters on 10–20 features) hold too few coordinates for M Dirac canaries and too few
dimensions for M input canaries that do not interfere. Here the same bugs run in the loops of the shipped examples
on :data:`FEATURES` inputs, in the audit setting (``make(setting)``; without one, the example's own configuration):

- ``examples/byo/plain_dpsgd.py``'s loop, a linear model of 1,026 parameters (1,024 weights) whose per-example loss
  adds ``w * data.canary_term(params, k)``: it takes the Dirac family. ``make`` is correct; ``make_no_clipping``
  skips per-example clipping; ``make_noise_unscaled`` adds noise σ, not σC, with C = 4 (and lr/4, as the zoo's);
  ``make_noise_tenth`` trains at σ/10.
- ``examples/byo/opacus_dpsgd.py``'s loop (Opacus' ``make_private``, a linear model on :data:`OPACUS_FEATURES`
  inputs at :data:`OPACUS_LR`): ``make_opacus`` is correct; ``make_opacus_optimizer_recreated`` re-creates a plain
  SGD after ``make_private`` (no clipping, no noise).
  Opacus' per-sample hooks see the module's output, not a term added to the loss, so these two take an input family
  (``out_of_support``), not the Dirac one.

Every bug states the claim of the correct training it was meant to be.
"""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import torch
from opacus import PrivacyEngine
from opacus.accountants import PRVAccountant
from torch.func import functional_call, grad, vmap
from torch.utils.data import DataLoader

from hsaudit.accounting.gaussian import gaussian_epsilon

warnings.filterwarnings("ignore", message="Full backward hook is firing when gradients are computed with respect to")

N, FEATURES, CLASSES = 240, 512, 2
OPACUS_FEATURES, OPACUS_LR = 2048, 0.01
"""The Opacus twins' width and learning rate: an out-of-support canary (‖x‖ ≈ 2 × the data's radius) takes a step of
η‖x‖²/B nats; at the example's η = 0.5 an included canary's loss falls to 0 in one step, so its score (relative to
θ0) is capped by its loss at θ0 and the canaries' own differences decide the ranking (ε̂ 2.7–3.6 < ε = 4 at K = 2–4,
seeds 100–101); at 0.01 (≈ 0.3 nats a step) and 2,048 features (the canaries' overlap 1/√d) it reached ε̂ 4.6–5.2
(K = 2, 4; the same seeds; the study runs on others)."""
STEPS, NOISE, RATE, BATCH, CLIP, LR, DELTA = 20, 1.0, 0.1, 25, 1.0, 0.5, 1e-5


def dataset(features: int = FEATURES) -> tuple[torch.Tensor, torch.Tensor]:
    """The examples' two Gaussian classes, in ``features`` dimensions (fixed seed)."""
    g = torch.Generator().manual_seed(0)
    y = torch.randint(0, CLASSES, (N,), generator=g)
    x = torch.randn(N, features, generator=g) + (2.0 * y[:, None] - 1.0) * 0.5
    return x, y


def _claim(noise: float, steps: int, rate: float, clip: float, accountant: str, epsilon: float) -> dict:
    return dict(epsilon=float(epsilon), delta=DELTA, noise_multiplier=noise, max_grad_norm=clip, sampling="poisson",
                sample_rate=rate, steps=steps, neighbouring="add-remove", accountant=accountant)  # fmt: skip


def _plain(setting, *, clip: float = CLIP, lr: float = LR, clipping: bool = True, noise_scale: float = 1.0,
           noise_times_clip: bool = True) -> SimpleNamespace:  # fmt: skip
    """plain_dpsgd.py's loop with the bug switches: ``clipping`` off, noise ``noise_scale`` × σ(C), C left out of
    the noise (``noise_times_clip`` off)."""
    steps, noise, rate = STEPS, NOISE, RATE
    if setting is not None:
        steps, noise = setting.steps, setting.noise_multiplier
        rate = setting.sample_rate if setting.sample_rate is not None else RATE
    std = noise * noise_scale * (clip if noise_times_clip else 1.0)

    def train(data, seed):
        x, y, *rest = data.tensors
        w = rest[0] if rest else torch.zeros(len(x))
        d = data.k if rest else torch.full((len(x),), -1)
        torch.manual_seed(1234)
        model = torch.nn.Linear(FEATURES, CLASSES)
        params = {k: v.detach() for k, v in model.named_parameters()}
        g = torch.Generator().manual_seed(seed)

        def loss(p, xi, yi, wi, di):
            out = functional_call(model, p, (xi[None],))
            term = wi * data.canary_term(torch.cat([v.reshape(-1) for v in p.values()]), di) if rest else 0.0
            return torch.nn.functional.cross_entropy(out, yi[None]) + term

        for _ in range(steps):
            batch = torch.rand(len(x), generator=g) < rate
            grads = vmap(grad(loss), (None, 0, 0, 0, 0))(params, x[batch], y[batch], w[batch], d[batch])
            norms = torch.sqrt(sum(v.flatten(1).pow(2).sum(1) for v in grads.values()))
            factor = (clip / (norms + 1e-6)).clamp(max=1.0) if clipping else torch.ones_like(norms)
            for k, v in grads.items():
                noisy = torch.einsum("n,n...->...", factor, v) + std * torch.randn(v.shape[1:], generator=g)
                params[k] = params[k] - lr * noisy / (rate * N)
        model.load_state_dict(params)
        return model

    epsilon = gaussian_epsilon(noise_multiplier=noise, compositions=steps, delta=DELTA, sampling_rate=rate)
    return SimpleNamespace(claim=_claim(noise, steps, rate, clip, "pld", epsilon), train=train, dataset=dataset)


def make(setting=None):
    return _plain(setting)


def make_no_clipping(setting=None):
    return _plain(setting, clipping=False)


def make_noise_unscaled(setting=None):
    return _plain(setting, clip=4.0, lr=LR / 4, noise_times_clip=False)


def make_noise_tenth(setting=None):
    return _plain(setting, noise_scale=0.1)


def _batches(loader, steps: int):
    """``steps`` batches of ``loader``, epoch after epoch (each epoch a fresh Poisson draw)."""
    done = 0
    while True:
        for batch in loader:
            yield batch
            done += 1
            if done == steps:
                return


def _opacus(setting, *, recreate: bool) -> SimpleNamespace:
    """opacus_dpsgd.py's loop on :data:`FEATURES` inputs; ``recreate``: a plain SGD re-created after make_private."""
    steps, noise, batch = STEPS, NOISE, BATCH
    if setting is not None:
        steps, noise = setting.steps, setting.noise_multiplier
        full = getattr(setting, "rows", None) or N + 1
        batch = (full if setting.sample_rate == 1.0 else setting.batch_size(N)) if setting.sample_rate else BATCH
    rate = 1.0 / -(-N // batch)

    def train(data, seed, init_seed=None):
        torch.manual_seed(init_seed if init_seed is not None else seed)
        model = torch.nn.Linear(OPACUS_FEATURES, CLASSES)
        torch.manual_seed(seed)
        optimizer = torch.optim.SGD(model.parameters(), lr=OPACUS_LR)
        loader = DataLoader(data, batch_size=batch)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model, optimizer, loader = PrivacyEngine().make_private(
                module=model, optimizer=optimizer, data_loader=loader, noise_multiplier=noise, max_grad_norm=CLIP,
                poisson_sampling=True,
            )  # fmt: skip
        if recreate:  # the bug: a plain optimiser, no clipping, no noise (Opacus' hooks run, their result unused)
            optimizer = torch.optim.SGD(model.parameters(), lr=OPACUS_LR)
        for x, y in _batches(loader, steps):
            (model if recreate else optimizer).zero_grad()  # the plain SGD's does not clear grad_sample
            torch.nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
        return model._module

    accountant = PRVAccountant()
    accountant.history = [(noise, rate, steps)]
    claim = _claim(noise, steps, rate, CLIP, "opacus prv", accountant.get_epsilon(DELTA))
    return SimpleNamespace(claim=claim, train=train, dataset=lambda: dataset(OPACUS_FEATURES))


def make_opacus(setting=None):
    return _opacus(setting, recreate=False)


def make_opacus_optimizer_recreated(setting=None):
    return _opacus(setting, recreate=True)
