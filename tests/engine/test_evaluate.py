"""Test-set accuracy of a population (hsaudit.engine.evaluate) against a direct computation."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hsaudit.engine.evaluate import population_accuracy
from hsaudit.engine.models import build_model, count_parameters, model_spec


def test_accuracy_of_a_linear_softmax_model_matches_numpy():
    """alexnet_head with 4 features and 3 classes is one Linear layer: predictions argmax(xWᵀ + b), by hand."""
    rng = np.random.default_rng(0)
    p = count_parameters(build_model("alexnet_head", features=4, num_classes=3))
    assert p == 4 * 3 + 3
    theta = rng.normal(size=(5, p)).astype(np.float32)
    X = rng.normal(size=(37, 4)).astype(np.float32)
    y = rng.integers(0, 3, 37)
    got = population_accuracy(model_spec("alexnet_head", features=4, num_classes=3), torch.as_tensor(theta), X, y,
                              batch_size=10)
    for i in range(5):  # flat order = model.parameters(): weight [3, 4], then bias [3]
        w, b = theta[i, :12].reshape(3, 4), theta[i, 12:]
        assert got[i] == pytest.approx(np.mean((X @ w.T + b).argmax(axis=1) == y), abs=1e-12)


def test_accuracy_of_a_binary_single_logit_model():
    """fcnn (one logit, BCE): prediction = logit > 0; θ = 0 predicts class 0 everywhere."""
    p = count_parameters(build_model("fcnn"))
    X = np.random.default_rng(1).normal(size=(10, 8)).astype(np.float32)
    y = np.array([0, 0, 0, 1, 1, 0, 1, 0, 0, 0])
    acc = population_accuracy(model_spec("fcnn"), torch.zeros(2, p), X, y)
    np.testing.assert_allclose(acc, [0.7, 0.7])


def test_bad_inputs_are_named():
    p = count_parameters(build_model("fcnn"))
    with pytest.raises(ValueError, match="columns"):
        population_accuracy(model_spec("fcnn"), torch.zeros(1, p + 1), np.zeros((2, 8)), np.zeros(2))
    with pytest.raises(ValueError, match="test set"):
        population_accuracy(model_spec("fcnn"), torch.zeros(1, p), np.zeros((0, 8)), np.zeros(0))
