"""A CIFAR-10 ConvNet trained with Opacus at the papers' configuration, made auditable by hsaudit — the few-runs
audit's real-size example (docs/byo.md, "When your training is expensive"):

    hsaudit audit-training --entry examples/byo/cifar_convnet.py:laptop --canaries 500 --trainings 2   # minutes, CPU
    hsaudit audit-training --entry examples/byo/cifar_convnet.py:make --canaries 500 --trainings 2     # GPU, full

``make`` is the real configuration: Cebere et al.'s CIFAR-BASE (../shared/specs/cebere.md; config/config.yaml
``cifar10:``) — the engine's LeNet-5 style ConvNet (62,006 parameters, registry ``convnet``), 50,000 images,
batch 128, η = 0.01, σ = 4, C = 1, δ = 1e-5, plain SGD — for 16 epochs, the T = 6,250 steps of their Fig. 2(b)
(16 × ⌈50,000/128⌉ = 6,256 here). Opacus draws Poisson batches, where Cebere et al. fix the batch sequence.
``laptop`` is the same training on 4,000 images for 2 epochs (64 steps): the model is already small, so only the
data and the epochs shrink; one training takes seconds on one CPU core. It trains on the GPU when there is one
(seeded by ``torch.manual_seed`` as on the CPU; a GPU's convolutions may still differ between two runs of one seed,
which the audit's determinism check reports: then set ``torch.backends.cudnn.deterministic = True``).

``dataset()`` reads CIFAR-10 through the project's loaders (docs/data.md) from ``data/cifar-10-batches-py`` or
``data/cifar-10-python.tar.gz`` when one is there, else writes (once) and reads synthetic images in the real format
under ``data/`` — class patterns, not photographs (the audit's report does not say which: quote it with the
result).

Auditable as examples/byo/opacus_dpsgd.py: θ0 from ``init_seed``, everything else from ``seed`` (lines marked
``# hsaudit``); the claim is Opacus' default accountant (PRV) for the configuration, computed once;
``make(setting)`` runs the audit setting (``--audit-setting``), where a few-runs audit's ``setting.rows`` says how
many rows its full batch holds. In the training's own configuration q = 1/len(loader) moves a little with the
canaries each training holds (50,250 rows give 1/393, not 1/391): a smaller q than the claim's, so the claim holds.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from types import SimpleNamespace

import torch
from opacus import PrivacyEngine
from opacus.accountants import PRVAccountant
from torch.utils.data import DataLoader

from hsaudit.data.datasets import configured_dataset
from hsaudit.engine.architectures import convnet

warnings.filterwarnings("ignore", message="Full backward hook is firing when gradients are computed with respect to")

SCALES = {"full": dict(images=50_000, epochs=16), "laptop": dict(images=4_000, epochs=2)}
BATCH, NOISE, CLIP, LR, DELTA = 128, 4.0, 1.0, 0.01, 1e-5  # Cebere et al., CIFAR-BASE
LOCAL = ("data/cifar-10-batches-py", "data/cifar-10-python.tar.gz")
DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def data_section(images: int) -> dict:
    """The data section (docs/data.md) of ``images`` CIFAR-10 training images: local files, else synthetic ones."""
    local = next((p for p in LOCAL if Path(p).exists()), None)
    source = dict(source="local", path=local) if local else dict(source="synthetic", synthetic_train=images,
                                                                  synthetic_test=100)  # fmt: skip
    return dict(source, data_dir="data", download=False, subset=images, subset_seed=0, normalize="train")


def make(setting=None, scale: str = "full"):
    images, epochs = SCALES[scale]["images"], SCALES[scale]["epochs"]

    def dataset() -> tuple[torch.Tensor, torch.Tensor]:
        data = configured_dataset("cifar10", data_section(images))
        return torch.as_tensor(data.X), torch.as_tensor(data.y)

    batch, steps, noise = BATCH, epochs * -(-images // BATCH), NOISE
    if setting is not None:
        steps, noise = setting.steps, setting.noise_multiplier
        full = getattr(setting, "rows", None) or images + 1  # the full batch stays one batch with the canaries
        batch = (full if setting.sample_rate == 1.0 else setting.batch_size(images)) if setting.sample_rate else BATCH
    rate = 1.0 / -(-images // batch)  # what make_private will use: 1 / len(loader)

    def train(data, seed, init_seed=None):  # hsaudit: init_seed
        torch.manual_seed(init_seed if init_seed is not None else seed)  # hsaudit: θ0 from init_seed
        model = convnet(10).to(DEVICE)
        torch.manual_seed(seed)  # hsaudit: everything else from seed
        optimizer = torch.optim.SGD(model.parameters(), lr=LR)
        loader = DataLoader(data, batch_size=batch)
        with warnings.catch_warnings():  # secure_mode is off: these runs are for an audit
            warnings.simplefilter("ignore")
            model, optimizer, loader = PrivacyEngine().make_private(
                module=model, optimizer=optimizer, data_loader=loader, noise_multiplier=noise, max_grad_norm=CLIP,
                poisson_sampling=True,
            )  # fmt: skip
        done = 0
        while done < steps:  # epochs of the loader; the audit setting's steps may end inside one
            for x, y in loader:
                optimizer.zero_grad()
                torch.nn.functional.cross_entropy(model(x.to(DEVICE)), y.to(DEVICE)).backward()
                optimizer.step()
                done += 1
                if done == steps:
                    break
        return model._module.cpu()  # hsaudit scores the canaries on the CPU

    accountant = PRVAccountant()
    accountant.history = [(noise, rate, steps)]
    claim = dict(epsilon=float(accountant.get_epsilon(DELTA)), delta=DELTA, noise_multiplier=noise, max_grad_norm=CLIP,
                 sampling="poisson", sample_rate=rate, steps=steps, neighbouring="add-remove",
                 accountant="opacus prv")  # fmt: skip
    return SimpleNamespace(claim=claim, train=train, dataset=dataset)


def laptop(setting=None):
    """``make`` at laptop scale: 4,000 images, 2 epochs."""
    return make(setting, scale="laptop")
