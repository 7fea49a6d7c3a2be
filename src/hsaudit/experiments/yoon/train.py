"""Yoon, Jeung & No (2025), training side: one run's full-batch DP-SGD populations of the two worlds, canaries, θ0.

N models train on D (b = 0) and N on D′ = D ∪ {c} (b = 1) with the project's engine
(:func:`hsaudit.engine.dpsgd.train_population`) and the full-batch schedule (:func:`full_batch_schedule`: every step
uses all of D, the canary appended to the batch of the D′ models, normaliser |D| in both worlds). θ_avg is one
Xavier-normal initialisation (bias 0.01); θ_worst is θ_avg pre-trained without privacy (:func:`pretrain`,
Annamalai & De Cristofaro 2024). :func:`train_run` is what a training job runs. The adversary's side is
:mod:`hsaudit.experiments.yoon.crafting` (x_a, surrogates, scores) and :mod:`hsaudit.experiments.yoon.audit`; the
package docstring (:mod:`hsaudit.experiments.yoon`) describes the method and its validity question.

This module imports the engine and util layers only, and nothing else of its package: a training job's code
version covers it alone, so an edit of the plan, the crafting or the audit never retrains a population.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from hsaudit.engine.canaries import CanarySource, canary_type
from hsaudit.engine.dpsgd import DPSGDConfig, init_theta0, pick_device, train_population
from hsaudit.engine.models import ModelSpec, count_parameters, load_flat_parameters, require_spec
from hsaudit.engine.psg import population_engine
from hsaudit.util.seeding import derive_seed

REGISTRY_NAMES = {"blank": "blank", "in_distribution": "in_distribution", "mislabeled": "ood_mislabelled",
                  "clipbkd": "clipbkd"}  # fmt: skip
"""Yoon et al.'s canaries (the config's ``canary`` values) as entries of the canary registry
(:data:`hsaudit.engine.canaries.CANARIES`): the one place the two names meet."""
CANARIES = tuple(REGISTRY_NAMES)
"""The config's canary values (``yoon.canary``)."""


# ------------------------------------------------------------------------------------------------- DP-SGD


def full_batch_schedule(n: int, steps: int) -> np.ndarray:
    """The schedule ``[steps, n]`` of full-batch DP-SGD: every step uses every row of D, in order."""
    if n < 1 or steps < 1:
        raise ValueError(f"n and steps must be positive, got n={n}, steps={steps}")
    return np.tile(np.arange(n, dtype=np.int64), (steps, 1))


def average_theta0(spec: ModelSpec, *, seed: int, bias: float = 0.01) -> np.ndarray:
    """θ_avg of the architecture ``spec``: Xavier-normal weights and constant biases (0.01), drawn once per run from
    ``seed``."""
    return init_theta0(require_spec(spec, "spec"), scheme="xavier_normal", seed=seed, bias=bias)


def world_members(models_per_world: int) -> np.ndarray:
    """Membership bits of a population: the first N models are trained on D (0), the last N on D′ (1)."""
    n = int(models_per_world)
    if n < 1:
        raise ValueError(f"models_per_world must be >= 1, got {models_per_world}")
    return np.repeat(np.array([0, 1], dtype=np.int64), n)


def train_worlds(
    *,
    spec: ModelSpec,
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
        spec: the architecture, resolved once by the caller (:func:`hsaudit.engine.models.model_spec`).
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
    engine = population_engine(require_spec(spec, "spec"), dev, backend=backend)
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
            desc=f"full-batch DP-SGD {spec.name} x{members.size}",
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
        source: where it came from (e.g. ``"pool row 17"``: row 17 of the auxiliary half), for the record.
    """

    kind: str
    x: np.ndarray
    y: int
    source: str

    def arrays(self) -> dict[str, Any]:
        """The canary as a run's file stores it (``canary_kind``, ``canary_x``, ``canary_y``, ``canary_source``)."""
        return {"canary_x": self.x, "canary_y": np.int64(self.y), "canary_kind": self.kind,
                "canary_source": self.source}  # fmt: skip

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, Any]) -> Canary:
        """The canary of a run's file (:meth:`arrays`)."""
        return cls(str(arrays["canary_kind"]), arrays["canary_x"], int(arrays["canary_y"]),
                   str(arrays["canary_source"]))  # fmt: skip


