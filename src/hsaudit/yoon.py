"""Yoon, Jeung & No (2025): adversarial-sample audits of the final model of full-batch DP-SGD.

The auditor trains N models on D (the world b = 0, models M_i) and N on D′ = D ∪ {c} (b = 1, models M′_i) with
full-batch DP-SGD, then looks only at the final models through the loss of one input, the *audit sample* a:

- ``a_c``: the canary c itself (the usual input-space audit);
- ``a_ude``: x_a minimising the Uniform Distance Expansion (1/N) Σ_i [ℓ(M′_i(x_a), y) − ℓ(M_i(x_a), y)];
- ``a_ade``: x_a minimising the Adaptive Distance Expansion
  (1/N) Σ_i ReLU(ℓ(M′_i(x_a), y) − (1/N) Σ_j ℓ(M_j(x_a), y) + α).

Both start from x_c, keep the label y_c and leave every pixel free (no projection). The score of a model is
−ℓ(model(x_a), y_c) (higher ⇒ trained on D′), audited with the project's GDP audit (:mod:`hsaudit.audit`).

**Validity.** The paper crafts x_a on the same 2N models that it then audits, so x_a can fit their particular
noise. :func:`audit_run` therefore trains two independent populations per run: x_a is crafted on the first
(``craft``) and scored on the first (``split="same"``, the paper's reading) and on the second
(``split="held-out"``, fresh noise: a valid audit). Both rows are reported.

**Black-box** (§5.3): the auditor sees only each target model's output probabilities. It distils one surrogate
per target (same architecture [inferred], fresh Xavier initialisation, KL divergence to the target's softmax on
D′'s inputs, Adam; :func:`distill_surrogates`), crafts x_a on the surrogates and scores the targets' outputs.

**Worst-case initialisation** θ_worst (Annamalai & De Cristofaro 2024): non-private pre-training on the other
half of the training set (MNIST), or on CIFAR-100 then, with a new last layer, on the other half (CIFAR-10)
(:func:`pretrain`). θ_avg is one Xavier-normal initialisation (bias 0.01) shared by every model of a run.

DP-SGD is the project's engine (:func:`hsaudit.train.train_population`) with the full-batch schedule
(:func:`full_batch_schedule`: every step uses all of D, normaliser |D| in both worlds, the canary appended to the
batch of the D′ models). Spec: ``specs/yoon.md`` of the engineering notes; paper:
``yoon-adversarial-sample-auditing`` (Yoon, Jeung & No 2025).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from hsaudit.accounting import calibrate_noise
from hsaudit.audit import audit_scores
from hsaudit.models import build_model, count_parameters, load_flat_parameters, num_classes
from hsaudit.psg import population
from hsaudit.seeding import derive_seed
from hsaudit.train import DPSGDConfig, init_theta0, pick_device, train_population

DATASET_MODELS = {"mnist": "mnist_cnn", "cifar10": "cifar_cnn"}
"""The architecture of each dataset (specs/yoon.md)."""
CANARIES = ("blank", "in_distribution", "mislabeled", "clipbkd")
ADVERSARIES = ("a_c", "a_ude", "a_ade")
ADVERSARY_LABELS = {"a_c": "$a_c$ (canary)", "a_ude": "$a_{ude}$", "a_ade": "$a_{ade}$"}
SPLITS = ("held-out", "same")
ACCESS = ("white", "black")
INITS = ("avg", "worst")


# ------------------------------------------------------------------------------------------------- DP-SGD


def noise_multiplier(epsilon: float, *, steps: int, delta: float) -> float:
    """σ of T full-batch Gaussian steps that are (ε, δ)-DP: μ-GDP with μ = √T/σ (q = 1, exact)."""
    return calibrate_noise(epsilon=epsilon, delta=delta, compositions=steps, sampling_rate=1.0)


def full_batch_schedule(n: int, steps: int) -> np.ndarray:
    """The schedule ``[steps, n]`` of full-batch DP-SGD: every step uses every row of D, in order."""
    if n < 1 or steps < 1:
        raise ValueError(f"n and steps must be positive, got n={n}, steps={steps}")
    return np.tile(np.arange(n, dtype=np.int64), (steps, 1))


def average_theta0(model: str, *, seed: int, bias: float = 0.01) -> np.ndarray:
    """θ_avg: Xavier-normal weights and constant biases (0.01), drawn once per run from ``seed``."""
    return init_theta0(model, {}, scheme="xavier_normal", seed=seed, bias=bias)


def world_members(models_per_world: int) -> np.ndarray:
    """Membership bits of a population: the first N models are trained on D (0), the last N on D′ (1)."""
    n = int(models_per_world)
    if n < 1:
        raise ValueError(f"models_per_world must be >= 1, got {models_per_world}")
    return np.repeat(np.array([0, 1], dtype=np.int64), n)


def train_worlds(
    *,
    model: str,
    theta0: npt.ArrayLike,
    X: npt.ArrayLike,
    y: npt.ArrayLike,
    canary: Canary,
    models_per_world: int,
    steps: int,
    lr: float,
    clip_norm: float,
    sigma: float,
    noise_key: int,
    insert: bool = True,
    device: str | None = None,
    backend: str = "auto",
    progress: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Train N models on D and N on D′ = D ∪ {canary} with full-batch DP-SGD from the shared ``theta0``.

    Args:
        insert: ``False`` trains the last N models on D as well (the canary is never inserted; the bits are then
            labels only): a null population, on which no audit sample should separate the two halves (the
            validity check of held-out crafting).

    Returns:
        ``(theta, members)``: the final models float32 ``[2N, p]`` and their bits (:func:`world_members`).
        Model ``i`` draws the counter-based noise stream ``(noise_key, i)``.
    """
    dev = pick_device(device)
    X = np.asarray(X, dtype=np.float32)
    y = np.asarray(y, dtype=np.int64)
    n = X.shape[0]
    members = world_members(models_per_world)
    engine = population(model, {}, dev, backend=backend)
    start = torch.from_numpy(np.ascontiguousarray(theta0, dtype=np.float32)).to(dev)
    if start.shape != (engine.p,):
        raise ValueError(f"theta0 must have shape ({engine.p},), got {tuple(start.shape)}")
    config = DPSGDConfig(steps=steps, batch_size=n, lr=lr, clip_norm=clip_norm, noise_multiplier=sigma, period=1)
    cx = torch.from_numpy(np.asarray(canary.x, dtype=np.float32)[None]).to(dev)
    cy = torch.tensor([int(canary.y)], dtype=torch.int64, device=dev)
    with torch.no_grad():
        obs = train_population(
            engine=engine,
            theta0=start,
            X=torch.from_numpy(X).to(dev),
            y=torch.from_numpy(y).to(dev),
            batches=full_batch_schedule(n, steps),
            config=config,
            noise_key=noise_key,
            models=range(members.size),
            mask=torch.as_tensor(members if insert else np.zeros_like(members), dtype=torch.float32, device=dev),
            canary=(cx, cy),
            keep_final=True,
            progress=progress,
            desc=f"full-batch DP-SGD {model} x{members.size}",
        )
    return obs.theta, members


