"""Architectures: parameter counts of Cebere et al. (spec §2) and the helpers the trainers rely on."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from hsaudit.engine.dpsgd import init_theta0
from hsaudit.engine.models import (
    WSConv2d,
    build_model,
    count_parameters,
    flat_parameters,
    input_shape,
    load_flat_parameters,
    loss_name,
    model_names,
    model_spec,
    num_classes,
    per_sample_loss,
    wrn_parameter_count,
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
        # De et al.'s WRN-16-4 ("2.7M"): hand count in the test below, closed form wrn_parameter_count
        ("wrn16_4", {}, 2_753_818),
        ("wrn16_4", {"depth": 10, "width": 1}, 78_938),
    ],
)
def test_parameter_counts(name, kwargs, expected):
    assert count_parameters(build_model(name, **kwargs)) == expected


def test_wrn16_4_parameter_count_by_hand():
    """WRN-16-4 counted layer by layer (weight-standardised convs: k²ab weights + b biases + b gains; GroupNorm 2c)."""

    def conv(k, a, b):
        return k * k * a * b + 2 * b

    stem = conv(3, 3, 16)  # 464
    group1 = (2 * 16 + conv(1, 16, 64)) + (2 * 16 + conv(3, 16, 64)) + (2 * 64 + conv(3, 64, 64))  # first block
    group1 += 2 * (2 * 64 + conv(3, 64, 64))  # second block
    group2 = (2 * 64 + conv(1, 64, 128)) + (2 * 64 + conv(3, 64, 128)) + (2 * 128 + conv(3, 128, 128))
    group2 += 2 * (2 * 128 + conv(3, 128, 128))
    group3 = (2 * 128 + conv(1, 128, 256)) + (2 * 128 + conv(3, 128, 256)) + (2 * 256 + conv(3, 256, 256))
    group3 += 2 * (2 * 256 + conv(3, 256, 256))
    head = 2 * 256 + 256 * 10 + 10
    assert stem + group1 + group2 + group3 + head == 2_753_818 == wrn_parameter_count(16, 4)
    for depth, width in ((10, 1), (16, 1), (22, 2)):
        assert count_parameters(build_model("wrn16_4", depth=depth, width=width)) == wrn_parameter_count(depth, width)
    with pytest.raises(ValueError, match="6n"):
        build_model("wrn16_4", depth=15)


def test_ws_conv_standardises_its_kernel():
    """Every output channel's effective kernel has mean 0 and fan_in·var = gain² (scaled WS, De et al. 2022)."""
    torch.manual_seed(0)
    conv = WSConv2d(4, 3, 3)
    with torch.no_grad():
        conv.weight.mul_(7.0).add_(2.0)
        conv.gain.copy_(torch.tensor([1.0, 2.0, 0.5]))
    w = conv.standardised_weight()
    torch.testing.assert_close(w.mean(dim=(1, 2, 3)), torch.zeros(3), atol=1e-6, rtol=0)
    torch.testing.assert_close(w.var(dim=(1, 2, 3), unbiased=False) * 36, conv.gain.detach() ** 2, rtol=1e-4, atol=0)


def test_forward_shapes():
    torch.manual_seed(0)
    assert build_model("fcnn")(torch.zeros(5, 8)).shape == (5, 1)
    assert build_model("fcnn", variant="8-6-2")(torch.zeros(5, 8)).shape == (5, 2)
    assert build_model("convnet")(torch.zeros(2, *input_shape("convnet"))).shape == (2, 10)
    assert build_model("alexnet_head")(torch.zeros(2, *input_shape("alexnet_head"))).shape == (2, 10)
    assert input_shape("alexnet_head") == (4096,)
    assert build_model("mnist_cnn")(torch.zeros(2, *input_shape("mnist_cnn"))).shape == (2, 10)
    assert build_model("cifar_cnn")(torch.zeros(2, *input_shape("cifar_cnn"))).shape == (2, 10)
    assert build_model("wrn16_4", depth=10, width=1)(torch.zeros(2, 3, 32, 32)).shape == (2, 10)


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


