"""Per-sample gradient backends (hsaudit.engine.psg) against a slow per-sample autograd loop (STYLE.md rule 17).

Every backend's ``clipped_sum`` and ``grad_norms`` must equal, to float32 tolerance, a loop that differentiates
one sample at a time with ``torch.autograd.grad`` on an ordinary module holding model m's parameters (norms
accumulated in float64: a float32 sum over ResNet18's 11M squares is itself off by ~2e-4 relative), then clips
with Opacus' factor min(1, C / (‖g‖ + 1e-6)) and sums with the weights. Clipping is made active for some samples
and not for others (C = the median per-sample norm).
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from hsaudit.engine.models import (
    build_model,
    count_parameters,
    flat_parameters,
    load_flat_parameters,
    model_spec,
    per_sample_loss,
)
from hsaudit.engine.psg import CLIP_EPS, FuncPopulation, HookPopulation, MLPPopulation, population_engine

# (model, kwargs, sample shape): the ResNet runs on tiny 3×8×8 images (it pools adaptively).
CASES = {
    "fcnn": ("fcnn", {}, (8,)),
    "fcnn_ce": ("fcnn", {"variant": "8-6-2"}, (8,)),
    "alexnet_head": ("alexnet_head", {}, (4096,)),
    "convnet": ("convnet", {}, (3, 32, 32)),
    "resnet18_gn": ("resnet18_gn", {}, (3, 8, 8)),
    # De et al.'s WideResNet at depth 10, width 1 (same layer types as WRN-16-4: weight-standardised convs, GroupNorm)
    "wrn": ("wrn16_4", {"depth": 10, "width": 1}, (3, 8, 8)),
}
BACKENDS = {
    "fcnn": ("mlp", "hooks", "func"),
    "fcnn_ce": ("mlp", "hooks", "func"),
    "alexnet_head": ("mlp", "hooks", "func"),
    "convnet": ("hooks", "func"),
    "resnet18_gn": ("hooks", "func"),
    "wrn": ("func",),  # hooks refuses weight standardisation (test_hooks_refuses_weight_standardisation)
}
pytestmark = pytest.mark.usefixtures("torch_one_thread")
N_SAMPLES = {"resnet18_gn": 3}
_CACHE: dict = {}


def _problem(case: str):
    """θ ``[3, p]`` (θ0 plus a per-model perturbation), x, y, the reference per-sample gradients ``[3, n, coords]``,
    their norms ``[3, n]`` and the compared coordinates."""
    if case in _CACHE:
        return _CACHE[case]
    model, kwargs, shape = CASES[case]
    gen = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    net = build_model(model, **kwargs)
    theta0 = flat_parameters(net)
    theta = theta0 + 0.05 * torch.randn(3, theta0.numel(), generator=gen) * theta0.abs().mean()
    n = N_SAMPLES.get(case, 5)
    x = torch.randn(n, *shape, generator=gen)
    classes = 2 if model == "fcnn" else 10
    y = torch.randint(0, classes, (n,), generator=gen)
    kind = "bce" if case == "fcnn" else "ce"
    grads = torch.empty(3, n, theta0.numel())
    for m in range(3):
        load_flat_parameters(net, theta[m])
        for i in range(n):
            loss = per_sample_loss(kind, net(x[i : i + 1]), y[i : i + 1]).sum()
            g = torch.autograd.grad(loss, list(net.parameters()))
            grads[m, i] = torch.cat([t.reshape(-1) for t in g])
    norms = torch.linalg.vector_norm(grads, dim=2, dtype=torch.float64).float()
    # Sums are compared on every 29th coordinate (every layer has more than 29 parameters): elementwise passes
    # over [3, 11M] tensors cost seconds each on the shared CPU. The norms above use all coordinates.
    coords = torch.arange(0, theta0.numel(), 29 if theta0.numel() > 10**6 else 1)
    _CACHE[case] = (model, kwargs, theta, x, y, grads[:, :, coords].clone(), norms, coords)
    return _CACHE[case]


def _reference_sum(grads, norms, clip: float | None, weights: torch.Tensor | None) -> torch.Tensor:
    factor = torch.ones_like(norms) if clip is None else (clip / (norms + CLIP_EPS)).clamp(max=1.0)
    if weights is not None:
        factor = factor * weights
    return torch.stack([f @ g for f, g in zip(factor, grads)])


def _assert_close(got: torch.Tensor, want: torch.Tensor, *, rtol: float, atol: float) -> None:
    """``torch.testing.assert_close``'s criterion |got − want| ≤ atol + rtol·|want|, cheap on ResNet-sized tensors."""
    assert got.shape == want.shape and got.dtype == want.dtype
    excess = ((got - want).abs() - rtol * want.abs()).max().item()
    assert excess <= atol, f"max |got - want| - rtol|want| = {excess:.3g} > atol = {atol:.3g}"


