"""Reference trainer: ONE model at a time with Opacus (the slow, trusted path the population trainer must match).

Opacus does the privacy-relevant work: :class:`opacus.GradSampleModule` computes the per-sample gradients and
:meth:`opacus.optimizers.DPOptimizer.clip_and_accumulate` clips them (factor ``min(1, C / (‖g‖ + 1e-6))``) and
sums them. The rest of the step of Cebere et al. Eq. 2 is written out here, because the audit needs what Opacus
cannot do by itself: a fixed, known batch schedule (no Poisson sampling), an explicit noise tensor (so that a
test can feed both trainers the same noise), and the adversary's insertion:

    p.grad = (clipped sum + [b ∧ t % k = 0] ∇*  + σ C z_t) / B,   then plain SGD  θ ← θ − η p.grad.

For A_L the canary (x*, y*) is appended to the batch of an inserted run at insertion steps, so Opacus clips it
like any sample; the normaliser stays the nominal B.

Full-batch DP-SGD (Yoon et al., docs/yoon.md: B = |D|, no sampling, D′ = D ∪ {canary}) needs no mode of its own:
a schedule whose every row is all of D (:func:`hsaudit.experiments.yoon.populations.full_batch_schedule`), ``batch_size = n``, period 1
and a canary :class:`~hsaudit.experiments.cebere.train.adversaries.Crafted` (``label_flip``) appends the canary to every step's batch and
divides by |D| (tests/engine/test_full_batch.py).
"""

from __future__ import annotations

import warnings

import numpy as np
import numpy.typing as npt
import torch
from opacus import GradSampleModule
from opacus.optimizers import DPOptimizer

from hsaudit.experiments.cebere.train.adversaries import Crafted, canonical_adversary, score, validate_crafted
from hsaudit.engine.models import build_model, count_parameters, load_flat_parameters, loss_name, per_sample_loss
from hsaudit.engine.dpsgd import DPSGDConfig, Setup, check_data


def train_reference(
    *,
    model: str,
    model_kwargs: dict,
    X: npt.ArrayLike,
    y: npt.ArrayLike,
    setup: Setup,
    config: DPSGDConfig,
    crafted: Crafted,
    bit: int,
    noise: npt.ArrayLike | None,
    theta0: npt.ArrayLike | None = None,
    known_theta0: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Train one model with Opacus on the audit's fixed schedule.

    Args:
        model, model_kwargs: architecture.
        X, y: training set.
        setup: θ0 and the batch schedule.
        config: DP-SGD hyper-parameters.
        crafted: the adversary's object.
        bit: 1 = inserted.
        noise: standard normals ``[steps, p]`` (multiplied by σC here), e.g.
            :func:`hsaudit.engine.dpsgd.model_noise`; ``None`` only when σ = 0.
        theta0: this model's own initialisation ``[p]`` (per-model θ0); ``None``: ``setup.theta0``.
        known_theta0: whether the score subtracts θ0 (:func:`hsaudit.experiments.cebere.train.adversaries.make_scorer`).

    Returns:
        ``(scores, theta_T)``: the oriented scores ``[T // k]`` (float64) after every insertion step (same
        convention as :func:`hsaudit.experiments.cebere.train.shards.train_shard`) and the final flat parameters ``[p]`` (float32).
    """
    X, y = check_data(model, model_kwargs, X, y, setup)
    if bit not in (0, 1):
        raise ValueError(f"bit must be 0 or 1, got {bit}")
    torch_model = build_model(model, **model_kwargs)
    p = count_parameters(torch_model)
    validate_crafted(crafted, p=p, model=model, model_kwargs=model_kwargs)
    if config.noise_multiplier > 0:
        if noise is None or np.shape(noise) != (config.steps, p):
            raise ValueError(f"noise must have shape ({config.steps}, {p}), got {np.shape(noise)}")
        noise_t = torch.as_tensor(np.asarray(noise, dtype=np.float32))
    start = setup.theta0 if theta0 is None else np.asarray(theta0, dtype=np.float32)
    if start.shape != (p,):
        raise ValueError(f"theta0 must have shape ({p},), got {start.shape}")
    load_flat_parameters(torch_model, torch.from_numpy(np.ascontiguousarray(start)))
    gsm = GradSampleModule(torch_model, loss_reduction="sum")
    params = [q for q in gsm.parameters() if q.requires_grad]
    optimizer = DPOptimizer(
        torch.optim.SGD(params, lr=config.lr),
        noise_multiplier=0.0,  # noise is added below from the explicit tensor
        max_grad_norm=config.clip_norm,
        expected_batch_size=config.batch_size,
        loss_reduction="sum",
    )
    kind = loss_name(model, **model_kwargs)
    name = canonical_adversary(crafted.adversary)
    gradient = None if crafted.gradient is None else torch.as_tensor(crafted.gradient, dtype=torch.float32)
    Xt, yt = torch.from_numpy(X), torch.from_numpy(y)
    scores, snapshots = [], []
    for t in range(1, config.steps + 1):
        inserting = bool(bit) and t % config.period == 0
        idx = torch.tensor(setup.batches[t - 1])  # a copy: the schedule may be read-only (np.broadcast_to)
        xb, yb = Xt[idx], yt[idx]
        if inserting and name == "label_flip":
            xb = torch.cat([xb, torch.as_tensor(np.asarray(crafted.canary_x, dtype=np.float32))[None]])
            yb = torch.cat([yb, torch.as_tensor(np.asarray(crafted.canary_y, dtype=np.int64)).reshape(1)])
        optimizer.zero_grad(set_to_none=True)
        with warnings.catch_warnings():
            # Opacus' hooks warn that the inputs do not require gradients: expected, harmless.
            warnings.filterwarnings("ignore", message="Full backward hook is firing")
            per_sample_loss(kind, gsm(xb), yb).sum().backward()
        optimizer.clip_and_accumulate()
        extra = torch.zeros(p)
        if inserting and gradient is not None:
            extra = extra + gradient
        if config.noise_multiplier > 0:
            extra = extra + config.noise_multiplier * config.clip_norm * noise_t[t - 1]
        offset = 0
        for q in params:
            n = q.numel()
            q.grad = ((q.summed_grad + extra[offset : offset + n].view_as(q)) / config.batch_size).view_as(q)
            offset += n
        optimizer.original_optimizer.step()
        if t % config.period == 0:
            snapshots.append(torch.cat([q.detach().reshape(-1) for q in params]).clone())
    optimizer.zero_grad(set_to_none=True)
    thetas = torch.stack(snapshots).numpy()
    scores = score(crafted, thetas, start, model=model, model_kwargs=model_kwargs, known_theta0=known_theta0)
    return scores, thetas[-1]
