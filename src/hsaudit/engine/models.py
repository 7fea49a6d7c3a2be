"""The model registry: one :class:`ModelSpec` value per architecture, resolved once and handed down.

A model is named once, at a boundary (the config, a command line), and resolved there by :func:`model_spec` into a
frozen :class:`ModelSpec` that carries every fact the engine, the benchmarks and the figures need: the builder, the
input shape, the outputs (and so the loss and the classes), which per-sample-gradient backends can differentiate it
(preferred first), a label for figures and the benchmark's default sizes. The engine takes the spec, never the name
(:func:`hsaudit.engine.psg.population_engine`, :mod:`hsaudit.engine.dpsgd`, :mod:`hsaudit.engine.reference`).

Adding an architecture is one entry of :data:`REGISTRY`: a function from the model's options (keyword arguments,
each with its default) to its spec. Seconds per model-step (the cost planner's calibration) are not part of the spec:
they are measured per machine and stored apart (:mod:`hsaudit.pipeline.costs`), so that re-measuring a cost never
changes the code version of a training job.

Registry (``name`` — options — what it is):

- ``"fcnn"`` — ``variant`` — the 68-parameter fully-connected network of the Housing audits (Cebere et al. 2025,
  §5). ``variant`` is a dash-separated list of layer widths, input first: ``"8-3-8-1"`` (default [inferred]:
  27 + 32 + 9 = 68 parameters, one logit, ``BCEWithLogits``) or ``"8-6-2"`` (54 + 14 = 68, two logits,
  cross-entropy). ReLU between layers.
- ``"convnet"`` — ``num_classes`` — LeNet-5 style CIFAR-10 network, 62,006 parameters: Conv(3→6,5) ReLU MaxPool2,
  Conv(6→16,5) ReLU MaxPool2, FC 400→120→84→10.
- ``"resnet18_gn"`` — ``num_classes``, ``groups`` — the CIFAR ResNet18 (3×3 stem, stride 1, no max-pool,
  BasicBlocks [2,2,2,2], widths 64–512, 1×1 projection shortcuts, FC 512→10) with GroupNorm instead of BatchNorm
  (``min(groups, channels)`` groups per layer, 32 [inferred]; the parameter count does not depend on it):
  11,173,962 parameters. It pools adaptively, so any image size works (CIFAR: 32×32).
- ``"alexnet_head"`` — ``features``, ``num_classes`` — the new last layer of the AlexNet transfer audit (Cebere et
  al. Fig. 13): Linear(4096→10) trained on precomputed 4096-d AlexNet features, 40,970 parameters, cross-entropy.
  It is the one-layer MLP ``4096-10``, so the hand-derived ``mlp`` backend trains it.
- ``"mnist_cnn"`` — ``num_classes`` — the MNIST ConvNet of Yoon et al. (after Annamalai & De Cristofaro 2024),
  25,386 parameters: Conv(1→16,5) MaxPool2 tanh, Conv(16→32,4) MaxPool2 tanh, FC 512→32 tanh, FC 32→10
  (docs/yoon.md).
- ``"cifar_cnn"`` — ``num_classes`` — the CIFAR-10 ConvNet of Yoon et al., 550,570 parameters: 3×3 convolutions
  (padding 1, tanh) 32, 32, MaxPool2, 64, 64, MaxPool2, 128, 128, MaxPool2, then FC 2048→128 tanh, FC 128→10.
- ``"wrn16_4"`` — ``num_classes``, ``depth``, ``width``, ``groups`` — the WideResNet-16-4 of De et al. (2022), the
  model of Steinke, Nasr et al.'s CIFAR-10 audits, 2,753,818 parameters
  (:func:`~hsaudit.engine.architectures.wrn_parameter_count`; De et al. quote 2.7M): as DeepMind's
  ``jax_privacy`` CIFAR WideResNet — a 3×3 stem of 16 channels, three groups of (depth − 4) / 6 pre-activation
  blocks (ReLU → GroupNorm(16 groups) → convolution, twice; widths 16·w, 32·w, 64·w; stride 2 at the first block
  of groups 2 and 3; a ReLU → GroupNorm → 1×1 convolution on the skip path of each group's first block), then
  ReLU → GroupNorm → global mean → Linear. Every convolution is *scaled weight-standardised* with a gain and a bias
  per output channel (:class:`~hsaudit.engine.architectures.WSConv2d`), which the ``hooks`` backend cannot
  differentiate: ``func`` only. ``depth`` (6n + 4) and ``width`` are options, so the tests can build tiny ones.
  No dropout, no skip-init; augmentation multiplicity and parameter averaging are training options of De et al.,
  not part of the architecture, and are not implemented (docs/steinke.md).

This module does not import torch (the builders import :mod:`hsaudit.engine.architectures` when called), so the
planner and the figures read specs without it. The torch helpers that callers used to import from here
(``flat_parameters``, ``per_sample_loss``, …) resolve lazily from :mod:`hsaudit.engine.architectures`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

PSG_BACKENDS = ("mlp", "hooks", "func")
"""Per-sample-gradient backends of :mod:`hsaudit.engine.psg`: hand-derived ReLU MLPs, per-layer hooks, torch.func."""
DEFAULT_FCNN_VARIANT = "8-3-8-1"


@dataclass(frozen=True)
class BenchSizes:
    """Defaults of ``hsaudit bench train --model NAME`` (:mod:`hsaudit.bench.train`) for one architecture.

    Attributes:
        models: population sizes timed (large enough to show the engine's vectorisation, small enough for a CPU).
        steps: timed DP-SGD steps (after one untimed warm-up step).
        batch: the batch size B.
    """

    models: tuple[int, ...] = (1,)
    steps: int = 3
    batch: int = 128

    def __post_init__(self) -> None:
        if not self.models or min(self.models) < 1 or self.steps < 1 or self.batch < 1:
            raise ValueError(f"bench sizes must be >= 1, got {self}")


@dataclass(frozen=True)
class ModelSpec:
    """Everything the engine needs to know about one architecture with its options (a registry value).

    Attributes:
        name: the registry name (what configs and command lines write).
        builder: ``builder(**kwargs)`` → a fresh ``torch.nn.Module`` with PyTorch's default initialisation drawn
            from the global RNG (so that a seeded build is θ0).
        input_shape: shape of one input sample (no batch axis); ``None`` where any size works.
        outputs: number of logits (1: a single-logit binary classifier trained with ``BCEWithLogits``).
        kwargs: the builder's options, every one resolved (defaults filled in), as sorted ``(name, value)`` pairs.
        label: the architecture's name in figures and tables.
        mlp_sizes: the layer widths (input first) when the module is a plain ReLU MLP, which the hand-derived ``mlp``
            backend can train; ``None`` otherwise.
        backends: the per-sample-gradient backends that differentiate this module correctly, preferred first
            (``backend="auto"`` takes the first on the CPU: the measured winner, docs/trainer.md).
        cuda_backend: the backend ``auto`` takes on CUDA where the measured winner there differs (one of
            :attr:`backends`); ``None``: the first of :attr:`backends` there too (:meth:`backend_on`).
        bench: the benchmark's default sizes.
        colour: the architecture's colour in figures that draw one series per model (``None``: a neutral grey).
        feature_extractor: the extractor whose outputs the model is trained on (``"alexnet"``: the 4096-d AlexNet
            features, :mod:`hsaudit.data.alexnet`); ``None`` for a model trained on the inputs themselves.
    """

    name: str
    builder: Callable[..., Any] = field(compare=False, repr=False)
    input_shape: tuple[int | None, ...]
    outputs: int
    kwargs: tuple[tuple[str, Any], ...] = ()
    label: str = ""
    mlp_sizes: tuple[int, ...] | None = None
    backends: tuple[str, ...] = ("hooks", "func")
    bench: BenchSizes = BenchSizes()
    cuda_backend: str | None = field(default=None, compare=False)
    colour: str | None = field(default=None, compare=False)
    feature_extractor: str | None = None

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a model spec needs a name")
        if not callable(self.builder):
            raise ValueError(f"builder of {self.name!r} must be callable, got {self.builder!r}")
        if int(self.outputs) != self.outputs or self.outputs < 1:
            raise ValueError(f"outputs of {self.name!r} must be a positive integer, got {self.outputs}")
        if not self.input_shape or any(s is not None and (int(s) != s or s < 1) for s in self.input_shape):
            raise ValueError(f"input_shape of {self.name!r} must be positive sizes or None, got {self.input_shape}")
        if not self.backends or not set(self.backends) <= set(PSG_BACKENDS):
            raise ValueError(
                f"backends of {self.name!r} must be a non-empty subset of {PSG_BACKENDS}, got {self.backends}"
            )
        if self.cuda_backend is not None and self.cuda_backend not in self.backends:
            raise ValueError(f"cuda_backend of {self.name!r} must be one of its backends {self.backends}, "
                             f"got {self.cuda_backend!r}")  # fmt: skip
        if ("mlp" in self.backends) != (self.mlp_sizes is not None):
            raise ValueError(f"{self.name!r}: the 'mlp' backend needs mlp_sizes and mlp_sizes need it in backends")
        if self.mlp_sizes is not None and (
            (self.mlp_sizes[0],) != tuple(self.input_shape) or self.mlp_sizes[-1] != self.outputs
        ):
            raise ValueError(f"{self.name!r}: mlp_sizes {self.mlp_sizes} disagree with input {self.input_shape} and "
                             f"outputs {self.outputs}")
        object.__setattr__(self, "kwargs", tuple(sorted(self.kwargs)))  # one order: equal options, equal specs
        if not self.label:
            object.__setattr__(self, "label", self.name)

    @property
    def model_kwargs(self) -> dict[str, Any]:
        """The options as a dict (the builder's keyword arguments)."""
        return dict(self.kwargs)

    @property
    def loss(self) -> str:
        """``"bce"`` (one logit, ``BCEWithLogits``) or ``"ce"`` (cross-entropy over the logits)."""
        return "bce" if self.outputs == 1 else "ce"

    @property
    def classes(self) -> int:
        """Number of classes of the task (2 for a single-logit model)."""
        return max(2, self.outputs)

    @property
    def preferred_backend(self) -> str:
        """The backend ``backend="auto"`` uses on the CPU (the first of :attr:`backends`)."""
        return self.backends[0]

    def backend_on(self, device: Any) -> str:
        """The backend ``backend="auto"`` uses on ``device`` (a ``torch.device`` or its name): :attr:`cuda_backend`
        on CUDA where the spec names one, else the first of :attr:`backends`. It depends on the model and the device
        only, never on the population size, so a shard's result never depends on it."""
        kind = device.type if hasattr(device, "type") else str(device).split(":")[0]
        return self.cuda_backend if kind == "cuda" and self.cuda_backend else self.backends[0]

    def example_shape(self, free: int = 32) -> tuple[int, ...]:
        """:attr:`input_shape` with every free size set to ``free`` (CIFAR's 32 by default)."""
        return tuple(free if s is None else int(s) for s in self.input_shape)

    def build(self):
        """A fresh module (``torch.nn.Module``), PyTorch's default initialisation from the global RNG."""
        return self.builder(**self.model_kwargs)

    def with_options(self, **options) -> ModelSpec:
        """The same architecture with ``options`` changed (e.g. ``num_classes=100`` for a pre-training head),
        resolved through the registry as :func:`model_spec` does."""
        return model_spec(self.name, **{**self.model_kwargs, **options})


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


# ------------------------------------------------------------------------------------------- builders (torch)
# Each imports the torch modules only when called, so that reading a spec needs no torch.


def _build_fcnn(variant: str):
    from hsaudit.engine import architectures

    return architectures.mlp(fcnn_sizes(variant))


def _build_alexnet_head(features: int, num_classes: int):
    from hsaudit.engine import architectures

    return architectures.mlp((features, num_classes))


def _build_convnet(num_classes: int):
    from hsaudit.engine import architectures

    return architectures.convnet(num_classes)


def _build_resnet18_gn(num_classes: int, groups: int):
    from hsaudit.engine import architectures

    return architectures.ResNet18GN(num_classes=num_classes, groups=groups)


def _build_mnist_cnn(num_classes: int):
    from hsaudit.engine import architectures

    return architectures.mnist_cnn(num_classes)


def _build_cifar_cnn(num_classes: int):
    from hsaudit.engine import architectures

    return architectures.cifar_cnn(num_classes)


def _build_wrn(num_classes: int, depth: int, width: int, groups: int):
    from hsaudit.engine import architectures

    return architectures.WideResNet(num_classes=num_classes, depth=depth, width=width, groups=groups)


# ------------------------------------------------------------------------------------------------ the registry


def _classes(num_classes) -> int:
    if int(num_classes) != num_classes or num_classes < 2:
        raise ValueError(f"num_classes must be an integer >= 2, got {num_classes!r}")
    return int(num_classes)


def _fcnn(variant: str = DEFAULT_FCNN_VARIANT) -> ModelSpec:
    sizes = fcnn_sizes(variant)
    return ModelSpec(
        name="fcnn", builder=_build_fcnn, input_shape=(sizes[0],), outputs=sizes[-1],
        kwargs=(("variant", str(variant)),), label="FCNN", mlp_sizes=sizes, backends=("mlp", "hooks", "func"),
        bench=BenchSizes(models=(1000,), steps=5, batch=400),
    )


# cuda_backend="func" below is the measured winner on CUDA where it is not the CPU's (hsaudit bench train --device
# cuda, one H100, torch 2.11, 2026-11-26; docs/benchmarks.md): `hooks` runs one model at a time, which a GPU pays in
# kernel launches, and `func` vectorises the population: ConvNet 2.65e-4 vs 4.13e-3 s per model-step (x15.6), MNIST
# ConvNet 2.52e-4 vs 2.63e-3 (x10.4), CIFAR-10 ConvNet 2.69e-3 vs 8.53e-3 (x3.2). ResNet18-GN keeps `hooks` (func
# 9.19e-2 vs 4.56e-2: x0.5).


def _convnet(num_classes: int = 10) -> ModelSpec:
    k = _classes(num_classes)
    return ModelSpec(
        name="convnet", builder=_build_convnet, input_shape=(3, 32, 32), outputs=k, kwargs=(("num_classes", k),),
        label="ConvNet", bench=BenchSizes(models=(1, 8, 64, 256), steps=3), cuda_backend="func", colour="#882255",
    )


def _resnet18_gn(num_classes: int = 10, groups: int = 32) -> ModelSpec:
    k = _classes(num_classes)
    if int(groups) != groups or groups < 1:
        raise ValueError(f"resnet18_gn groups must be a positive integer, got {groups!r}")
    return ModelSpec(
        name="resnet18_gn", builder=_build_resnet18_gn, input_shape=(3, None, None), outputs=k,
        kwargs=(("groups", int(groups)), ("num_classes", k)), label="ResNet18-GN", bench=BenchSizes(steps=2),
        colour="#117733",
    )


def _alexnet_head(features: int = 4096, num_classes: int = 10) -> ModelSpec:
    if int(features) != features or features < 1:
        raise ValueError(f"alexnet_head features must be a positive integer, got {features!r}")
    k, n = _classes(num_classes), int(features)
    return ModelSpec(
        name="alexnet_head", builder=_build_alexnet_head, input_shape=(n,), outputs=k,
        kwargs=(("features", n), ("num_classes", k)), label="AlexNet (last layer)", mlp_sizes=(n, k),
        backends=("mlp", "hooks", "func"), bench=BenchSizes(models=(1, 8, 64, 256), steps=5), colour="#332288",
        feature_extractor="alexnet",
    )


def _mnist_cnn(num_classes: int = 10) -> ModelSpec:
    k = _classes(num_classes)
    return ModelSpec(
        name="mnist_cnn", builder=_build_mnist_cnn, input_shape=(1, 28, 28), outputs=k,
        kwargs=(("num_classes", k),), label="MNIST ConvNet", bench=BenchSizes(models=(1, 8, 64), steps=3),
        cuda_backend="func",
    )


def _cifar_cnn(num_classes: int = 10) -> ModelSpec:
    k = _classes(num_classes)
    return ModelSpec(
        name="cifar_cnn", builder=_build_cifar_cnn, input_shape=(3, 32, 32), outputs=k,
        kwargs=(("num_classes", k),), label="CIFAR-10 ConvNet", bench=BenchSizes(models=(1, 8), steps=3),
        cuda_backend="func",
    )


def _wrn16_4(num_classes: int = 10, depth: int = 16, width: int = 4, groups: int = 16) -> ModelSpec:
    k = _classes(num_classes)
    if int(depth) != depth or depth < 10 or (depth - 4) % 6:
        raise ValueError(f"WideResNet depth must be 6n + 4 with n >= 1, got {depth}")
    if int(width) != width or int(groups) != groups or width < 1 or groups < 1:
        raise ValueError(f"WideResNet width and groups must be >= 1, got {width}, {groups}")
    label = "WRN-16-4" if (depth, width) == (16, 4) else f"WRN-{int(depth)}-{int(width)}"
    return ModelSpec(
        name="wrn16_4", builder=_build_wrn, input_shape=(3, None, None), outputs=k,
        kwargs=(("depth", int(depth)), ("groups", int(groups)), ("num_classes", k), ("width", int(width))),
        label=label, backends=("func",), bench=BenchSizes(steps=2),
    )


REGISTRY: dict[str, Callable[..., ModelSpec]] = {
    "fcnn": _fcnn,
    "convnet": _convnet,
    "resnet18_gn": _resnet18_gn,
    "alexnet_head": _alexnet_head,
    "mnist_cnn": _mnist_cnn,
    "cifar_cnn": _cifar_cnn,
    "wrn16_4": _wrn16_4,
}
"""Registry name → the function from the architecture's options (keywords with defaults) to its :class:`ModelSpec`."""


def model_names() -> tuple[str, ...]:
    """The names of the registry."""
    return tuple(REGISTRY)


def model_spec(name: str | ModelSpec, **kwargs) -> ModelSpec:
    """Resolve a registry name and its options into a :class:`ModelSpec` (a spec is returned as it is).

    Args:
        name: a registry name (:data:`REGISTRY`), or an already resolved spec (then no options may be given).
        **kwargs: the architecture's options (see the module docstring); unnamed ones take their defaults.

    Raises:
        ValueError: an unknown name (the message lists the known ones), an unknown option or a bad value.
    """
    if isinstance(name, ModelSpec):
        if kwargs:
            raise ValueError(f"options {kwargs!r} given with an already resolved spec of {name.name!r}")
        return name
    if name not in REGISTRY:
        raise ValueError(f"model must be one of {model_names()}, got {name!r}")
    try:
        return REGISTRY[name](**kwargs)
    except TypeError as err:
        raise ValueError(f"bad model_kwargs {kwargs!r} for model {name!r}: {err}") from None


def option_names(name: str) -> tuple[str, ...]:
    """The options of registry model ``name`` (the keyword arguments of its registry entry), in order."""
    import inspect

    if name not in REGISTRY:
        raise ValueError(f"model must be one of {model_names()}, got {name!r}")
    return tuple(inspect.signature(REGISTRY[name]).parameters)


def spec_of(values: Mapping[str, Any]) -> ModelSpec:
    """The spec that a plan's values name: ``values["model"]`` with the options ``values["model_kwargs"]`` (absent
    or null: the defaults). The one way a workflow script resolves the model its rule's params carry.

    Raises:
        ValueError: as :func:`model_spec`.
    """
    return model_spec(values["model"], **(values.get("model_kwargs") or {}))


def require_spec(spec: Any, what: str = "model") -> ModelSpec:
    """``spec`` if it is a :class:`ModelSpec`, else a ``ValueError`` that says how to make one (engine boundary)."""
    if not isinstance(spec, ModelSpec):
        raise ValueError(
            f"{what} must be a ModelSpec (hsaudit.engine.models.model_spec(name, **options)), got {spec!r}"
        )
    return spec


# ----------------------------------------------------------------- name-taking one-liners (callers pass specs next)


def build_model(name: str, **kwargs):
    """A fresh module of a registry model (:meth:`ModelSpec.build`)."""
    return model_spec(name, **kwargs).build()


def num_classes(name: str, **kwargs) -> int:
    """Number of classes of the task (:attr:`ModelSpec.classes`)."""
    return model_spec(name, **kwargs).classes


def input_shape(name: str, **kwargs) -> tuple[int | None, ...]:
    """Shape of one input sample (:attr:`ModelSpec.input_shape`)."""
    return model_spec(name, **kwargs).input_shape


def loss_name(name: str, **kwargs) -> str:
    """``"bce"`` or ``"ce"`` (:attr:`ModelSpec.loss`)."""
    return model_spec(name, **kwargs).loss


# The torch helpers of hsaudit.engine.architectures, importable from here as before (resolved on first use).
_ARCHITECTURE_NAMES = (
    "WSConv2d",
    "count_parameters",
    "flat_parameters",
    "load_flat_parameters",
    "parameter_at",
    "per_sample_loss",
    "wrn_parameter_count",
)


def __getattr__(name: str):  # PEP 562: only when ``name`` is not a module attribute
    if name in _ARCHITECTURE_NAMES:
        from hsaudit.engine import architectures

        return getattr(architectures, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_ARCHITECTURE_NAMES])


__all__ = [
    "BenchSizes",
    "DEFAULT_FCNN_VARIANT",
    "ModelSpec",
    "PSG_BACKENDS",
    "REGISTRY",
    "build_model",
    "fcnn_sizes",
    "input_shape",
    "loss_name",
    "model_names",
    "model_spec",
    "num_classes",
    "option_names",
    "require_spec",
    "spec_of",
]