# Normalisation layers by module type (the test's own list, so that it does not share a mistake with the code).
_NORMS = (nn.GroupNorm, nn.LayerNorm, nn.modules.batchnorm._NormBase)


@pytest.mark.parametrize("name", model_names())
@pytest.mark.parametrize("bias", [0.0, 0.01])
def test_xavier_theta0_on_every_registry_model(name, bias):
    """``init_theta0(scheme="xavier_normal")``: norm scales 1, offsets and biases ``bias``, Glorot-normal weights.

    Every conv/linear weight must have sample sd sqrt(2 / (fan_in + fan_out)) (Glorot & Bengio 2010). For n
    i.i.d. normal draws the sample sd has relative standard error ≈ 1/sqrt(2n), so each tensor is checked to
    5 standard errors, and all weights of the model pooled (after dividing each by its sd) to 5 standard errors
    of the pooled count. The norm checks are exact.
    """
    theta = init_theta0(model_spec(name), scheme="xavier_normal", seed=17, bias=bias)
    net = build_model(name)
    load_flat_parameters(net, torch.as_tensor(theta))
    norms = weights = 0
    pooled: list[torch.Tensor] = []
    for module in net.modules():
        params = dict(module.named_parameters(recurse=False))
        if isinstance(module, WSConv2d):  # its gain is a scale: 1, like a norm's
            assert torch.all(params.pop("gain") == 1.0), f"{name}: {module} gain"
        if isinstance(module, _NORMS):
            norms += 1
            assert torch.all(params["weight"] == 1.0), f"{name}: {module} scale"
            assert torch.all(params["bias"] == bias), f"{name}: {module} offset"
        elif isinstance(module, (nn.Linear, nn.Conv2d)):
            weights += 1
            w = params["weight"].detach().double()
            fan_out, fan_in = w.shape[0] * w[0, 0].numel(), w.shape[1] * w[0, 0].numel()
            sd = math.sqrt(2.0 / (fan_in + fan_out))
            rel_se = 1.0 / math.sqrt(2 * w.numel())
            assert abs(w.std().item() / sd - 1) < 5 * rel_se, f"{name}: {module} sd {w.std().item():.4g} vs {sd:.4g}"
            pooled.append((w / sd).flatten())
            if "bias" in params:
                assert torch.all(params["bias"] == bias), f"{name}: {module} bias"
        else:
            assert not params, f"{name}: unexpected parameters in {module}"
    z = torch.cat(pooled)
    assert abs(z.std().item() - 1) < 5 / math.sqrt(2 * z.numel())
    assert abs(z.mean().item()) < 5 / math.sqrt(z.numel())
    assert weights >= 1
    # ResNet18-GN: stem + 2 per block x 8 + 3 shortcuts; WRN-16-4: 2 per block x 6 + 3 skip paths + the final one
    assert norms == {"resnet18_gn": 20, "wrn16_4": 16}.get(name, 0)


def test_xavier_theta0_resnet_shortcut_groupnorm_scales_are_one():
    """The shortcut GroupNorms ``layers.{2,4,6}.shortcut.1`` are not named "norm"; their scales must still be 1."""
    net = build_model("resnet18_gn")
    load_flat_parameters(net, torch.as_tensor(init_theta0(model_spec("resnet18_gn"), scheme="xavier_normal", seed=3)))
    params = dict(net.named_parameters())
    for block in (2, 4, 6):
        assert isinstance(net.get_submodule(f"layers.{block}.shortcut.1"), nn.GroupNorm)
        assert torch.all(params[f"layers.{block}.shortcut.1.weight"] == 1.0)
        assert torch.all(params[f"layers.{block}.shortcut.1.bias"] == 0.0)
