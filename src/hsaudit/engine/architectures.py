"""The PyTorch modules behind the model registry, and the flat-parameter helpers every trainer uses.

Which module a model name builds, with its input shape, outputs, loss and per-sample-gradient backends, is the
registry's (:mod:`hsaudit.engine.models`, one :class:`~hsaudit.engine.models.ModelSpec` per architecture, where
each architecture is described with its source); this module holds only the torch code, so that the registry can
be read without importing torch.

The flat parameter vector used everywhere in :mod:`hsaudit.engine.dpsgd` is ``torch.cat([p.flatten() for p in
model.parameters()])`` — i.e. the order of ``model.parameters()``; for the FCNN that is ``W1, b1, W2, b2, ...``
with each weight ``[out, in]`` row-major.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


def mlp(sizes: tuple[int, ...]) -> nn.Module:
    """A plain MLP of layer widths ``sizes`` (input first): Linear layers with a ReLU between them."""
    layers: list[nn.Module] = []
    for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        if i > 0:
            layers.append(nn.ReLU())
        layers.append(nn.Linear(n_in, n_out))
    return nn.Sequential(*layers)


def convnet(num_classes: int = 10) -> nn.Module:
    """Cebere et al.'s LeNet-5 style CIFAR-10 ConvNet (registry ``"convnet"``)."""
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


def mnist_cnn(num_classes: int = 10) -> nn.Module:
    """Yoon et al.'s MNIST ConvNet (registry ``"mnist_cnn"``)."""
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


def cifar_cnn(num_classes: int = 10) -> nn.Module:
    """Yoon et al.'s CIFAR-10 ConvNet (registry ``"cifar_cnn"``)."""
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


class ResNet18GN(nn.Module):
    """The CIFAR ResNet18 with GroupNorm (registry ``"resnet18_gn"``)."""

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


class WideResNet(nn.Module):
    """De et al.'s scaled weight-standardised WideResNet (registry ``"wrn16_4"``)."""

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
    """Closed-form parameter count of :class:`WideResNet` (registry ``"wrn16_4"``, its ``depth`` and ``width``).

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


def count_parameters(model: nn.Module) -> int:
    """Number of trainable parameters (the dimension p of the flat parameter vector)."""
    return int(sum(p.numel() for p in model.parameters() if p.requires_grad))


def per_sample_loss(kind: str, logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Per-sample loss ``[n]`` of ``logits`` ``[n, outputs]`` against integer labels ``y`` ``[n]``.

    ``kind`` is :attr:`hsaudit.engine.models.ModelSpec.loss`: ``"bce"`` uses the single logit with target ``y`` in
    {0, 1}.
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


def flat_parameters(model: nn.Module | torch.Tensor, *, detach: bool = True) -> torch.Tensor:
    """A module's flat parameter vector (order of ``model.parameters()``, their dtype), or a flat tensor as it is;
    detached unless ``detach=False`` (a term that gradients flow through, e.g. a gradient canary's).

    >>> flat_parameters(nn.Linear(2, 3)).shape, flat_parameters(torch.ones(2, dtype=torch.float64)).dtype
    (torch.Size([9]), torch.float64)
    """
    if isinstance(model, torch.Tensor):
        return model.detach() if detach else model
    return torch.cat([(p.detach() if detach else p).reshape(-1) for p in model.parameters()])


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
