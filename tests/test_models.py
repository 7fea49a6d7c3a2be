"""Architectures: parameter counts of Cebere et al. (spec §2) and the helpers the trainers rely on."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hsaudit.engine.models import (
    build_model,
    count_parameters,
    flat_parameters,
    input_shape,
    load_flat_parameters,
    loss_name,
    num_classes,
    per_sample_loss,
)


@pytest.mark.parametrize(
    ("name", "kwargs", "expected"),
    [
        ("fcnn", {}, 68),  # 8-3-8-1: 27 + 32 + 9 (spec §2)
        ("fcnn", {"variant": "8-6-2"}, 68),  # 54 + 14
        ("convnet", {}, 62_006),  # 456 + 2,416 + 48,120 + 10,164 + 850
        ("resnet18_gn", {}, 11_173_962),  # CIFAR ResNet18, GroupNorm (torchvision's 7x7 stem: 11,181,642)
        ("alexnet_head", {}, 40_970),  # Linear(4096 -> 10): 40,960 + 10 (Cebere et al. Fig. 13)
        ("mnist_cnn", {}, 25_386),  # Yoon et al.: 416 + 8,224 + 16,416 + 330 (specs/yoon.md)
        ("cifar_cnn", {}, 550_570),  # 896 + 9,248 + 18,496 + 36,928 + 73,856 + 147,584 + 262,272 + 1,290
    ],
)
def test_parameter_counts(name, kwargs, expected):
    assert count_parameters(build_model(name, **kwargs)) == expected


def test_forward_shapes():
    torch.manual_seed(0)
    assert build_model("fcnn")(torch.zeros(5, 8)).shape == (5, 1)
    assert build_model("fcnn", variant="8-6-2")(torch.zeros(5, 8)).shape == (5, 2)
    assert build_model("convnet")(torch.zeros(2, *input_shape("convnet"))).shape == (2, 10)
    assert build_model("alexnet_head")(torch.zeros(2, *input_shape("alexnet_head"))).shape == (2, 10)
    assert input_shape("alexnet_head") == (4096,)
    assert build_model("mnist_cnn")(torch.zeros(2, *input_shape("mnist_cnn"))).shape == (2, 10)
    assert build_model("cifar_cnn")(torch.zeros(2, *input_shape("cifar_cnn"))).shape == (2, 10)


def test_loss_kinds():
    assert loss_name("fcnn") == "bce" and num_classes("fcnn") == 2
    assert loss_name("fcnn", variant="8-6-2") == "ce" and num_classes("fcnn", variant="8-6-2") == 2
    assert loss_name("convnet") == "ce" and num_classes("convnet") == 10
    assert loss_name("alexnet_head") == "ce" and num_classes("alexnet_head") == 10


def test_two_logit_ce_equals_bce_on_logit_difference():
    # Spec §2: two logits with cross-entropy ≡ BCE on the difference of the logits.
    rng = np.random.default_rng(0)
    logits = torch.as_tensor(rng.standard_normal((20, 2)), dtype=torch.float64)
    y = torch.as_tensor(rng.integers(0, 2, 20))
    ce = per_sample_loss("ce", logits, y)
    bce = per_sample_loss("bce", (logits[:, 1] - logits[:, 0])[:, None], y)
    torch.testing.assert_close(ce, bce)


def test_flat_round_trip():
    torch.manual_seed(1)
    net = build_model("fcnn")
    theta = torch.arange(68, dtype=torch.float32)
    load_flat_parameters(net, theta)
    torch.testing.assert_close(flat_parameters(net), theta)
    assert net[0].weight[1, 0].item() == 8.0  # W1 [3, 8] row-major comes first
    with pytest.raises(ValueError, match="67"):
        load_flat_parameters(net, theta[:67])


@pytest.mark.parametrize(("name", "kwargs"), [("mlp", {}), ("fcnn", {"variant": "8-x-1"}), ("fcnn", {"depth": 3})])
def test_bad_model_input(name, kwargs):
    with pytest.raises(ValueError):
        build_model(name, **kwargs)
