"""The model registry (hsaudit.engine.models): a model is one ModelSpec value, resolved once and handed down.

Adding an architecture is one registry entry: a toy model registered here (monkeypatched, no other file touched) is
trained as a population by the engine and checked model by model against the Opacus reference trainer (STYLE.md
rule 17). The workflow schemas' model enums are filled from the registry (tests/pipeline/test_config.py).
"""

from __future__ import annotations


import numpy as np
import pytest
import torch
from torch import nn

from hsaudit.engine import models as M
from hsaudit.engine.dpsgd import DPSGDConfig, make_setup, model_noise, train_population
from hsaudit.engine.models import ModelSpec, model_names, model_spec
from hsaudit.engine.psg import FuncPopulation, HookPopulation, MLPPopulation, population_engine
from hsaudit.engine.reference import train_reference

pytestmark = pytest.mark.usefixtures("torch_one_thread")


def _toy_tanh(hidden: int = 4) -> ModelSpec:
    """A 2-layer MLP on 5 features with a tanh (not a ReLU MLP: the hooks and func backends), 3 classes."""

    def build(hidden: int) -> nn.Module:
        return nn.Sequential(nn.Linear(5, hidden), nn.Tanh(), nn.Linear(hidden, 3))

    return ModelSpec(name="toy", builder=build, input_shape=(5,), outputs=3, kwargs=(("hidden", int(hidden)),),
                     label="Toy MLP")


def _toy_relu() -> ModelSpec:
    """The same shape with a ReLU, declared a plain MLP: the hand-derived ``mlp`` backend trains it."""
    return ModelSpec(
        name="toy_relu", builder=lambda: nn.Sequential(nn.Linear(5, 4), nn.ReLU(), nn.Linear(4, 3)),
        input_shape=(5,), outputs=3, mlp_sizes=(5, 4, 3), backends=("mlp", "func"),
    )


@pytest.fixture
def toys(monkeypatch):
    monkeypatch.setitem(M.REGISTRY, "toy", _toy_tanh)
    monkeypatch.setitem(M.REGISTRY, "toy_relu", _toy_relu)


def _toy_data(n: int = 40, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 5)).astype(np.float32)
    return X, (X[:, 0] > 0).astype(np.int64) + (X[:, 1] > 0.5)  # labels 0, 1, 2


@pytest.mark.parametrize(("name", "backend"), [("toy", "hooks"), ("toy", "func"), ("toy_relu", "mlp")])
@pytest.mark.parametrize("insertion", ["gradient", "canary"])
def test_a_registered_model_trains_as_the_opacus_reference(toys, name, backend, insertion):
    """One registry entry is all a new model needs: the engine trains a smoke population of it, with an insertion
    in half of the models, and every model equals the Opacus reference fed the same θ0, batches and noise."""
    spec = model_spec(name)
    X, y = _toy_data()
    cfg = DPSGDConfig(steps=4, batch_size=8, lr=0.5, clip_norm=0.2, noise_multiplier=1.0, period=2)
    setup = make_setup(spec=spec, n_train=len(X), config=cfg, seed=1)
    engine = population_engine(spec, "cpu", backend=backend)
    p = engine.p
    bits = np.array([1, 0, 1, 0])
    gradient = canary = None
    if insertion == "gradient":
        gradient = torch.zeros(p)
        gradient[2] = cfg.clip_norm  # a Dirac gradient canary
    else:
        canary = (torch.full((1, 5), 3.0), torch.tensor([2]))  # an input canary, clipped like any sample
    Xt, yt = torch.from_numpy(X), torch.from_numpy(y)
    assert engine.grad_norms(torch.from_numpy(setup.theta0)[None], Xt, yt).max() > cfg.clip_norm  # clipping active
    obs = train_population(
        engine=engine, theta0=torch.from_numpy(setup.theta0), X=Xt, y=yt, batches=setup.batches, config=cfg,
        noise_key=9, models=range(4), mask=torch.from_numpy(bits).float(), gradient=gradient, canary=canary,
        keep_final=True,
    )
    for i, bit in enumerate(bits):
        _, final = train_reference(
            spec=spec, X=X, y=y, setup=setup, config=cfg, bit=int(bit), noise=model_noise(9, i, cfg.steps, p),
            gradient=gradient, canary=canary,
        )
        np.testing.assert_allclose(obs.theta[i], final, rtol=1e-4, atol=1e-6)
    # the insertion mattered: model 0 without it (same noise) ends elsewhere
    _, without = train_reference(spec=spec, X=X, y=y, setup=setup, config=cfg, bit=0, noise=model_noise(9, 0, 4, p))
    assert np.abs(without - obs.theta[0]).max() > 1e-3


