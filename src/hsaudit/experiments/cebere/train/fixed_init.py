"""The fixed-initialisation reading of fig12: A_GC-R's coordinate d restricted to coordinates whose θ0 is fixed.

Cebere et al. say an unknown θ0 "only adds a bit of variance". With θ0 re-drawn for every run and unknown to the
scorer, the score −θ_T[d] carries the spread of θ0[d] itself (docs/cifar10.md, fig12), unless θ0[d] is the same in
every run: then the adversary knows it without knowing θ0, and the unknown θ0 costs nothing. This module finds those
coordinates and crafts A_GC-R's d among them (``cifar10.coordinates: fixed_init``).

Which coordinates are fixed is read from the initialisation code itself, :func:`hsaudit.engine.dpsgd.init_theta0`,
not from parameter names: a coordinate is fixed under a scheme when every draw of θ0 gives it the same value
(:func:`fixed_init_mask`). Under ``"xavier_normal"`` these are exactly the parameters ``init_theta0`` fills with a
constant, every parameter with fewer than 2 dimensions: biases and normalisation offsets (0) and normalisation scales
and weight-standardised gains (1); every weight matrix or kernel is drawn. Under PyTorch's defaults (``"default"``)
Linear and Conv biases are drawn too, so only the normalisation layers' scales and offsets are fixed (the ConvNet has
none).

Kept out of :mod:`~hsaudit.experiments.cebere.train.adversaries` on purpose: only the crafting job of a fixed-init
audit imports it (``workflow/scripts/craft_fixed_init.py``), so adding it changed no other job's code version.
"""

from __future__ import annotations

import numpy as np

from hsaudit.engine.dpsgd import Setup, init_theta0
from hsaudit.engine.models import ModelSpec, require_spec
from hsaudit.experiments.cebere.train.adversaries import Crafted, canonical_adversary, layer_of
from hsaudit.experiments.cebere.train.shards import per_run_scheme
from hsaudit.util.seeding import rng_for

COORDINATE_READINGS = ("all", "fixed_init")
"""Where A_GC-R draws its coordinate d: ``all`` (uniform over every parameter, the paper's Algorithm 2) or
``fixed_init`` (uniform over the coordinates whose θ0 is the same in every run, :func:`fixed_init_coordinates`)."""

FIXED_INIT_SEEDS = (0, 1, 2)
"""The seeds of the θ0 draws compared by :func:`fixed_init_mask` (a drawn float32 coordinate equal in three
independent draws has probability 0 for the continuous initialisations here)."""


def fixed_init_mask(spec: ModelSpec, *, scheme: str, seeds: tuple[int, ...] = FIXED_INIT_SEEDS) -> np.ndarray:
    """Boolean ``[p]``: the coordinates that :func:`hsaudit.engine.dpsgd.init_theta0` under ``scheme`` gives the
    same value for every one of ``seeds`` (at least 2)."""
    if len(seeds) < 2:
        raise ValueError(f"need at least 2 seeds to compare draws, got {len(seeds)}")
    draws = np.stack([init_theta0(spec, scheme=scheme, seed=int(s)) for s in seeds])
    return np.all(draws == draws[0], axis=0)


def fixed_init_coordinates(spec: ModelSpec, *, schemes: tuple[str, ...]) -> np.ndarray:
    """The coordinates (sorted int64 indices) fixed under every scheme of ``schemes`` (:func:`fixed_init_mask`):
    for fig12, the setup's scheme (the shared θ0 of the ``known``/``shared_unknown`` readings) and the per-run one."""
    if not schemes:
        raise ValueError("schemes must name at least one initialisation scheme")
    mask = np.logical_and.reduce([fixed_init_mask(spec, scheme=s) for s in dict.fromkeys(schemes)])
    return np.flatnonzero(mask).astype(np.int64)


def craft_fixed_init(
    adversary: str,
    *,
    spec: ModelSpec,
    setup: Setup,
    clip_norm: float,
    seed: int,
    setup_scheme: str = "default",
) -> Crafted:
    """A_GC-R with d uniform over the fixed-initialisation coordinates (∇* = C·e_d, the score of Algorithm 2).

    Args:
        adversary: ``"gc_r"`` (the other adversaries choose d by simulation or have no d).
        spec: the architecture, resolved once by the caller (:func:`hsaudit.engine.models.model_spec`).
        setup: the audit's setup (its θ0 must hold the fixed values at d).
        clip_norm: C.
        seed: the adversary's seed.
        setup_scheme: the scheme the setup's θ0 was drawn with (``cifar10.theta0_init``).

    Raises:
        ValueError: another adversary, a model without fixed coordinates, a setup whose θ0 disagrees, or a
            ``spec`` that is not a :class:`hsaudit.engine.models.ModelSpec`.
    """
    name = canonical_adversary(adversary)
    if name != "gc_r":
        raise ValueError(f"coordinates 'fixed_init' restricts A_GC-R's uniform d; got adversary {name!r}")
    spec = require_spec(spec, "spec")
    schemes = (setup_scheme, per_run_scheme(setup_scheme))
    candidates = fixed_init_coordinates(spec, schemes=schemes)
    if candidates.size == 0:
        raise ValueError(f"{spec.name!r} has no coordinate with a fixed initialisation under {schemes}")
    p = int(setup.theta0.shape[0])
    reference = init_theta0(spec, scheme=schemes[1], seed=0)
    if reference.shape[0] != p:
        raise ValueError(f"setup.theta0 has {p} entries, {spec.name!r} has {reference.shape[0]} parameters")
    d = int(candidates[rng_for(seed, "craft", name, "fixed_init").integers(candidates.size)])
    if setup.theta0[d] != reference[d]:
        raise ValueError(f"setup.theta0[{d}] = {setup.theta0[d]} is not the fixed value {reference[d]}")
    gradient = np.zeros(p, dtype=np.float32)
    gradient[d] = float(clip_norm)
    return Crafted(name, d, gradient, None, None, layer=layer_of(spec, d))
