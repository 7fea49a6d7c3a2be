"""The wide twin of the zoo's gross bugs, for the few-runs study (issue 37, item 3; ``scripts/byo_zoo.py --few``).

The zoo's models (22–1,800 parameters on 10–20 features) hold too few coordinates for M Dirac canaries and too few
dimensions for M input canaries that do not interfere. Here the same bugs run in the loops of the shipped examples
on :data:`FEATURES` inputs, in the audit setting (``make(setting)``; without one, the example's own configuration):

- ``examples/byo/plain_dpsgd.py``'s loop, a linear model of 1,026 parameters (1,024 weights) whose per-example loss
  adds ``w * data.canary_term(params, k)``: it takes the Dirac family. ``make`` is correct; ``make_no_clipping``
  skips per-example clipping; ``make_noise_unscaled`` adds noise σ, not σC, with C = 4 (and lr/4, as the zoo's);
  ``make_noise_tenth`` trains at σ/10. The zoo's other bug classes in the same loop: ``make_batch_clipping``,
  ``make_accumulation`` (4 micro-batches per step), the moderate ``make_steps_doubled`` and ``make_noise_sqrt2``,
  and three that are bugs only below the full batch (own configuration): ``make_q_doubled``,
  ``make_shuffle_as_poisson``, ``make_normalise_by_batch``.
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


def _plain(setting, *, clip: float = CLIP, lr: float = LR, clipping: str = "per_example", noise_scale: float = 1.0,
           noise_times_clip: bool = True, accumulation: int = 1, steps_factor: int = 1, q_factor: float = 1.0,
           sampling: str = "poisson", normalise: str = "expected") -> SimpleNamespace:  # fmt: skip
    """plain_dpsgd.py's loop with the zoo's bug switches (tests/experiments/byo/zoo/trainer.py's, in this loop):
    ``clipping`` ``"none"`` or ``"batch"`` (the batch's mean gradient clipped to C, as if one example's); noise
    ``noise_scale`` × σ(C), C left out of it (``noise_times_clip`` off); ``accumulation`` micro-batches at the
    claimed rate summed per noisy step (the rate forgets them); ``steps_factor`` × the claimed steps run;
    ``q_factor`` × the claimed rate run (capped at 1); ``sampling="shuffle"`` (each epoch a permutation cut into
    batches of q·N, accounted as Poisson); ``normalise="actual"`` (the update divided by the batch's real size)."""
    steps, noise, rate = STEPS, NOISE, RATE
    if setting is not None:
        steps, noise = setting.steps, setting.noise_multiplier
        rate = setting.sample_rate if setting.sample_rate is not None else RATE
    std = noise * noise_scale * (clip if noise_times_clip else 1.0)
    run_rate = min(1.0, rate * q_factor)

    def train(data, seed):
        x, y, *rest = data.tensors
        w = rest[0] if rest else torch.zeros(len(x))
        d = data.k if rest else torch.full((len(x),), -1)
        torch.manual_seed(1234)
        model = torch.nn.Linear(FEATURES, CLASSES)
        params = {k: v.detach() for k, v in model.named_parameters()}
        g = torch.Generator().manual_seed(seed)
        size = max(1, round(rate * N))  # a shuffled batch: the nominal q·N rows
        order: list[torch.Tensor] = []

        def loss(p, xi, yi, wi, di):
            out = functional_call(model, p, (xi[None],))
            term = wi * data.canary_term(torch.cat([v.reshape(-1) for v in p.values()]), di) if rest else 0.0
            return torch.nn.functional.cross_entropy(out, yi[None]) + term

        def members() -> torch.Tensor:
            if sampling != "shuffle":
                return torch.rand(len(x), generator=g) < run_rate
            if not order:  # a new epoch: a permutation of every row, cut into batches of q·N
                perm = torch.randperm(len(x), generator=g)
                order.extend(perm[i : i + size] for i in range(0, len(x) - size + 1, size))
            batch = torch.zeros(len(x), dtype=torch.bool)
            batch[order.pop(0)] = True
            return batch

        for _ in range(steps * steps_factor):
            summed, count = {k: torch.zeros_like(v) for k, v in params.items()}, 0
            for _ in range(accumulation):
                batch = members()
                count += int(batch.sum())
                grads = vmap(grad(loss), (None, 0, 0, 0, 0))(params, x[batch], y[batch], w[batch], d[batch])
                if clipping == "batch":  # the batch's mean gradient clipped, as if it were one example's
                    means = {k: v.sum(0) / (rate * N) for k, v in grads.items()}
                    norm = torch.sqrt(sum(v.pow(2).sum() for v in means.values()))
                    for k, v in means.items():
                        summed[k] += v * (clip / (norm + 1e-6)).clamp(max=1.0) * (rate * N)
                    continue
                norms = torch.sqrt(sum(v.flatten(1).pow(2).sum(1) for v in grads.values()))
                factor = (clip / (norms + 1e-6)).clamp(max=1.0) if clipping == "per_example" else torch.ones_like(norms)
                for k, v in grads.items():
                    summed[k] += torch.einsum("n,n...->...", factor, v)
            denominator = max(count, 1) if normalise == "actual" else accumulation * rate * N
            for k, v in summed.items():
                noisy = v + std * torch.randn(v.shape, generator=g)
                params[k] = params[k] - lr * noisy / denominator
        model.load_state_dict(params)
        return model

    epsilon = gaussian_epsilon(noise_multiplier=noise, compositions=steps, delta=DELTA, sampling_rate=rate)
    return SimpleNamespace(claim=_claim(noise, steps, rate, clip, "pld", epsilon), train=train, dataset=dataset)


def make(setting=None):
    return _plain(setting)


def make_no_clipping(setting=None):
    return _plain(setting, clipping="none")


def make_noise_unscaled(setting=None):
    return _plain(setting, clip=4.0, lr=LR / 4, noise_times_clip=False)


def make_noise_tenth(setting=None):
    return _plain(setting, noise_scale=0.1)


# the zoo's other bug classes (issue 37: which of them only the population audit catches)
def make_batch_clipping(setting=None):
    return _plain(setting, clipping="batch")


def make_accumulation(setting=None):
    """4 micro-batches at the claimed rate per noisy step (the zoo's accumulation_rate: q of one claimed)."""
    return _plain(setting, accumulation=4)


def make_steps_doubled(setting=None):
    return _plain(setting, steps_factor=2)


def make_noise_sqrt2(setting=None):
    return _plain(setting, noise_scale=2**-0.5)


def make_q_doubled(setting=None):
    """Twice the claimed rate run: a bug only where the rate is below 1 (the example's own configuration)."""
    return _plain(setting, q_factor=2.0)


def make_shuffle_as_poisson(setting=None):
    """Shuffled batches accounted as Poisson: a bug only where the rate is below 1 (the own configuration)."""
    return _plain(setting, sampling="shuffle")


def make_normalise_by_batch(setting=None):
    """The update divided by the batch's real size: a bug only where the rate is below 1 (the own configuration)."""
    return _plain(setting, normalise="actual")


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
