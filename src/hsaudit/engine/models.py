"""Model architectures of the trained-model audits (Cebere et al. 2025, §5 and Appendix D).

Registry (:func:`build_model`):

- ``"fcnn"`` — the 68-parameter fully-connected network of the Housing audits. ``variant`` is a dash-separated
  list of layer widths, input first: ``"8-3-8-1"`` (default [inferred]: 27 + 32 + 9 = 68 parameters, one logit,
  ``BCEWithLogits``) or ``"8-6-2"`` (54 + 14 = 68, two logits, cross-entropy). ReLU between layers.
- ``"convnet"`` — LeNet-5 style CIFAR-10 network, 62,006 parameters: Conv(3→6,5) ReLU MaxPool2, Conv(6→16,5)
  ReLU MaxPool2, FC 400→120→84→10.
- ``"resnet18_gn"`` — the CIFAR ResNet18 (3×3 stem, stride 1, no max-pool, BasicBlocks [2,2,2,2], widths
  64–512, 1×1 projection shortcuts, FC 512→10) with GroupNorm instead of BatchNorm: 11,173,962 parameters.
- ``"alexnet_head"`` — the new last layer of the AlexNet transfer audit (Cebere et al. Fig. 13): Linear(4096→10)
  trained on precomputed 4096-d AlexNet features, 40,970 parameters, cross-entropy. It is the one-layer FCNN
  ``"4096-10"`` (:func:`mlp_sizes`), so the hand-derived FCNN engine trains it.
- ``"mnist_cnn"`` — the MNIST ConvNet of Yoon et al. (after Annamalai & De Cristofaro 2024), 25,386 parameters:
  Conv(1→16,5) MaxPool2 tanh, Conv(16→32,4) MaxPool2 tanh, FC 512→32 tanh, FC 32→10 (docs/yoon.md).
- ``"cifar_cnn"`` — the CIFAR-10 ConvNet of Yoon et al., 550,570 parameters: 3×3 convolutions (padding 1, tanh)
  32, 32, MaxPool2, 64, 64, MaxPool2, 128, 128, MaxPool2, then FC 2048→128 tanh, FC 128→10.
- ``"wrn16_4"`` — the WideResNet-16-4 of De et al. (2022), the model of Steinke, Nasr et al.'s CIFAR-10 audits,
  2,753,818 parameters (:func:`wrn_parameter_count`; De et al. quote 2.7M): as DeepMind's ``jax_privacy`` CIFAR WideResNet — a 3×3 stem
  of 16 channels, three groups of (depth − 4) / 6 pre-activation blocks (ReLU → GroupNorm(16 groups) →
  convolution, twice; widths 16·w, 32·w, 64·w; stride 2 at the first block of groups 2 and 3; a ReLU → GroupNorm →
  1×1 convolution on the skip path of each group's first block), then ReLU → GroupNorm → global mean → Linear.
  Every convolution is *scaled weight-standardised* with a gain and a bias per output channel
  (:class:`WSConv2d`: W ↦ gain · (W − mean) / sqrt(max(fan_in · var, 1e-4)), as ``jax_privacy``'s ``WSConv2D``).
  ``depth`` and ``width`` are options (``depth`` = 6n + 4), so the tests can build tiny ones. No dropout, no
  skip-init; augmentation multiplicity and parameter averaging are training options of De et al., not part of
  the architecture, and are not implemented (docs/steinke.md).

The flat parameter vector used everywhere in :mod:`hsaudit.engine.dpsgd` is ``torch.cat([p.flatten() for p in
model.parameters()])`` — i.e. the order of ``model.parameters()``; for the FCNN that is ``W1, b1, W2, b2, ...``
with each weight ``[out, in]`` row-major.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

MODELS = ("fcnn", "convnet", "resnet18_gn", "alexnet_head", "mnist_cnn", "cifar_cnn", "wrn16_4")
# Models whose layers the per-sample-gradient `hooks` backend cannot differentiate (weight standardisation).
WEIGHT_STANDARDISED = ("wrn16_4",)
DEFAULT_FCNN_VARIANT = "8-3-8-1"


def fcnn_sizes(variant: str = DEFAULT_FCNN_VARIANT) -> tuple[int, ...]:
    """Parse an FCNN ``variant`` such as ``"8-3-8-1"`` into layer widths (input first).

    Raises:
        ValueError: if the variant is not at least two positive integers joined by dashes.
    """
    try:
        sizes = tuple(int(s) for s in str(variant).split("-"))
    except ValueError:
        raise ValueError(f"fcnn variant must look like '8-3-8-1', got {variant!r}") from None
    if len(sizes) < 2 or min(sizes) < 1:
        raise ValueError(f"fcnn variant must have >= 2 positive widths, got {variant!r}")
    return sizes


def mlp_sizes(name: str, **kwargs) -> tuple[int, ...] | None:
    """Layer widths (input first) of a registry model that is a plain ReLU MLP, or ``None`` for the others.

    ``fcnn``: its ``variant``; ``alexnet_head``: ``(features, num_classes)``, i.e. ``(4096, 10)`` by default.

    Raises:
        ValueError: a bad ``variant``, or non-positive ``features`` / ``num_classes``.
    """
    if name == "fcnn":
        return fcnn_sizes(kwargs.get("variant", DEFAULT_FCNN_VARIANT))
    if name == "alexnet_head":
        features, classes = int(kwargs.get("features", 4096)), int(kwargs.get("num_classes", 10))
        if features < 1 or classes < 2:
            raise ValueError(f"alexnet_head needs features >= 1 and num_classes >= 2, got {features}, {classes}")
        return (features, classes)
    return None


def _fcnn(variant: str = DEFAULT_FCNN_VARIANT) -> nn.Module:
    sizes = fcnn_sizes(variant)
    return _mlp(sizes)


def _alexnet_head(features: int = 4096, num_classes: int = 10) -> nn.Module:
    return _mlp(mlp_sizes("alexnet_head", features=features, num_classes=num_classes))


def _mlp(sizes: tuple[int, ...]) -> nn.Module:
    layers: list[nn.Module] = []
    for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        if i > 0:
            layers.append(nn.ReLU())
        layers.append(nn.Linear(n_in, n_out))
    return nn.Sequential(*layers)


def _convnet(num_classes: int = 10) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 6, 5),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(400, 120),
        nn.ReLU(),
        nn.Linear(120, 84),
        nn.ReLU(),
        nn.Linear(84, num_classes),
    )


def _mnist_cnn(num_classes: int = 10) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(1, 16, 5),
        nn.MaxPool2d(2),
        nn.Tanh(),
        nn.Conv2d(16, 32, 4),
        nn.MaxPool2d(2),
        nn.Tanh(),
        nn.Flatten(),
        nn.Linear(512, 32),
        nn.Tanh(),
        nn.Linear(32, num_classes),
    )


def _cifar_cnn(num_classes: int = 10) -> nn.Module:
    layers: list[nn.Module] = []
    n_in = 3
    for width in (32, 32, "M", 64, 64, "M", 128, 128, "M"):
        if width == "M":
            layers.append(nn.MaxPool2d(2))
        else:
            layers += [nn.Conv2d(n_in, width, 3, padding=1), nn.Tanh()]
            n_in = width
    layers += [nn.Flatten(), nn.Linear(2048, 128), nn.Tanh(), nn.Linear(128, num_classes)]
    return nn.Sequential(*layers)


class _BasicBlock(nn.Module):
    def __init__(self, n_in: int, n_out: int, stride: int, groups: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(n_in, n_out, 3, stride=stride, padding=1, bias=False)
        self.norm1 = nn.GroupNorm(min(groups, n_out), n_out)
        self.conv2 = nn.Conv2d(n_out, n_out, 3, stride=1, padding=1, bias=False)
        self.norm2 = nn.GroupNorm(min(groups, n_out), n_out)
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or n_in != n_out:
            self.shortcut = nn.Sequential(
                nn.Conv2d(n_in, n_out, 1, stride=stride, bias=False), nn.GroupNorm(min(groups, n_out), n_out)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.norm1(self.conv1(x)))
        out = self.norm2(self.conv2(out))
        return torch.relu(out + self.shortcut(x))


class _ResNet18GN(nn.Module):
    def __init__(self, num_classes: int = 10, groups: int = 32) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 3, stride=1, padding=1, bias=False)
        self.norm1 = nn.GroupNorm(min(groups, 64), 64)
        blocks: list[nn.Module] = []
        n_in = 64
        for width, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            for s in (stride, 1):
                blocks.append(_BasicBlock(n_in, width, s, groups))
                n_in = width
        self.layers = nn.Sequential(*blocks)
        self.fc = nn.Linear(512, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.norm1(self.conv1(x)))
        out = self.layers(out)
        out = torch.flatten(nn.functional.adaptive_avg_pool2d(out, 1), 1)
        return self.fc(out)


class WSConv2d(nn.Conv2d):
    """Scaled weight-standardised 2-D convolution with a gain and a bias per output channel (Qiao et al. 2019;
    Brock et al. 2021; De et al. 2022 — ``jax_privacy``'s ``WSConv2D``).

    The effective kernel is Ŵ = gain · (W − mean(W)) / sqrt(max(fan_in · var(W), 1e-4)), mean and (biased)
    variance over each output channel's fan-in. Parameters in ``parameters()`` order: ``weight``, ``bias``,
    ``gain``. The standardisation couples a channel's weights, so a per-sample gradient of W is *not* the
    ordinary convolution weight gradient: the ``hooks`` backend refuses this module and ``auto`` picks ``func``.
    """

    def __init__(self, n_in: int, n_out: int, kernel_size: int, stride: int = 1, padding: int = 0) -> None:
        super().__init__(n_in, n_out, kernel_size, stride=stride, padding=padding, bias=True)
        self.gain = nn.Parameter(torch.ones(n_out))
        with torch.no_grad():  # fan-in variance scaling (the standardisation makes the scale irrelevant)
            nn.init.normal_(self.weight, 0.0, (n_in * kernel_size * kernel_size) ** -0.5)
            self.bias.zero_()

    def standardised_weight(self) -> torch.Tensor:
        w = self.weight
        fan_in = w[0].numel()
        mean = w.mean(dim=(1, 2, 3), keepdim=True)
        var = w.var(dim=(1, 2, 3), unbiased=False, keepdim=True)
        scale = torch.rsqrt(torch.clamp(var * fan_in, min=1e-4)) * self.gain.view(-1, 1, 1, 1)
        return (w - mean) * scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.conv2d(x, self.standardised_weight(), self.bias, self.stride, self.padding)


class _WRNBlock(nn.Module):
    """Pre-activation residual block of ``jax_privacy``'s WideResNet: x + conv(norm(relu(conv(norm(relu(x))))))."""

    def __init__(self, n_in: int, n_out: int, stride: int, groups: int, project: bool) -> None:
        super().__init__()
        self.norm1 = nn.GroupNorm(min(groups, n_in), n_in)
        self.conv1 = WSConv2d(n_in, n_out, 3, stride=stride, padding=1)
        self.norm2 = nn.GroupNorm(min(groups, n_out), n_out)
        self.conv2 = WSConv2d(n_out, n_out, 3, padding=1)
        self.skip_norm = nn.GroupNorm(min(groups, n_in), n_in) if project else None
        self.skip_conv = WSConv2d(n_in, n_out, 1, stride=stride) if project else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skip = x
        if self.skip_conv is not None:
            skip = self.skip_conv(self.skip_norm(torch.relu(x)))
        out = self.conv1(self.norm1(torch.relu(x)))
        out = self.conv2(self.norm2(torch.relu(out)))
        return out + skip


class _WideResNet(nn.Module):
    def __init__(self, num_classes: int = 10, depth: int = 16, width: int = 4, groups: int = 16) -> None:
        super().__init__()
        if depth < 10 or (depth - 4) % 6:
            raise ValueError(f"WideResNet depth must be 6n + 4 with n >= 1, got {depth}")
        if width < 1 or groups < 1:
            raise ValueError(f"WideResNet width and groups must be >= 1, got {width}, {groups}")
        blocks: list[nn.Module] = []
        self.stem = WSConv2d(3, 16, 3, padding=1)
        n_in = 16
        for channels, stride in ((16, 1), (32, 2), (64, 2)):
            for b in range((depth - 4) // 6):
                first = b == 0
                blocks.append(_WRNBlock(n_in, channels * width, stride if first else 1, groups, project=first))
                n_in = channels * width
        self.blocks = nn.Sequential(*blocks)
        self.norm = nn.GroupNorm(min(groups, n_in), n_in)
        self.fc = nn.Linear(n_in, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.blocks(self.stem(x))
        out = self.norm(torch.relu(out)).mean(dim=(2, 3))
        return self.fc(out)


def wrn_parameter_count(depth: int = 16, width: int = 4, num_classes: int = 10, in_channels: int = 3) -> int:
    """Closed-form parameter count of :func:`build_model` ``("wrn16_4", depth=..., width=...)``, by hand.

    A weight-standardised k×k convolution a → b has k²ab weights + b biases + b gains; a GroupNorm over c channels
    2c. Per group g (channels c_g, input c_{g−1}): the first block has norms over c_{g−1} (residual and skip),
    a 3×3 c_{g−1} → c_g and a 1×1 c_{g−1} → c_g convolution, a norm over c_g and a 3×3 c_g → c_g; each further block
    two norms over c_g and two 3×3 c_g → c_g. Plus the stem (3×3, in → 16), the final norm and the Linear layer.

    >>> wrn_parameter_count()
    2753818
    """

    def conv(k: int, a: int, b: int) -> int:
        return k * k * a * b + 2 * b

    n = (depth - 4) // 6
    total = conv(3, in_channels, 16)
    c_prev = 16
    for c in (16 * width, 32 * width, 64 * width):
        total += 2 * (2 * c_prev) + conv(3, c_prev, c) + conv(1, c_prev, c) + 2 * c + conv(3, c, c)
        total += (n - 1) * (2 * (2 * c) + 2 * conv(3, c, c))
        c_prev = c
    return total + 2 * c_prev + c_prev * num_classes + num_classes


def build_model(name: str, **kwargs) -> nn.Module:
    """Build an architecture of the registry with PyTorch's default initialisation (from the global RNG).

    Args:
        name: ``"fcnn"``, ``"convnet"``, ``"resnet18_gn"`` or ``"alexnet_head"``.
        **kwargs: ``fcnn``: ``variant`` (``"8-3-8-1"`` default, or ``"8-6-2"``); ``convnet``:
            ``num_classes`` (10); ``resnet18_gn``: ``num_classes`` (10), ``groups`` (GroupNorm groups per layer,
            ``min(groups, channels)``; 32 [inferred], the parameter count does not depend on it);
            ``alexnet_head``: ``features`` (4096), ``num_classes`` (10); ``mnist_cnn``, ``cifar_cnn``:
            ``num_classes`` (10); ``wrn16_4``: ``num_classes`` (10), ``depth`` (16), ``width`` (4), ``groups``
            (GroupNorm groups, 16 as De et al.).

    Raises:
        ValueError: unknown ``name`` or keyword.
    """
    builders = {
        "fcnn": _fcnn,
        "convnet": _convnet,
        "resnet18_gn": _ResNet18GN,
        "alexnet_head": _alexnet_head,
        "mnist_cnn": _mnist_cnn,
        "cifar_cnn": _cifar_cnn,
        "wrn16_4": _WideResNet,
    }
    if name not in builders:
        raise ValueError(f"model must be one of {MODELS}, got {name!r}")
    try:
        return builders[name](**kwargs)
    except TypeError as err:
        raise ValueError(f"bad model_kwargs {kwargs!r} for model {name!r}: {err}") from None


def count_parameters(model: nn.Module) -> int:
    """Number of trainable parameters (the dimension p of the flat parameter vector)."""
    return int(sum(p.numel() for p in model.parameters() if p.requires_grad))


def num_outputs(name: str, **kwargs) -> int:
    """Number of logits of the model (1 for a single-logit binary classifier)."""
    if name in ("fcnn", "alexnet_head"):
        return mlp_sizes(name, **kwargs)[-1]
    if name in ("convnet", "resnet18_gn", "mnist_cnn", "cifar_cnn", "wrn16_4"):
        return int(kwargs.get("num_classes", 10))
    raise ValueError(f"model must be one of {MODELS}, got {name!r}")


def num_classes(name: str, **kwargs) -> int:
    """Number of classes of the task (2 for a single-logit model)."""
    return max(2, num_outputs(name, **kwargs))


def input_shape(name: str, **kwargs) -> tuple[int | None, ...]:
    """Shape of one input sample (without the batch axis); ``None`` where any size works.

    The ConvNet needs 3×32×32 (its FC layer has 400 inputs); ResNet18-GN pools adaptively, so any spatial size
    (CIFAR: 32×32; so does the WideResNet; the tests use smaller images to stay fast on a CPU).
    """
    if name in ("fcnn", "alexnet_head"):
        return (mlp_sizes(name, **kwargs)[0],)
    if name in ("convnet", "cifar_cnn"):
        return (3, 32, 32)
    if name == "mnist_cnn":
        return (1, 28, 28)
    if name in ("resnet18_gn", "wrn16_4"):
        return (3, None, None)
    raise ValueError(f"model must be one of {MODELS}, got {name!r}")


def loss_name(name: str, **kwargs) -> str:
    """``"bce"`` (one logit, ``BCEWithLogits``) or ``"ce"`` (cross-entropy over the logits)."""
    return "bce" if num_outputs(name, **kwargs) == 1 else "ce"


def per_sample_loss(kind: str, logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Per-sample loss ``[n]`` of ``logits`` ``[n, outputs]`` against integer labels ``y`` ``[n]``.

    ``kind`` is :func:`loss_name`'s answer: ``"bce"`` uses the single logit with target ``y`` in {0, 1}.
    """
    if kind == "bce":
        return nn.functional.binary_cross_entropy_with_logits(
            logits.reshape(-1), y.to(logits.dtype).reshape(-1), reduction="none"
        )
    if kind == "ce":
        return nn.functional.cross_entropy(logits, y.long(), reduction="none")
    raise ValueError(f"loss kind must be 'bce' or 'ce', got {kind!r}")


def parameter_at(model: nn.Module, index: int) -> tuple[str, tuple[int, ...]]:
    """The parameter that holds coordinate ``index`` of the flat vector (:func:`flat_parameters` order): its name
    and the position inside it, e.g. ``("conv1.weight", (3, 0, 1, 2))``.

    >>> parameter_at(nn.Linear(2, 3), 7)
    ('bias', (1,))
    """
    offset = 0
    for name, param in model.named_parameters():
        if index < offset + param.numel():
            return name, tuple(int(i) for i in np.unravel_index(index - offset, tuple(param.shape)))
        offset += param.numel()
    raise ValueError(f"coordinate {index} is beyond the model's {offset} parameters")


def flat_parameters(model: nn.Module) -> torch.Tensor:
    """The flat parameter vector (order of ``model.parameters()``), detached, float32."""
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()]).to(torch.float32)


def load_flat_parameters(model: nn.Module, theta: torch.Tensor) -> None:
    """Copy the flat vector ``theta`` into ``model``'s parameters (inverse of :func:`flat_parameters`)."""
    theta = torch.as_tensor(theta)
    p = count_parameters(model)
    if theta.numel() != p:
        raise ValueError(f"theta has {theta.numel()} entries, the model has {p} parameters")
    offset = 0
    with torch.no_grad():
        for param in model.parameters():
            n = param.numel()
            param.copy_(theta[offset : offset + n].reshape(param.shape))
            offset += n