def make_canary(
    kind: str,
    *,
    spec: ModelSpec,
    X: npt.ArrayLike,
    y: npt.ArrayLike,
    aux_X: npt.ArrayLike,
    aux_y: npt.ArrayLike,
    theta0: npt.ArrayLike,
    mean: npt.ArrayLike,
    std: npt.ArrayLike,
    seed: int,
    blank_label: int = 9,
    ood: str = "invert",
) -> Canary:
    """The canary of ``kind`` (:data:`CANARIES`) for the training set ``(X, y)``: its registry entry
    (:data:`REGISTRY_NAMES`) built from the auxiliary half as the pool, θ0's logits as the reference and the run's
    normalisation, with the stream ``derive_seed(seed, "canary", kind)``; ``spec`` is the trained architecture
    (θ0's module).

    - ``blank`` (registry ``blank``): the all-zero tensor in normalised space, label ``blank_label`` (9 [ref]).
    - ``in_distribution``: a random example of the auxiliary half (never in D) with its true label [inferred].
    - ``mislabeled`` (registry ``ood_mislabelled``): an out-of-distribution image with a wrong label [inferred: the
      paper says only "an OOD sample intentionally assigned the wrong label"]: a random auxiliary example whose
      pixels are inverted (``ood="invert"``: p ↦ 1 − p, computed through ``mean``/``std``) or replaced by uniform
      noise in [0, 1] (``ood="noise"``), with label y + 1 mod classes.
    - ``clipbkd`` (Jagielski et al. 2020): the direction of least variance of D (last principal component of the
      flattened, centred inputs), scaled to the mean norm of D's inputs, with the label of the smallest logit of
      the initial model θ0 on it.

    Raises:
        ValueError: unknown kind, or a value its entry rejects (a label outside the classes, an unknown ``ood``,
            no auxiliary examples).
    """
    if kind not in CANARIES:
        raise ValueError(f"canary must be one of {CANARIES}, got {kind!r}")
    name = REGISTRY_NAMES[kind]
    spec = require_spec(spec, "spec")

    def theta0_logits(inputs: np.ndarray) -> np.ndarray:
        net = spec.build()
        load_flat_parameters(net, torch.as_tensor(np.asarray(theta0, np.float32)))
        with torch.no_grad():
            return net(torch.from_numpy(np.ascontiguousarray(inputs, dtype=np.float32))).numpy()

    source = CanarySource(
        x=np.asarray(X, dtype=np.float32),
        y=np.asarray(y),
        classes=spec.classes,
        seed=derive_seed(seed, "canary", kind),
        reference=theta0_logits,
        pool=None if aux_X is None else (np.asarray(aux_X, dtype=np.float32), np.asarray(aux_y)),
        label=int(blank_label) if name == "blank" else None,
        normalisation=(np.asarray(mean), np.asarray(std)),
        options={"transform": ood} if name == "ood_mislabelled" else {},
    )
    value = canary_type(name)(source)
    return Canary(kind, value.x, int(value.y), value.origin)


# ------------------------------------------------------------------------------------- worst-case θ0


def sgd_train(
    spec: ModelSpec,
    theta0: npt.ArrayLike,
    X: npt.ArrayLike,
    y: npt.ArrayLike,
    *,
    epochs: int,
    lr: float,
    batch_size: int,
    seed: int,
    progress: bool = False,
) -> np.ndarray:
    """Non-private minibatch SGD (cross-entropy, shuffled each epoch) of the architecture ``spec`` from ``theta0``;
    returns the flat θ."""
    net = require_spec(spec, "spec").build()
    load_flat_parameters(net, torch.as_tensor(np.asarray(theta0, np.float32)))
    Xt, yt = torch.as_tensor(np.asarray(X, np.float32)), torch.as_tensor(np.asarray(y, np.int64))
    opt = torch.optim.SGD(net.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(derive_seed(seed, "sgd") % 2**63)
    batches = [rows for _ in range(int(epochs)) for rows in torch.randperm(Xt.shape[0], generator=gen).split(batch_size)]
    if progress:
        from tqdm.auto import tqdm

        batches = tqdm(batches, desc=f"pre-train {spec.name}", unit="batch", leave=False)
    for rows in batches:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(Xt[rows]), yt[rows]).backward()
        opt.step()
    return torch.cat([p.detach().reshape(-1) for p in net.parameters()]).numpy().astype(np.float32)


