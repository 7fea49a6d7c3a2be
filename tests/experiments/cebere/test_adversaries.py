"""The adversaries of Cebere et al. (2025): crafted objects, A_GC-S dimension selection, scores, file round trip."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hsaudit.experiments.cebere.train.adversaries import (
    ADVERSARIES,
    Crafted,
    canonical_adversary,
    craft,
    load_crafted,
    save_crafted,
    score,
)
from hsaudit.engine.models import build_model, load_flat_parameters, model_spec, per_sample_loss
from hsaudit.engine.dpsgd import DPSGDConfig, make_setup


pytestmark = pytest.mark.usefixtures("torch_one_thread")

CFG = DPSGDConfig(steps=8, batch_size=16, lr=0.3, clip_norm=2.0, noise_multiplier=1.0)


@pytest.fixture(scope="module")
def task():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((120, 8)).astype(np.float32)
    y = (X[:, 0] + 0.3 * rng.standard_normal(120) > 0).astype(np.int64)
    setup = make_setup(spec=model_spec("fcnn"), n_train=120, config=CFG, seed=5)
    return X, y, setup


def _craft(name, task, seed=0, **kw):
    X, y, setup = task
    return craft(name, spec=model_spec("fcnn"), X=X, y=y, setup=setup, config=CFG, seed=seed, **kw)


def test_names():
    assert len(ADVERSARIES) == 7
    assert canonical_adversary("gc_s") == "gc_s_noiseless_ps"
    with pytest.raises(ValueError, match="gc_x"):
        canonical_adversary("gc_x")


def test_gc_r(task):
    c = _craft("gc_r", task)
    assert 0 <= c.dim < 68
    expected = np.zeros(68, dtype=np.float32)
    expected[c.dim] = CFG.clip_norm  # Algorithm 2: ∇* = C·e_d
    np.testing.assert_array_equal(c.gradient, expected)
    dims = {_craft("gc_r", task, seed=s).dim for s in range(20)}
    assert len(dims) > 5  # d is drawn at random


def test_cots(task):
    c = _craft("cots", task)
    assert c.dim is None
    assert np.linalg.norm(c.gradient) == pytest.approx(CFG.clip_norm, rel=1e-6)  # Algorithm 8: ‖∇*‖ = C
    assert np.count_nonzero(c.gradient) == 68


def test_label_flip(task):
    X, y, _ = task
    c = _craft("label_flip", task, seed=3)
    i = c.source_index
    np.testing.assert_array_equal(c.canary_x, X[i])
    assert int(c.canary_y) == 1 - y[i]  # Housing: 1 − y
    assert c.gradient is None and c.dim is None


@pytest.mark.parametrize("name", ["gc_s_noiseless_ps", "gc_s_noiseless_fm", "gc_s_noisy_ps", "gc_s_noisy_fm"])
def test_gc_s_picks_a_valid_dimension(task, name):
    c = _craft(name, task)
    assert 0 <= c.dim < 68 and c.ranking.shape == (68,)
    assert c.dim == int(np.argmin(c.ranking))
    assert np.all(c.ranking >= 0)
    assert c.gradient[c.dim] == CFG.clip_norm and np.count_nonzero(c.gradient) == 1


def test_gc_s_noiseless_is_deterministic(task):
    a, b = _craft("gc_s_noiseless_ps", task, seed=1), _craft("gc_s_noiseless_ps", task, seed=2)
    assert a.dim == b.dim
    np.testing.assert_array_equal(a.ranking, b.ranking)
    # Noisy: repeatable for one seed, a different simulation for another seed.
    n0, n1 = _craft("gc_s_noisy_ps", task, seed=0), _craft("gc_s_noisy_ps", task, seed=1)
    np.testing.assert_array_equal(n0.ranking, _craft("gc_s_noisy_ps", task, seed=0).ranking)
    assert not np.allclose(n0.ranking, n1.ranking)


def test_gc_s_noiseless_ps_matches_slow_simulation(task):
    """Algorithm 3, Noiseless-PS, against a plain autograd loop: no clipping, no noise, S = Σ_t (Δθ_t)²."""
    X, y, setup = task
    net = build_model("fcnn")
    theta = torch.from_numpy(setup.theta0.copy())
    s = torch.zeros(68, dtype=torch.float64)
    for t in range(CFG.steps):
        load_flat_parameters(net, theta)
        idx = setup.batches[t]
        loss = per_sample_loss("bce", net(torch.from_numpy(X[idx])), torch.from_numpy(y[idx])).sum()
        grads = torch.autograd.grad(loss, list(net.parameters()))
        new = theta - CFG.lr * torch.cat([g.reshape(-1) for g in grads]) / CFG.batch_size
        s += (new - theta).double() ** 2
        theta = new
    c = _craft("gc_s_noiseless_ps", task, simulations=1)
    np.testing.assert_allclose(c.ranking, s.numpy(), rtol=1e-4, atol=1e-12)
    # final-model variant: |θ_T − θ0|
    fm = _craft("gc_s_noiseless_fm", task, simulations=1)
    np.testing.assert_allclose(fm.ranking, np.abs(theta.numpy() - setup.theta0), rtol=1e-4, atol=1e-7)


@pytest.mark.parametrize("name", [*ADVERSARIES])
def test_save_load_round_trip(task, name, tmp_path):
    c = _craft(name, task)
    save_crafted(c, tmp_path / "c.npz")
    d = load_crafted(tmp_path / "c.npz")
    assert d.adversary == c.adversary and d.dim == c.dim and d.source_index == c.source_index and d.layer == c.layer
    for key in ("gradient", "canary_x", "canary_y", "ranking"):
        a, b = getattr(c, key), getattr(d, key)
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_array_equal(a, b)


def test_scores_orientation_by_hand(task):
    _, _, setup = task
    theta0 = setup.theta0
    gc = Crafted("gc_r", 4, np.eye(68, dtype=np.float32)[4] * 2, None, None)
    moved = theta0.copy()
    moved[4] -= 0.5  # descent on +C·e_d lowers θ[d]
    np.testing.assert_allclose(score(gc, moved, theta0, spec=model_spec("fcnn")), [0.5], rtol=1e-6)
    cots = Crafted("cots", None, np.ones(68, dtype=np.float32), None, None)
    s = score(cots, np.stack([theta0 - 0.1, theta0 + 0.1, theta0]), theta0, spec=model_spec("fcnn"))
    np.testing.assert_allclose(s, [1.0, -1.0, 0.0], atol=1e-5)
    lf = Crafted("label_flip", None, None, np.zeros(8, dtype=np.float32), np.asarray(1))
    net = build_model("fcnn")
    load_flat_parameters(net, torch.from_numpy(theta0))
    expected = -per_sample_loss("bce", net(torch.zeros(1, 8)), torch.ones(1)).item()
    assert score(lf, theta0, theta0, spec=model_spec("fcnn"))[0] == pytest.approx(expected, rel=1e-5)


def test_craft_rejects_bad_input(task):
    with pytest.raises(ValueError, match="simulations"):
        _craft("gc_s", task, simulations=0)
    with pytest.raises(ValueError, match="adversary"):
        _craft("canary", task)


def test_theta0_readings_share_d_bits_and_noise_and_differ_only_in_theta0():
    """fig12 compares θ0 readings fairly: the four audits of a repetition share the stream key (crafting seed,
    membership bits, noise, per-run θ0 draws) and the setup, and differ in their own keys only by the reading."""
    import yaml

    from conftest import REPO
    from hsaudit.experiments.cebere.plan import plan_dataset, stream_key
    from hsaudit.experiments.cebere.train.shards import theta0_known, theta0_shared
    from hsaudit.pipeline.config import resolve_scale

    config = resolve_scale(yaml.safe_load((REPO / "config" / "config.yaml").read_text()))
    plan = plan_dataset(config["cifar10"], seed=config["seed"], dataset="cifar10")
    refs = plan.figures["fig12"]
    assert {r.theta0 for r in refs} == {"known", "shared_unknown", "per_run_known", "unknown"}
    assert len({r.rep for r in refs}) >= 5, "several coordinates d, one per repetition"
    assert {r.coordinates for r in refs} == {"all", "fixed_init"}
    for rep in {r.rep for r in refs}:
        for coordinates in ("all", "fixed_init"):
            group = [r for r in refs if r.rep == rep and r.coordinates == coordinates]
            audits = [plan.audits[r.key] for r in group]
            assert len({r.key for r in group}) == 4
            assert len({stream_key(a) for a in audits}) == 1 and len({a["setup_key"] for a in audits}) == 1
            assert {a["setup"].get("theta0_init") for a in audits} == {"xavier_normal"}
        # both readings of d train from the repetition's one setup
        assert len({plan.audits[r.key]["setup_key"] for r in refs if r.rep == rep}) == 1
    # a known-θ0 audit's stream key is its own key: no existing audit's seeds moved
    known = next(r for r in refs if r.theta0 == "known" and r.coordinates == "all")
    assert stream_key(plan.audits[known.key]) == known.key
    assert [(theta0_shared(t), theta0_known(t)) for t in ("known", "shared_unknown", "per_run_known", "unknown")] == [
        (True, True), (True, False), (False, True), (False, False)]
    with pytest.raises(ValueError, match="theta0 must be one of"):
        theta0_known("maybe")


@pytest.mark.parametrize("name", ["gc_r", "gc_s", "cots", "label_flip"])
def test_the_crafted_layer_is_read_back_without_torch(task, name, tmp_path):
    """The crafting job records the parameter that holds d (fig12's ``layer`` column); the plot reads it back with
    numpy only (:func:`hsaudit.experiments.cebere.figures.cifar.crafted_coordinate`), the same name as the built
    module gives."""
    from hsaudit.engine.models import parameter_at
    from hsaudit.experiments.cebere.figures.cifar import crafted_coordinate

    c = _craft(name, task)
    save_crafted(c, tmp_path / "c.npz")
    got = crafted_coordinate(tmp_path / "c.npz")
    if c.dim is None:
        assert c.layer is None and got == {"coordinate": None, "layer": None}
    else:
        assert got == {"coordinate": c.dim, "layer": parameter_at(build_model("fcnn"), c.dim)[0]} and c.layer == got["layer"]
        np.savez(tmp_path / "old.npz", adversary=np.asarray(c.adversary), dim=np.asarray(c.dim))  # before the layer
        with pytest.raises(ValueError, match="no layer: re-run its crafting job"):
            crafted_coordinate(tmp_path / "old.npz")


def test_craft_and_score_take_a_resolved_spec(task):
    X, y, setup = task
    with pytest.raises(ValueError, match="spec must be a ModelSpec"):
        craft("gc_r", spec="fcnn", X=X, y=y, setup=setup, config=CFG, seed=0)
    with pytest.raises(ValueError, match="spec must be a ModelSpec"):
        score(_craft("gc_r", task), setup.theta0, setup.theta0, spec="fcnn")


def test_crafting_draws_the_same_d_as_before_the_layer_was_recorded(task):
    """Recording the layer builds no extra module from torch's global RNG: the stream after crafting is the one a
    single build leaves (what the crafting job did before)."""
    torch.manual_seed(0)
    c = _craft("gc_r", task)
    after = torch.rand(3)
    torch.manual_seed(0)
    build_model("fcnn")
    np.testing.assert_array_equal(after.numpy(), torch.rand(3).numpy())
    assert c.layer is not None
