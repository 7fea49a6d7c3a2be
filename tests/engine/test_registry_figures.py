"""A new model is one registry entry: the plans, the figures and the tables that list models accept it unchanged.

A toy model is registered (monkeypatched, as in tests/engine/test_registry.py, no other file touched) with its label,
colour and feature extractor on its spec. Cebere et al.'s plan resolves it once per setup (data identity and
prepared-data path from the spec), and every figure function that lists models — fig8 (one series per model),
Table 2 (one column per model, with its parameter count and loss) and the CIFAR-10 audit table every ε figure
draws from — takes it from small synthetic tables, labelled and coloured as its spec says.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml
from matplotlib.colors import to_hex
from torch import nn

from conftest import REPO
from hsaudit.engine import models as M
from hsaudit.engine.architectures import count_parameters
from hsaudit.engine.models import ModelSpec, model_spec, spec_of
from hsaudit.experiments import plotting
from hsaudit.experiments.cebere.figures import cifar
from hsaudit.experiments.cebere.figures.table2 import with_model_facts, write_table2
from hsaudit.experiments.cebere.plan import hyperparameters, plan_dataset
from hsaudit.pipeline.config import resolve_scale

TOY_COLOUR = "#123456"


def _toy(hidden: int = 4) -> ModelSpec:
    """A 2-layer tanh MLP on 5 features, 3 classes, with a label and a colour for figures."""

    def build(hidden: int) -> nn.Module:
        return nn.Sequential(nn.Linear(5, hidden), nn.Tanh(), nn.Linear(hidden, 3))

    return ModelSpec(name="toy", builder=build, input_shape=(5,), outputs=3, kwargs=(("hidden", int(hidden)),),
                     label="Toy MLP", colour=TOY_COLOUR)  # fmt: skip


def _toy_head() -> ModelSpec:
    """A last layer trained on AlexNet features (the spec names its feature extractor), no colour of its own."""
    return ModelSpec(name="toy_head", builder=lambda: nn.Linear(4096, 10), input_shape=(4096,), outputs=10,
                     label="Toy head", feature_extractor="alexnet")  # fmt: skip


@pytest.fixture
def toys(monkeypatch):
    monkeypatch.setitem(M.REGISTRY, "toy", _toy)
    monkeypatch.setitem(M.REGISTRY, "toy_head", _toy_head)


@pytest.fixture
def drawn(monkeypatch):
    """(label, colour) of every line of every figure saved during the test."""
    lines: list[tuple[str, str]] = []
    original = plotting.save

    def save(fig, path, *, footer=None, tight=True):
        lines.extend((ln.get_label(), to_hex(ln.get_color())) for ax in fig.axes for ln in ax.get_lines())
        original(fig, path, footer=footer, tight=tight)

    monkeypatch.setattr(plotting, "save", save)
    return lines


def _cifar_section(model: str) -> dict:
    config = resolve_scale({**yaml.safe_load((REPO / "config" / "config.yaml").read_text()), "scale": "smoke"})
    return {**config["cifar10"], "model": model, "figures": {"fig8": {"adversaries": ["gc_r", "label_flip"]}}}


@pytest.mark.parametrize(("model", "data"), [("toy", "results/data/cifar10.npz"),
                                             ("toy_head", "results/data/cifar10_alexnet.npz")])  # fmt: skip
def test_the_cebere_plan_resolves_a_registered_model_once_per_setup(toys, model, data):
    section = _cifar_section(model)
    plan = plan_dataset(section, seed=1, dataset="cifar10")
    assert plan.models and set(plan.models) == set(plan.setups)
    for key, setup in plan.setups.items():
        assert plan.models[key] == spec_of(setup) and plan.models[key].name == model
        assert plan.setup_data(key) == data
        assert ("features" in setup["data"]) == (model == "toy_head")
    assert plan.base.model == model_spec(model) and plan.base.data_path == data


def test_table2_lists_a_registered_model(toys, tmp_path):
    plan = plan_dataset(_cifar_section("toy"), seed=1, dataset="cifar10")
    rows = hyperparameters(plan, audit={"delta": 1e-5, "confidence": 0.95, "mode": "paper"})
    assert [r["model"] for r in rows] == ["toy"]
    row = with_model_facts(rows[0])  # the spec built from the plan's canonical value
    assert row["trainable_params"] == count_parameters(_toy().build()) and row["loss"] == "cross-entropy"
    write_table2(pd.DataFrame([{**row, "data_source": "cifar10:synthetic"}], dtype=object),
                 pdf=tmp_path / "table2.md", csv=tmp_path / "table2.csv", facts={"scale": "smoke"})  # fmt: skip
    assert f"| Hyper-parameter | {_toy().label} (" in (tmp_path / "table2.md").read_text()


def test_fig8_draws_a_registered_model_with_its_label_and_colour(toys, drawn, tmp_path):
    rng = np.random.default_rng(0)
    steps, runs = np.arange(1, 6), 4
    norms = pd.concat(
        [pd.DataFrame({"model": m, "run": np.repeat(np.arange(runs), steps.size), "step": np.tile(steps, runs),
                       "norm": rng.uniform(0.5, 2.0, runs * steps.size)}) for m in ("convnet", "toy", "toy_head")],
        ignore_index=True,
    )  # fmt: skip
    out = cifar.plot_fig8(norms, pdf=tmp_path / "fig8.pdf", csv=tmp_path / "fig8.csv",
                          facts={"scale": "smoke", "data_source": "cifar10:synthetic"})  # fmt: skip
    assert set(out["model"]) == {"convnet", "toy", "toy_head"}
    colours = {label.split(" (")[0]: colour for label, colour in drawn}
    for name in ("convnet", "toy", "toy_head"):
        spec = model_spec(name)
        assert colours[spec.label] == to_hex(spec.colour or cifar.NO_MODEL_COLOUR)


def test_the_cifar_audit_table_takes_a_registered_model(toys):
    audit = pd.DataFrame({"step": [1, 2], "epsilon": [0.1, 0.2]})
    ref = {"model": "toy", "adversary": "gc_r", "clip_norm": 1.0, "period": 1, "theta0": "known", "rep": 0,
           "key": "k", "runs": 2, "data_source": "cifar10:synthetic"}  # fmt: skip
    table = cifar.cifar_table([(ref, audit)])
    assert set(table["model"]) == {"toy"} and table["epsilon"].tolist() == [0.1, 0.2]
    with pytest.raises(ValueError, match="unknown model 'vgg'"):
        cifar.cifar_table([({**ref, "model": "vgg"}, audit)])
