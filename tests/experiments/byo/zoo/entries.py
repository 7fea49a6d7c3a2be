"""The bug zoo's entries: one ``make()`` each (the harness's contract), a correct DP-SGD step with one bug switched
on, and the claim its author's accountant would state.

Entries are named in :mod:`catalogue` (``tests/experiments/byo/zoo/entries.py:<name>``). Every claim is the ε that
dp-accounting's PLD gives for the mechanism the author *believes* runs (add-remove, Poisson sampling), so the
accountant agrees with the claim unless the bug is in the accounting itself.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import trainer  # noqa: E402  (the zoo's modules load by path, as a user's would)

from hsaudit.accounting.gaussian import gaussian_epsilon  # noqa: E402

DELTA = 1e-5
BASE = trainer.Step(model="logreg", n=200, features=10, steps=20, sigma=2.0, q=0.2, clip=1.0, lr=1.0)
MLP = replace(BASE, model="mlp", lr=0.5)


def _claim(step: trainer.Step, **believed) -> dict:
    """The claim of an author who believes ``step`` with ``believed`` changes runs (their accountant: PLD)."""
    b = replace(step, **{k: v for k, v in believed.items() if k in ("sigma", "steps", "q")})
    neighbouring = believed.get("neighbouring", "add-remove")
    eps = gaussian_epsilon(noise_multiplier=b.sigma, compositions=b.steps, delta=DELTA, sampling_rate=b.q)
    return dict(epsilon=eps, delta=DELTA, noise_multiplier=b.sigma, max_grad_norm=b.clip, sampling="poisson",
                sample_rate=b.q, steps=b.steps, neighbouring=neighbouring, accountant="pld")  # fmt: skip


def _training(step: trainer.Step, claim: dict, *, white_box: bool = False) -> dict:
    x, y = trainer.dataset(step)

    def train_batch(data, seeds, record=None):
        xs, ys = data.tensors[:2]
        w = data.tensors[2] if len(data.tensors) > 2 else None
        direction = getattr(data, "direction", None)
        return trainer.train_batch(step, xs, ys, w, direction, seeds, record)

    if white_box:  # train(data, seed, record): every iterate reaches the harness
        train = lambda data, seed, record: train_batch(data, [seed], lambda t, th: record(t, th[0]))[0]  # noqa: E731
        batch = train_batch
    else:
        train = lambda data, seed: train_batch(data, [seed])[0]  # noqa: E731
        batch = lambda data, seeds: train_batch(data, seeds)  # noqa: E731
    return dict(
        claim=claim,
        dataset=lambda: (x, y),
        train=train,
        train_batch=batch,
        models_per_call=1000,
        loss=lambda theta, xs, ys: trainer.loss(step, theta, xs, ys),
        predict=lambda theta, xs: trainer.logits(step, theta, xs),
        classes=step.classes,
    )


def _entry(step: trainer.Step, *, white_box: bool = False, **believed):
    return lambda: _training(step, _claim(step, **believed), white_box=white_box)


# ---- controls: must not be flagged --------------------------------------------------------------------------------
correct = _entry(BASE)
correct_mlp = _entry(MLP)
noise_larger = _entry(replace(BASE, noise_factor=1.5))  # σ 1.5× the claimed: safe
steps_overcounted = _entry(replace(BASE, steps=BASE.steps // 2), steps=BASE.steps)  # claims twice the steps run
correct_white_box = _entry(BASE, white_box=True)  # every iterate recorded

# ---- bugs: must be flagged -----------------------------------------------------------------------------------------
no_clipping = _entry(replace(BASE, clipping="none"))
no_clipping_mlp = _entry(replace(MLP, clipping="none"))
noise_on_mean = _entry(replace(BASE, noise_factor=1.0 / BASE.batch))
_C4 = replace(BASE, clip=4.0, lr=0.25)
noise_ignores_clip_norm = _entry(replace(_C4, noise_factor=1.0 / _C4.clip))
batch_clipping = _entry(replace(BASE, clipping="batch"))
batch_clipping_mlp = _entry(replace(MLP, clipping="batch"))
_TIED = replace(BASE, model="tied")
tied_correct = _entry(_TIED)
tied_norm_first_use = _entry(replace(_TIED, clipping="first_use"))
accumulation_rate = _entry(replace(BASE, q=BASE.q / 4, accumulation=4))  # claims q of one micro-batch
replace_one_as_add_remove = _entry(BASE, neighbouring="replace-one")  # ε of add-remove, claimed for replace-one
_BN = replace(BASE, model="bn", lr=0.05)
bn_correct = _entry(_BN)
batchnorm_running_stats = _entry(replace(_BN, running_stats=True))
noise_key_reused = _entry(replace(BASE, noise_key="constant"))
noise_reused_across_steps_white_box = _entry(replace(BASE, noise_key="step"), white_box=True)

# ---- documented limits: measured, not asserted ---------------------------------------------------------------------
normalise_by_batch = _entry(replace(BASE, normalise="actual"))
shuffle_as_poisson = _entry(replace(BASE, sampling="shuffle"))
noise_reused_across_steps = _entry(replace(BASE, noise_key="step"))  # the final model only


def loss_with_nan():
    """A training that diverges (its loss is NaN): the harness must say so."""
    made = _training(BASE, _claim(BASE))
    made["train_batch"] = lambda data, seeds: torch.full((len(seeds), BASE.parameters), float("nan"))
    made["train"] = lambda data, seed: torch.full((BASE.parameters,), float("nan"))
    return made
