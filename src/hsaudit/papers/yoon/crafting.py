"""Yoon, Jeung & No (2025), auditor side: the audit samples a_c, a_ude, a_ade, black-box surrogates, the audit.

x_a starts at the canary, every pixel is free, the label stays the canary's; the objectives are the paper's UDE
and ADE (:func:`objective`), minimised with Adam on the whole crafting population (:func:`craft_sample`). In the black
box, the models are replaced by surrogates distilled from their output probabilities (:func:`distill_surrogates`).
A model's score is −ℓ(model(x_a), y_c); :func:`audit_sample` runs the project's GDP audit on it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import torch

from hsaudit.audit.gdp import audit_scores
from hsaudit.engine.psg import population
from hsaudit.util.seeding import derive_seed
from hsaudit.engine.dpsgd import init_theta0, pick_device
from hsaudit.papers.yoon.populations import Canary

ADVERSARIES = ("a_c", "a_ude", "a_ade")


@functools.lru_cache(maxsize=8)
def func_engine(model: str, device: torch.device):
    """The torch.func population engine of ``model`` on ``device`` (built once: crafting and distillation call it
    at every optimisation step); its losses and logits are differentiable in both θ and x."""
    return population(model, {}, device, backend="func")


# --------------------------------------------------------------------------------------- losses and crafting


def sample_losses(model: str, theta: npt.ArrayLike | torch.Tensor, x: npt.ArrayLike, y: int, *, device=None) -> np.ndarray:
    """ℓ(θ_i(x), y) ``[m]`` of one input for every model ``theta`` ``[m, p]`` (no gradient)."""
    dev = pick_device(device)
    engine = func_engine(model, dev)
    th = torch.as_tensor(np.asarray(theta, np.float32), device=dev)
    xt = torch.as_tensor(np.asarray(x, np.float32), device=dev)[None]
    with torch.no_grad():
        return engine.loss(th, xt, torch.tensor([int(y)], device=dev))[:, 0].double().cpu().numpy()


def objective(name: str, loss_out: torch.Tensor, loss_in: torch.Tensor, *, margin: float) -> torch.Tensor:
    """The crafting objective (to minimise) from the losses of the D models ``loss_out`` and D′ models ``loss_in``.

    ``a_ude``: mean(ℓ′) − mean(ℓ); ``a_ade``: mean(ReLU(ℓ′ − mean(ℓ) + α)).
    """
    if name == "a_ude":
        return loss_in.mean() - loss_out.mean()
    if name == "a_ade":
        return torch.relu(loss_in - loss_out.mean() + float(margin)).mean()
    raise ValueError(f"crafting objective must be 'a_ude' or 'a_ade', got {name!r}")


@dataclass(frozen=True)
class CraftedSample:
    """An audit sample: x_a, its fixed label and the objective along the optimisation (first and last value)."""

    adversary: str
    x: np.ndarray
    y: int
    margin: float
    objective_start: float
    objective_end: float


def craft_sample(
    adversary: str,
    *,
    model: str,
    theta: npt.ArrayLike,
    members: npt.ArrayLike,
    canary: Canary,
    margin: float = 0.2,
    steps: int = 100,
    lr: float = 0.01,
    device: str | None = None,
) -> CraftedSample:
    """Craft the audit sample of ``adversary`` (:data:`ADVERSARIES`) on the models ``theta`` ``[m, p]``.

    ``a_c`` returns the canary. ``a_ude`` / ``a_ade`` run ``steps`` Adam steps (learning rate ``lr``) on every
    pixel of x_a from x_c, the label fixed to y_c, each step on the whole population [inferred: the paper gives
    no optimiser; Adam, lr 0.01]. Deterministic given its inputs.
    """
    if adversary not in ADVERSARIES:
        raise ValueError(f"adversary must be one of {ADVERSARIES}, got {adversary!r}")
    if adversary == "a_c":
        return CraftedSample("a_c", canary.x, canary.y, float("nan"), float("nan"), float("nan"))
    if steps < 1 or not lr > 0:
        raise ValueError(f"crafting needs steps >= 1 and lr > 0, got steps={steps}, lr={lr}")
    dev = pick_device(device)
    engine = func_engine(model, dev)
    th = torch.as_tensor(np.asarray(theta, np.float32), device=dev)
    bits = torch.as_tensor(np.asarray(members).astype(bool), device=dev)
    if bits.shape != (th.shape[0],) or bits.all() or not bits.any():
        raise ValueError("members must hold one bit per model, with both worlds present")
    x = torch.tensor(np.asarray(canary.x, np.float32)[None], device=dev, requires_grad=True)
    y = torch.tensor([int(canary.y)], device=dev)
    opt = torch.optim.Adam([x], lr=lr)
    values = []
    for _ in range(int(steps)):
        opt.zero_grad()
        losses = engine.loss(th, x, y)[:, 0]
        value = objective(adversary, losses[~bits], losses[bits], margin=margin)
        values.append(value.item())
        value.backward()
        opt.step()
    with torch.no_grad():
        losses = engine.loss(th, x, y)[:, 0]
        final = float(objective(adversary, losses[~bits], losses[bits], margin=margin))
    return CraftedSample(adversary, x.detach()[0].cpu().numpy(), int(canary.y), float(margin), values[0], final)


# ---------------------------------------------------------------------------------------------- black box


def population_logits(model: str, theta: torch.Tensor, x: torch.Tensor, *, device=None) -> torch.Tensor:
    """Logits ``[m, n, classes]`` of the models ``theta`` ``[m, p]`` on ``x`` (differentiable in both)."""
    engine = func_engine(model, pick_device(device))

    def one(params):
        return engine.params.call(params, x)

    return torch.func.vmap(one)(engine.params.split(theta))


def distill_surrogates(
    *,
    model: str,
    targets: npt.ArrayLike,
    X_query: npt.ArrayLike,
    seed: int,
    epochs: int = 20,
    batch_size: int = 128,
    lr: float = 1e-3,
    bias: float = 0.01,
    device: str | None = None,
) -> np.ndarray:
    """One surrogate per target model, distilled from its output probabilities on ``X_query`` (black box).

    Every surrogate has the target's architecture, its own Xavier-normal initialisation (bias ``bias``) drawn
    from (seed, i), and minimises KL(p_target ‖ p_surrogate) over ``epochs`` passes of shuffled minibatches of
    ``X_query`` with Adam [inferred: the paper gives no distillation details]. All surrogates train at once.

    Returns:
        float32 ``[m, p]``.
    """
    dev = pick_device(device)
    targets_t = torch.as_tensor(np.asarray(targets, np.float32), device=dev)
    Xq = torch.as_tensor(np.asarray(X_query, np.float32), device=dev)
    m, n = targets_t.shape[0], Xq.shape[0]
    with torch.no_grad():
        teacher = torch.cat(
            [torch.log_softmax(population_logits(model, targets_t, Xq[i : i + 512], device=dev), -1) for i in range(0, n, 512)],
            dim=1,
        )
    start = np.stack([init_theta0(model, {}, scheme="xavier_normal", seed=derive_seed(seed, "surrogate", i), bias=bias) for i in range(m)])
    theta = torch.tensor(start, device=dev, requires_grad=True)
    opt = torch.optim.Adam([theta], lr=lr)
    gen = torch.Generator().manual_seed(derive_seed(seed, "surrogate-batches") % 2**63)
    for _ in range(int(epochs)):
        for rows in torch.randperm(n, generator=gen).split(int(batch_size)):
            rows = rows.to(dev)
            opt.zero_grad()
            log_q = torch.log_softmax(population_logits(model, theta, Xq[rows], device=dev), -1)
            log_p = teacher[:, rows]
            loss = (log_p.exp() * (log_p - log_q)).sum(-1).mean(-1).sum()  # Σ over surrogates of their mean KL
            loss.backward()
            opt.step()
    return theta.detach().cpu().numpy()


# ------------------------------------------------------------------------------------------------ audit


def audit_sample(
    *,
    model: str,
    theta: npt.ArrayLike,
    members: npt.ArrayLike,
    sample: CraftedSample,
    delta: float,
    confidence: float,
    mode: str,
    seed: int,
    selection_fraction: float = 0.5,
    device: str | None = None,
) -> tuple[dict[str, float], np.ndarray]:
    """Score every model by −ℓ(model(x_a), y) and run the GDP audit; return (the audit's fields, scores ``[m]``)."""
    scores = -sample_losses(model, theta, sample.x, sample.y, device=device)
    result = audit_scores(
        scores, members, delta=delta, confidence=confidence, mode=mode, rng=seed, selection_fraction=selection_fraction
    )
    return result.to_dict(), scores
