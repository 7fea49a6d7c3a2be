"""θ0 under the audit's control (issue 34 §2): the harness passes one fixed ``init_seed`` to a training that takes it,
observes θ0 (the first module forwarded), tells a θ0 that varies with the seed, and scores relative to θ0."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

from hsaudit.engine.canaries import GradientCanary, InputCanary
from hsaudit.experiments.byo.api import THETA0_ADVICE, details
from hsaudit.experiments.byo.train.harness import (
    canary_scores,
    default_loss,
    init_seed_for,
    load,
    load_training,
    prepare,
    probe,
    Training,
    train_observed,
    train_shard,
)
from hsaudit.experiments.byo.values import Claim, Design

pytestmark = pytest.mark.usefixtures("torch_one_thread")

USERS = Path(__file__).resolve().parent / "users"
CLAIM = Claim(epsilon=1.0, delta=1e-5, noise_multiplier=1.0, max_grad_norm=1.0, sampling="poisson", sample_rate=0.5,
              steps=1, neighbouring="add-remove")  # fmt: skip

HEAD = """
import torch
from torch.utils.data import TensorDataset

CALLS = []

def dataset():
    g = torch.Generator().manual_seed(0)
    return torch.randn(40, 3, generator=g), torch.randint(0, 2, (40,), generator=g)

CLAIM = dict(epsilon=3.0, delta=1e-5, noise_multiplier=1.0, max_grad_norm=1.0, sampling="poisson",
             sample_rate=0.5, steps=2, neighbouring="add-remove")

def fit(model, data, seed):
    g = torch.Generator().manual_seed(seed)
    x, y = data.tensors[:2]
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(2):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        with torch.no_grad():
            for p in model.parameters():
                p += 0.01 * torch.randn(p.shape, generator=g)
    return model
"""

TRAINS = {
    "varies": """
def train(data, seed):
    torch.manual_seed(seed)
    return fit(torch.nn.Linear(3, 2), data, seed)
""",
    "fixed": """
def train(data, seed):
    torch.manual_seed(1234)
    return fit(torch.nn.Linear(3, 2), data, seed)
""",
    "init_seed": """
def train(data, seed, init_seed=None):
    CALLS.append((seed, init_seed))
    torch.manual_seed(init_seed if init_seed is not None else seed)
    return fit(torch.nn.Linear(3, 2), data, seed)
""",
    "recording": """
def train(data, seed, record, init_seed=None):
    CALLS.append((seed, init_seed))
    torch.manual_seed(init_seed if init_seed is not None else seed)
    model = fit(torch.nn.Linear(3, 2), data, seed)
    for step in range(3):
        record(step, model)
    return model
""",
    "flat": """