PAIRS = [(case, backend) for case, backends in BACKENDS.items() for backend in backends]


@pytest.mark.parametrize(("case", "backend"), PAIRS)
def test_grad_norms_match_per_sample_autograd(case, backend):
    model, kwargs, theta, x, y, grads, norms, coords = _problem(case)
    engine = population_engine(model_spec(model, **kwargs), backend=backend)
    assert engine.p == theta.shape[1]
    torch.testing.assert_close(engine.grad_norms(theta, x, y), norms, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize(
    ("case", "backend", "models"),
    # torch.func on ResNet18 takes ~10 s per population on the shared CPU: population size 1 only
    [(c, b, m) for c, b in PAIRS for m in (1, 3) if not (c == "resnet18_gn" and b == "func" and m == 3)],
)
def test_clipped_sum_matches_per_sample_autograd(case, backend, models):
    model, kwargs, theta, x, y, grads, norms, coords = _problem(case)
    engine = population_engine(model_spec(model, **kwargs), backend=backend)
    theta, grads, norms = theta[:models], grads[:models], norms[:models]
    clip = float(norms.median())  # some samples clipped, some not
    weights = torch.ones(models, x.shape[0])
    weights[-1, -1] = 0.0  # e.g. the canary of a non-inserted run
    weights[0, 0] = 2.0
    for c in (clip, None):
        for w in (None, weights):
            want = _reference_sum(grads, norms, c, w)
            scale = want.abs().max()
            _assert_close(engine.clipped_sum(theta, x, y, c, w)[:, coords], want, rtol=1e-4, atol=1e-5 * scale)
    # clipping is active: the clipped and unclipped sums differ (a no-op clip would pass the loop above otherwise)
    assert not torch.allclose(
        _reference_sum(grads, norms, clip, None), _reference_sum(grads, norms, None, None), rtol=1e-3
    )


@pytest.mark.parametrize(("case", "backend"), PAIRS)
def test_loss_matches_the_module(case, backend):
    model, kwargs, theta, x, y, _, _, _ = _problem(case)
    engine = population_engine(model_spec(model, **kwargs), backend=backend)
    net = build_model(model, **kwargs)
    want = []
    for m in range(theta.shape[0]):
        load_flat_parameters(net, theta[m])
        with torch.no_grad():
            want.append(per_sample_loss(engine.kind, net(x), y))
    torch.testing.assert_close(engine.loss(theta, x, y), torch.stack(want), rtol=1e-5, atol=1e-6)


def test_auto_picks_the_measured_winner():
    """``auto`` takes the spec's preferred backend: the hand-derived MLP engine for the MLPs, hooks for the rest."""
    assert model_spec("fcnn").preferred_backend == "mlp" and model_spec("alexnet_head").preferred_backend == "mlp"
    assert model_spec("convnet").preferred_backend == "hooks" == model_spec("resnet18_gn").preferred_backend
    assert isinstance(population_engine(model_spec("fcnn")), MLPPopulation)
    assert isinstance(population_engine(model_spec("alexnet_head")), MLPPopulation)
    assert isinstance(population_engine(model_spec("convnet")), HookPopulation)
    assert isinstance(population_engine(model_spec("convnet"), backend="func"), FuncPopulation)
    assert population_engine(model_spec("alexnet_head")).p == count_parameters(build_model("alexnet_head")) == 40_970


def test_auto_on_cuda_vectorises_over_models():
    """On CUDA ``auto`` takes the spec's measured CUDA winner: ``func`` for the three small ConvNets (``hooks`` runs
    one model at a time, 3-16x slower on an H100), ``hooks`` still for ResNet18-GN; the MLP engine and func-only
    models keep theirs; the CPU's choice is unchanged. A CUDA backend the module does not allow is refused."""
    for name in ("convnet", "mnist_cnn", "cifar_cnn"):
        spec = model_spec(name)
        assert spec.backend_on("cpu") == spec.backend_on(torch.device("cpu")) == "hooks" == spec.preferred_backend
        assert spec.backend_on("cuda") == spec.backend_on("cuda:0") == spec.backend_on(torch.device("cuda")) == "func"
    assert model_spec("resnet18_gn").backend_on("cuda") == "hooks"  # func measured 2x slower there
    assert model_spec("fcnn").backend_on("cuda") == "mlp" == model_spec("alexnet_head").backend_on("cuda")
    assert model_spec("wrn16_4").backend_on("cuda") == "func" == model_spec("wrn16_4").backend_on("cpu")
    with pytest.raises(ValueError, match="cuda_backend of 'convnet' must be one of its backends"):
        dataclasses.replace(model_spec("convnet"), cuda_backend="mlp")


@pytest.mark.parametrize("case", ["convnet", "alexnet_head"])
def test_auto_result_does_not_depend_on_population_size(case):
    model, kwargs, theta, x, y, _, _, _ = _problem(case)
    engine = population_engine(model_spec(model, **kwargs))
    whole = engine.clipped_sum(theta, x, y, 0.1, None)
    for m in range(3):
        torch.testing.assert_close(
            engine.clipped_sum(theta[m : m + 1], x, y, 0.1, None)[0], whole[m], rtol=1e-5, atol=1e-7
        )


def test_hooks_sample_chunking_does_not_change_results(monkeypatch):
    model, kwargs, theta, x, y, grads, norms, coords = _problem("convnet")
    engine = population_engine(model_spec(model, **kwargs), backend="hooks")
    want = engine.clipped_sum(theta, x, y, 0.5, None)
    monkeypatch.setattr("hsaudit.engine.psg.MEMORY_BUDGET", 1)  # one sample per chunk everywhere
    torch.testing.assert_close(engine.clipped_sum(theta, x, y, 0.5, None), want, rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(engine.grad_norms(theta, x, y), norms, rtol=1e-4, atol=1e-6)


def test_hooks_refuses_weight_standardisation():
    """WS couples a channel's weights: the hooks backend's per-layer formulas would be wrong, so it refuses the module
    itself, the WideResNet's spec allows ``func`` only, and ``auto`` picks it (whose per-sample gradients the tests
    above check)."""
    spec = model_spec("wrn16_4", depth=10, width=1)
    with pytest.raises(ValueError, match="WSConv2d.*func"):
        HookPopulation(spec)
    with pytest.raises(ValueError, match="'hooks' cannot differentiate 'wrn16_4'"):
        population_engine(spec, backend="hooks")
    assert spec.backends == ("func",)
    assert isinstance(population_engine(spec), FuncPopulation)


def test_bad_backends():
    with pytest.raises(ValueError, match="'gpu'"):
        population_engine(model_spec("fcnn"), backend="gpu")
    with pytest.raises(ValueError, match="convnet"):
        population_engine(model_spec("convnet"), backend="mlp")
    with pytest.raises(ValueError, match="mlp_sizes"):
        MLPPopulation(model_spec("convnet"))
    with pytest.raises(ValueError, match="ModelSpec"):  # a name is resolved at the boundary, never here
        population_engine("fcnn")
