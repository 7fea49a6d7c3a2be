"""Yoon, Jeung & No (2025), the adversary's work on a trained run: the audit samples a_c, a_ude, a_ade, black-box
surrogates, and the scores of every model.

x_a starts at the canary, every pixel is free, the label stays the canary's; the objectives are the paper's UDE
and ADE (:func:`objective`; a recipe may standardise them, ``craft.objective: snr``), minimised on the whole crafting population as a
:class:`~hsaudit.experiments.yoon.recipe.CraftRecipe` says (:func:`craft_sample`). In the black box, the models are
replaced by surrogates distilled from their output probabilities (:func:`distill_surrogates`). A model's score is
the registry's ``final`` entry, −ℓ(model(x_a), y_c) (:data:`SCORE`, :func:`sample_scores`; higher ⇒ trained on D′).
:func:`craft_run` is what an audit job runs before :mod:`hsaudit.experiments.yoon.audit` audits the scores.

A module of its own, beside :mod:`hsaudit.experiments.yoon.train`: it imports the engine (losses and gradients of
the models) but no training job imports it, so editing the crafting reruns the audits and never a population.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
import torch

from hsaudit.engine.dpsgd import init_theta0, pick_device
from hsaudit.engine.models import ModelSpec, require_spec
from hsaudit.engine.psg import population_engine
from hsaudit.experiments.yoon.recipe import PAPER_RECIPE, CraftRecipe
from hsaudit.experiments.yoon.train import Canary
from hsaudit.util.scores import score_entry
from hsaudit.util.seeding import derive_seed

ADVERSARIES = ("a_c", "a_ude", "a_ade")


@functools.lru_cache(maxsize=8)
def func_engine(spec: ModelSpec, device: torch.device):
    """The torch.func population engine of the architecture ``spec`` on ``device`` (built once: crafting and
    distillation call it at every optimisation step); its losses and logits are differentiable in both θ and x."""
    return population_engine(require_spec(spec, "spec"), device, backend="func")


# --------------------------------------------------------------------------------------- losses and crafting


SCORE = score_entry("final")
"""Yoon et al.'s score, an entry of the score registry (:data:`hsaudit.util.scores.SCORES`): the final model's
−ℓ(θ; x_a, y_c) (higher ⇒ trained on D′), computed by :func:`input_scores` for the audit (:func:`sample_scores`) and
for a recipe's validation stop at every crafting step (:func:`craft_sample`)."""


