"""Reference trainer: ONE model at a time with Opacus (the slow, trusted path the population engine must match).

Opacus does the privacy-relevant work: :class:`opacus.GradSampleModule` computes the per-sample gradients and
:meth:`opacus.optimizers.DPOptimizer.clip_and_accumulate` clips them (factor ``min(1, C / (‖g‖ + 1e-6))``) and
sums them. The rest of the step of Cebere et al. Eq. 2 is written out here, because an audit needs what Opacus
cannot do by itself: a fixed, known batch schedule (no Poisson sampling), an explicit noise tensor (so that a
test can feed both trainers the same noise), and the insertion:

    p.grad = (clipped sum + [b ∧ t % k = 0] ∇*  + σ C z_t) / B,   then plain SGD  θ ← θ − η p.grad,

and, for an input canary (x*, y*), the canary appended to the batch of an inserted run at insertion steps, where
Opacus clips it like any sample; the normaliser stays the nominal B. This is :func:`hsaudit.engine.dpsgd.run_population`
for one model: the same insertion (a gradient and/or a canary, the same ``bit``), the same schedule and noise.

Full-batch DP-SGD (Yoon et al., docs/yoon.md: B = |D|, no sampling, D′ = D ∪ {canary}) needs no mode of its own:
a schedule whose every row is all of D, ``batch_size = n``, period 1 and the canary appended at every step
(tests/engine/test_full_batch.py).

Like the rest of the engine it knows nothing of adversaries: a caller that scores turns the snapshots it returns
into scores (e.g. :func:`hsaudit.experiments.cebere.train.adversaries.score`).
"""

from __future__ import annotations

import warnings

import numpy as np
import numpy.typing as npt
import torch
from opacus import GradSampleModule
from opacus.optimizers import DPOptimizer

from hsaudit.engine.architectures import count_parameters, load_flat_parameters, per_sample_loss
from hsaudit.engine.dpsgd import DPSGDConfig, Setup, check_data
from hsaudit.engine.models import ModelSpec


def train_reference(
    *,
    spec: ModelSpec,
    X: npt.ArrayLike,
    y: npt.ArrayLike,
    setup: Setup,
    config: DPSGDConfig,
    bit: int,
    noise: npt.ArrayLike | None,
    gradient: npt.ArrayLike | torch.Tensor | None = None,
    canary: tuple[npt.ArrayLike | torch.Tensor, npt.ArrayLike | torch.Tensor] | None = None,
    theta0: npt.ArrayLike | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Train one model with Opacus on the audit's fixed schedule.

    Args:
        spec: the architecture (:func:`hsaudit.engine.models.model_spec`).
        X, y: training set.
        setup: θ0 and the batch schedule.
        config: DP-SGD hyper-parameters (its ``sampling`` must be ``None``: a fixed schedule).
        bit: 1 = inserted (the insertion is made at steps ``t % k == 0``), 0 = not.
        noise: standard normals ``[steps, p]`` (multiplied by σC here), e.g.
            :func:`hsaudit.engine.dpsgd.model_noise`; ``None`` only when σ = 0.
        gradient: ∇* ``[p]`` added to the clipped sum at insertion steps of an inserted run.
        canary: ``(x*, y*)`` with a batch axis of one (``[1, ...]``, ``[1]``), appended to the batch at insertion steps
            of an inserted run.
        theta0: this model's own initialisation ``[p]`` (per-model θ0); ``None``: ``setup.theta0``.

    Returns:
        ``(thetas, theta_T)``: the flat parameters after every insertion step, float32 ``[T // k, p]`` (what an
        observer of :func:`hsaudit.engine.dpsgd.train_population` sees), and after the last step, ``[p]``.

    Raises:
        ValueError: a bit outside {0, 1}, Poisson sampling, or a noise, θ0, gradient or canary of the wrong shape.
    """
    X, y = check_data(spec, X, y, setup)
    if bit not in (0, 1):
        raise ValueError(f"bit must be 0 or 1, got {bit}")
    if config.sampling is not None:
        raise ValueError(f"the reference trainer runs the fixed schedule, got sampling={config.sampling!r}")
    torch_model = spec.build()
    p = count_parameters(torch_model)
    if config.noise_multiplier > 0:
        if noise is None or np.shape(noise) != (config.steps, p):
            raise ValueError(f"noise must have shape ({config.steps}, {p}), got {np.shape(noise)}")
        noise_t = torch.as_tensor(np.asarray(noise, dtype=np.float32))
    start = setup.theta0 if theta0 is None else np.asarray(theta0, dtype=np.float32)
    if start.shape != (p,):
        raise ValueError(f"theta0 must have shape ({p},), got {start.shape}")
    if gradient is not None:
        gradient = torch.as_tensor(gradient, dtype=torch.float32).cpu()
        if gradient.shape != (p,):
            raise ValueError(f"gradient must have shape ({p},), got {tuple(gradient.shape)}")
    if canary is not None:
        canary_x = torch.as_tensor(canary[0], dtype=torch.float32).cpu()
        canary_y = torch.as_tensor(canary[1], dtype=torch.int64).cpu()
        if canary_x.shape != (1, *X.shape[1:]) or canary_y.shape != (1,):
            raise ValueError(
                f"canary must be (x* [1, {', '.join(map(str, X.shape[1:]))}], y* [1]), got "
                f"{tuple(canary_x.shape)}, {tuple(canary_y.shape)}"
            )
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
    Xt, yt = torch.from_numpy(X), torch.from_numpy(y)
    snapshots = []
    for t in range(1, config.steps + 1):
        inserting = bool(bit) and t % config.period == 0
        idx = torch.tensor(setup.batches[t - 1])  # a copy: the schedule may be read-only (np.broadcast_to)
        xb, yb = Xt[idx], yt[idx]
        if inserting and canary is not None:
            xb, yb = torch.cat([xb, canary_x]), torch.cat([yb, canary_y])
        optimizer.zero_grad(set_to_none=True)
        with warnings.catch_warnings():
            # Opacus' hooks warn that the inputs do not require gradients: expected, harmless.
            warnings.filterwarnings("ignore", message="Full backward hook is firing")
            per_sample_loss(spec.loss, gsm(xb), yb).sum().backward()
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
    final = torch.cat([q.detach().reshape(-1) for q in params]).numpy()
    return torch.stack(snapshots).numpy(), final
