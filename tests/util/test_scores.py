"""The score registry (hsaudit.util.scores): every paper's scores and byo's --score are its entries, each declares
inputs of the registry's vocabulary, and a new score is one entry that byo's CLI offers once the harness computes it."""

from __future__ import annotations

import argparse

import pytest

from hsaudit.util import scores as S


def test_every_papers_score_is_a_registry_entry():
    from hsaudit.experiments.byo.values import SCORED, SCORES as BYO
    from hsaudit.experiments.cebere.train.adversaries import ADVERSARIES, SCORES as CEBERE
    from hsaudit.experiments.one_run.values import SCORE_ENTRIES, SCORES as ONE_RUN
    from hsaudit.experiments.steinke.train.canaries import SCORES as STEINKE, STEINKE_CANARIES
    from hsaudit.experiments.steinke.values import SCORE_ENTRIES as TABLE1_ENTRIES, SCORES as TABLE1
    from hsaudit.experiments.yoon.crafting import SCORE as YOON

    assert set(CEBERE) == set(ADVERSARIES)
    assert set(ONE_RUN) == set(SCORE_ENTRIES) and set(STEINKE) == {*STEINKE_CANARIES, *TABLE1}
    assert TABLE1 == tuple(TABLE1_ENTRIES) and all(STEINKE[name] is TABLE1_ENTRIES[name] for name in TABLE1)
    for entry in (*CEBERE.values(), *SCORE_ENTRIES.values(), *STEINKE.values(), YOON):
        assert S.SCORES[entry.name] is entry and entry.orientation == S.ORIENTATION
    assert BYO == ("auto", *SCORED) and all(S.score_entry(n).name == n for n in SCORED)


def test_entries_declare_known_inputs():
    for entry in S.SCORES.values():
        assert entry.inputs and set(entry.inputs) <= set(S.INPUTS), entry.name
    with pytest.raises(ValueError, match="INPUTS"):
        S.Score("toy", "s", ("the weather",), "d")
    with pytest.raises(ValueError, match="unknown score 'no such score'; choose from final"):
        S.score_entry("no such score")


def test_cebere_scores_its_adversaries_by_their_entry(monkeypatch):
    """make_scorer dispatches on the registry entry: A_GC's scorer read as A_CotS's cosine when its entry is."""
    import numpy as np
    import torch

    from hsaudit.engine.models import model_spec
    from hsaudit.experiments.cebere.train import adversaries as A

    spec = model_spec("fcnn")
    p = sum(t.numel() for t in spec.build().parameters())
    theta0 = np.zeros(p, dtype=np.float32)
    crafted = A.Crafted("gc_r", 3, A.dirac_gradient(p, 3, norm=2.0), None, None)
    moved = theta0.copy()
    moved[3], moved[4] = -0.5, 0.5
    assert A.score(crafted, moved, theta0, spec=spec)[0] == pytest.approx(0.5)
    monkeypatch.setitem(A.SCORES, "gc_r", S.score_entry("cosine"))
    with torch.no_grad():
        assert A.score(crafted, moved, theta0, spec=spec)[0] == pytest.approx(0.5 / np.sqrt(0.5))


def test_steinke_and_yoon_score_every_step_by_their_entry(monkeypatch):
    """Steinke's per-step observer and Yoon's input scores compute what the registry entry says, and refuse an entry
    they have no computation for."""
    import torch

    from hsaudit.experiments.steinke.train import canaries as C
    from hsaudit.experiments.steinke.train import images as I
    from hsaudit.experiments.yoon import crafting as Y

    class Engine:  # the loss of model i is the sum of its parameters
        def loss(self, theta, x, y):
            return theta.sum(1, keepdim=True)

    theta, theta0 = torch.tensor([[1.0, -2.0], [0.0, 3.0]]), torch.zeros(2)
    point = (torch.zeros(1, 2), torch.zeros(1, dtype=torch.long))
    dirac = dict(engine=Engine(), theta0=theta0, dim=1, lr=1.0, batch_size=2, clip=1.0)
    assert I.observer("dirac", **dirac)(theta).tolist() == [4.0, -6.0]  # −θ[1] · B/(ηC)
    assert I.observer("label_flip", engine=Engine(), theta0=theta0, point=point)(theta).tolist() == [1.0, -3.0]
    assert Y.input_scores(Engine(), theta, *point).tolist() == [1.0, -3.0]
    monkeypatch.setitem(C.SCORES, "dirac", S.score_entry("final"))
    with pytest.raises(ValueError, match="score 'final' for canary 'dirac'"):
        I.observer("dirac", **dirac)
    monkeypatch.setattr(Y, "SCORE", S.score_entry("cosine"))
    with pytest.raises(ValueError, match="'cosine'"):
        Y.input_scores(Engine(), theta, *point)


def test_a_new_score_reaches_byos_cli_through_the_registry(monkeypatch):
    from hsaudit.cli import audit_training
    from hsaudit.experiments.byo import values

    monkeypatch.setitem(S.SCORES, "toy", S.Score("toy", "s", ("final_model", "canary"), "a toy score"))
    monkeypatch.setattr(values, "SCORED", (*values.SCORED, "toy"))
    monkeypatch.setattr(values, "SCORES", ("auto", *values.SCORED))
    sub = argparse.ArgumentParser().add_subparsers()
    audit_training.register(sub)
    action = next(a for a in sub.choices["audit-training"]._actions if a.dest == "score")
    assert "toy" in action.choices and "a toy score" in action.help
