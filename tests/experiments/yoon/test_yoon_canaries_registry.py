"""Yoon et al.'s canaries are canary-registry entries (hsaudit.engine.canaries.CANARIES): each built by
hsaudit.experiments.yoon.train.make_canary is bit for bit the canary of the frozen pre-registry construction below
(the same random streams), and the config's canary names are the keys of the one name map, whose values are
registry entries."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import yaml

from conftest import REPO
from hsaudit.engine.canaries import CANARIES, OOD_TRANSFORMS, CanarySource, canary_type
from hsaudit.engine.models import build_model, load_flat_parameters, model_spec, num_classes
from hsaudit.experiments.yoon import train
from hsaudit.util.seeding import derive_seed

pytestmark = pytest.mark.usefixtures("torch_one_thread")

MNIST = "mnist_cnn"
SHAPE = (1, 28, 28)
MEAN, STD = np.array([0.1307], np.float32), np.array([0.3081], np.float32)


def frozen_make_canary(kind, *, model, X, aux_X, aux_y, theta0, mean, std, seed, blank_label=9, ood="invert"):
    """``hsaudit.experiments.yoon.train.make_canary`` as it was before the registry held Yoon's canaries (commit
    2388600), returning ``(x, y)``: the slow reference."""
    X = np.asarray(X, dtype=np.float32)
    rng = np.random.default_rng(derive_seed(seed, "canary", kind))
    classes = num_classes(model)
    if kind == "blank":
        return np.zeros(X.shape[1:], np.float32), int(blank_label)
    aux_X, aux_y = np.asarray(aux_X, dtype=np.float32), np.asarray(aux_y)
    if kind in ("in_distribution", "mislabeled"):
        row = int(rng.integers(aux_X.shape[0]))
        x, label = aux_X[row], int(aux_y[row])
        if kind == "in_distribution":
            return x.copy(), label
        shape = (-1,) + (1,) * (x.ndim - 1)
        m, s = np.asarray(mean, np.float32).reshape(shape), np.asarray(std, np.float32).reshape(shape)
        pixels = 1.0 - (x * s + m) if ood == "invert" else rng.uniform(0.0, 1.0, x.shape)
        return ((pixels - m) / s).astype(np.float32), (label + 1) % classes
    flat = X.reshape(X.shape[0], -1).astype(np.float64)
    centred = flat - flat.mean(axis=0)
    cov = centred.T @ centred / max(1, flat.shape[0] - 1)
    _, vecs = np.linalg.eigh(cov)
    direction = vecs[:, 0]
    direction = direction * np.sign(direction[np.argmax(np.abs(direction))])
    x = (direction * np.linalg.norm(flat, axis=1).mean()).reshape(X.shape[1:]).astype(np.float32)
    net = build_model(model)
    load_flat_parameters(net, torch.as_tensor(np.asarray(theta0, np.float32)))
    with torch.no_grad():
        label = int(torch.argmin(net(torch.from_numpy(x)[None])[0]))
    return x, label


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(11)
    X = rng.standard_normal((40, *SHAPE)).astype(np.float32)
    y = rng.integers(0, 10, 40).astype(np.int64)
    aux_X = rng.standard_normal((25, *SHAPE)).astype(np.float32)
    aux_y = rng.integers(0, 10, 25).astype(np.int64)
    theta0 = train.average_theta0(model_spec(MNIST), seed=4)
    return X, y, aux_X, aux_y, theta0


@pytest.mark.parametrize(
    "kind, options, seed",
    [("blank", {}, 0), ("blank", {"blank_label": 2}, 0), ("in_distribution", {}, 0), ("in_distribution", {}, 7),
     ("mislabeled", {"ood": "invert"}, 0), ("mislabeled", {"ood": "invert"}, 7), ("mislabeled", {"ood": "noise"}, 0),
     ("mislabeled", {"ood": "noise"}, 7), ("clipbkd", {}, 0)],
)  # fmt: skip
def test_every_yoon_canary_is_the_frozen_one_bit_for_bit(data, kind, options, seed):
    X, y, aux_X, aux_y, theta0 = data
    args = dict(X=X, aux_X=aux_X, aux_y=aux_y, theta0=theta0, mean=MEAN, std=STD, seed=seed)
    c = train.make_canary(kind, spec=model_spec(MNIST), y=y, **args, **options)
    x, label = frozen_make_canary(kind, model=MNIST, **args, **options)
    assert c.kind == kind and c.x.dtype == np.float32 and c.x.shape == x.shape
    assert c.x.tobytes() == x.tobytes() and c.y == label and type(c.y) is int


def test_the_config_names_map_onto_registry_entries():
    schema = yaml.safe_load((REPO / "workflow/schemas/yoon.schema.yaml").read_text())
    assert schema["$defs"]["values"]["canary"]["enum"] == list(train.CANARIES) == list(train.REGISTRY_NAMES)
    assert all(canary_type(name).kind == "input" for name in train.REGISTRY_NAMES.values())
    assert schema["$defs"]["values"]["mislabeled_ood"]["enum"] == list(OOD_TRANSFORMS)


def test_the_entries_reject_what_they_cannot_build(data):
    X, y, aux_X, aux_y, theta0 = data
    args = dict(spec=model_spec(MNIST), X=X, y=y, theta0=theta0, mean=MEAN, std=STD, seed=0)
    with pytest.raises(ValueError, match="pool is empty"):
        train.make_canary("in_distribution", aux_X=aux_X[:0], aux_y=aux_y[:0], **args)
    with pytest.raises(ValueError, match="transform must be one of"):
        train.make_canary("mislabeled", aux_X=aux_X, aux_y=aux_y, ood="blur", **args)
    with pytest.raises(ValueError, match="takes the options"):
        canary_type("blank")(CanarySource(X, y, classes=10, options={"transform": "invert"}))
    with pytest.raises(ValueError, match="pool must be"):
        CanarySource(X, y, classes=10, pool=(aux_X[:, 0], aux_y))
    with pytest.raises(ValueError, match="normalisation"):
        CanarySource(X, y, classes=10, normalisation=(MEAN, np.zeros(1)))


def test_without_a_pool_the_entries_take_the_data(data):
    """The byo path gives no pool: in_distribution is a row of the data (its background then leaves it out), the
    out-of-distribution one is not (its input is no row of the data)."""
    X, y, _, _, _ = data
    c = CANARIES["in_distribution"](CanarySource(X, y, classes=10, seed=3))
    assert np.array_equal(c.x, X[c.source_index]) and int(c.y) == int(y[c.source_index])
    o = CANARIES["ood_mislabelled"](CanarySource(X, y, classes=10, seed=3, index=5))
    assert o.source_index is None and np.allclose(o.x, 1.0 - X[5]) and int(o.y) == (int(y[5]) + 1) % 10
    b = CANARIES["blank"](CanarySource(X, y, classes=10))
    assert not b.x.any() and int(b.y) == 9
