"""The harness (hsaudit.experiments.byo.train.harness): loading a user's entry, the checks that give bad input a clear error,
the two worlds, and shards that add up to the whole."""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd
import pytest
import torch

from byo_testing import zoo_entry
from hsaudit.engine.canaries import GradientCanary, InputCanary
from hsaudit.experiments.byo.api import details
from hsaudit.experiments.byo.train.harness import (
    CanaryData,
    design_options,
    iterates_statistic,
    load_make,
    load_training,
    make_worlds,
    prepare,
    train_shard,
)
from hsaudit.experiments.byo.values import AuditSetting, Design

pytestmark = pytest.mark.usefixtures("torch_one_thread")

GOOD = """
import torch
from torch.utils.data import TensorDataset

def dataset():
    g = torch.Generator().manual_seed(0)
    return torch.randn(40, 3, generator=g), torch.randint(0, 2, (40,), generator=g)

CLAIM = dict(epsilon=3.0, delta=1e-5, noise_multiplier=1.0, max_grad_norm=1.0, sampling="poisson",
             sample_rate=0.5, steps=2, neighbouring="add-remove")

def train(data, seed):
    torch.manual_seed(seed)
    model = torch.nn.Linear(3, 2)
    with torch.no_grad():
        model.weight += 0.01 * torch.randn(2, 3) + 0.001 * data.tensors[0].mean()
    return model
"""


def _module(tmp_path, body: str, name: str = "user.py") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return str(path)


def test_an_entry_by_path_and_by_module(tmp_path, monkeypatch):
    path = _module(tmp_path, GOOD + "\ndef make():\n    return dict(claim=CLAIM, train=train, dataset=dataset)\n")
    assert load_training(f"{path}:make").claim.epsilon == 3.0
    monkeypatch.syspath_prepend(str(tmp_path))
    assert callable(load_make("user:make"))


@pytest.mark.parametrize(
    "body, entry_attr, message",
    [
        ("import not_a_module_anywhere\n", "make", "does not import: ModuleNotFoundError"),
        ("def make(:\n", "make", "does not import: SyntaxError"),
        ("x = 1\n", "make", "has no function make"),
        (GOOD + "def make():\n    return dict(train=train)\n", "make", "returned no claim"),
        (GOOD + "def make():\n    return dict(claim={**CLAIM, 'steps': None}, train=train)\n", "make", "lacks steps"),
        (GOOD + "def make():\n    return dict(claim=CLAIM)\n", "make", "neither train"),
    ],
)
def test_bad_entries_say_what_is_wrong(tmp_path, body, entry_attr, message):
    path = _module(tmp_path, body)
    with pytest.raises(ValueError, match=message):
        load_training(f"{path}:{entry_attr}")


def test_a_setting_needs_make_to_take_one(tmp_path):
    path = _module(tmp_path, GOOD + "\ndef make():\n    return dict(claim=CLAIM, train=train, dataset=dataset)\n")
    setting = AuditSetting(steps=2, noise_multiplier=1.0, sample_rate=0.5)
    with pytest.raises(ValueError, match="takes no argument"):
        load_training(f"{path}:make", setting=setting)
    ignoring = _module(tmp_path, GOOD + "\ndef make(setting=None):\n    return dict(claim=CLAIM, train=train)\n", "i.py")
    with pytest.raises(ValueError, match=r"noise_multiplier 1.0 \(asked 3\)"):
        load_training(f"{ignoring}:make", setting=AuditSetting(steps=2, noise_multiplier=3.0, sample_rate=0.5))


def test_a_training_that_is_not_deterministic_in_its_seed(tmp_path):
    body = GOOD.replace("torch.manual_seed(seed)", "pass")
    body += "\ndef make():\n    return dict(claim=CLAIM, train=train, dataset=dataset)\n"
    with pytest.raises(ValueError, match="not deterministic in seed"):
        prepare(Design(entry=f"{_module(tmp_path, body)}:make", canary="mislabelled", runs=2))


def test_a_nan_loss_is_an_error():
    with pytest.raises(ValueError, match="NaN"):
        prepare(Design(entry=zoo_entry("loss_with_nan"), canary="out_of_support", runs=2))


def test_a_claim_inconsistent_with_the_data(tmp_path):
    body = GOOD + "\ndef make():\n    return dict(claim={**CLAIM, 'batch_size': 5}, train=train, dataset=dataset)\n"
    with pytest.raises(ValueError, match="disagree"):
        prepare(Design(entry=f"{_module(tmp_path, body)}:make", canary="mislabelled", runs=2))


def test_a_seed_that_changes_nothing_is_reported(tmp_path):
    body = GOOD.replace("torch.manual_seed(seed)", "torch.manual_seed(0)") + (
        "\ndef make():\n    return dict(claim=CLAIM, train=train, dataset=dataset)\n"
    )
    assert not prepare(Design(entry=f"{_module(tmp_path, body)}:make", canary="mislabelled", runs=2)).probe.seed_sensitive


