"""The bug zoo's entries: one ``make()`` each (the harness's contract), a correct DP-SGD step with one bug switched
on, and the claim its author's accountant would state.

Entries are named in :mod:`catalogue` (``tests/experiments/byo/zoo/entries.py:<name>``). Every claim is the ε that
dp-accounting's PLD gives for the mechanism the author *believes* runs (add-remove, Poisson sampling), so the
accountant agrees with the claim unless the bug is in the accounting itself.
"""

from __future__ import annotations

import math
import sys
from dataclasses import replace
from functools import cache
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import trainer  # noqa: E402  (the zoo's modules load by path, as a user's would)

from hsaudit.accounting.gaussian import calibrate_noise, gaussian_epsilon, mixture_gaussian_epsilon  # noqa: E402

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
    """What ``make()`` returns. With ``step.theta0 == "seed"`` (the user form) ``train``/``train_batch`` take
    ``init_seed`` as docs/byo.md's diff does: θ0 from it when given, else each model's own from its seed."""
    x, y = trainer.dataset(step)

    def train_batch(data, seeds, record=None, init_seed=None):
        xs, ys = data.tensors[:2]
        w = data.tensors[2] if len(data.tensors) > 2 else None
        direction = getattr(data, "direction", None)
        return trainer.train_batch(step, xs, ys, w, direction, seeds, record, init_seed=init_seed)

    if step.theta0 == "seed":
        if white_box:
            raise ValueError("the zoo's user form has no white-box entry")
        train = lambda data, seed, init_seed=None: train_batch(data, [seed], init_seed=init_seed)[0]  # noqa: E731
        batch = lambda data, seeds, init_seed=None: train_batch(data, seeds, init_seed=init_seed)  # noqa: E731
    elif white_box:  # train(data, seed, record): every iterate reaches the harness
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


def in_setting(step: trainer.Step, believed: dict, setting) -> tuple[trainer.Step, dict]:
    """The step and belief of an entry asked for the audit ``setting`` (docs/byo.md, "The audit setting"): the claim
    is the setting's steps, σ and q (the entry's own q where the setting keeps it), and the bug keeps its nature:
    what the training really runs is the same multiple of what it claims (σ·noise_factor, 2× the steps, 2× q, capped
    at 1), every other switch unchanged."""
    if setting is None:
        return step, believed
    claimed = {"steps": believed.get("steps", step.steps), "sigma": believed.get("sigma", step.sigma),
               "q": believed.get("q", step.q)}  # fmt: skip
    asked = {"steps": setting.steps, "sigma": setting.noise_multiplier,
             "q": claimed["q"] if setting.sample_rate is None else float(setting.sample_rate)}  # fmt: skip
    run = replace(step, steps=round(asked["steps"] * step.steps / claimed["steps"]),
                  sigma=asked["sigma"] * step.sigma / claimed["sigma"], q=min(1.0, asked["q"] * step.q / claimed["q"]))  # fmt: skip
    return run, {**believed, **asked}


def _entry(step: trainer.Step, *, white_box: bool = False, **believed):
    def make(setting=None):
        run, belief = in_setting(step, believed, setting)
        return _training(run, _claim(run, **belief), white_box=white_box)

    make.step, make.believed = step, believed
    return make


def _user(make):
    """The user form of an entry: the same training with θ0 drawn from the seed and ``init_seed`` accepted."""
    return _entry(replace(make.step, theta0="seed"), **make.believed)


TRUE_DISCRETIZATION = 1e-2
"""The PLD discretisation of :func:`true_epsilon` (ε to ~1e-2: it is compared with the claim, not audited)."""


@cache
def true_epsilon(name: str, setting=None) -> float | None:
    """The ε at :data:`DELTA` of the mechanism entry ``name`` really runs (in the audit ``setting`` when one is given:
    :func:`in_setting`), by our accountant (dp-accounting's PLD): the
    Poisson-subsampled Gaussian at its real σ·noise_factor, steps and q; accumulated micro-batches as the mixture of
    Gaussians with Binomial(accumulation, q) sensitivities (Choquette-Choo et al. 2024); inf for an unbounded
    sensitivity (no clipping) or no noise across runs (a fixed key); None where the real mechanism is not one our
    accountant takes (batch or first-use clipping, running statistics, the batch's real size, shuffling, noise reused
    across steps, replace-one)."""
    step, believed = in_setting(globals()[name].step, globals()[name].believed, setting)
    if step.clipping == "none" or step.noise_key == "constant":
        return math.inf
    if (step.clipping != "per_example" or step.running_stats or step.normalise != "expected"
            or step.sampling != "poisson" or step.noise_key != "seed"
            or believed.get("neighbouring", "add-remove") != "add-remove"):  # fmt: skip
        return None
    sigma = step.sigma * step.noise_factor
    if step.accumulation > 1:
        from scipy.stats import binom

        a = step.accumulation
        return mixture_gaussian_epsilon(standard_deviation=sigma, sensitivities=list(range(a + 1)),
                                        probabilities=binom.pmf(range(a + 1), a, step.q).tolist(), delta=DELTA,
                                        compositions=step.steps, discretization=TRUE_DISCRETIZATION)  # fmt: skip
    return gaussian_epsilon(noise_multiplier=sigma, compositions=step.steps, delta=DELTA, sampling_rate=step.q,
                            discretization=TRUE_DISCRETIZATION)  # fmt: skip


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