# ------------------------------------------------------------------------------------------------ canaries


@dataclass(frozen=True)
class Canary:
    """The sample c of D′ = D ∪ {c}.

    Attributes:
        kind: one of :data:`CANARIES`.
        x: float32 input (normalised space), shape of one example of D.
        y: its label.
        source: where it came from (e.g. ``"aux row 17"``), for the record.
    """

    kind: str
    x: np.ndarray
    y: int
    source: str


def make_canary(
    kind: str,
    *,
    model: str,
    X: npt.ArrayLike,
    aux_X: npt.ArrayLike,
    aux_y: npt.ArrayLike,
    theta0: npt.ArrayLike,
    mean: npt.ArrayLike,
    std: npt.ArrayLike,
    seed: int,
    blank_label: int = 9,
) -> Canary:
    """Build a canary of ``kind`` (:data:`CANARIES`) for the training set ``X``.

    - ``blank``: the all-zero tensor in normalised space, label ``blank_label`` (9 [ref]).
    - ``in_distribution``: a random example of the auxiliary half (never in D) with its true label [inferred].
    - ``mislabeled``: an out-of-distribution image with a wrong label: a random auxiliary example with its
      pixels inverted (p ↦ 1 − p, computed through ``mean``/``std``) and label y + 1 mod classes [inferred:
      the paper says only "an OOD sample intentionally assigned the wrong label"].
    - ``clipbkd`` (Jagielski et al. 2020): the direction of least variance of D (last principal component of the
      flattened, centred inputs), scaled to the mean norm of D's inputs, with the label of the smallest logit of
      the initial model θ0 on it.

    Raises:
        ValueError: unknown kind.
    """
    if kind not in CANARIES:
        raise ValueError(f"canary must be one of {CANARIES}, got {kind!r}")
    X = np.asarray(X, dtype=np.float32)
    rng = np.random.default_rng(derive_seed(seed, "canary", kind))
    classes = num_classes(model)
    if kind == "blank":
        if not 0 <= blank_label < classes:
            raise ValueError(f"blank_label must be in [0, {classes - 1}], got {blank_label}")
        return Canary(kind, np.zeros(X.shape[1:], np.float32), int(blank_label), "zeros")
    if kind in ("in_distribution", "mislabeled"):
        aux_X, aux_y = np.asarray(aux_X, dtype=np.float32), np.asarray(aux_y)
        if aux_X.shape[0] == 0:
            raise ValueError(f"the {kind} canary needs auxiliary examples (the other half), got none")
        row = int(rng.integers(aux_X.shape[0]))
        x, label = aux_X[row], int(aux_y[row])
        if kind == "in_distribution":
            return Canary(kind, x.copy(), label, f"aux row {row}")
        shape = (-1,) + (1,) * (x.ndim - 1)
        m, s = np.asarray(mean, np.float32).reshape(shape), np.asarray(std, np.float32).reshape(shape)
        inverted = ((1.0 - (x * s + m)) - m) / s
        return Canary(kind, inverted.astype(np.float32), (label + 1) % classes, f"aux row {row}, inverted")
    flat = X.reshape(X.shape[0], -1).astype(np.float64)
    centred = flat - flat.mean(axis=0)
    cov = centred.T @ centred / max(1, flat.shape[0] - 1)
    _, vecs = np.linalg.eigh(cov)
    direction = vecs[:, 0]
    direction = direction * np.sign(direction[np.argmax(np.abs(direction))])  # a deterministic sign
    x = (direction * np.linalg.norm(flat, axis=1).mean()).reshape(X.shape[1:]).astype(np.float32)
    net = build_model(model)
    load_flat_parameters(net, torch.as_tensor(np.asarray(theta0, np.float32)))
    with torch.no_grad():
        label = int(torch.argmin(net(torch.from_numpy(x)[None])[0]))
    return Canary(kind, x, label, "least-variance direction of D")