def input_scores(engine, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """:data:`SCORE` ``[m]`` of the input ``x [1, ...]`` with label ``y [1]`` for every model ``theta [m, p]``, as
    its registry entry says (``final``: −ℓ(θ; x, y))."""
    if SCORE.name != "final":
        raise ValueError(f"Yoon et al.'s audit samples are input canaries: no computation of score {SCORE.name!r}")
    return -engine.loss(theta, x, y)[:, 0]


def _tensors(spec: ModelSpec, theta, x, y: int, device) -> tuple[Any, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(engine, θ ``[m, p]``, x ``[1, ...]``, y ``[1]``) on the device for one input of the models ``theta``."""
    dev = pick_device(device)
    th = torch.as_tensor(np.asarray(theta, np.float32), device=dev)
    xt = torch.as_tensor(np.asarray(x, np.float32), device=dev)[None]
    return func_engine(spec, dev), th, xt, torch.tensor([int(y)], device=dev)


def sample_losses(spec: ModelSpec, theta: npt.ArrayLike | torch.Tensor, x: npt.ArrayLike, y: int, *, device=None) -> np.ndarray:
    """ℓ(θ_i(x), y) ``[m]`` of one input for every model ``theta`` ``[m, p]`` (no gradient)."""
    engine, th, xt, yt = _tensors(spec, theta, x, y, device)
    with torch.no_grad():
        return engine.loss(th, xt, yt)[:, 0].double().cpu().numpy()


def objective(name: str, loss_out: torch.Tensor, loss_in: torch.Tensor, *, margin: float,
              kind: str = "loss_difference") -> torch.Tensor:
    """The crafting objective (to minimise) from the losses of the D models ``loss_out`` and D′ models ``loss_in``.

    ``kind="loss_difference"`` (the paper's): ``a_ude``: mean(ℓ′) − mean(ℓ); ``a_ade``: mean(ReLU(ℓ′ − mean(ℓ) + α)).

    ``kind="snr"``: the same objectives on losses divided by their pooled sd s = √((var ℓ + var ℓ′)/2), so that
    ``a_ude`` is −(mean ℓ − mean ℓ′)/s, minus the moment estimate of μ of the scores −ℓ (:func:`moment_mu`, what
    the validation stop scores: minimising it raises the audit's separation, not only the mean gap, which a
    sample can also grow by spreading the losses); ``a_ade`` is mean(ReLU((ℓ′ − mean ℓ)/s + α)), its margin α in
    sd units. [inferred: not in the paper.]

    >>> import torch
    >>> out, inn = torch.tensor([2.0, 4.0]), torch.tensor([0.0, 2.0])   # means 3 and 1, pooled sd √2
    >>> round(float(objective("a_ude", out, inn, margin=0.0, kind="snr")), 4)
    -1.4142
    """
    if kind == "snr":
        sd = torch.sqrt((loss_out.var() + loss_in.var()) / 2).clamp_min(1e-12)
        loss_out, loss_in = loss_out / sd, loss_in / sd
    elif kind != "loss_difference":
        raise ValueError(f"crafting objective kind must be 'loss_difference' or 'snr', got {kind!r}")
    if name == "a_ude":
        return loss_in.mean() - loss_out.mean()
    if name == "a_ade":
        return torch.relu(loss_in - loss_out.mean() + float(margin)).mean()
    raise ValueError(f"crafting objective must be 'a_ude' or 'a_ade', got {name!r}")


def project(x: torch.Tensor, start: torch.Tensor, recipe: CraftRecipe, bounds=None) -> torch.Tensor:
    """x projected onto the recipe's constraints: the distance ball around ``start``, then the pixel box ``bounds``
    (``(lo, hi)`` tensors broadcastable to x; the box is applied last, so a point is always a valid image).

    >>> import torch
    >>> r = CraftRecipe(budget_norm="l2", budget=1.0)
    >>> project(torch.tensor([3.0, 4.0]), torch.zeros(2), r).tolist()
    [0.6000000238418579, 0.800000011920929]
    """
    if recipe.budget_norm == "linf":
        x = start + (x - start).clamp(-recipe.budget, recipe.budget)
    elif recipe.budget_norm == "l2":
        delta = x - start
        norm = float(delta.norm())
        if norm > recipe.budget:
            x = start + delta * (recipe.budget / norm)
    if recipe.pixel_range and bounds is not None:
        x = torch.maximum(torch.minimum(x, bounds[1]), bounds[0])
    return x


def moment_mu(scores: torch.Tensor, members: torch.Tensor) -> float:
    """(mean s_in − mean s_out) / pooled sd: a moment estimate of the GDP μ that separates the two worlds."""
    s_in, s_out = scores[members].double(), scores[~members].double()
    sd = float(torch.sqrt((s_in.var() + s_out.var()) / 2)) if min(s_in.numel(), s_out.numel()) > 1 else 0.0
    return float((s_in.mean() - s_out.mean()) / sd) if sd > 0 else 0.0


@dataclass(frozen=True)
class CraftedSample:
    """An audit sample: x_a, its fixed label, the objective along the optimisation (first and last value), and
    the step that was kept (``steps`` unless a validation population chose an earlier checkpoint; 0 = the canary)
    with its validation μ̂ (NaN without one); ``distance``: ‖x_a − x_c‖₂ in the normalised space (0 for a_c), which
    says whether a distance budget bound."""

    adversary: str
    x: np.ndarray
    y: int
    margin: float
    objective_start: float
    objective_end: float
    selected_step: int = 0
    validation_mu: float = float("nan")
    distance: float = 0.0


def _members(members: npt.ArrayLike, n: int, device) -> torch.Tensor:
    bits = torch.as_tensor(np.asarray(members).astype(bool), device=device)
    if bits.shape != (n,) or bits.all() or not bits.any():
        raise ValueError("members must hold one bit per model, with both worlds present")
    return bits


def craft_sample(
    adversary: str,
    *,
    spec: ModelSpec,
    theta: npt.ArrayLike,
    members: npt.ArrayLike,
    canary: Canary,
    margin: float = 0.2,
    recipe: CraftRecipe = PAPER_RECIPE,
    pixel_bounds: tuple[npt.ArrayLike, npt.ArrayLike] | None = None,
    validation: tuple[npt.ArrayLike, npt.ArrayLike] | None = None,
    device: str | None = None,
) -> CraftedSample:
    """Craft the audit sample of ``adversary`` (:data:`ADVERSARIES`) on the models ``theta`` ``[m, p]``.

    ``a_c`` returns the canary. ``a_ude`` / ``a_ade`` optimise every pixel of x_a from x_c (label fixed to y_c), each
    step on the whole crafting population, as the :class:`CraftRecipe` says; :data:`PAPER_RECIPE` is the paper's
    reading (Adam, lr 0.01, 100 steps) [inferred: the paper gives no optimiser]. Deterministic given its inputs.

    Args:
        spec: the models' architecture (:func:`hsaudit.engine.models.model_spec`).
        pixel_bounds: ``(lo, hi)`` of the data's pixels in the normalised space (needed by ``recipe.pixel_range``).
        validation: ``(theta_v, members_v)`` of a validation population (needed by ``recipe.stop_on_validation``).
    """
    if adversary not in ADVERSARIES:
        raise ValueError(f"adversary must be one of {ADVERSARIES}, got {adversary!r}")
    if adversary == "a_c":
        return CraftedSample("a_c", canary.x, canary.y, float("nan"), float("nan"), float("nan"))
    if recipe.pixel_range and pixel_bounds is None:
        raise ValueError("craft.pixel_range needs the data's pixel bounds")
    if recipe.stop_on_validation and validation is None:
        raise ValueError("craft.stop_on_validation needs a validation population (yoon.validation_models_per_world)")
    dev = pick_device(device)
    engine = func_engine(spec, dev)
    th = torch.as_tensor(np.asarray(theta, np.float32), device=dev)
    bits = _members(members, th.shape[0], dev)
    start = torch.tensor(np.asarray(canary.x, np.float32)[None], device=dev)
    bounds = None
    if pixel_bounds is not None:
        bounds = tuple(torch.as_tensor(np.asarray(b, np.float32), device=dev) for b in pixel_bounds)
    y = torch.tensor([int(canary.y)], device=dev)
    check = None
    if recipe.stop_on_validation:
        th_v = torch.as_tensor(np.asarray(validation[0], np.float32), device=dev)
        bits_v = _members(validation[1], th_v.shape[0], dev)

        def check(x: torch.Tensor) -> float:
            with torch.no_grad():
                return moment_mu(input_scores(engine, th_v, x, y), bits_v)

    x = start.clone().requires_grad_(True)
    opt = torch.optim.Adam([x], lr=recipe.lr) if recipe.optimizer == "adam" else None
    values = []
    best = (check(start), 0, start.clone()) if check else None
    for step in range(1, int(recipe.steps) + 1):
        losses = engine.loss(th, x, y)[:, 0]
        value = objective(adversary, losses[~bits], losses[bits], margin=margin, kind=recipe.objective)
        values.append(value.item())
        if opt is not None:
            opt.zero_grad()
            value.backward()
            opt.step()
        else:
            (grad,) = torch.autograd.grad(value, x)
            with torch.no_grad():
                x -= recipe.lr * (grad.sign() if recipe.optimizer == "sign_sgd" else grad)
        if recipe.budget_norm is not None or (recipe.pixel_range and bounds is not None):
            with torch.no_grad():
                x.copy_(project(x, start, recipe, bounds))
        if check and (step % int(recipe.check_every) == 0 or step == int(recipe.steps)):
            mu = check(x.detach())
            if mu > best[0]:
                best = (mu, step, x.detach().clone())
    chosen, selected, mu_v = x.detach(), int(recipe.steps), float("nan")
    if best is not None:
        mu_v, selected, chosen = best
    with torch.no_grad():
        losses = engine.loss(th, chosen, y)[:, 0]
        final = float(objective(adversary, losses[~bits], losses[bits], margin=margin, kind=recipe.objective))
    return CraftedSample(adversary, chosen[0].cpu().numpy(), int(canary.y), float(margin), values[0], final,
                         selected_step=selected, validation_mu=float(mu_v),
                         distance=float((chosen - start).norm()))  # fmt: skip


# ---------------------------------------------------------------------------------------------- black box


def population_logits(spec: ModelSpec, theta: torch.Tensor, x: torch.Tensor, *, device=None) -> torch.Tensor:
    """Logits ``[m, n, classes]`` of the models ``theta`` ``[m, p]`` on ``x`` (differentiable in both)."""
    engine = func_engine(spec, pick_device(device))

    def one(params):
        return engine.params.call(params, x)

    return torch.func.vmap(one)(engine.params.split(theta))


def distill_surrogates(
    *,
    spec: ModelSpec,
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
            [torch.log_softmax(population_logits(spec, targets_t, Xq[i : i + 512], device=dev), -1) for i in range(0, n, 512)],
            dim=1,
        )
    start = np.stack(
        [init_theta0(spec, scheme="xavier_normal", seed=derive_seed(seed, "surrogate", i), bias=bias) for i in range(m)]
    )
    theta = torch.tensor(start, device=dev, requires_grad=True)
    opt = torch.optim.Adam([theta], lr=lr)
    gen = torch.Generator().manual_seed(derive_seed(seed, "surrogate-batches") % 2**63)
    for _ in range(int(epochs)):
        for rows in torch.randperm(n, generator=gen).split(int(batch_size)):
            rows = rows.to(dev)
            opt.zero_grad()
            log_q = torch.log_softmax(population_logits(spec, theta, Xq[rows], device=dev), -1)
            log_p = teacher[:, rows]
            loss = (log_p.exp() * (log_p - log_q)).sum(-1).mean(-1).sum()  # Σ over surrogates of their mean KL
            loss.backward()
            opt.step()
    return theta.detach().cpu().numpy()


# --------------------------------------------------------------------------------------------- scores


def sample_scores(spec: ModelSpec, theta: npt.ArrayLike, sample: CraftedSample, *, device=None) -> np.ndarray:
    """The score (:data:`SCORE`) of every model ``theta`` ``[m, p]`` of architecture ``spec``: −ℓ(model(x_a), y)
    (higher ⇒ trained on D′), float64."""
    engine, th, xt, yt = _tensors(spec, theta, sample.x, sample.y, device)
    with torch.no_grad():
        return input_scores(engine, th, xt, yt).double().cpu().numpy()


SPLITS = ("same", "held-out")
"""Where x_a is scored: on the crafting population (``same``, the paper's reading) and on the independent audit
population (``held-out``, fresh noise: a valid audit)."""


def craft_run(
    run: Mapping[str, Any],
    data: Mapping[str, np.ndarray],
    *,
    spec: Mapping[str, Any],
    population: Mapping[str, Any],
    arch: ModelSpec,
    audit_key: str,
    run_index: int,
    device: str | None = None,
) -> tuple[list[CraftedSample], pd.DataFrame]:
    """Craft the audit samples of one run and score every model of its crafting and audit populations.

    x_a is crafted on the crafting population (white box: the models; black box: surrogates distilled from their
    outputs on D′'s inputs): a_c, a_ude, and a_ade at every margin of the audit.

    Args:
        run: the run's arrays (:func:`hsaudit.experiments.yoon.train.train_run`).
        data: the prepared data (``X``, ``mean``, ``std``).
        spec: the audit's values (``audits`` of :class:`hsaudit.experiments.yoon.plan.YoonPlan`); population: its
            population's training values; arch: the architecture ``population["model"]`` names, resolved once by
            the caller (:func:`hsaudit.engine.models.model_spec`).
        audit_key: the audit's key and ``run_index`` the run's index (they seed the surrogates).

    Returns:
        ``(samples, scores)``: the crafted samples, and one score row per sample × split (:data:`SPLITS`) × model
        (run, adversary, margin (NaN but for a_ade), split, model_index, member, score).
    """
    arch = require_spec(arch, "arch")
    members = run["members"]
    # Populations written before the crafting population had its own size share the audit population's bits.
    craft_members = run.get("craft_members", members)
    canary = Canary.from_arrays(run)
    crafting_models = run["craft_theta"]
    recipe = CraftRecipe.from_config(spec["craft"])
    # The data's pixel range [0, 1] in the normalised space, per channel.
    shape = (-1,) + (1,) * (canary.x.ndim - 1)
    mean, std = np.asarray(data["mean"], np.float32).reshape(shape), np.asarray(data["std"], np.float32).reshape(shape)
    pixel_bounds = ((0.0 - mean) / std, (1.0 - mean) / std)
    validation = None
    if "validation_theta" in run:
        validation = (run["validation_theta"], run["validation_members"])
    if spec["access"] == "black":
        query = np.concatenate([data["X"], canary.x[None]])
        s = spec["surrogate"]
        crafting_models = distill_surrogates(
            spec=arch, targets=run["craft_theta"], X_query=query, epochs=s["epochs"], batch_size=s["batch_size"],
            lr=s["lr"], seed=derive_seed(population["seed"], "yoon-surrogates", audit_key, run_index), device=device,
        )  # fmt: skip
    samples = [craft_sample("a_c", spec=arch, theta=crafting_models, members=craft_members, canary=canary)]
    for adversary in ("a_ude", "a_ade"):
        for margin in spec["margins"] if adversary == "a_ade" else [float("nan")]:
            samples.append(
                craft_sample(
                    adversary, spec=arch, theta=crafting_models, members=craft_members, canary=canary,
                    margin=0.0 if np.isnan(margin) else margin, recipe=recipe, pixel_bounds=pixel_bounds,
                    validation=validation, device=device,
                )  # fmt: skip
            )
    scored = {"same": ("craft_theta", craft_members), "held-out": ("audit_theta", members)}
    frames = []
    for sample in samples:
        margin = sample.margin if sample.adversary == "a_ade" else float("nan")
        for split in SPLITS:
            key, bits = scored[split]
            s = sample_scores(arch, run[key], sample, device=device)
            frames.append(pd.DataFrame({"run": run_index, "adversary": sample.adversary, "margin": margin,
                                        "split": split, "model_index": np.arange(s.size), "member": bits,
                                        "score": s}))  # fmt: skip
    return samples, pd.concat(frames, ignore_index=True)


def sample_table(samples: list[CraftedSample]) -> pd.DataFrame:
    """What the audit rows say of each crafted sample: adversary, margin (NaN but for a_ade), the objective's first
    and last value, the kept step and its validation μ̂, and ‖x_a − x_c‖₂ (``distance``)."""
    return pd.DataFrame(
        [{"adversary": s.adversary, "margin": s.margin if s.adversary == "a_ade" else float("nan"),
          "objective_start": s.objective_start, "objective_end": s.objective_end,
          "selected_step": s.selected_step, "validation_mu": s.validation_mu, "distance": s.distance}
         for s in samples]
    )  # fmt: skip