# ---- the worst-case design (Nasr et al. 2021: background copies, canary opposing) -----------------------------------
# lr 0.005 keeps the models near θ0, where every row's gradient is clipped: the canary's pull is C against the
# background's, at every step it is sampled.
_WORST = replace(BASE, lr=0.005)
correct_worst_case = _entry(_WORST)
normalise_by_batch = _entry(replace(_WORST, normalise="actual"))
shuffle_as_poisson = _entry(replace(_WORST, sampling="shuffle"))

# ---- moderate bugs (true ε 1.4x to 2x the claim) -------------------------------------------------------------------
steps_doubled = _entry(replace(BASE, steps=2 * BASE.steps), steps=BASE.steps)  # 40 steps run, 20 claimed
noise_sqrt2 = _entry(replace(BASE, noise_factor=1 / math.sqrt(2)))  # σ/√2
q_doubled = _entry(replace(BASE, q=2 * BASE.q), q=BASE.q)  # q = 0.4 run, 0.2 claimed

# ---- σ bugs on an input canary over the data (own configuration): the other rows' sampling and pull add variance to
# the canary's score that the copies control escapes and less noise does not (docs/journal/byo.md, 2026-11-28)
noise_sqrt2_mlp = _entry(replace(MLP, noise_factor=1 / math.sqrt(2)))  # σ/√2, MLP
tied_noise_half = _entry(replace(_TIED, noise_factor=0.5))  # σ/2, a shared weight
bn_noise_half = _entry(replace(_BN, noise_factor=0.5))  # σ/2, behind the standardisation layer
# their audit-setting twins (the catalogue asks make(setting)): the same bugs, 5 full-batch steps at the σ of ε = 4
noise_sqrt2_mlp_setting, tied_noise_half_setting, bn_noise_half_setting = noise_sqrt2_mlp, tied_noise_half, bn_noise_half

# ---- the boundary: full batch, T = 5, σ calibrated to ε = 4 (Dirac canary on a blank background: the canary's
# coordinate moves by T·C plus N(0, T σ²C²) noise, exactly μ-GDP with μ = √T/σ at the claim) ---------------------------
BOUNDARY_EPSILON = 4.0
_BOUNDARY = replace(BASE, q=1.0, steps=5, sigma=calibrate_noise(epsilon=BOUNDARY_EPSILON, delta=DELTA, compositions=5))
boundary_correct = _entry(_BOUNDARY)
boundary_steps_doubled = _entry(replace(_BOUNDARY, steps=10), steps=5)
boundary_noise_sqrt2 = _entry(replace(_BOUNDARY, noise_factor=1 / math.sqrt(2)))


def _noise_factor_for(ratio: float, step: trainer.Step) -> float:
    """The noise factor whose true ε is ``ratio`` × the claim of ``step`` (full batch: ε of the Gaussian at σ·f)."""
    claimed = gaussian_epsilon(noise_multiplier=step.sigma, compositions=step.steps, delta=DELTA,
                               sampling_rate=step.q)  # fmt: skip
    sigma = calibrate_noise(epsilon=ratio * claimed, delta=DELTA, compositions=step.steps, sampling_rate=step.q)
    return sigma / step.sigma


boundary_epsilon_1_5x = _entry(replace(_BOUNDARY, noise_factor=_noise_factor_for(1.5, _BOUNDARY)))  # ε 1.5× the claim

# ---- user forms: θ0 drawn from the seed, init_seed accepted (docs/byo.md, "θ0 first") --------------------------------
correct_user = _user(correct)
boundary_correct_user = _user(boundary_correct)
no_clipping_user = _user(no_clipping)
boundary_noise_sqrt2_user = _user(boundary_noise_sqrt2)

# ---- documented limits: measured, not asserted ---------------------------------------------------------------------
noise_reused_across_steps = _entry(replace(BASE, noise_key="step"))  # the final model only
noise_reused_across_steps_user = _user(noise_reused_across_steps)


def loss_with_nan():
    """A training that diverges (its loss is NaN): the harness must say so."""
    made = _training(BASE, _claim(BASE))
    made["train_batch"] = lambda data, seeds: torch.full((len(seeds), BASE.parameters), float("nan"))
    made["train"] = lambda data, seed: torch.full((BASE.parameters,), float("nan"))
    return made
