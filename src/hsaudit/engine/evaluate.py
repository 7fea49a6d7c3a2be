"""Test-set evaluation of a trained population: every model's accuracy, device-agnostic, in batches.

A population is a ``[models, p]`` tensor of flat parameters (the engine's layout, :mod:`hsaudit.engine.dpsgd`) of
one registry architecture (:mod:`hsaudit.engine.models`); the evaluation loads each row into one module and runs
the test set through it in batches, on whatever device ``theta`` lives (CUDA or CPU), without gradients.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import torch

from hsaudit.engine.architectures import count_parameters, load_flat_parameters
from hsaudit.engine.models import ModelSpec, require_spec


def population_accuracy(
    spec: ModelSpec,
    theta: torch.Tensor,
    X: npt.ArrayLike | torch.Tensor,
    y: npt.ArrayLike | torch.Tensor,
    *,
    batch_size: int = 1000,
) -> np.ndarray:
    """Test accuracy of every model of a population.

    A prediction is the arg-max logit (cross-entropy models) or ``logit > 0`` (single-logit binary models,
    :attr:`hsaudit.engine.models.ModelSpec.loss` ``"bce"``).

    Args:
        spec: the architecture (:func:`hsaudit.engine.models.model_spec`).
        theta: ``[models, p]`` flat parameters; the evaluation runs on ``theta.device``.
        X, y: the test set (inputs ``[n, ...]``, integer labels ``[n]``).
        batch_size: test examples per forward pass.

    Returns:
        float64 ``[models]``, the fraction of the n examples each model classifies correctly.

    Raises:
        ValueError: an empty test set, mismatched lengths, a bad batch size or a θ of the wrong width.
    """
    spec = require_spec(spec, "spec")
    theta = torch.as_tensor(theta)
    if theta.dim() != 2:
        raise ValueError(f"theta must be [models, p], got shape {tuple(theta.shape)}")
    dev = theta.device
    X = torch.as_tensor(X, dtype=torch.float32, device=dev)
    y = torch.as_tensor(y, dtype=torch.int64, device=dev)
    n = int(y.shape[0])
    if n == 0 or X.shape[0] != n:
        raise ValueError(f"the test set needs n >= 1 inputs and as many labels, got {X.shape[0]} and {n}")
    if int(batch_size) < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    module = spec.build().to(dev).eval()
    if theta.shape[1] != count_parameters(module):
        raise ValueError(f"theta has {theta.shape[1]} columns, {spec.name} has {count_parameters(module)} parameters")
    binary = spec.loss == "bce"
    correct = np.zeros(theta.shape[0], dtype=np.int64)
    with torch.no_grad():
        for i in range(theta.shape[0]):
            load_flat_parameters(module, theta[i])
            hits = torch.zeros((), dtype=torch.int64, device=dev)
            for s in range(0, n, int(batch_size)):
                logits = module(X[s : s + int(batch_size)])
                pred = (logits.reshape(-1) > 0).long() if binary else logits.argmax(dim=1)
                hits += (pred == y[s : s + int(batch_size)]).sum()
            correct[i] = int(hits)
    return correct / n


__all__ = ["population_accuracy"]
