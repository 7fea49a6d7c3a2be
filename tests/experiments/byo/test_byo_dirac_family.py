"""The Dirac family of a few-runs audit (``--canary dirac --canaries M``): each row's own coordinate in the byo
contract (``w * data.canary_term(model, k)``) under ``torch.func.vmap`` and in a batched loss, the single canary's
form unchanged, the family's draw, and a σ/10 bug of the plain DP-SGD loop flagged in the audit setting."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.func import grad, vmap

from hsaudit.cli import main
from hsaudit.engine.canaries import DIRAC_NORM, CanarySource, GradientCanary, dirac_gradient
from hsaudit.engine.canary_families import dirac_family, family_arrays, family_from_arrays
from hsaudit.experiments.byo.train.families import FewRunsDesign, prepare_few, training_data
from hsaudit.experiments.byo.train.harness import CanaryData, make_worlds
from hsaudit.experiments.byo.values import Design

pytestmark = pytest.mark.usefixtures("torch_one_thread")

ENTRY = f"{Path(__file__).resolve().parent / 'dirac_entry.py'}"


def _family_data(p: int = 7) -> tuple[CanaryData, torch.Tensor]:
    rng = np.random.default_rng(0)
    w = torch.tensor([0.0, 3.0, 0.0, 2.0, 5.0])
    k = torch.tensor([-1, 4, -1, 0, 6])
    x = torch.as_tensor(rng.standard_normal((5, 2)), dtype=torch.float32)
    return CanaryData(x, torch.zeros(5, dtype=torch.long), w, None, k), torch.randn(p, dtype=torch.float64)


def test_each_row_gets_its_own_coordinate_per_example_and_batched():
    data, theta = _family_data()
    x, y, w, k = data.tensors
    assert torch.equal(data.k, k) and data.family

    def loss(t, xi, wi, ki):  # a per-example loss with the term, as a vmapped training writes it
        return (t[:2] @ xi.to(t.dtype)) ** 2 + wi * data.canary_term(t, ki)

    per_example = vmap(grad(loss), (None, 0, 0, 0))(theta, x, w, k)
    expected = torch.zeros(5, theta.numel(), dtype=theta.dtype)
    expected[k >= 0, k[k >= 0]] = w[k >= 0].to(theta.dtype)
    plain = torch.stack([grad(lambda t, i=i: (t[:2] @ x[i].to(t.dtype)) ** 2)(theta) for i in range(5)])
    assert torch.allclose(per_example - plain, expected)
    batched = w * data.canary_term(theta, k)  # a batched loss: [B] terms
    assert torch.allclose(batched, torch.where(k >= 0, w * theta[k.clamp(min=0)], 0.0).to(theta.dtype))
    assert data.canary_term(torch.stack([theta, 2 * theta]), k).shape == (2, 5)  # [m, p] models: [m, B]
    with pytest.raises(ValueError, match="canary_term\\(model, k\\)"):
        data.canary_term(theta)  # the single canary's form cannot tell the rows apart


def test_the_single_canary_keeps_its_form_and_k_agrees():
    x, y = np.zeros((6, 2), np.float32), np.array([0, 1, 0, 1, 0, 1])
    canary = GradientCanary(direction=np.eye(4, dtype=np.float32)[2], norm=50.0, x=np.zeros(2, np.float32),
                            y=np.array(0), origin="test", coordinate=2)  # fmt: skip
    data = make_worlds(x, y, canary, Design(entry="m.py:make", canary="dirac", runs=2), "add-remove").dataset(True)
    assert len(data.tensors) == 3 and not data.family  # (x, y, w), as before
    theta = torch.tensor([1.0, 2.0, 3.0, 4.0])
    w = data.tensors[2]
    assert torch.equal(w * data.canary_term(theta), w * data.canary_term(theta, data.k))
    assert data.k.tolist() == [-1] * 6 + [2]


def test_the_family_draws_distinct_coordinates_off_the_biases_and_round_trips():
    source = CanarySource(x=np.zeros((4, 3), np.float32), y=np.array([0, 1, 0, 1]), classes=2, parameters=8,
                          clip_norm=2.0, seed=1, biases=(6, 7))  # fmt: skip
    family = dirac_family(source, 6)
    assert sorted(family.coordinates.tolist()) == list(range(6)) and family.norm == DIRAC_NORM * 2.0
    back = family_from_arrays(family_arrays(family))
    assert np.array_equal(back.coordinates, family.coordinates) and back.norm == family.norm
    with pytest.raises(ValueError, match="7 distinct coordinates"):
        dirac_family(source, 7)


def test_a_trainings_clipped_canary_gradients_are_the_engines_family_form():
    """Training k's data carries the included canaries: their rows' terms, clipped to C, sum to
    dirac_gradient(p, coordinates, norm=C, bits=coins) (replace-one too)."""
    for neighbouring in ("add-remove", "replace-one"):
        design = FewRunsDesign.of(entry=f"{ENTRY}:make", canaries=30, canary="dirac", seed=4,
                                  claim={"neighbouring": neighbouring})  # fmt: skip
        prepared = prepare_few(design)
        coins = design.coins(0)
        data = training_data(prepared, coins)
        _, _, w, k = data.tensors
        p, clip = prepared.probe.parameters, prepared.training.claim.max_grad_norm
        theta = torch.zeros(p, dtype=torch.float64, requires_grad=True)
        rows = torch.autograd.functional.jacobian(lambda t: w * data.canary_term(t, k), theta)
        clipped = rows * (clip / rows.norm(dim=1, keepdim=True).clamp(min=clip))
        engine = dirac_gradient(p, prepared.family.coordinates, norm=clip, bits=coins[None].astype(int))[0]
        assert np.allclose(clipped.sum(0).numpy(), engine) and int((k >= 0).sum()) == int(coins.sum())


def test_sigma_tenth_flagged_and_correct_not_in_the_audit_setting(capsys):
    """The plain DP-SGD loop (1,026 parameters), Dirac family of 200 canaries, 1 training, audit setting."""
    argv = ["audit-training", "--canary", "dirac", "--canaries", "200", "--trainings", "1", "--audit-setting",
            "--seed", "3", "--json", "--no-control"]  # fmt: skip
    verdicts = {}
    for name in ("make_noise_tenth", "make"):
        assert main([*argv, "--entry", f"{ENTRY}:{name}"]) == 0
        verdicts[name] = json.loads(capsys.readouterr().out)
    bug, ok = verdicts["make_noise_tenth"], verdicts["make"]
    assert bug["verdict"] == "violation" and bug["epsilon_hat"] > bug["epsilon_claimed"]
    assert ok["verdict"] != "violation" and ok["epsilon_hat"] < ok["epsilon_claimed"]
    assert bug["details"]["canary family"] == "dirac" and ok["details"]["score baseline"] == "reference"
