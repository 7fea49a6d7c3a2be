"""The framework-neutral contract (issue 36 §1, docs/byo.md "Without torch"): ``train`` may return NumPy arrays, a
pytree or an object with ``get_weights()``, flattened in a fixed order; ``data.numpy`` gives the data as NumPy
arrays; ``loss``/``predict`` take NumPy inputs; the NumPy example audits end to end and its planted bug is flagged."""

from __future__ import annotations

import ast
import importlib.util
import json
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import REPO
from hsaudit.cli import main
from hsaudit.engine.canaries import InputCanary
from hsaudit.experiments.byo.api import audit_training
from hsaudit.experiments.byo.audit import AuditOptions
from hsaudit.experiments.byo.plan import audit_setting
from hsaudit.experiments.byo.train.harness import (
    Worlds,
    canary_scores,
    model_parameters,
    load_training,
    prepare,
)
from hsaudit.experiments.byo.train.pytree import flat_vector
from hsaudit.experiments.byo.values import Design

pytestmark = pytest.mark.usefixtures("torch_one_thread")

EXAMPLE = REPO / "examples" / "byo" / "numpy_dpsgd.py"
SIGMA_TENTH = Path(__file__).resolve().parent / "numpy_sigma_tenth.py"


class _Keras:
    """A stand-in for a Keras model: only ``get_weights()``."""

    def __init__(self, weights):
        self.weights = weights

    def get_weights(self):
        return self.weights


def test_leaves_flatten_dicts_by_sorted_key_lists_in_order_depth_first():
    tree = {"w": [np.array([[1.0, 2.0], [3.0, 4.0]]), (np.array(5.0), None)], "b": {"z": [6, 7], "a": np.float32(8)}}
    expected = [8.0, 6.0, 7.0, 1.0, 2.0, 3.0, 4.0, 5.0]  # b.a, b.z, then w's list in order, row-major
    assert flat_vector(tree).tolist() == expected and flat_vector(tree).dtype == np.float64
    keras = _Keras([np.array([[1.0, 2.0]]), np.array([3.0])])
    assert flat_vector(keras).tolist() == [1.0, 2.0, 3.0]
    assert model_parameters(keras).tolist() == [1.0, 2.0, 3.0] and model_parameters(tree).dtype == torch.float64
    with pytest.raises(ValueError, match="not numeric"):
        flat_vector({"a": "text"})
    with pytest.raises(ValueError, match="no parameters"):
        flat_vector({"a": []})


def test_jax_pytrees_flatten_in_tree_leaves_order():
    jax = pytest.importorskip("jax", reason="jax is not installed here (the [jax] extra is optional)")
    tree = {"layer": {"w": jax.numpy.ones((2, 3)), "b": jax.numpy.arange(3.0)}, "scale": [jax.numpy.array(2.0)]}
    leaves = jax.tree_util.tree_leaves(tree)
    assert flat_vector(tree).tolist() == np.concatenate([np.asarray(v).ravel() for v in leaves]).tolist()


def test_the_data_handed_to_train_carries_numpy_views():
    x, y = torch.randn(5, 3), torch.tensor([0, 1, 0, 1, 1])
    canary = InputCanary(x=np.ones(3, dtype=np.float32), y=np.array(1), origin="test")
    data = Worlds(x, y, canary, "add-remove").dataset(True)
    nx, ny = data.numpy
    assert np.array_equal(nx, data.tensors[0].numpy()) and np.array_equal(ny, data.tensors[1].numpy())
    assert nx.shape == (6, 3) and not nx.flags.writeable
    gradient = Worlds(x, y, None, "add-remove").probe_dataset(True)
    assert [a.shape for a in gradient.numpy] == [(5, 3), (5,), (5,)]


NO_LOSS = """
import numpy as np

CLAIM = dict(epsilon=5.0, delta=1e-5, noise_multiplier=1.0, max_grad_norm=1.0, sampling="poisson",
             sample_rate=1.0, steps=1, neighbouring="add-remove")

def dataset():
    rng = np.random.default_rng(0)
    return rng.normal(size=(40, 3)).astype(np.float32), rng.integers(0, 2, 40)

def train(data, seed):
    x, y, *_ = data.numpy
    return {"w": np.random.default_rng(seed).normal(size=(3, 2)) + x.mean(0)[:, None]}

def make():
    return dict(claim=CLAIM, train=train, dataset=dataset)
"""


def test_a_non_torch_model_needs_loss_and_an_input_canary(tmp_path, capsys):
    entry = tmp_path / "no_loss.py"
    entry.write_text(textwrap.dedent(NO_LOSS))
    code = main(["audit-training", "--entry", f"{entry}:make", "--runs", "40", "--canary", "mislabelled", "--jobs", "1",
                 "--out", str(tmp_path / "out")])  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err, err
    assert err.endswith("train returns a dict, not a torch module: give loss(params, x, y), the per-example loss on "
                        "NumPy x, y (docs/byo.md)")  # fmt: skip
    entry.write_text(textwrap.dedent(NO_LOSS).replace("dataset=dataset)", "dataset=dataset, loss=loss)")
                     + "\ndef loss(p, x, y):\n    return ((x @ p['w'])[np.arange(len(y)), y] - 1.0) ** 2\n")  # fmt: skip
    with pytest.raises(ValueError, match="gradient canary .* needs a torch model"):
        prepare(Design(entry=f"{entry}:make", canary="dirac", runs=2))
    prepared = prepare(Design(entry=f"{entry}:make", canary="mislabelled", runs=2))
    assert prepared.probe.theta0 == "not observed" and prepared.probe.parameters == 6
    model = prepared.training.train(prepared.worlds.dataset(True), 3)
    x, y = np.asarray(prepared.canary.x)[None], np.asarray(prepared.canary.y).reshape(1)
    expected = -float(prepared.training.loss(model, x, y)[0])
    assert canary_scores(prepared.training, prepared.canary, [model])[0] == pytest.approx(expected, rel=1e-12)


def test_the_numpy_example_imports_no_torch():
    tree = ast.parse(EXAMPLE.read_text())
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert names and not any(name.split(".")[0] == "torch" for name in names if name)
    assert load_training(f"{EXAMPLE}:make", setting=audit_setting()).claim.accountant == "pld"


def test_the_numpy_example_audits_consistent(tmp_path, capsys):
    """In the audit setting (5 full-batch steps, σ of ε = 4) with a mislabelled canary on a subset background, the
    correct NumPy training is consistent at R = 100, with its power (one seed; 3 of 3 seeds when measured)."""
    design = Design(entry=f"{EXAMPLE}:make", canary="mislabelled", background="subset", runs=100,
                    setting=audit_setting())  # fmt: skip
    result = audit_training(design, AuditOptions(bootstrap=0, power_resamples=50))
    report = result.report.to_dict()
    assert report["verdict"] == "consistent" and len(result.control) == len(result.scores) == 200, report["reason"]
    assert report["details"]["θ0 (initialisation)"] == "fixed (init_seed)"


def test_the_numpy_examples_sigma_tenth_bug_is_a_violation():
    """The same training at σ/10 behind its claim (the audit setting, as above) is a violation at R = 50."""
    bug = Design(entry=f"{SIGMA_TENTH}:make", canary="mislabelled", background="subset", runs=50,
                 setting=audit_setting())  # fmt: skip
    rep = audit_training(bug, AuditOptions(bootstrap=0, power_resamples=50)).report
    assert rep.verdict == "violation" and rep.epsilon_hat > rep.claim.epsilon, rep.reason