# --------------------------------------------------------------------------------------- losses and crafting


def sample_losses(model: str, theta: npt.ArrayLike | torch.Tensor, x: npt.ArrayLike, y: int, *, device=None) -> np.ndarray:
    """ℓ(θ_i(x), y) ``[m]`` of one input for every model ``theta`` ``[m, p]`` (no gradient)."""
    dev = pick_device(device)
    engine = population(model, {}, dev, backend="func")
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
class Crafted:
    """An audit sample: x_a, its fixed label and the objective along the optimisation (first and last value)."""

    adversary: str
    x: np.ndarray
    y: int
    margin: float
    objective_start: float
    objective_end: float


def craft(
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
) -> Crafted:
    """Craft the audit sample of ``adversary`` (:data:`ADVERSARIES`) on the models ``theta`` ``[m, p]``.

    ``a_c`` returns the canary. ``a_ude`` / ``a_ade`` run ``steps`` Adam steps (learning rate ``lr``) on every
    pixel of x_a from x_c, the label fixed to y_c, each step on the whole population [inferred: the paper gives
    no optimiser; Adam, lr 0.01]. Deterministic given its inputs.
    """
    if adversary not in ADVERSARIES:
        raise ValueError(f"adversary must be one of {ADVERSARIES}, got {adversary!r}")
    if adversary == "a_c":
        return Crafted("a_c", canary.x, canary.y, float("nan"), float("nan"), float("nan"))
    if steps < 1 or not lr > 0:
        raise ValueError(f"crafting needs steps >= 1 and lr > 0, got steps={steps}, lr={lr}")
    dev = pick_device(device)
    engine = population(model, {}, dev, backend="func")
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
    return Crafted(adversary, x.detach()[0].cpu().numpy(), int(canary.y), float(margin), values[0], final)


# ---------------------------------------------------------------------------------------------- black box


def population_logits(model: str, theta: torch.Tensor, x: torch.Tensor, *, device=None) -> torch.Tensor:
    """Logits ``[m, n, classes]`` of the models ``theta`` ``[m, p]`` on ``x`` (differentiable in both)."""
    engine = population(model, {}, pick_device(device), backend="func")

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


# ------------------------------------------------------------------------------------- worst-case θ0