def test_a_registered_model_is_resolved_like_the_others(toys):
    spec = model_spec("toy", hidden=6)
    assert spec == model_spec("toy", hidden=6.0) and spec != model_spec("toy")
    assert spec.model_kwargs == {"hidden": 6} and spec.label == "Toy MLP" and spec.classes == 3 and spec.loss == "ce"
    assert {"toy", "toy_relu"} <= set(model_names())
    assert M.num_classes("toy") == 3 and M.input_shape("toy") == (5,)  # the name-taking one-liners read the registry
    assert isinstance(population_engine(spec), HookPopulation)  # the preferred backend
    assert isinstance(population_engine(model_spec("toy_relu")), MLPPopulation)
    assert isinstance(population_engine(spec, backend="func"), FuncPopulation)
    with pytest.raises(ValueError, match="'mlp' cannot differentiate 'toy'"):
        population_engine(spec, backend="mlp")
    with pytest.raises(ValueError, match="toy_relu"):  # the error lists the known names, the new one included
        model_spec("vgg")


def test_specs_are_values():
    spec = model_spec("fcnn")
    assert spec == model_spec("fcnn", variant="8-3-8-1") and hash(spec) == hash(model_spec("fcnn"))
    assert model_spec(spec) is spec
    assert (spec.input_shape, spec.outputs, spec.loss, spec.classes) == ((8,), 1, "bce", 2)
    assert spec.mlp_sizes == (8, 3, 8, 1)
    assert model_spec("fcnn", variant="8-6-2").loss == "ce"
    assert model_spec("resnet18_gn").example_shape() == (3, 32, 32) and model_spec("resnet18_gn").input_shape[1] is None
    assert model_spec("wrn16_4").backends == ("func",) and model_spec("convnet").preferred_backend == "hooks"
    assert model_spec("wrn16_4", depth=10, width=1).label == "WRN-10-1"
    with pytest.raises(ValueError, match="already resolved"):
        model_spec(spec, variant="8-6-2")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"builder": "fcnn"}, "callable"),
        ({"outputs": 0}, "outputs"),
        ({"input_shape": (0,)}, "input_shape"),
        ({"backends": ("gpu",)}, "backends"),
        ({"backends": ("mlp", "func")}, "mlp_sizes"),
        ({"mlp_sizes": (5, 2), "backends": ("mlp",)}, "disagree"),
    ],
)
def test_bad_specs(kwargs, match):
    good = dict(name="x", builder=lambda: None, input_shape=(5,), outputs=3)
    with pytest.raises(ValueError, match=match):
        ModelSpec(**{**good, **kwargs})


def test_unknown_names_and_options_name_the_value():
    with pytest.raises(ValueError, match=r"model must be one of \('fcnn'.*got 'vgg'"):
        model_spec("vgg")
    with pytest.raises(ValueError, match="depth"):
        model_spec("fcnn", depth=3)
    with pytest.raises(ValueError, match="num_classes"):
        model_spec("convnet", num_classes=1)
    with pytest.raises(ValueError, match="ModelSpec"):  # the engine takes values, not names
        make_setup(spec="fcnn", n_train=10, config=DPSGDConfig(steps=1, batch_size=2, lr=1, clip_norm=1,
                                                                noise_multiplier=0), seed=0)


def test_the_registry_imports_no_torch():
    """The planner and the figures read specs in an environment without torch (envs/analysis.yaml)."""
    import subprocess
    import sys

    code = ("import sys\nfrom hsaudit.engine.models import model_spec\n"
            "assert model_spec('convnet').label == 'ConvNet'\nprint('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