def pretrain(
    spec: ModelSpec,
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
    half for ``epochs`` epochs. ``spec``: the trained architecture; the pre-training one is the same with
    ``num_classes=pre_classes``.
    """
    spec = require_spec(spec, "spec")
    theta = np.asarray(theta0, np.float32).copy()
    if X_pre is not None and pre_epochs > 0:
        wide_spec = spec.with_options(num_classes=pre_classes)
        wide = wide_spec.build()
        p_wide, p = count_parameters(wide), theta.size
        last = [prm.numel() for prm in wide.parameters()][-2:]  # the last Linear: weight, bias
        body = p_wide - sum(last)
        head = init_theta0(wide_spec, scheme="xavier_normal", seed=derive_seed(seed, "head"), bias=0.01)
        start = np.concatenate([theta[:body], head[body:]])
        trained = sgd_train(
            wide_spec, start, X_pre, y_pre, epochs=pre_epochs, lr=lr, batch_size=batch_size,
            seed=derive_seed(seed, "pre"), progress=progress,
        )  # fmt: skip
        theta = np.concatenate([trained[:body], theta[body:p]])
    return sgd_train(spec, theta, X_aux, y_aux, epochs=epochs, lr=lr, batch_size=batch_size, seed=seed, progress=progress)


# ------------------------------------------------------------------------------------------------ one run

ROLES = ("craft", "audit", "validation")
"""The populations of one run, each with its own noise: crafting (x_a is crafted on it, and scored on it in the
paper's reading), audit (x_a is scored on it: a valid audit) and, where asked, validation (a recipe's stop)."""


def train_run(
    spec: Mapping[str, Any],
    data: Mapping[str, np.ndarray],
    *,
    arch: ModelSpec,
    population_key: str,
    run: int,
    noise_multiplier: float,
    pretrain_data: Mapping[str, np.ndarray] | None = None,
    device: str | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """One run of a population: θ0 (θ_avg or θ_worst), the canary and the run's populations (:data:`ROLES`).

    Args:
        spec: the population's training values (``trainings`` of :class:`hsaudit.experiments.yoon.plan.YoonPlan`).
        data: the prepared data (``X``, ``y``, ``aux_X``, ``aux_y``, ``mean``, ``std``, ``data_source``).
        arch: the architecture ``spec["model"]`` names, resolved once by the caller
            (:func:`hsaudit.engine.models.model_spec`).
        population_key: the population's key (it seeds the noise); run: the run index.
        noise_multiplier: σ, calibrated by the plan (this module imports no accountant).
        pretrain_data: the pre-training set (``X``, ``y``) of a CIFAR-10 θ_worst, None otherwise.

    Returns:
        The arrays of the run's file: ``<role>_theta`` and ``<role>_members`` of the crafting and validation
        populations, ``members`` of the audit population (beside ``audit_theta``), ``theta0``, the canary
        (:meth:`Canary.arrays`), ``noise_multiplier`` and ``data_source``.
    """
    arch, seed = require_spec(arch, "arch"), spec["seed"]
    init_seed = derive_seed(seed, "yoon-theta0", spec["data"], spec["model"], "shared" if spec["shared_init"] else run)
    theta0 = average_theta0(arch, seed=init_seed, bias=spec["init_bias"])
    if spec["init"] == "worst":
        worst, pre = spec["worst"], {}
        if pretrain_data is not None:
            pre = {"X_pre": pretrain_data["X"], "y_pre": pretrain_data["y"], "pre_epochs": worst["pre_epochs"]}
        theta0 = pretrain(
            arch, theta0, data["aux_X"], data["aux_y"], epochs=worst["epochs"], lr=worst["lr"],
            batch_size=worst["batch_size"], seed=derive_seed(init_seed, "worst"), progress=progress, **pre,
        )  # fmt: skip
    canary = make_canary(
        spec["canary"], spec=arch, X=data["X"], y=data["y"], aux_X=data["aux_X"], aux_y=data["aux_y"], theta0=theta0,
        mean=data["mean"], std=data["std"], seed=derive_seed(seed, "yoon-canary", spec["data"], run),
        blank_label=spec["blank_label"], ood=spec.get("mislabeled_ood", "invert"),
    )  # fmt: skip
    sizes = {
        "craft": spec.get("craft_models_per_world") or spec["models_per_world"],
        "audit": spec["models_per_world"],
        "validation": spec.get("validation_models_per_world", 0),
    }
    arrays: dict[str, Any] = {}
    for role in ROLES:
        if not sizes[role]:
            continue
        theta, bits = train_worlds(
            spec=arch, theta0=theta0, X=data["X"], y=data["y"], canary=canary,
            models_per_world=sizes[role], steps=spec["steps"], lr=spec["lr"], clip_norm=spec["clip_norm"],
            sigma=noise_multiplier, noise_key=derive_seed(seed, "yoon-noise", population_key, run, role),
            device=device, progress=progress,
        )  # fmt: skip
        arrays[f"{role}_theta"] = theta
        arrays[f"{role}_members"] = bits
    members = arrays.pop("audit_members")
    return {
        **arrays,
        "members": members,
        "theta0": theta0,
        **canary.arrays(),
        "noise_multiplier": np.float64(noise_multiplier),
        "data_source": str(data["data_source"]),
    }
