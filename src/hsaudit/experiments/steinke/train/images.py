"""Steinke, Nasr et al., the training side of the image targets: Figure 2 and Table 2 (the Dirac gradient canary,
§3.1) and Figure 4 (the label-flipped input canary).

Two worlds of R models each are trained with Poisson-subsampled DP-SGD (Alg. 1, :func:`hsaudit.engine.dpsgd.train_population`
with ``sampling=Poisson(q)``); in world 1 the "Dirac" canary — the one-hot gradient C·e_d on coordinate d, added
unclipped — is in a step's batch with probability q, independently of the other examples. The distinguisher sees
the last iterate only and scores it by the dot product with the canary gradient (§3.1), here

    s = −⟨θ_T − θ_0, e_d⟩ · B / (ηC)        (higher ⇒ canary present),

θ_0 shared and known, B = qN the update's normaliser, η the learning rate: with a shared θ_0 this is an affine map of
the paper's ⟨m_T, g⟩ that is the same in both worlds, so every audit gives the same ε̂; the scaling puts s in units
of "canary inclusions". Backgrounds (``background``):

* ``natural`` — the other examples are the training data (Figure 2);
* ``zero`` — the adversarial all-zero-gradient dataset (Figure 3's setting): every example's gradient is 0, so
  s = Σ_t c_t + σ Σ_t ξ_t exactly — Binomial(T, q) + N(0, Tσ²) with the canary, N(0, Tσ²) without — which checks the
  one-dimensional reduction of :func:`hsaudit.experiments.steinke.simulations.simulate_linear_canary` on the engine.

One population trained to T_max records s after *every* step: with a constant learning rate, no schedule and no
regulariser, the first t steps of a T_max run are a t-step run, so the scores at step t have exactly the law of a
t-step experiment and one training serves every T of the figure (the paper trains each T separately; our points
share their models, so they are correlated across T, not biased).

Figure 4's canary is an input instead (:func:`train_label_flip_shard`): an image with a wrong label, one more example
of a step's Poisson batch with probability q, clipped like the others, scored by −ℓ(θ_t; x*, y*). Its other
examples are ``natural`` (the data, panel b), ``zero_gradient`` (panel a as the paper words it, "all zero gradient
inputs": every other example's clipped gradient is 0, :class:`CanaryOnlyGradients`) or ``blank`` (all-zero images
with their labels, whose bias gradients are not 0: the other reading). Every population's
job is :func:`train_shard` (rule ``train_steinke_shard``); its spec and shards come from
:mod:`hsaudit.experiments.steinke.plan`.

This module imports the engine and ``util`` only (a training job's code version must not cover the audit layer);
the tables are :mod:`hsaudit.experiments.steinke.audit`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from hsaudit.engine.canaries import CanarySource, canary_type, dirac_coordinate, dirac_gradient, draw_distinct
from hsaudit.engine.dpsgd import pick_device, train_population
from hsaudit.engine.evaluate import population_accuracy
from hsaudit.engine.models import ModelSpec, require_spec
from hsaudit.engine.psg import population_engine
from hsaudit.experiments.steinke.train.rows import poisson_config, row_theta0
from hsaudit.experiments.steinke.train.shards import shard_models
from hsaudit.experiments.steinke.train.canaries import LABEL_FLIP_BACKGROUNDS, SCORES, STEINKE_CANARIES
from hsaudit.util.seeding import derive_seed


def fig4_canary(
    spec: Mapping[str, Any],
    *,
    arch: ModelSpec,
    train: tuple[np.ndarray, np.ndarray],
    test: tuple[np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray]:
    """Figure 4's canary (x*, y*) as ``spec["canary"]`` says: the registry's ``mislabelled`` entry
    (:func:`hsaudit.engine.canaries.mislabelled`) with image ``index`` of the ``source`` split (the test split: the
    pool, an image the models never see otherwise [inferred]) and ``label`` (``None``: (y + 1) mod K); ``index``
    ``None``: the ``draw``-th of distinct images drawn uniformly with the seed (:func:`canary_index`). ``arch``: the
    architecture ``spec["model"]`` names (its classes), resolved once by the caller
    (:func:`hsaudit.engine.models.model_spec`).

    Returns:
        ``x* [1, ...]`` float32 and ``y* [1]`` int64.

    Raises:
        ValueError: an index outside the split, or a label that is not a wrong class.
    """
    c = spec["canary"]
    k = require_spec(arch, "arch").classes
    n = len((test if c["source"] == "test" else train)[1])
    source = CanarySource(
        x=train[0],
        y=train[1],
        classes=k,
        pool=test if c["source"] == "test" else None,
        index=canary_index(spec, n),
        label=c["label"],
    )
    value = canary_type("mislabelled")(source)
    return value.x[None], np.array([int(value.y)], dtype=np.int64)


def canary_index(spec: Mapping[str, Any], n: int) -> int:
    """The index of a label-flip population's canary image in its split of ``n`` images: ``spec["canary"]["index"]``,
    or, when that is ``None``, the ``draw``-th of distinct indices drawn uniformly with the plan's seed
    (:func:`hsaudit.engine.canaries.draw_distinct`; ``fig4_spread``) [inferred]."""
    c = spec["canary"]
    if c.get("index") is not None:
        return int(c["index"])
    draw = int(c["draw"])
    return int(draw_distinct(n, draw + 1, derive_seed(spec["seed"], "steinke-fig4-spread-images"))[draw])


def canary_coordinate(spec: Mapping[str, Any], p: int) -> int:
    """The canary's coordinate d: ``spec["canary_dim"]`` if set, else one drawn uniformly from the p parameters
    with a seed derived from the plan's seed [inferred: the paper names no coordinate] — with ``canary_draw`` i
    (``fig4_spread``), the i-th of distinct coordinates drawn uniformly (:func:`hsaudit.engine.canaries.draw_distinct`).

    Raises:
        ValueError: a coordinate outside [0, p).
    """
    d = spec["canary_dim"]
    if d is None and spec.get("canary_draw") is not None:
        draw = int(spec["canary_draw"])
        return int(draw_distinct(p, draw + 1, derive_seed(spec["seed"], "steinke-fig4-spread-dims"))[draw])
    if d is None:
        return dirac_coordinate(p, derive_seed(spec["seed"], "steinke-fig2-dim"))
    if not 0 <= int(d) < p:
        raise ValueError(f"canary_dim must be in [0, {p}), got {d}")
    return int(d)


def dirac_score(theta: torch.Tensor, theta0: torch.Tensor, *, dim: int, lr: float, batch_size: int, clip: float):
    """s = −(θ_T − θ_0)[d] · B / (ηC) for a population ``theta [m, p]``: the Dirac canary's score in units of
    inclusions (higher ⇒ canary present; an affine map of the paper's ⟨m_T, g⟩ shared by both worlds)."""
    return -(theta[:, dim] - theta0[dim]) * (float(batch_size) / (float(lr) * float(clip)))


class _ZeroGradients:
    """A per-sample gradient engine of the adversarial all-zero-gradient dataset: every clipped sum is 0."""

    def __init__(self, engine) -> None:
        self.p = engine.p

    def clipped_sum_per_model(self, theta, x, y, clip, weights, counts=None) -> torch.Tensor:
        del x, y, clip, weights, counts
        return torch.zeros_like(theta)


class CanaryOnlyGradients:
    """A per-sample gradient engine in which every background example's clipped gradient is 0 and the input
    canary's is computed and clipped by the wrapped engine: Figure 4(a)'s "all zero gradient inputs"
    (background ``zero_gradient``).

    The background rows are marked by the label :data:`BACKGROUND_MARK` (:func:`zero_gradient_background`), so
    that a model's Poisson batch tells whether it holds the canary (the one row with a real label and a positive
    weight); only the canary's gradient is computed, at each model's own θ.
    """

    def __init__(self, engine, canary: tuple[torch.Tensor, torch.Tensor]) -> None:
        self.engine, self.p = engine, engine.p
        self.x, self.y = canary

    def loss(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.engine.loss(theta, x, y)

    def clipped_sum_per_model(self, theta, x, y, clip, weights, counts=None) -> torch.Tensor:
        """Σ over model m's batch of w · clip(g): 0 for every marked row, the wrapped engine's for the canary."""
        del x, counts
        w = (weights * (y != BACKGROUND_MARK).to(weights.dtype)).sum(dim=1)  # the canary's weight, 0 without it
        present = [int(v) for v in (w > 0).tolist()]
        if not any(present):
            return torch.zeros_like(theta)
        m = theta.shape[0]
        xc = self.x.unsqueeze(0).expand(m, *self.x.shape)
        yc = self.y.unsqueeze(0).expand(m, *self.y.shape)
        return self.engine.clipped_sum_per_model(theta, xc, yc, clip, w[:, None].to(theta.dtype), present)


BACKGROUND_MARK = -1
"""The label of every background row of the ``zero_gradient`` background (no class: no loss is ever taken of it)."""


def zero_gradient_background(y: np.ndarray) -> np.ndarray:
    """Figure 4(a)'s labels under the paper's reading: every other example marked :data:`BACKGROUND_MARK`, so
    that :class:`CanaryOnlyGradients` gives it a zero clipped gradient (its image is never read)."""
    return np.full(np.shape(y), BACKGROUND_MARK, dtype=np.int64)


def _check_inputs(spec: Mapping[str, Any], arch: ModelSpec, X: np.ndarray) -> tuple[int, int]:
    shape = require_spec(arch, "arch").input_shape
    if X.ndim != len(shape) + 1 or any(s is not None and s != x for s, x in zip(shape, X.shape[1:])):
        raise ValueError(f"{arch.name} takes inputs of shape {shape}, the data has {X.shape[1:]}")
    n = int(X.shape[0])
    batch = int(spec["batch_size"])
    if not 1 <= batch <= n:
        raise ValueError(f"batch_size must be in [1, N = {n}], got {batch}")
    return n, batch


def _train(
    spec: Mapping[str, Any],
    shard: int,
    *,
    arch: ModelSpec,
    engine,
    X: np.ndarray,
    y: np.ndarray,
    dev: torch.device,
    insertion: dict[str, Any],
    observe,
    theta0: torch.Tensor,
    test: tuple[np.ndarray, np.ndarray] | None,
    label: str,
    progress: bool,
) -> dict[str, np.ndarray]:
    """One shard of Poisson DP-SGD (both worlds) with ``insertion`` (``gradient=`` or ``canary=``), scores after
    every step, and (``test`` given) the final models' test accuracy."""
    n, batch = _check_inputs(spec, arch, X)
    models, bits = shard_models(spec, shard)
    config = poisson_config(spec, n=n)
    obs = train_population(
        engine=engine,
        theta0=theta0,
        X=torch.as_tensor(X, dtype=torch.float32, device=dev),
        y=torch.as_tensor(y, dtype=torch.int64, device=dev),
        batches=None,
        config=config,
        noise_key=derive_seed(spec["seed"], f"steinke-{label}-noise", spec["key"]),
        sampling_key=derive_seed(spec["seed"], f"steinke-{label}-sampling", spec["key"]),
        models=models,
        mask=torch.as_tensor(bits, dtype=torch.bool, device=dev),
        observe=observe,
        keep_final=test is not None,
        progress=progress,
        desc=f"{label} shard {shard}",
        **insertion,
    )
    out = {
        "bits": bits.astype(np.int64),
        "scores": obs.scores,
        "canary_steps": obs.canary_steps,
        "sampling_rate": np.float64(batch / n),
        "batch_size": np.int64(batch),
        "n_train": np.int64(n),
        "parameters": np.int64(engine.p),
    }
    if test is not None:
        theta = torch.as_tensor(obs.theta, device=dev)
        out["test_accuracy"] = population_accuracy(arch, theta, test[0], test[1])
        out["n_test"] = np.int64(len(test[1]))
    return out


def train_dirac_shard(
    spec: Mapping[str, Any],
    shard: int,
    *,
    arch: ModelSpec,
    X: np.ndarray,
    y: np.ndarray,
    test: tuple[np.ndarray, np.ndarray] | None = None,
    device: str | None = None,
    progress: bool = False,
) -> dict[str, np.ndarray]:
    """Train one shard of a Dirac-canary population (Figure 2, Table 2; both worlds) and return its scores after
    every step.

    Args:
        spec: the spec of a Dirac population (:func:`hsaudit.experiments.steinke.plan.plan_fig2`).
        shard: the shard index (models ``shard·S .. shard·S + S − 1``).
        arch: the architecture ``spec["model"]`` and ``spec["model_kwargs"]`` name, resolved once by the caller
            (:func:`hsaudit.engine.models.model_spec`).
        X, y: the training set (``N`` examples); q = B / N with B = ``spec["batch_size"]``.
        test: ``(X_test, y_test)``: also evaluate the final models' test accuracy (Table 2); ``None``: not.
        device: ``None``/``"auto"`` (CUDA when present), ``"cpu"`` or ``"cuda"``.
        progress: a tqdm bar over the steps.

    Returns:
        ``bits [S]``, ``scores`` float64 ``[S, T_max]`` (after every step), ``canary_steps`` bool ``[S, T_max]``,
        ``canary_dim``, ``sampling_rate``, ``batch_size``, ``n_train`` and ``parameters`` (p); with ``test`` also
        ``test_accuracy [S]`` and ``n_test``.
    """
    dev = pick_device(device)
    _, batch = _check_inputs(spec, arch, X)
    engine = population_engine(arch, dev, backend=spec["backend"])
    if spec["background"] == "zero":
        engine = _ZeroGradients(engine)
    dim = canary_coordinate(spec, engine.p)
    theta0 = row_theta0(arch, spec, dev)
    gradient = torch.from_numpy(dirac_gradient(engine.p, dim, norm=float(spec["clip_norm"]))).to(dev)
    lr, clip = float(spec["lr"]), float(spec["clip_norm"])
    out = _train(
        spec,
        shard,
        arch=arch,
        engine=engine,
        X=X,
        y=y,
        dev=dev,
        insertion={"gradient": gradient},
        observe=observer("dirac", engine=engine, theta0=theta0, dim=dim, lr=lr, batch_size=batch, clip=clip),
        theta0=theta0,
        test=test,
        label="fig2",
        progress=progress,
    )
    return {**out, "canary_dim": np.int64(dim)}


def blank_background(X: np.ndarray) -> np.ndarray:
    """Figure 4(a)'s other examples: all-zero images of the same shape (their labels stay those of the data)."""
    return np.zeros_like(np.asarray(X, dtype=np.float32))


def loss_score(engine, x: torch.Tensor, y: torch.Tensor):
    """The observer s(θ) = −ℓ(θ; x*, y*) of a population ``θ [m, p]`` (higher ⇒ canary present, §3.1's "loss of the
    malicious input as a distinguisher")."""

    def score(theta: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return -engine.loss(theta, x, y)[:, 0]

    return score


def observer(canary: str, *, engine, theta0: torch.Tensor, dim: int | None = None, lr: float | None = None,
             batch_size: int | None = None, clip: float | None = None,
             point: tuple[torch.Tensor, torch.Tensor] | None = None):
    """The score of ``canary`` (:data:`~hsaudit.experiments.steinke.train.canaries.STEINKE_CANARIES`) that a
    training records after every step, computed as its registry entry says
    (:data:`hsaudit.experiments.steinke.train.canaries.SCORES`): ``inclusions`` (the Dirac canary on coordinate
    ``dim``, in units of ``lr``, ``batch_size`` and ``clip``: :func:`dirac_score`) or ``final`` (the input canary
    ``point`` = (x*, y*): :func:`loss_score`)."""
    kind = SCORES[canary].name
    if kind == "inclusions" and None not in (dim, lr, batch_size, clip):
        return lambda theta: dirac_score(theta, theta0, dim=dim, lr=lr, batch_size=batch_size, clip=clip)
    if kind == "final" and point is not None:
        return loss_score(engine, *point)
    raise ValueError(f"no per-step computation of score {kind!r} for canary {canary!r} with these inputs")


def train_label_flip_shard(
    spec: Mapping[str, Any],
    shard: int,
    *,
    arch: ModelSpec,
    X: np.ndarray,
    y: np.ndarray,
    canary: tuple[np.ndarray, np.ndarray],
    test: tuple[np.ndarray, np.ndarray] | None = None,
    device: str | None = None,
    progress: bool = False,
) -> dict[str, np.ndarray]:
    """Train one shard of Figure 4 (both worlds): the label-flipped input canary (x*, y*) is one more example of
    every world-1 model's Poisson batch with probability q, clipped like the others; the score after every step is
    −ℓ(θ_t; x*, y*).

    Args:
        spec: a label-flip population's spec (:func:`hsaudit.experiments.steinke.plan.plan_fig4`);
            ``spec["background"]`` is ``natural`` (the data), ``blank`` (every other image replaced by zeros,
            :func:`blank_background`; labels unchanged) or ``zero_gradient`` (every other example's clipped
            gradient 0, the canary's computed and clipped: :class:`CanaryOnlyGradients`).
        shard: the shard index.
        arch: the architecture (as :func:`train_dirac_shard`).
        X, y: the training set.
        canary: ``(x* [1, ...], y* [1])`` (:func:`fig4_canary`).
        test, device, progress: as :func:`train_dirac_shard`.

    Returns:
        As :func:`train_dirac_shard` with ``canary_label`` instead of ``canary_dim``.
    """
    if spec["background"] not in LABEL_FLIP_BACKGROUNDS:
        raise ValueError(f"fig4 background must be one of {LABEL_FLIP_BACKGROUNDS}, got {spec['background']!r}")
    dev = pick_device(device)
    _check_inputs(spec, arch, X)
    if spec["background"] == "blank":
        X = blank_background(X)
    engine = population_engine(arch, dev, backend=spec["backend"])
    theta0 = row_theta0(arch, spec, dev)
    xc = torch.as_tensor(canary[0], dtype=torch.float32, device=dev)
    yc = torch.as_tensor(canary[1], dtype=torch.int64, device=dev)
    trainer = engine
    if spec["background"] == "zero_gradient":
        y = zero_gradient_background(y)
        trainer = CanaryOnlyGradients(engine, (xc, yc))
    out = _train(
        spec,
        shard,
        arch=arch,
        engine=trainer,
        X=X,
        y=y,
        dev=dev,
        insertion={"canary": (xc, yc)},
        observe=observer("label_flip", engine=engine, theta0=theta0, point=(xc, yc)),
        theta0=theta0,
        test=test,
        label="fig4",
        progress=progress,
    )
    return {**out, "canary_label": np.int64(int(canary[1][0]))}


def train_shard(
    canary: str,
    spec: Mapping[str, Any],
    shard: int,
    *,
    arch: ModelSpec,
    X: np.ndarray,
    y: np.ndarray,
    test: tuple[np.ndarray, np.ndarray],
    device: str | None = None,
    progress: bool = False,
) -> dict[str, np.ndarray]:
    """One shard of an image population (what rule ``train_steinke_shard`` runs): :func:`train_dirac_shard` or
    :func:`train_label_flip_shard` with the canary image its spec names (:func:`fig4_canary`), the final models
    evaluated on ``test``.

    Args:
        canary: :data:`hsaudit.experiments.steinke.train.canaries.STEINKE_CANARIES`.
        spec, shard, arch, X, y, test, device, progress: as :func:`train_dirac_shard`.

    Raises:
        ValueError: an unknown canary.
    """
    if canary == "dirac":
        return train_dirac_shard(spec, shard, arch=arch, X=X, y=y, test=test, device=device, progress=progress)
    if canary == "label_flip":
        image = fig4_canary(spec, arch=arch, train=(X, y), test=test)
        out = train_label_flip_shard(spec, shard, arch=arch, X=X, y=y, canary=image, test=test, device=device,
                                     progress=progress)
        split = test if spec["canary"]["source"] == "test" else (X, y)
        return {**out, "canary_index": np.int64(canary_index(spec, len(split[1])))}
    raise ValueError(f"canary must be one of {STEINKE_CANARIES}, got {canary!r}")


def zero_background_moments(*, steps: int, sampling_rate: float, noise_multiplier: float) -> dict[str, float]:
    """Mean and variance of the score in each world under the all-zero background (Figure 3's law):
    out N(0, Tσ²); in Binomial(T, q) + N(0, Tσ²)."""
    t, q, s = int(steps), float(sampling_rate), float(noise_multiplier)
    return {"mean_out": 0.0, "var_out": t * s * s, "mean_in": t * q, "var_in": t * q * (1 - q) + t * s * s}


__all__ = [
    "BACKGROUND_MARK",
    "CanaryOnlyGradients",
    "blank_background",
    "canary_coordinate",
    "canary_index",
    "dirac_score",
    "fig4_canary",
    "loss_score",
    "observer",
    "train_dirac_shard",
    "train_label_flip_shard",
    "train_shard",
    "zero_gradient_background",
    "zero_background_moments",
]
