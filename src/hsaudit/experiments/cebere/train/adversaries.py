"""The adversaries of Cebere et al. (2025): gradient crafting (A_GC-R, A_GC-S, A_CotS) and the canary A_L.

| adversary | crafted object (fixed before training) | oriented score (higher ⇒ inserted) |
|---|---|---|
| ``gc_r`` (A_GC-R, Algorithm 2) | d uniform in {0..p-1}; ∇* = C·e_d (the registry's Dirac gradient) | −(θ_t[d] − θ0[d]) |
| ``gc_s_*`` (A_GC-S, Algorithm 3) | d = argmin_d S_d from simulated training; ∇* = C·e_d | −(θ_t[d] − θ0[d]) |
| ``cots`` (A_CotS, Algorithms 7–8) | ∇* = C·g/‖g‖, g ~ N(0, I_p) | −cos(∇*, θ_t − θ0) |
| ``label_flip`` (A_L) | a training point with its label flipped (the registry's ``mislabelled``: next class mod #classes; binary: 1 − y) | −ℓ(θ_t; x*, y*) |

The paper's scores θ_t[d] − θ0[d], cos(∇*, θ_t − θ0) and the loss are all *lower* when the run is inserted
(gradient descent on +∇* moves θ against ∇*; a member has a lower loss), so every score here is negated.

A_GC-S variants (Appendix C, Algorithm 3), r simulations of training from the known θ0 and batches:

- ``noiseless``: no noise and no clipping (deterministic, so one simulation is run whatever r is);
  ``noisy``: DP-SGD with the same C and σ, r independent noise draws.
- ``ps`` (per step): S_d = Σ_sims Σ_t (θ_t − θ_{t−1})_d²; ``fm`` (final model): S_d = Σ_sims |θ_T − θ0|_d.
- d = argmin_d S_d (first index on ties). ``gc_s`` is an alias of ``gc_s_noiseless_ps``, the paper's best.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from collections.abc import Callable

import numpy as np
import numpy.typing as npt
import torch

from hsaudit.engine.canaries import CanarySource, canary_type, dirac_gradient
from hsaudit.util.io import atomic_savez, write_text_atomic
from hsaudit.engine.models import ModelSpec, count_parameters, parameter_at, require_spec
from hsaudit.engine.noise import CounterNoise
from hsaudit.engine.psg import population_engine
from hsaudit.util.scores import Score, score_entry
from hsaudit.util.seeding import derive_seed, rng_for
from hsaudit.engine.dpsgd import DPSGDConfig, Setup, check_data, pick_device, run_population

ADVERSARIES = ("gc_r", "gc_s_noiseless_ps", "gc_s_noiseless_fm", "gc_s_noisy_ps", "gc_s_noisy_fm", "cots", "label_flip")
ALIASES = {"gc_s": "gc_s_noiseless_ps"}
SCORES: dict[str, Score] = {
    **{name: score_entry("relative") for name in ADVERSARIES if name.startswith("gc_")},
    "cots": score_entry("cosine"),
    "label_flip": score_entry("final"),
}
"""Each adversary's score, an entry of the score registry (:data:`hsaudit.util.scores.SCORES`) with θ0 known; with θ0
unknown (Figure 12) :func:`make_scorer` takes θ0 as 0, so that ``relative`` reads as ``final``."""


def canonical_adversary(name: str) -> str:
    """The canonical name of an adversary (resolves the alias ``gc_s``).

    Raises:
        ValueError: unknown name.
    """
    name = ALIASES.get(name, name)
    if name not in ADVERSARIES:
        raise ValueError(f"adversary must be one of {ADVERSARIES} (or 'gc_s'), got {name!r}")
    return name


@dataclass(frozen=True)
class Crafted:
    """The adversary's object, fixed before training.

    Attributes:
        adversary: canonical adversary name (:data:`ADVERSARIES`).
        dim: the biased dimension d (0-based index into the flat parameters) for ``gc_*``; else ``None``.
        gradient: ∇* float32 ``[p]`` for ``gc_*`` and ``cots``; else ``None``.
        canary_x: the canary's features for ``label_flip``; else ``None``.
        canary_y: the canary's (flipped) integer label, a 0-d int64 array, for ``label_flip``; else ``None``.
        ranking: A_GC-S only: S ``[p]`` whose argmin is ``dim`` (for inspection); else ``None``.
        source_index: ``label_flip`` only: the training row the canary was copied from; else ``None``.
        layer: the name of the parameter that holds ``dim`` (e.g. ``"conv1.weight"``) where there is a ``dim`` and
            the crafting job knew the architecture; else ``None``. What fig12 reports beside d, read back without
            torch (:func:`hsaudit.experiments.cebere.figures.cifar.crafted_coordinate`).
    """

    adversary: str
    dim: int | None
    gradient: np.ndarray | None
    canary_x: np.ndarray | None
    canary_y: np.ndarray | None
    ranking: np.ndarray | None = None
    source_index: int | None = None
    layer: str | None = None


def layer_of(spec: ModelSpec, dim: int, net=None) -> str:
    """The name of the parameter of ``spec``'s module that holds flat coordinate ``dim``.

    ``net``: an already built module of ``spec`` (else one is built with torch's global RNG forked, so that asking
    draws nothing from the caller's stream).
    """
    if net is None:
        with torch.random.fork_rng(devices=[]):
            net = require_spec(spec, "spec").build()
    name, _ = parameter_at(net, int(dim))
    return name


def validate_crafted(crafted: Crafted, *, p: int, spec: ModelSpec) -> None:
    """Check that ``crafted`` fits a model with ``p`` parameters.

    Raises:
        ValueError: naming the inconsistent field.
    """
    name = canonical_adversary(crafted.adversary)
    if name == "label_flip":
        if crafted.canary_x is None or crafted.canary_y is None:
            raise ValueError("label_flip needs canary_x and canary_y")
        k = spec.classes
        if not 0 <= int(np.asarray(crafted.canary_y)) < k:
            raise ValueError(f"canary_y must be in [0, {k - 1}], got {crafted.canary_y}")
        return
    if crafted.gradient is None or np.shape(crafted.gradient) != (p,):
        raise ValueError(f"{name} needs a gradient of shape ({p},), got {np.shape(crafted.gradient)}")
    if name != "cots" and (crafted.dim is None or not 0 <= int(crafted.dim) < p):
        raise ValueError(f"{name} needs dim in [0, {p - 1}], got {crafted.dim}")


def _simulate_ranking(
    *,
    spec: ModelSpec,
    X: np.ndarray,
    y: np.ndarray,
    setup: Setup,
    config: DPSGDConfig,
    seed: int,
    noisy: bool,
    rank: str,
    simulations: int,
    device: str | None,
) -> np.ndarray:
    """S ``[p]`` of Algorithm 3 (Cebere et al. App. C): simulated training without any insertion."""
    dev = pick_device(device)
    engine = population_engine(spec, dev)
    r = simulations if noisy else 1  # noiseless: deterministic, every simulation gives the same S
    Xt, yt = torch.from_numpy(X).to(dev), torch.from_numpy(y).to(dev)
    theta0 = torch.from_numpy(np.ascontiguousarray(setup.theta0, dtype=np.float32)).to(dev)
    acc = torch.zeros((r, engine.p), dtype=torch.float64, device=dev)

    def per_step(_t: int, _theta: torch.Tensor, step: torch.Tensor) -> None:
        acc.add_(step.double().square())

    noise = None
    if noisy and config.noise_multiplier > 0:
        noise = CounterNoise(derive_seed(seed, "gc_s simulation noise"), range(r), engine.p, dev)
    with torch.no_grad():
        final = run_population(
            engine,
            theta0[None].expand(r, -1),
            Xt,
            yt,
            setup.batches,
            lr=config.lr,
            batch_size=config.batch_size,
            clip=config.clip_norm if noisy else None,
            sigma=config.noise_multiplier if noisy else 0.0,
            period=config.period,
            noise=noise,
            on_step=per_step if rank == "ps" else None,
        )
    if rank == "ps":
        s = acc.sum(0)
    else:
        s = (final - theta0[None]).abs().double().sum(0)
    s = s.cpu().numpy()
    if noisy is False and simulations > 1:
        s = s * simulations  # Σ over r identical simulations (argmin unchanged)
    return s


def craft(
    adversary: str,
    *,
    spec: ModelSpec,
    X: npt.ArrayLike,
    y: npt.ArrayLike,
    setup: Setup,
    config: DPSGDConfig,
    seed: int,
    simulations: int = 4,
    device: str | None = None,
) -> Crafted:
    """Build the adversary's object before training (Cebere et al. Algorithms 2, 3, 8; A_L canary).

    Args:
        adversary: one of :data:`ADVERSARIES` or the alias ``"gc_s"``.
        spec: the architecture, resolved once by the caller (:func:`hsaudit.engine.models.model_spec`).
        X, y: training set (the adversary knows it).
        setup: θ0 and the batch schedule (known to the adversary).
        config: DP-SGD hyper-parameters (C scales ∇*; the simulations of A_GC-S use all of them).
        seed: seed of the adversary's randomness (d, the direction, the canary row, simulation noise).
        simulations: r, number of simulations of A_GC-S (paper: 4; the noiseless ones run once).
        device: for the A_GC-S simulations; ``None`` = auto.

    Returns:
        The :class:`Crafted` object.

    Raises:
        ValueError: unknown adversary, ``simulations < 1``, inconsistent data, or a ``spec`` that is not a
            :class:`hsaudit.engine.models.ModelSpec`.
    """
    name = canonical_adversary(adversary)
    spec = require_spec(spec, "spec")
    if int(simulations) != simulations or simulations < 1:
        raise ValueError(f"simulations must be a positive integer, got {simulations}")
    X, y = check_data(spec, X, y, setup)
    p = setup.theta0.shape[0]
    net = spec.build()
    net_p = count_parameters(net)
    if net_p != p:
        raise ValueError(f"setup.theta0 has {p} entries, {spec.name!r} has {net_p} parameters")
    rng = rng_for(seed, "craft", name)
    clip = float(config.clip_norm)
    if name == "gc_r":
        d = int(rng.integers(p))
        return Crafted(name, d, dirac_gradient(p, d, norm=clip), None, None, layer=layer_of(spec, d, net))
    if name == "cots":
        g = rng.standard_normal(p)
        g = (clip * g / np.linalg.norm(g)).astype(np.float32)
        return Crafted(name, None, g, None, None)
    if name == "label_flip":
        source = CanarySource(x=X, y=y, classes=spec.classes, index=int(rng.integers(X.shape[0])))
        canary = canary_type("mislabelled")(source)  # no reference: label (y + 1) mod K
        return Crafted(name, None, None, canary.x, canary.y, source_index=canary.source_index)
    _, _, sim, rank = name.split("_")
    s = _simulate_ranking(
        spec=spec,
        X=X,
        y=y,
        setup=setup,
        config=config,
        seed=derive_seed(seed, "craft", name),
        noisy=sim == "noisy",
        rank=rank,
        simulations=int(simulations),
        device=device,
    )
    d = int(np.argmin(s))
    return Crafted(name, d, dirac_gradient(p, d, norm=clip), None, None, ranking=s, layer=layer_of(spec, d, net))


def save_crafted(crafted: Crafted, path: str | os.PathLike) -> None:
    """Write ``crafted`` to an ``.npz`` file atomically (absent fields are left out)."""
    arrays: dict[str, np.ndarray] = {"adversary": np.asarray(crafted.adversary)}
    for key in ("dim", "gradient", "canary_x", "canary_y", "ranking", "source_index", "layer"):
        value = getattr(crafted, key)
        if value is not None:
            arrays[key] = np.asarray(value)
    atomic_savez(path, arrays)


def write_params_json(params: dict, path: str | os.PathLike, **extra: object) -> None:
    """Write ``params`` (plus ``extra`` entries, e.g. the key) as indented JSON, atomically: what a crafting job
    ran with, beside its crafted object."""
    write_text_atomic(path, json.dumps({**extra, **params}, indent=2, sort_keys=True, default=str) + "\n")


def load_crafted(path: str | os.PathLike) -> Crafted:
    """Read a :class:`Crafted` written by :func:`save_crafted`."""
    with np.load(path) as data:
        get = lambda k: data[k] if k in data.files else None  # noqa: E731
        dim, src, layer = get("dim"), get("source_index"), get("layer")
        return Crafted(
            adversary=canonical_adversary(str(data["adversary"])),
            dim=None if dim is None else int(dim),
            gradient=get("gradient"),
            canary_x=get("canary_x"),
            canary_y=get("canary_y"),
            ranking=get("ranking"),
            source_index=None if src is None else int(src),
            layer=None if layer is None else str(layer),
        )


def insertion_tensors(
    crafted: Crafted, device: torch.device | str
) -> tuple[torch.Tensor | None, tuple[torch.Tensor, torch.Tensor] | None]:
    """The insertion the DP-SGD layer needs: ``(gradient [p] or None, (x* [1, ...], y* [1]) or None)``."""
    gradient = canary = None
    if crafted.gradient is not None:
        gradient = torch.as_tensor(np.asarray(crafted.gradient, dtype=np.float32), device=device)
    if crafted.canary_x is not None:
        canary = (
            torch.as_tensor(np.asarray(crafted.canary_x, dtype=np.float32)[None], device=device),
            torch.as_tensor(np.asarray(crafted.canary_y, dtype=np.int64).reshape(1), device=device),
        )
    return gradient, canary


def make_scorer(
    crafted: Crafted, engine, theta0: torch.Tensor, *, known_theta0: bool = True
) -> Callable[[torch.Tensor], torch.Tensor]:
    """A function ``theta [models, p] -> [models]`` giving the oriented score (higher ⇒ inserted).

    ``engine`` is a per-sample gradient backend (:func:`hsaudit.engine.psg.population_engine`), used only by
    ``label_flip``.
    ``theta0`` is ``[p]`` or ``[models, p]`` (per-model θ0). With ``known_theta0=False`` (Cebere et al. Fig. 12:
    θ0 re-drawn for every run and unknown to the adversary) the A_GC score is −θ_t[d] and the A_CotS score
    −cos(∇*, θ_t), since θ0 cannot be subtracted.
    """
    kind = SCORES[canonical_adversary(crafted.adversary)].name
    if kind == "final":
        _, (cx, cy) = insertion_tensors(crafted, theta0.device)
        return lambda theta: -engine.loss(theta, cx, cy)[:, 0]
    origin = theta0 if known_theta0 else torch.zeros_like(theta0)
    if kind == "cosine":
        g = torch.as_tensor(crafted.gradient, dtype=torch.float64, device=theta0.device)
        g = g / g.norm()

        def cosine(theta: torch.Tensor) -> torch.Tensor:
            diff = (theta - origin).double()
            norm = diff.norm(dim=1)
            cos = (diff @ g) / torch.where(norm > 0, norm, torch.ones_like(norm))
            return -cos

        return cosine
    d = int(crafted.dim)
    base = origin[..., d].double()
    return lambda theta: -(theta[:, d].double() - base)


def score(
    crafted: Crafted,
    theta: npt.ArrayLike,
    theta0: npt.ArrayLike,
    *,
    spec: ModelSpec,
    known_theta0: bool = True,
) -> np.ndarray:
    """Oriented scores (float64, higher ⇒ inserted) of models ``theta`` ``[models, p]`` (or one ``[p]``).

    Cebere et al. §4 (RankSample): −(θ[d] − θ0[d]) for A_GC; −cos(∇*, θ − θ0) for A_CotS (Algorithm 7);
    −ℓ(θ; x*, y*) for A_L. A model equal to θ0 has cosine 0. ``spec``: the architecture
    (:func:`hsaudit.engine.models.model_spec`).
    """
    theta_arr = np.atleast_2d(np.asarray(theta, dtype=np.float32))
    theta0_t = torch.from_numpy(np.asarray(theta0, dtype=np.float32))
    engine = population_engine(require_spec(spec, "spec"), "cpu")
    if theta_arr.shape[1] != engine.p or theta0_t.shape != (engine.p,):
        raise ValueError(f"theta must have {engine.p} columns and theta0 {engine.p} entries for {spec.name!r}")
    validate_crafted(crafted, p=engine.p, spec=spec)
    with torch.no_grad():
        scorer = make_scorer(crafted, engine, theta0_t, known_theta0=known_theta0)
        return scorer(torch.from_numpy(theta_arr)).double().numpy()
