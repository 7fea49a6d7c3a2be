"""The Opacus reference of a Cebere et al. shard: the engine's one-model trainer, an adversary's insertion and score.

:func:`reference_scores` is the slow, trusted path that the tests (tests/experiments/cebere/test_reference.py) and
``hsaudit bench train`` compare :func:`hsaudit.experiments.cebere.train.shards.train_shard` with. The trainer itself is the
engine's (:func:`hsaudit.engine.reference.train_reference`); this module only turns the adversary's crafted object
into the engine's insertion (:func:`~hsaudit.experiments.cebere.train.adversaries.insertion_tensors`) and the snapshots into
scores (:func:`~hsaudit.experiments.cebere.train.adversaries.score`). No training job imports it.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from hsaudit.engine.dpsgd import DPSGDConfig, Setup
from hsaudit.engine.models import ModelSpec, require_spec
from hsaudit.engine.reference import train_reference
from hsaudit.experiments.cebere.train.adversaries import Crafted, insertion_tensors, score, validate_crafted


def reference_scores(
    *,
    spec: ModelSpec,
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
    """One model of :func:`~hsaudit.experiments.cebere.train.shards.train_shard` trained by the Opacus reference
    (:func:`hsaudit.engine.reference.train_reference`) with the same insertion and score.

    Args:
        bit: 1 = inserted; noise: standard normals ``[T, p]`` (:func:`hsaudit.engine.dpsgd.model_noise`); theta0:
            this model's own θ0 (``None``: ``setup.theta0``); the rest as
            :func:`~hsaudit.experiments.cebere.train.shards.train_shard`.

    Returns:
        ``(scores, theta_T)``: the oriented scores ``[T // k]`` (float64, as ``train_shard``'s) and the final model.
    """
    spec = require_spec(spec, "spec")
    start = setup.theta0 if theta0 is None else np.asarray(theta0, dtype=np.float32)
    validate_crafted(crafted, p=start.shape[-1], spec=spec)
    gradient, canary = insertion_tensors(crafted, "cpu")
    thetas, final = train_reference(
        spec=spec, X=X, y=y, setup=setup, config=config, bit=bit, noise=noise, gradient=gradient, canary=canary,
        theta0=theta0,
    )
    scores = score(crafted, thetas, start, spec=spec, known_theta0=known_theta0)
    return scores, final