def train(data, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(8, generator=g) + 0.01 * data.tensors[0].mean()

def loss(theta, x, y):
    return (x @ theta[:3] - y) ** 2
""",
}


def _entry(tmp_path, kind: str) -> str:
    extra = ", loss=loss" if kind == "flat" else ""
    path = tmp_path / f"user_{kind}.py"
    path.write_text(textwrap.dedent(HEAD + TRAINS[kind] + f"\ndef make():\n    return dict(claim=CLAIM, train=train, "
                                    f"dataset=dataset{extra})\n"))  # fmt: skip
    return f"{path}:make"


def _data(n: int = 40):
    g = torch.Generator().manual_seed(0)
    return torch.utils.data.TensorDataset(torch.randn(n, 3, generator=g), torch.randint(0, 2, (n,), generator=g))


@pytest.mark.parametrize("kind", ["init_seed", "recording"])
def test_init_seed_is_passed_and_fixed_across_the_models(tmp_path, kind):
    design = Design(entry=_entry(tmp_path, kind), canary="out_of_support", runs=3, seed=5)
    prepared = prepare(design)
    calls = prepared.training.train.__wrapped__.__globals__["CALLS"]  # the user's function behind its error wrapper
    calls.clear()
    columns = train_shard(prepared, 0)
    assert prepared.training.init_seed and prepared.training.records == (kind == "recording")
    assert sorted(s for s, _ in calls) == sorted(columns["seed"].tolist())
    assert {i for _, i in calls} == {design.stream("init")} == {init_seed_for(design, prepared.training)}
    assert len({s for s, _ in calls}) == design.models  # the seeds still vary


def test_a_training_without_init_seed_is_called_as_before(tmp_path):
    training = load_training(_entry(tmp_path, "varies"))
    assert not training.init_seed and not training.records
    models, _ = train_observed(training, _data(), [1, 2], init_seed=7)  # no init_seed to pass: ignored
    assert len(models) == 2


def test_theta0_is_the_first_forward_of_a_module_training(tmp_path):
    training = load_training(_entry(tmp_path, "init_seed"))
    models, thetas = train_observed(training, _data(), [3, 4], init_seed=11)
    torch.manual_seed(11)
    start = torch.nn.Linear(3, 2)
    expected = torch.cat([start.weight.reshape(-1), start.bias]).detach()
    for model, theta in zip(models, thetas):
        torch.testing.assert_close(theta, expected)
        assert not torch.allclose(torch.cat([p.reshape(-1) for p in model.parameters()]), expected)
    assert not torch.nn.modules.module._global_forward_pre_hooks  # the hook is removed after the call


def test_the_hook_is_removed_when_the_training_raises():
    def train(data, seed):
        torch.nn.Linear(3, 2)(data.tensors[0])
        raise RuntimeError("boom")

    user = Training("t:make", CLAIM, train, None, 1, None, None, None, None)
    with pytest.raises(RuntimeError, match="boom"):
        train_observed(user, _data(), [0])
    assert not torch.nn.modules.module._global_forward_pre_hooks


def test_a_flat_tensor_training_has_no_observed_theta0(tmp_path):
    training = load_training(_entry(tmp_path, "flat"))
    _, thetas = train_observed(training, _data(), [1, 2])
    assert thetas == [None, None]


@pytest.mark.parametrize(
    "kind, finding",
    [("varies", "varies with the seed"), ("fixed", "fixed"), ("init_seed", "fixed (init_seed)"),
     ("flat", "not observed")],
)  # fmt: skip
def test_the_check_tells_how_theta0_depends_on_the_seed(tmp_path, kind, finding):
    design = Design(entry=_entry(tmp_path, kind), canary="out_of_support", runs=2)
    loaded = load(design)
    found, _ = probe(loaded.training, loaded.x, loaded.y, loaded.classes, design, gradient=False)
    assert found.theta0 == finding


@pytest.mark.parametrize("kind, score", [("varies", "relative"), ("fixed", "final"), ("init_seed", "final")])
def test_auto_scores_relative_exactly_when_theta0_varies(tmp_path, kind, score):
    design = Design(entry=_entry(tmp_path, kind), canary="out_of_support", runs=3)
    prepared = prepare(design)
    columns = train_shard(prepared, 0)
    assert ("score_final" in columns) == (score == "relative")
    said = details(design, prepared)
    assert said["θ0 (initialisation)"] == prepared.probe.theta0
    assert said["score"].startswith(score if score == "final" else "relative to θ0")
    assert (said.get("θ0 advice") == THETA0_ADVICE) == (kind == "varies")
    assert "init_seed" in THETA0_ADVICE


def test_relative_scores_need_an_observed_theta0(tmp_path):
    design = Design(entry=_entry(tmp_path, "flat"), canary="out_of_support", runs=2, score="relative")
    with pytest.raises(ValueError, match="needs each model's θ0"):
        train_shard(prepare(design), 0)
    with pytest.raises(ValueError, match="score must be one of"):
        Design(entry="a.py:make", canary="dirac", runs=2, score="initial")


def test_relative_scores_equal_their_closed_form_on_a_linear_model():
    g = torch.Generator().manual_seed(1)
    models, thetas = [], []
    for _ in range(3):
        model = torch.nn.Linear(3, 2)
        start = torch.randn(8, generator=g, dtype=torch.float64)
        with torch.no_grad():
            torch.nn.utils.vector_to_parameters(start.float() + 0.5, model.parameters())
        models.append(model)
        thetas.append(start.float())
    training = Training("t:make", CLAIM, None, None, 1, None, None, None, None)
    # gradient canary: −⟨d, θ_T − θ0⟩
    d = np.zeros(8, dtype=np.float32)
    d[2] = 1.0
    grad = GradientCanary(d, 100.0, np.zeros(3, np.float32), np.array(0), "test")
    got = canary_scores(training, grad, models, theta0=thetas)
    want = [-float(torch.nn.utils.parameters_to_vector(m.parameters()).detach()[2] - t[2]) for m, t in zip(models, thetas)]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got, -0.5, rtol=1e-6)
    # input canary: −(loss(θ_T) − loss(θ0)), the cross-entropy of a linear model written out
    x, y = np.array([0.3, -1.0, 2.0], np.float32), np.array(1)
    inp = InputCanary(x, y, "test")

    def ce(theta: torch.Tensor) -> float:
        w, b = theta[:6].reshape(2, 3).double(), theta[6:].double()
        logits = w @ torch.as_tensor(x).double() + b
        return float(torch.logsumexp(logits, 0) - logits[1])

    got = canary_scores(training, inp, models, theta0=thetas)
    want = [-(ce(torch.nn.utils.parameters_to_vector(m.parameters()).detach()) - ce(t)) for m, t in zip(models, thetas)]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(canary_scores(training, inp, models), [-ce(torch.nn.utils.parameters_to_vector(
        m.parameters()).detach()) for m in models], rtol=1e-5)  # fmt: skip
    assert default_loss(models[0], torch.as_tensor(x)[None], torch.as_tensor(y).reshape(1)).shape == (1,)


@pytest.mark.filterwarnings("ignore")  # Opacus: secure_mode off, full backward hooks on inputs without gradients
@pytest.mark.parametrize(
    "name, finding", [("opacus_seeded", "varies with the seed"), ("opacus_seeded_auditable", "fixed (init_seed)")]
)
def test_an_ordinary_opacus_script_is_flagged_and_its_auditable_version_is_not(name, finding):
    pytest.importorskip("opacus")
    design = Design(entry=f"{USERS / name}.py:make", canary="out_of_support", runs=2)
    loaded = load(design)
    found, _ = probe(loaded.training, loaded.x, loaded.y, loaded.classes, design, gradient=False)
    assert found.theta0 == finding