def sgd_train(
    model: str,
    theta0: npt.ArrayLike,
    X: npt.ArrayLike,
    y: npt.ArrayLike,
    *,
    epochs: int,
    lr: float,
    batch_size: int,
    seed: int,
    model_kwargs: Mapping[str, Any] | None = None,
    progress: bool = False,
) -> np.ndarray:
    """Non-private minibatch SGD (cross-entropy, shuffled each epoch) from ``theta0``; returns the flat θ."""
    net = build_model(model, **dict(model_kwargs or {}))
    load_flat_parameters(net, torch.as_tensor(np.asarray(theta0, np.float32)))
    Xt, yt = torch.as_tensor(np.asarray(X, np.float32)), torch.as_tensor(np.asarray(y, np.int64))
    opt = torch.optim.SGD(net.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(derive_seed(seed, "sgd") % 2**63)
    batches = [rows for _ in range(int(epochs)) for rows in torch.randperm(Xt.shape[0], generator=gen).split(batch_size)]
    if progress:
        from tqdm.auto import tqdm

        batches = tqdm(batches, desc=f"pre-train {model}", unit="batch", leave=False)
    for rows in batches:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(Xt[rows]), yt[rows]).backward()
        opt.step()
    return torch.cat([p.detach().reshape(-1) for p in net.parameters()]).numpy().astype(np.float32)


def pretrain(
    model: str,
    theta0: npt.ArrayLike,
    X_aux: npt.ArrayLike,
    y_aux: npt.ArrayLike,
    *,
    epochs: int,
    lr: float,
    batch_size: int,
    seed: int,
    X_pre: npt.ArrayLike | None = None,
    y_pre: npt.ArrayLike | None = None,
    pre_classes: int = 100,
    pre_epochs: int = 0,
    progress: bool = False,
) -> np.ndarray:
    """θ_worst: non-private pre-training from θ_avg ``theta0`` (Annamalai & De Cristofaro 2024).

    Without ``X_pre``: SGD on the auxiliary half (MNIST: 5 epochs, lr 0.01, batch 32 [ref]). With ``X_pre``
    (CIFAR-100 for CIFAR-10): the same network with a ``pre_classes``-way last layer is first trained on
    ``X_pre`` for ``pre_epochs`` epochs, its last layer is reset to θ0's, then it is fine-tuned on the auxiliary
    half for ``epochs`` epochs.
    """
    theta = np.asarray(theta0, np.float32).copy()
    if X_pre is not None and pre_epochs > 0:
        wide = build_model(model, num_classes=pre_classes)
        p_wide, p = count_parameters(wide), theta.size
        last = [prm.numel() for prm in wide.parameters()][-2:]  # the last Linear: weight, bias
        body = p_wide - sum(last)
        head = init_theta0(model, {"num_classes": pre_classes}, scheme="xavier_normal", seed=derive_seed(seed, "head"), bias=0.01)
        start = np.concatenate([theta[:body], head[body:]])
        trained = sgd_train(
            model, start, X_pre, y_pre, epochs=pre_epochs, lr=lr, batch_size=batch_size, seed=derive_seed(seed, "pre"),
            model_kwargs={"num_classes": pre_classes}, progress=progress,
        )
        theta = np.concatenate([trained[:body], theta[body:p]])
    return sgd_train(model, theta, X_aux, y_aux, epochs=epochs, lr=lr, batch_size=batch_size, seed=seed, progress=progress)


# ------------------------------------------------------------------------------------------------ audit


def audit_sample(
    *,
    model: str,
    theta: npt.ArrayLike,
    members: npt.ArrayLike,
    sample: Crafted,
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


def epsilon_mean_sd(values: npt.ArrayLike) -> tuple[float, float]:
    """Mean and sample standard deviation over runs (sd 0 for a single run), as the paper reports."""
    v = np.asarray(values, dtype=np.float64)
    return float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else 0.0


__all__ = [
    "ACCESS",
    "ADVERSARIES",
    "ADVERSARY_LABELS",
    "CANARIES",
    "Canary",
    "Crafted",
    "DATASET_MODELS",
    "INITS",
    "SPLITS",
    "audit_sample",
    "average_theta0",
    "craft",
    "distill_surrogates",
    "epsilon_mean_sd",
    "full_batch_schedule",
    "make_canary",
    "noise_multiplier",
    "objective",
    "population_logits",
    "pretrain",
    "sample_losses",
    "sgd_train",
    "train_worlds",
]
