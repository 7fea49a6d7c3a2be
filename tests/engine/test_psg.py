"""Per-sample gradient backends (hsaudit.engine.psg) against a slow per-sample autograd loop (STYLE.md rule 17).

Every backend's ``clipped_sum`` and ``grad_norms`` must equal, to float32 tolerance, a loop that differentiates
one sample at a time with ``torch.autograd.grad`` on an ordinary module holding model m's parameters (norms
accumulated in float64: a float32 sum over ResNet18's 11M squares is itself off by ~2e-4 relative), then clips
with Opacus' factor min(1, C / (‖g‖ + 1e-6)) and sums with the weights. Clipping is made active for some samples
and not for others (C = the median per-sample norm).
"""

from __future__ import annotations

import pytest
import torch

from hsaudit.engine.models import build_model, count_parameters, flat_parameters, load_flat_parameters, per_sample_loss
from hsaudit.engine.psg import CLIP_EPS, FuncPopulation, HookPopulation, MLPPopulation, auto_backend, population

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
    engine = population(model, kwargs, backend=backend)
    assert engine.p == theta.shape[1]
    torch.testing.assert_close(engine.grad_norms(theta, x, y), norms, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize(
    ("case", "backend", "models"),
    # torch.func on ResNet18 takes ~10 s per population on the shared CPU: population size 1 only
    [(c, b, m) for c, b in PAIRS for m in (1, 3) if not (c == "resnet18_gn" and b == "func" and m == 3)],
)
def test_clipped_sum_matches_per_sample_autograd(case, backend, models):
    model, kwargs, theta, x, y, grads, norms, coords = _problem(case)
    engine = population(model, kwargs, backend=backend)
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
    engine = population(model, kwargs, backend=backend)
    net = build_model(model, **kwargs)
    want = []
    for m in range(theta.shape[0]):
        load_flat_parameters(net, theta[m])
        with torch.no_grad():
            want.append(per_sample_loss(engine.kind, net(x), y))
    torch.testing.assert_close(engine.loss(theta, x, y), torch.stack(want), rtol=1e-5, atol=1e-6)


def test_auto_picks_the_measured_winner():
    assert auto_backend("fcnn") == "mlp" and auto_backend("alexnet_head") == "mlp"
    assert auto_backend("convnet") == "hooks" and auto_backend("resnet18_gn", "cuda") == "hooks"
    assert isinstance(population("fcnn", {}), MLPPopulation)
    assert isinstance(population("alexnet_head", {}), MLPPopulation)
    assert isinstance(population("convnet", {}), HookPopulation)
    assert isinstance(population("convnet", {}, backend="func"), FuncPopulation)
    assert population("alexnet_head", {}).p == count_parameters(build_model("alexnet_head")) == 40_970


@pytest.mark.parametrize("case", ["convnet", "alexnet_head"])
def test_auto_result_does_not_depend_on_population_size(case):
    model, kwargs, theta, x, y, _, _, _ = _problem(case)
    engine = population(model, kwargs)
    whole = engine.clipped_sum(theta, x, y, 0.1, None)
    for m in range(3):
        torch.testing.assert_close(
            engine.clipped_sum(theta[m : m + 1], x, y, 0.1, None)[0], whole[m], rtol=1e-5, atol=1e-7
        )


def test_hooks_sample_chunking_does_not_change_results(monkeypatch):
    model, kwargs, theta, x, y, grads, norms, coords = _problem("convnet")
    engine = population(model, kwargs, backend="hooks")
    want = engine.clipped_sum(theta, x, y, 0.5, None)
    monkeypatch.setattr("hsaudit.engine.psg.MEMORY_BUDGET", 1)  # one sample per chunk everywhere
    torch.testing.assert_close(engine.clipped_sum(theta, x, y, 0.5, None), want, rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(engine.grad_norms(theta, x, y), norms, rtol=1e-4, atol=1e-6)


def test_hooks_refuses_weight_standardisation():
    """WS couples a channel's weights: the hooks backend's per-layer formulas would be wrong, so it refuses, and
    ``auto`` picks ``func`` for the WideResNet (whose per-sample gradients the tests above check)."""
    with pytest.raises(ValueError, match="WSConv2d.*func"):
        population("wrn16_4", {"depth": 10, "width": 1}, backend="hooks")
    assert auto_backend("wrn16_4") == "func"
    assert isinstance(population("wrn16_4", {"depth": 10, "width": 1}), FuncPopulation)


def test_bad_backends():
    with pytest.raises(ValueError, match="'gpu'"):
        population("fcnn", {}, backend="gpu")
    with pytest.raises(ValueError, match="convnet"):
        population("convnet", {}, backend="mlp")


def test_bench_train_engine_cli(capsys, tmp_path):
    """`hsaudit bench train --model convnet`: engine, Opacus and floor rows per population size; calibration saved."""
    import json

    from hsaudit.cli import main
    from hsaudit.pipeline.costs import calibration

    path = tmp_path / "cal.json"
    argv = [
        "bench",
        "train",
        "--model",
        "convnet",
        "--models",
        "1,2",
        "--steps",
        "1",
        "--batch-size",
        "4",
        "--json",
        "--save-calibration",
        str(path),
    ]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["models"] for r in out["populations"]] == [1, 2]
    for row in out["populations"]:
        for key in (
            "seconds_per_model_step",
            "model_steps_per_s",
            "models_per_s",
            "engine_over_floor",
            "speedup_vs_opacus",
            "peak_rss_mb",
            "load_average",
        ):
            assert row[key] > 0
    assert out["opacus"]["seconds_per_model_step"] > 0 and out["floor"]["seconds_per_model_step"] > 0
    assert out["backend"] == "auto (hooks)" and out["parameters"] == 62_006
    row = calibration("convnet", "cpu", path=path)
    assert row.status == "measured" and row.seconds_per_model_step == out["populations"][-1]["seconds_per_model_step"]
    assert main([*argv[:4], "--models", "0"]) == 2  # bad input: one-line error, exit 2


def test_bench_train_full_batch_cli(capsys):
    """`hsaudit bench train --model mnist_cnn --full-batch`: every step is all of D, for the engine, Opacus, floor."""
    import json

    from hsaudit.cli import main

    argv = ["bench", "train", "--model", "mnist_cnn", "--full-batch", "--models", "2", "--n-train", "8",
            "--steps", "1", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["full_batch"] and out["batch_size"] == out["n_train"] == 8 and out["parameters"] == 25_386
    (row,) = out["populations"]
    assert row["models"] == 2 and row["engine_over_floor"] > 0 and row["speedup_vs_opacus"] > 0
    assert out["opacus"]["model_steps_per_s"] > 0 and out["floor"]["model_steps_per_s"] > 0
    assert main([*argv[:5], "--batch-size", "4"]) == 2  # B is |D| under --full-batch
    assert main(["bench", "train", "--full-batch"]) == 2  # fcnn has no full-batch mode