def test_worlds_add_remove_and_replace_one():
    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    y = np.array([0, 1, 0, 1, 0, 1])
    canary = InputCanary(x=np.array([9.0, 9.0], np.float32), y=np.array(1), origin="test", source_index=2)
    design = Design(entry="m.py:make", canary="mislabelled", runs=2)
    add = make_worlds(x, y, canary, design, "add-remove")
    out, into = add.dataset(False).tensors, add.dataset(True).tensors
    assert len(out[0]) == 5 and not any(np.array_equal(r, x[2]) for r in out[0].numpy())  # the source row left out
    assert torch.equal(into[0][:-1], out[0]) and into[0][-1].tolist() == [9.0, 9.0] and into[1][-1] == 1
    rep = make_worlds(x, y, canary, design, "replace-one")
    out, into = rep.dataset(False).tensors, rep.dataset(True).tensors
    assert len(out[0]) == len(into[0]) == 5 and int((out[0] != into[0]).any(1).sum()) == 1
    grad = GradientCanary(direction=np.eye(4, dtype=np.float32)[1], norm=50.0, x=np.zeros(2, np.float32),
                          y=np.array(0), origin="test", coordinate=1)  # fmt: skip
    data = make_worlds(x, y, grad, design, "add-remove").dataset(True)
    assert isinstance(data, CanaryData) and data.tensors[2].tolist() == [0.0] * 6 + [50.0]
    theta = torch.tensor([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]])
    assert data.canary_term(theta).tolist() == [2.0, 6.0]


def test_replace_one_with_the_canarys_opposite():
    """``replaced=opposite``: world 0 holds the canary's input with the other label where world 1 holds the canary
    (a matched pair whose gradients oppose), on a blank background; the option reaches neither registry entry."""
    x, y = np.arange(12, dtype=np.float32).reshape(6, 2), np.array([0, 1, 0, 1, 0, 1])
    canary = InputCanary(x=np.array([9.0, 9.0], np.float32), y=np.array(1), origin="test")
    design = Design(entry="m.py:make", canary="opposing", background="blank", runs=2,
                    canary_options={"replaced": "opposite", "amplitude": 9.0})  # fmt: skip
    assert design_options(design) == ({"amplitude": 9.0}, {})
    assert "other label" in details(design)["replaced row (world 0)"]  # the report says so
    worlds = make_worlds(x, y, canary, design, "replace-one", classes=2)
    (x0, y0), (x1, y1) = worlds.dataset(False).tensors, worlds.dataset(True).tensors
    r = worlds.replaced
    assert x0[r].tolist() == x1[r].tolist() == [9.0, 9.0] and (int(y0[r]), int(y1[r])) == (0, 1)
    rest = torch.arange(6) != r
    assert torch.equal(x0[rest], x1[rest]) and not x0[rest].any() and torch.equal(y0[rest], torch.as_tensor(y)[rest])
    model = torch.nn.Linear(2, 2)  # any 2-class model not saturated at x*: the pair's gradients exactly oppose
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[0.1, -0.2], [0.05, 0.1]])), model.bias.zero_()
    grads = [torch.autograd.grad(torch.nn.functional.cross_entropy(model(x0[r:r + 1]), yy.reshape(1)), model.weight)[0]
             for yy in (y0[r], y1[r])]  # fmt: skip
    assert torch.nn.functional.cosine_similarity(grads[0].flatten(), grads[1].flatten(), dim=0) == pytest.approx(-1.0)
    control = make_worlds(x, y, canary, design.control(3), "replace-one", classes=2)
    assert int((control.dataset(False).tensors[0] != 0).any(1).sum()) == 3  # the opposite in every replaced row
    with pytest.raises(ValueError, match="replace-one"):
        make_worlds(x, y, canary, design, "add-remove", classes=2)
    with pytest.raises(ValueError, match="one of background, opposite"):
        make_worlds(x, y, canary, Design(entry="m.py:make", canary="opposing", background="blank", runs=2,
                                         canary_options={"replaced": "twin"}), "replace-one")  # fmt: skip


def test_shards_add_up_to_the_whole():
    design = Design(entry=zoo_entry("correct"), canary="dirac", background="blank", runs=15, shards=1, seed=2)
    whole = pd.DataFrame(train_shard(prepare(design), 0))
    split = Design(**{**design.to_dict(), "shards": 3, "setting": None})
    prepared = prepare(split)
    parts = pd.concat([pd.DataFrame(train_shard(prepared, i)) for i in range(3)], ignore_index=True)
    cols = ["model", "member", "seed", "score"]
    pd.testing.assert_frame_equal(whole[cols], parts[cols])


def test_a_recording_training_is_scored_at_every_iterate(tmp_path):
    body = GOOD.replace("def train(data, seed):", "def train(data, seed, record):").replace(
        "    return model\n", "    for step in range(1, 5):\n        record(step, model)\n    return model\n"
    ) + "\ndef make():\n    return dict(claim=CLAIM, train=train, dataset=dataset)\n"
    design = Design(entry=f"{_module(tmp_path, body)}:make", canary="mislabelled", runs=3)
    prepared = prepare(design)
    assert prepared.training.records
    columns = train_shard(prepared, 0)
    assert np.array_equal(columns["score_iterates"], np.zeros(6))  # four equal iterates: no increment stands out


def test_the_iterates_statistic():
    assert iterates_statistic([0.0, 1.0, 2.0, 3.0]) == 0.0
    assert iterates_statistic([0.0, 0.0, 2.0, 2.0, 2.0]) == 2.0
    with pytest.raises(ValueError, match="three steps"):
        iterates_statistic([0.0, 1.0])
