"""Yoon, Jeung & No (hsaudit.experiments.yoon): σ(ε), full-batch DP-SGD against a naive loop, canaries, one run's
training, crafting, the validity of held-out crafting, surrogates, θ_worst, the audit of a run and the plan's keys.

Everything runs on tiny MNIST-shaped random tensors (|D| = 12, T ≤ 3) so the file stays fast on 2 cores.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

from conftest import REPO
from hsaudit.audit.rules import parse_rule
from hsaudit.accounting import gdp_epsilon
from hsaudit.engine.dpsgd import init_theta0
from hsaudit.engine.models import build_model, count_parameters, load_flat_parameters, model_spec
from hsaudit.experiments.yoon import audit, crafting, train
from hsaudit.experiments.yoon import plan as yoon_plan
from hsaudit.experiments.yoon.plan import figure_values
from hsaudit.experiments.yoon.recipe import CraftRecipe, craft_key
from hsaudit.pipeline.config import check_config, resolve_scale, user_values
from hsaudit.util.mapping import deep_merge
from hsaudit.util.seeding import derive_seed

pytestmark = pytest.mark.usefixtures("torch_one_thread")

MNIST = "mnist_cnn"
ARCH = model_spec(MNIST)  # resolved once, as the workflow scripts do
SHAPE = (1, 28, 28)
MEAN, STD = np.array([0.1307], np.float32), np.array([0.3081], np.float32)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((12, *SHAPE)).astype(np.float32)
    y = rng.integers(0, 10, 12).astype(np.int64)
    aux_X = rng.standard_normal((20, *SHAPE)).astype(np.float32)
    aux_y = rng.integers(0, 10, 20).astype(np.int64)
    return X, y, aux_X, aux_y


@pytest.fixture(scope="module")
def theta0():
    return train.average_theta0(ARCH, seed=3)


def blank():
    return train.Canary("blank", np.zeros(SHAPE, np.float32), 9, "zeros")


def worlds(data, theta0, **kw):
    X, y, _, _ = data
    args = dict(spec=ARCH, theta0=theta0, X=X, y=y, canary=blank(), models_per_world=2, steps=2, lr=4.0,
                clip_norm=1.0, sigma=0.0, noise_key=7, device="cpu")
    return train.train_worlds(**{**args, **kw})


# ------------------------------------------------------------------------------------------------- σ(ε)


@pytest.mark.parametrize(
    ("steps", "epsilon", "sigma"),
    [
        # the spec (docs/yoon.md) [derived]: μ-GDP with μ = √T/σ, δ = 1e-5
        (100, 1.0, 37.31), (100, 2.0, 19.94), (100, 4.0, 10.81), (100, 10.0, 5.00),
        (200, 1.0, 52.76), (200, 2.0, 28.20), (200, 4.0, 15.29), (200, 10.0, 7.07),
    ],
)
def test_noise_multiplier_matches_the_spec(steps, epsilon, sigma):
    s = yoon_plan.noise_multiplier(epsilon, steps=steps, delta=1e-5)
    assert round(s, 2) == pytest.approx(sigma, abs=1e-9)
    # closed form round trip: T full-batch Gaussian steps are μ-GDP with μ = √T/σ
    assert gdp_epsilon(mu=math.sqrt(steps) / s, delta=1e-5) == pytest.approx(epsilon, rel=1e-3)


def test_noise_multiplier_decreases_in_epsilon():
    sigmas = [yoon_plan.noise_multiplier(e, steps=100, delta=1e-5) for e in (0.5, 1, 2, 4, 10, 20)]
    assert np.all(np.diff(sigmas) < 0)


# ------------------------------------------------------------------------------------ schedule and members


def test_full_batch_schedule():
    s = train.full_batch_schedule(5, 3)
    assert s.shape == (3, 5) and s.dtype == np.int64
    assert (s == np.arange(5)).all()
    with pytest.raises(ValueError, match="n=0"):
        train.full_batch_schedule(0, 3)
    with pytest.raises(ValueError, match="steps=0"):
        train.full_batch_schedule(3, 0)


def test_world_members():
    assert train.world_members(3).tolist() == [0, 0, 0, 1, 1, 1]
    with pytest.raises(ValueError, match="models_per_world"):
        train.world_members(0)


def test_average_theta0_is_seeded_with_constant_biases():
    a, b = train.average_theta0(ARCH, seed=1), train.average_theta0(ARCH, seed=1)
    assert a.shape == (25_386,) and np.array_equal(a, b)
    assert not np.array_equal(a, train.average_theta0(ARCH, seed=2))
    net = build_model(MNIST)
    load_flat_parameters(net, torch.from_numpy(a))
    biases = [p.detach().numpy() for name, p in net.named_parameters() if name.endswith("bias")]
    assert all(np.allclose(b, 0.01) for b in biases)


# ------------------------------------------------------------------------------------------------ DP-SGD


def naive_full_batch(theta0, X, y, canary, *, steps, lr, clip):
    """Slow reference: θ ← θ − η/|D| (Σ_i clip(g_i) + clip(g_c)), per-sample gradients by plain autograd
    (without a canary: the same loop on D, still normalised by |D|)."""
    net = build_model(MNIST)
    load_flat_parameters(net, torch.from_numpy(np.asarray(theta0, np.float32)))
    xs = [torch.from_numpy(x)[None] for x in X]
    ys = [torch.tensor([int(v)]) for v in y]
    if canary is not None:
        xs, ys = xs + [torch.from_numpy(canary.x)[None]], ys + [torch.tensor([canary.y])]
    clipped = 0
    for _ in range(steps):
        total = [torch.zeros_like(p) for p in net.parameters()]
        for xb, yb in zip(xs, ys):
            net.zero_grad()
            torch.nn.functional.cross_entropy(net(xb), yb).backward()
            grads = [p.grad.detach().clone() for p in net.parameters()]
            norm = torch.sqrt(sum((g.double() ** 2).sum() for g in grads))
            factor = min(1.0, clip / float(norm))
            clipped += factor < 1.0
            total = [t + factor * g for t, g in zip(total, grads)]
        with torch.no_grad():
            for p, t in zip(net.parameters(), total):
                p -= lr / len(X) * t
    return torch.cat([p.detach().reshape(-1) for p in net.parameters()]).numpy(), clipped


def test_noiseless_worlds_are_identical_within_and_differ_between(data, theta0):
    theta, members = worlds(data, theta0)
    assert theta.shape == (4, 25_386) and members.tolist() == [0, 0, 1, 1]
    np.testing.assert_array_equal(theta[0], theta[1])
    np.testing.assert_array_equal(theta[2], theta[3])
    assert np.abs(theta[0] - theta[2]).max() > 1e-4


def test_inserted_models_equal_a_naive_full_batch_loop(data, theta0):
    X, y, _, _ = data
    theta, _ = worlds(data, theta0, steps=2, clip_norm=0.5)
    ref, clipped = naive_full_batch(theta0, X, y, blank(), steps=2, lr=4.0, clip=0.5)
    assert clipped > 0  # the clipping is exercised
    np.testing.assert_allclose(theta[2], ref, rtol=1e-4, atol=1e-5)
    # and the D models are the same loop without the canary (same normaliser |D|)
    ref, _ = naive_full_batch(theta0, X, y, None, steps=2, lr=4.0, clip=0.5)
    np.testing.assert_allclose(theta[0], ref, rtol=1e-4, atol=1e-5)


def test_noise_of_a_model_does_not_depend_on_the_population_size(data, theta0):
    one, _ = worlds(data, theta0, models_per_world=1, sigma=0.3)
    two, _ = worlds(data, theta0, models_per_world=2, sigma=0.3)
    np.testing.assert_array_equal(one[0], two[0])  # model 0 (a D model) draws stream (noise_key, 0) in both
    assert not np.array_equal(two[0], two[1])  # noise: the two D models differ
    other, _ = worlds(data, theta0, models_per_world=1, sigma=0.3, noise_key=8)
    assert not np.array_equal(one[0], other[0])


def test_insert_false_trains_both_halves_on_d(data, theta0):
    theta, members = worlds(data, theta0, insert=False)
    assert members.tolist() == [0, 0, 1, 1]
    np.testing.assert_array_equal(theta[0], theta[3])


def test_train_worlds_checks_theta0(data):
    with pytest.raises(ValueError, match="theta0 must have shape"):
        worlds(data, np.zeros(10, np.float32))


# ---------------------------------------------------------------------------------------------- canaries


def canary(kind, data, theta0, X=None, **kw):
    X_, y_, aux_X, aux_y = data
    X = X_ if X is None else X
    y = np.zeros(len(X), np.int64) if y_ is None else y_
    return train.make_canary(kind, spec=ARCH, X=X, y=y, aux_X=aux_X, aux_y=aux_y, theta0=theta0,
                            mean=MEAN, std=STD, seed=5, **kw)


def test_blank_canary(data, theta0):
    c = canary("blank", data, theta0)
    assert c.x.shape == SHAPE and c.x.dtype == np.float32 and not c.x.any() and c.y == 9
    assert canary("blank", data, theta0, blank_label=3).y == 3
    with pytest.raises(ValueError, match=r"canary label must be in \[0, 10\), got 10"):
        canary("blank", data, theta0, blank_label=10)


def test_in_distribution_canary_is_an_aux_row_with_its_label(data, theta0):
    _, _, aux_X, aux_y = data
    c = canary("in_distribution", data, theta0)
    rows = [i for i in range(len(aux_X)) if np.array_equal(aux_X[i], c.x)]
    assert len(rows) == 1 and c.y == aux_y[rows[0]] and c.source == f"pool row {rows[0]}"
    assert np.array_equal(canary("in_distribution", data, theta0).x, c.x)  # seeded


def test_mislabeled_canary_inverts_pixels_and_shifts_the_label(data, theta0):
    _, _, aux_X, aux_y = data
    c = canary("mislabeled", data, theta0)
    row = int(c.source.split()[2].rstrip(","))
    raw, raw_src = c.x * STD[0] + MEAN[0], aux_X[row] * STD[0] + MEAN[0]
    np.testing.assert_allclose(raw, 1.0 - raw_src, atol=1e-5)
    assert c.y == (aux_y[row] + 1) % 10


def test_clipbkd_canary_is_the_least_variance_direction(theta0):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((1000, *SHAPE)).astype(np.float32)  # n > d: a unique smallest eigenvalue
    k = (0, 5, 7)
    X[:, k[0], k[1], k[2]] = 0.3  # a constant coordinate: zero variance along its axis
    data = (X, None, np.zeros((0, *SHAPE), np.float32), np.zeros(0))
    c = canary("clipbkd", data, theta0, X=X)
    mean_norm = np.linalg.norm(X.reshape(len(X), -1).astype(np.float64), axis=1).mean()
    expected = np.zeros(SHAPE)
    expected[k] = mean_norm
    np.testing.assert_allclose(c.x, expected, atol=1e-3 * mean_norm)
    net = build_model(MNIST)
    load_flat_parameters(net, torch.from_numpy(theta0))
    with torch.no_grad():
        assert c.y == int(torch.argmin(net(torch.from_numpy(c.x)[None])[0]))


def test_unknown_canary():
    with pytest.raises(ValueError, match="canary must be one of"):
        train.make_canary("gold", spec=ARCH, X=np.zeros((2, *SHAPE)), y=np.zeros(2), aux_X=None, aux_y=None,
                          theta0=None, mean=MEAN, std=STD, seed=0)


# ------------------------------------------------------------------------------------------- one run


def test_train_run_trains_every_role_with_its_own_noise(data):
    """One training job: θ0 from the run's seed, the canary, then the crafting, audit and validation populations,
    each the engine's full-batch worlds under its own noise key (the reference: train_worlds called directly)."""
    X, y, aux_X, aux_y = data
    spec = dict(model=MNIST, seed=5, data="k", shared_init=True, init="avg", init_bias=0.01, canary="blank",
                blank_label=9, clip_norm=1.0, steps=2, lr=4.0, epsilon=10.0, models_per_world=2,
                craft_models_per_world=3, validation_models_per_world=1)  # fmt: skip
    arrays = dict(X=X, y=y, aux_X=aux_X, aux_y=aux_y, mean=MEAN, std=STD, data_source="mnist:synthetic")
    out = train.train_run(spec, arrays, arch=ARCH, population_key="abc", run=1, noise_multiplier=0.5, device="cpu",
                          progress=False)  # fmt: skip
    theta0 = train.average_theta0(ARCH, seed=derive_seed(5, "yoon-theta0", "k", MNIST, "shared"), bias=0.01)
    np.testing.assert_array_equal(out["theta0"], theta0)
    assert train.Canary.from_arrays(out) == train.Canary("blank", out["canary_x"], 9, "all-zero input, label 9")
    assert float(out["noise_multiplier"]) == 0.5 and out["data_source"] == "mnist:synthetic"
    sizes = {"craft": 3, "audit": 2, "validation": 1}
    for role, n in sizes.items():
        theta, bits = train.train_worlds(spec=ARCH, theta0=theta0, X=X, y=y, canary=blank(), models_per_world=n,
                                         steps=2, lr=4.0, clip_norm=1.0, sigma=0.5, device="cpu",
                                         noise_key=derive_seed(5, "yoon-noise", "abc", 1, role))  # fmt: skip
        np.testing.assert_array_equal(out[f"{role}_theta"], theta)
        np.testing.assert_array_equal(out["members" if role == "audit" else f"{role}_members"], bits)
    assert "audit_members" not in out
    assert not np.allclose(out["craft_theta"][:2], out["audit_theta"][:2])  # fresh noise per population


# --------------------------------------------------------------------------------------------- crafting


@pytest.fixture(scope="module")
def noisy_population(data, theta0):
    return worlds(data, theta0, models_per_world=4, steps=3, sigma=0.5, noise_key=11)


@pytest.mark.parametrize("adversary", ["a_ude", "a_ade"])
def test_crafting_lowers_its_objective(noisy_population, adversary):
    theta, members = noisy_population
    kw = dict(spec=ARCH, theta=theta, members=members, canary=blank(), margin=0.2,
              recipe=CraftRecipe(steps=10, lr=0.05), device="cpu")  # fmt: skip
    a = crafting.craft_sample(adversary, **kw)
    assert a.objective_end < a.objective_start or (adversary == "a_ade" and a.objective_end == 0.0)
    assert a.y == 9 and a.x.shape == SHAPE and not np.array_equal(a.x, blank().x)
    # the objective recomputed from sample_losses agrees with the reported end value
    losses = torch.from_numpy(crafting.sample_losses(ARCH, theta, a.x, a.y, device="cpu"))
    bits = members.astype(bool)
    value = float(crafting.objective(adversary, losses[~bits], losses[bits], margin=0.2))
    assert value == pytest.approx(a.objective_end, rel=1e-4, abs=1e-6)
    b = crafting.craft_sample(adversary, **kw)
    np.testing.assert_array_equal(a.x, b.x)  # deterministic


def test_a_c_returns_the_canary(noisy_population):
    theta, members = noisy_population
    a = crafting.craft_sample("a_c", spec=ARCH, theta=theta, members=members, canary=blank())
    assert np.array_equal(a.x, blank().x) and a.y == 9 and math.isnan(a.objective_start)


def test_craft_validates(noisy_population):
    theta, members = noisy_population
    with pytest.raises(ValueError, match="adversary must be one of"):
        crafting.craft_sample("a_x", spec=ARCH, theta=theta, members=members, canary=blank())
    with pytest.raises(ValueError, match="both worlds"):
        crafting.craft_sample("a_ude", spec=ARCH, theta=theta, members=np.zeros(len(theta)), canary=blank(),
                              recipe=CraftRecipe(steps=1))  # fmt: skip
    with pytest.raises(ValueError, match="validation population"):
        crafting.craft_sample("a_ude", spec=ARCH, theta=theta, members=members, canary=blank(),
                              recipe=CraftRecipe(stop_on_validation=True))  # fmt: skip
    with pytest.raises(ValueError, match="pixel bounds"):
        crafting.craft_sample("a_ude", spec=ARCH, theta=theta, members=members, canary=blank(),
                              recipe=CraftRecipe(pixel_range=True))  # fmt: skip
    for bad, needle in (({"optimizer": "lbfgs"}, "optimizer"), ({"budget_norm": "l1", "budget": 1.0}, "budget_norm"),
                        ({"budget_norm": "l2"}, "budget > 0"), ({"steps": 0}, "steps >= 1"), ({"stepz": 3}, "stepz")):
        with pytest.raises(ValueError, match=needle):
            CraftRecipe.from_config(bad)
    with pytest.raises(ValueError, match="crafting objective"):
        crafting.objective("a_c", torch.zeros(1), torch.zeros(1), margin=0.2)
    with pytest.raises(ValueError, match="objective kind"):
        crafting.objective("a_ude", torch.zeros(2), torch.zeros(2), margin=0.2, kind="ratio")
    with pytest.raises(ValueError, match="craft.objective"):
        CraftRecipe.from_config({"objective": "ratio"})


def test_objectives_closed_form():
    out, inn = torch.tensor([1.0, 3.0]), torch.tensor([0.5, 2.5])
    assert float(crafting.objective("a_ude", out, inn, margin=0.2)) == pytest.approx(1.5 - 2.0)
    # ReLU(ℓ′ − mean ℓ + α): ReLU(0.5 − 2 + 0.2) = 0, ReLU(2.5 − 2 + 0.2) = 0.7
    assert float(crafting.objective("a_ade", out, inn, margin=0.2)) == pytest.approx(0.35)


def test_snr_objectives_closed_form():
    out, inn = torch.tensor([1.0, 3.0]), torch.tensor([0.5, 2.5])
    sd = math.sqrt((2.0 + 2.0) / 2)  # variances 2 and 2 (ddof 1)
    assert float(crafting.objective("a_ude", out, inn, margin=0.2, kind="snr")) == pytest.approx((1.5 - 2.0) / sd)
    # ReLU((ℓ′ − mean ℓ)/sd + α): ReLU(−1.5/√2 + 0.2) = 0, ReLU(0.5/√2 + 0.2)
    expected = (0.5 / sd + 0.2) / 2
    assert float(crafting.objective("a_ade", out, inn, margin=0.2, kind="snr")) == pytest.approx(expected)
    # The paper's objective is the default kind.
    assert float(crafting.objective("a_ude", out, inn, margin=0.2)) == float(
        crafting.objective("a_ude", out, inn, margin=0.2, kind="loss_difference"))
    # SNR UDE is minus the moment estimate of μ of the scores −ℓ (what the validation stop keeps).
    scores, bits = -torch.cat([out, inn]), torch.tensor([False, False, True, True])
    assert float(crafting.objective("a_ude", out, inn, margin=0.0, kind="snr")) == pytest.approx(
        -crafting.moment_mu(scores, bits))


def test_snr_objective_picks_the_higher_snr_candidate_where_the_loss_difference_does_not():
    """Two candidate x_a's losses: A separates the worlds' mean losses by 2 with sd 4 (μ = 0.5); B by 1 with sd 0.5
    (μ = 2). The paper's UDE prefers A (the larger gap), the SNR objective B (the better audit)."""
    z = torch.tensor([-1.0, 0.0, 1.0])  # sd 1 (ddof 1)
    a_out, a_in = 3.0 + 4 * z, 1.0 + 4 * z
    b_out, b_in = 2.0 + 0.5 * z, 1.0 + 0.5 * z
    ude = {k: float(crafting.objective("a_ude", o, i, margin=0.0)) for k, (o, i) in
           {"A": (a_out, a_in), "B": (b_out, b_in)}.items()}  # fmt: skip
    snr = {k: float(crafting.objective("a_ude", o, i, margin=0.0, kind="snr")) for k, (o, i) in
           {"A": (a_out, a_in), "B": (b_out, b_in)}.items()}  # fmt: skip
    assert min(ude, key=ude.get) == "A" and min(snr, key=snr.get) == "B"
    assert snr == pytest.approx({"A": -0.5, "B": -2.0})


def test_snr_gradient_step_raises_the_moment_estimate_of_mu():
    """A small step of the losses against either objective's gradient raises μ̂ of the scores −ℓ (the sign is the
    audit's: the D′ models' losses go down relative to the D models'), and the SNR gradient ignores a common shift
    of every loss, which no audit can see."""
    gen = torch.Generator().manual_seed(0)
    out0, in0 = 2.0 + torch.randn(16, generator=gen), 1.5 + torch.randn(16, generator=gen)
    bits = torch.cat([torch.zeros(16, dtype=torch.bool), torch.ones(16, dtype=torch.bool)])

    def mu(o, i):
        return crafting.moment_mu(-torch.cat([o, i]), bits)

    for kind in ("snr", "loss_difference"):
        o, i = out0.clone().requires_grad_(True), in0.clone().requires_grad_(True)
        crafting.objective("a_ude", o, i, margin=0.0, kind=kind).backward()
        step = 0.05
        after = mu((o - step * o.grad).detach(), (i - step * i.grad).detach())
        assert after > mu(out0, in0), kind
    # The SNR gradient is orthogonal to a common shift of all losses.
    o, i = out0.clone().requires_grad_(True), in0.clone().requires_grad_(True)
    crafting.objective("a_ude", o, i, margin=0.0, kind="snr").backward()
    grad = torch.cat([o.grad, i.grad])
    assert float(grad.sum()) == pytest.approx(0.0, abs=1e-6)


RECIPES = {
    "paper (adam)": CraftRecipe(steps=30, lr=0.05),
    "sgd": CraftRecipe(optimizer="sgd", steps=30, lr=0.5),
    "sign_sgd + pixel range": CraftRecipe(optimizer="sign_sgd", steps=30, lr=0.05, pixel_range=True),
    "adam + l2 budget": CraftRecipe(steps=30, lr=0.05, budget_norm="l2", budget=2.0),
    "adam + linf budget + validation stop": CraftRecipe(steps=30, lr=0.05, budget_norm="linf", budget=0.3,
                                                        stop_on_validation=True, check_every=5),
    "snr + l2 budget + validation stop (snr_l2)": CraftRecipe(steps=30, lr=0.05, objective="snr", budget_norm="l2",
                                                              budget=2.0, pixel_range=True, stop_on_validation=True,
                                                              check_every=5),
}


def audit_of(theta, *, members, sample, **kw):
    """The GDP audit of ``sample`` scored on the models ``theta`` (what an audit job runs per split)."""
    return audit.audit_scores(crafting.sample_scores(ARCH, theta, sample, device="cpu"), members, **kw)


@pytest.fixture(scope="module")
def null_populations(data, theta0):
    """Crafting, audit and validation populations whose halves all trained on D (the canary is never inserted)."""
    kw = dict(models_per_world=16, steps=3, sigma=0.5, insert=False)
    return {role: worlds(data, theta0, noise_key=key, **kw) for role, key in (("craft", 21), ("audit", 22), ("val", 23))}


@pytest.mark.parametrize("name", list(RECIPES))
def test_held_out_crafting_finds_no_leakage_where_there_is_none(null_populations, name):
    """Both halves trained on D only (no canary): a sample crafted on one population, with any recipe, must not
    separate the halves of a fresh one (ε̂ ≈ 0), whereas on its own models it may fit their noise (the paper's
    "same")."""
    craft_theta, bits = null_populations["craft"]
    audit_theta, _ = null_populations["audit"]
    recipe = RECIPES[name]
    a = crafting.craft_sample("a_ade", spec=ARCH, theta=craft_theta, members=bits, canary=blank(), recipe=recipe,
                              pixel_bounds=((0 - MEAN) / STD, (1 - MEAN) / STD), validation=null_populations["val"],
                              device="cpu")  # fmt: skip
    N = len(bits) // 2
    kw = dict(members=bits, sample=a, delta=1e-5, confidence=0.95, rule=parse_rule("paper"), seed=0)
    same = audit_of(craft_theta, **kw)
    held_out = audit_of(audit_theta, **kw)
    print(f"{name}, null population, N = {N}: same ε̂ = {same['epsilon']:.3f}, held-out {held_out['epsilon']:.3f}")
    assert held_out["epsilon"] <= 0.5


def test_recipe_constraints_hold_after_crafting(noisy_population):
    theta, members = noisy_population
    lo, hi = (0 - MEAN) / STD, (1 - MEAN) / STD
    kw = dict(spec=ARCH, theta=theta, members=members, canary=blank(), device="cpu")
    a = crafting.craft_sample("a_ude", recipe=CraftRecipe(steps=10, lr=0.5, pixel_range=True), pixel_bounds=(lo, hi), **kw)
    assert (a.x >= lo - 1e-6).all() and (a.x <= hi + 1e-6).all() and not np.array_equal(a.x, blank().x)
    b = crafting.craft_sample("a_ude", recipe=CraftRecipe(steps=10, lr=0.5, budget_norm="l2", budget=0.5), **kw)
    assert np.linalg.norm(b.x - blank().x) <= 0.5 + 1e-5
    c = crafting.craft_sample("a_ude", recipe=CraftRecipe(optimizer="sign_sgd", steps=3, lr=0.01, budget_norm="linf",
                                                          budget=0.02), **kw)  # fmt: skip
    assert np.abs(c.x - blank().x).max() <= 0.02 + 1e-6
    # sign-SGD without constraints moves every pixel by exactly lr per step (or not at all where ∇ = 0)
    d = crafting.craft_sample("a_ude", recipe=CraftRecipe(optimizer="sign_sgd", steps=1, lr=0.01), **kw)
    moved = np.abs(d.x - blank().x)
    assert np.allclose(moved[moved > 0], 0.01, atol=1e-6)


def test_validation_stop_keeps_the_canary_when_crafting_never_helps(noisy_population):
    """On a validation population whose halves are identical (bits are labels only), no checkpoint beats the
    canary by much, and the kept checkpoint's μ̂ is the best of those evaluated."""
    theta, members = noisy_population
    recipe = CraftRecipe(steps=6, lr=0.05, stop_on_validation=True, check_every=2)
    flipped = (theta, ~members.astype(bool))  # the same models, worlds swapped: crafting moves μ̂ the wrong way
    a = crafting.craft_sample("a_ude", spec=ARCH, theta=theta, members=members, canary=blank(), recipe=recipe,
                              validation=flipped, device="cpu")  # fmt: skip
    assert a.selected_step == 0 and np.array_equal(a.x, blank().x)
    b = crafting.craft_sample("a_ude", spec=ARCH, theta=theta, members=members, canary=blank(), recipe=recipe,
                              validation=(theta, members), device="cpu")  # fmt: skip
    assert b.selected_step in (0, 2, 4, 6) and b.validation_mu >= crafting.moment_mu(
        -torch.from_numpy(crafting.sample_losses(ARCH, theta, blank().x, 9, device="cpu")), torch.as_tensor(members.astype(bool)))


def test_moment_mu_closed_form():
    s = torch.tensor([1.0, 3.0, 0.0, 2.0])
    bits = torch.tensor([True, True, False, False])
    # means 2 and 1, variances 2 and 2 (ddof 1): μ̂ = 1/√2
    assert crafting.moment_mu(s, bits) == pytest.approx(1 / math.sqrt(2))


def test_craft_key_keeps_the_paper_recipe_keys():
    assert craft_key({"steps": 100, "lr": 0.01}) == {"steps": 100, "lr": 0.01}
    full = {"optimizer": "adam", "steps": 100, "lr": 0.01, "pixel_range": False, "budget_norm": None, "budget": 0.0,
            "stop_on_validation": False, "check_every": 10}
    assert craft_key(full) == {"steps": 100, "lr": 0.01}
    assert craft_key({**full, "optimizer": "sgd"}) == {"steps": 100, "lr": 0.01, "optimizer": "sgd"}
    # The objective enters the key only where it is not the paper's.
    assert craft_key({**full, "objective": "loss_difference"}) == {"steps": 100, "lr": 0.01}
    assert craft_key({**full, "objective": "snr"}) == {"steps": 100, "lr": 0.01, "objective": "snr"}


# --------------------------------------------------------------------------------------------- black box


def kl_to(targets, surrogates, X):
    with torch.no_grad():
        p = torch.log_softmax(crafting.population_logits(ARCH, torch.as_tensor(targets), torch.as_tensor(X)), -1)
        q = torch.log_softmax(crafting.population_logits(ARCH, torch.as_tensor(surrogates), torch.as_tensor(X)), -1)
    return (p.exp() * (p - q)).sum(-1).mean(-1).numpy()


def test_distillation_moves_surrogates_towards_their_targets(data, noisy_population):
    X = data[0]
    targets = noisy_population[0][[0, 5]]
    surrogates = crafting.distill_surrogates(spec=ARCH, targets=targets, X_query=X, seed=4, epochs=3, batch_size=4,
                                         lr=1e-3, device="cpu")
    spec = model_spec(MNIST)
    start = np.stack([init_theta0(spec, scheme="xavier_normal", seed=derive_seed(4, "surrogate", i), bias=0.01)
                      for i in range(2)])
    assert surrogates.shape == targets.shape
    before, after = kl_to(targets, start, X), kl_to(targets, surrogates, X)
    assert (after < before).all(), (before, after)


def test_population_logits_shape(noisy_population, data):
    logits = crafting.population_logits(ARCH, torch.as_tensor(noisy_population[0][:3]), torch.as_tensor(data[0][:5]))
    assert logits.shape == (3, 5, 10)


# ----------------------------------------------------------------------------------------- worst-case θ0


def mean_loss(model, theta, X, y, **kw):
    net = build_model(model, **kw)
    load_flat_parameters(net, torch.as_tensor(theta))
    with torch.no_grad():
        return float(torch.nn.functional.cross_entropy(net(torch.as_tensor(X)), torch.as_tensor(y)))


def test_pretrain_lowers_the_aux_loss(data, theta0):
    _, _, aux_X, aux_y = data
    worst = train.pretrain(ARCH, theta0, aux_X, aux_y, epochs=3, lr=0.05, batch_size=4, seed=0)
    assert worst.shape == theta0.shape and worst.dtype == np.float32
    assert mean_loss(MNIST, worst, aux_X, aux_y) < mean_loss(MNIST, theta0, aux_X, aux_y)
    np.testing.assert_array_equal(worst, train.pretrain(ARCH, theta0, aux_X, aux_y, epochs=3, lr=0.05,
                                                       batch_size=4, seed=0))


def test_cifar_pretraining_keeps_the_body_and_resets_the_head():
    model = "cifar_cnn"
    rng = np.random.default_rng(2)
    X_pre = rng.standard_normal((8, 3, 32, 32)).astype(np.float32)
    y_pre = rng.integers(0, 100, 8)
    theta0 = train.average_theta0(model_spec(model), seed=0)
    p = theta0.size
    head = 128 * 10 + 10  # FC 128 → 10
    # epochs=0: no fine-tuning, so the head is θ0's and the body is the CIFAR-100 pre-trained one
    out = train.pretrain(model_spec(model), theta0, X_pre[:0], y_pre[:0], epochs=0, lr=0.01, batch_size=8, seed=0,
                        X_pre=X_pre, y_pre=y_pre, pre_classes=100, pre_epochs=1)
    assert out.shape == (p,) == (count_parameters(build_model(model)),)
    np.testing.assert_array_equal(out[p - head:], theta0[p - head:])
    assert not np.allclose(out[: p - head], theta0[: p - head])
    # without pre_epochs the CIFAR-100 stage is skipped
    same = train.pretrain(model_spec(model), theta0, X_pre[:0], y_pre[:0], epochs=0, lr=0.01, batch_size=8, seed=0,
                         X_pre=X_pre, y_pre=y_pre, pre_epochs=0)
    np.testing.assert_array_equal(same, theta0)


# ------------------------------------------------------------------------------------------------- audit


def test_audit_sample_scores_are_negative_losses_and_separate_a_toy(theta0):
    N = 16
    net = build_model(MNIST)
    last_bias = slice(theta0.size - 10, theta0.size)
    theta = np.repeat(theta0[None], 2 * N, axis=0)
    theta[N:, last_bias.start + 9] += 5.0  # the D′ models favour class 9: lower loss on the blank canary
    theta += np.random.default_rng(0).normal(0, 1e-3, theta.shape).astype(np.float32)
    members = train.world_members(N)
    sample = crafting.craft_sample("a_c", spec=ARCH, theta=theta, members=members, canary=blank())
    scores = crafting.sample_scores(ARCH, theta, sample, device="cpu")
    np.testing.assert_allclose(scores, -crafting.sample_losses(ARCH, theta, sample.x, 9, device="cpu"))
    assert scores[N:].min() > scores[:N].max()
    result = audit.audit_scores(scores, members, delta=1e-5, confidence=0.95, rule=parse_rule("paper"), seed=0)
    assert result["epsilon"] > 0
    assert count_parameters(net) == theta0.size



# -------------------------------------------------------------------------------------------------- plan


@pytest.fixture(scope="module")
def raw_config():
    return yaml.safe_load((REPO / "config" / "config.yaml").read_text())


def yplan(raw, scale="paper", edit=None):
    config = copy.deepcopy(raw)
    config["scale"] = scale
    resolved = resolve_scale(config)
    if edit:
        edit(resolved["yoon"])
    return yoon_plan.plan(resolved)


def points(plan, figure, **values):
    return [p for p in plan.figures[figure] if all(p.values[k] == v for k, v in values.items())]


def test_plan_shares_populations_across_figures(raw_config):
    plan = yplan(raw_config)
    fig2 = plan.figures["fig2"]
    assert len(fig2) == 1
    (fig3_mnist10,) = points(plan, "fig3", dataset="mnist", epsilon=10.0, craft_recipe="validation_stopped")
    assert fig2[0].population == fig3_mnist10.population and fig2[0].audit == fig3_mnist10.audit
    fig3_mnist = {p.values["epsilon"]: p for p in points(plan, "fig3", dataset="mnist", craft_recipe="validation_stopped")}
    fig4 = {p.values["epsilon"]: p for p in plan.figures["fig4"]}
    assert set(fig4) == set(fig3_mnist) == {1.0, 2.0, 4.0, 10.0}
    for eps, point in fig4.items():
        assert point.population == fig3_mnist[eps].population  # black box: same targets
        assert point.audit != fig3_mnist[eps].audit
        assert plan.audits[point.audit]["access"] == "black"
    # fig3: 2 datasets × 2 recipes × 4 ε, 10 runs each, both recipes on the same populations; the CIFAR series
    # use the CIFAR ConvNet, η = 2, T = 200
    assert len(plan.figures["fig3"]) == 16 and all(p.runs == 10 for p in plan.figures["fig3"])
    assert len({p.population for p in plan.figures["fig3"]}) == 8 and len({p.audit for p in plan.figures["fig3"]}) == 16
    cifar = plan.trainings[points(plan, "fig3", dataset="cifar10")[0].population]
    assert (cifar["model"], cifar["lr"], cifar["steps"]) == ("cifar_cnn", 2.0, 200)
    mnist = plan.trainings[fig3_mnist10.population]
    assert (mnist["model"], mnist["lr"], mnist["steps"], mnist["models_per_world"]) == ("mnist_cnn", 4.0, 100, 128)
    assert mnist["validation_models_per_world"] == 64  # the default recipe's validation population: null = N // 2
    laptop = yplan(raw_config, scale="laptop")
    sizes = {(p["dataset"], p["models_per_world"], p["validation_models_per_world"])
             for k, p in laptop.trainings.items() if k in {q.population for q in laptop.figures["fig3"]}}  # fmt: skip
    assert sizes == {("mnist", 32, 16), ("cifar10", 8, 4)}


def test_plan_named_recipes(raw_config):
    """craft_recipe names an entry of craft_recipes, merged over craft: the default (valid) adds pixels in range
    and the validation stop; the paper's keeps the audit key it had before recipes had names (steps and lr only)."""
    plan = yplan(raw_config)
    by_recipe = {r: plan.audits[points(plan, "fig3", dataset="mnist", epsilon=10.0, craft_recipe=r)[0].audit]["craft"]
                 for r in ("validation_stopped", "paper")}  # fmt: skip
    assert by_recipe == {"validation_stopped": {"steps": 100, "lr": 0.01, "pixel_range": True, "stop_on_validation": True},
                         "paper": {"steps": 100, "lr": 0.01}}  # fmt: skip
    others = ("fig2", "fig5", "fig6", "fig7", "fig8", "table1")
    assert {p.values["craft_recipe"] for f in others for p in plan.figures[f]} == {"validation_stopped"}
    # the recipe study's grid entries are given over the paper's reading
    study = {plan.audits[p.audit]["craft"].get("stop_on_validation", False) for p in plan.figures["crafting"]}
    assert study == {False, True}

    def smaller_steps(section):  # a craft option applies to every recipe
        section["craft"]["steps"] = 7

    plan7 = yplan(raw_config, edit=smaller_steps)
    assert {plan7.audits[p.audit]["craft"]["steps"] for p in plan7.figures["fig3"]} == {7}

    def recipe_wins(section):
        section["craft"]["stop_on_validation"] = False

    assert yplan(raw_config, edit=recipe_wins).audits == plan.audits


def test_plan_snr_recipe_and_the_paper_regime_overlay(raw_config):
    """snr_l2's audit key names what differs from the paper's reading (the objective, the binding L2 budget, pixels
    in range, the validation stop); config/yoon-paper-regime.yaml puts the crafting study at the paper's ηT/|D|
    (η = 0.17 at |D| = 256, T = 20), with a larger crafting population and the three recipes on shared populations."""

    def snr_study(section):
        section["figures"]["crafting"]["grid"] = {"craft_recipe": ["snr_l2"]}

    (point,) = yplan(raw_config, edit=snr_study).figures["crafting"]
    assert yplan(raw_config, edit=snr_study).audits[point.audit]["craft"] == {
        "steps": 100, "lr": 0.01, "objective": "snr", "budget_norm": "l2", "budget": 1.0, "pixel_range": True,
        "stop_on_validation": True}  # fmt: skip
    overlay = REPO / "config" / "yoon-paper-regime.yaml"
    explicit = user_values([REPO / "config" / "config.yaml", overlay], {"scale": "laptop"}, raw_config)
    resolved = resolve_scale(deep_merge(raw_config, explicit), explicit=explicit)
    plan = yoon_plan.plan(resolved)
    study = plan.figures["crafting"]
    assert sorted(p.values["craft_recipe"] for p in study) == ["paper", "snr_l2", "validation_stopped"]
    assert len({p.population for p in study}) == 1  # paired by run: every recipe crafts on the same models
    pop = plan.trainings[study[0].population]
    assert (pop["lr"], pop["steps"], pop["epsilon"], pop["models_per_world"]) == (0.17, 20, 10.0, 32)
    assert pop["craft_models_per_world"] == 200 and pop["validation_models_per_world"] == 32
    assert {p.runs for p in study} == {4}


def test_plan_grid_craft_may_name_a_recipe(raw_config):
    """A grid's craft entry that names a craft_recipes entry gives the same audit as its options written out."""

    def named(section):
        section["figures"]["crafting"]["grid"] = {"craft": ["snr_l2"]}

    def written(section):
        section["figures"]["crafting"]["grid"] = {"craft": [dict(section["craft_recipes"]["snr_l2"])]}

    (by_name,) = yplan(raw_config, edit=named).figures["crafting"]
    (by_options,) = yplan(raw_config, edit=written).figures["crafting"]
    assert by_name.audit == by_options.audit and by_name.population == by_options.population
    assert yplan(raw_config, edit=named).audits[by_name.audit]["craft"]["objective"] == "snr"

    def named_with_override(section):
        section["figures"]["crafting"]["grid"] = {"craft": [{"recipe": "snr_l2", "check_every": 1}]}

    def written_with_override(section):
        section["figures"]["crafting"]["grid"] = {"craft": [{**section["craft_recipes"]["snr_l2"], "check_every": 1}]}

    (by_name,) = yplan(raw_config, edit=named_with_override).figures["crafting"]
    (by_options,) = yplan(raw_config, edit=written_with_override).figures["crafting"]
    assert by_name.audit == by_options.audit and by_name.population == by_options.population
    craft = yplan(raw_config, edit=named_with_override).audits[by_name.audit]["craft"]
    assert craft["check_every"] == 1 and craft["objective"] == "snr" and "recipe" not in craft

    def unknown(section):
        section["figures"]["crafting"]["grid"] = {"craft": ["best"]}

    with pytest.raises(ValueError, match="grid.craft: 'best' is not in yoon.craft_recipes"):
        yplan(raw_config, edit=unknown)

    # The schema takes the named form with craft options over it, and nothing else beside the name.
    schema = str(REPO / "workflow" / "schemas" / "config.schema.yaml")
    config = copy.deepcopy(raw_config)
    config["yoon"]["figures"]["crafting"]["grid"] = {"craft": [{"recipe": "snr_l2", "check_every": 1}]}
    check_config(config, schema)
    config["yoon"]["figures"]["crafting"]["grid"] = {"craft": [{"recipe": "snr_l2", "check_evry": 1}]}
    with pytest.raises(ValueError, match="grid.craft"):
        check_config(config, schema)

    def unknown_with_override(section):
        section["figures"]["crafting"]["grid"] = {"craft": [{"recipe": "best", "check_every": 1}]}

    with pytest.raises(ValueError, match="grid.craft: 'best' is not in yoon.craft_recipes"):
        yplan(raw_config, edit=unknown_with_override)


def test_plan_recipe_errors(raw_config):
    def unknown(section):
        section["craft_recipe"] = "best"

    with pytest.raises(ValueError, match="craft_recipe 'best' is not in yoon.craft_recipes"):
        yplan(raw_config, edit=unknown)

    def no_validation(section):
        section["validation_models_per_world"] = 0

    with pytest.raises(ValueError, match="recipe 'validation_stopped' stops on validation"):
        yplan(raw_config, edit=no_validation)


def test_plan_table1_crafts_every_margin_in_one_audit(raw_config):
    plan = yplan(raw_config)
    (point,) = plan.figures["table1"]
    assert plan.audits[point.audit]["margins"] == [0.05, 0.1, 0.15, 0.2, 0.25]
    pop = plan.trainings[point.population]
    assert (pop["dataset"], pop["epsilon"]) == ("cifar10", 4.0)


def test_plan_keys_ignore_runs_and_craft_options_only_change_audits(raw_config):
    base = yplan(raw_config)

    def more_runs(section):
        section["runs"] = 3

    def craft_steps(section):
        section["craft"]["steps"] = 7

    runs = yplan(raw_config, edit=more_runs)
    assert set(runs.trainings) == set(base.trainings) and set(runs.audits) == set(base.audits)
    assert all(p.runs == 3 for points_ in runs.figures.values() for p in points_)
    crafted = yplan(raw_config, edit=craft_steps)
    assert set(crafted.trainings) == set(base.trainings)
    assert set(crafted.audits).isdisjoint(base.audits)


def test_plan_audit_delta_keys_the_audits_and_the_accountant_delta_the_populations(raw_config):
    """The audit reports ε̂ at audit.delta (an audit key); σ is calibrated at yoon.delta (a population key)."""
    config = copy.deepcopy(raw_config)
    resolved = resolve_scale(config)
    base = yoon_plan.plan(resolved)
    other = yoon_plan.plan({**resolved, "audit": {**resolved["audit"], "delta": 1e-6}})
    assert set(other.trainings) == set(base.trainings) and set(other.audits).isdisjoint(base.audits)
    assert {a["delta"] for a in other.audits.values()} == {1e-6}

    def accountant(section):
        section["delta"] = 1e-6

    moved = yplan(raw_config, edit=accountant)
    assert set(moved.trainings).isdisjoint(base.trainings)


def test_plan_dataset_entries_apply_to_their_dataset_only(raw_config):
    base = yplan(raw_config)

    def cifar_d(section):
        section["datasets"]["cifar10"]["d_size"] = 100

    plan = yplan(raw_config, edit=cifar_d)
    for figure in ("fig3", "fig7"):
        for dataset in ("mnist", "cifar10"):
            old = {p.population for p in points(base, figure, dataset=dataset)}
            new = {p.population for p in points(plan, figure, dataset=dataset)}
            assert (old == new) == (dataset == "mnist"), (figure, dataset)
    cifar_data = {plan.trainings[p.population]["data"] for p in points(plan, "fig3", dataset="cifar10")}
    assert [plan.data[k]["d_size"] for k in cifar_data] == [100]
    mnist_data = {plan.trainings[p.population]["data"] for p in points(plan, "fig3", dataset="mnist")}
    assert [plan.data[k]["d_size"] for k in mnist_data] == [30_000]


def test_plan_worst_init_pretrains_cifar_on_cifar100(raw_config):
    plan = yplan(raw_config)
    worst = {p.values["dataset"]: plan.trainings[p.population] for p in points(plan, "fig7", init="worst")}
    assert worst["cifar10"]["pretrain_data"] is not None and worst["mnist"]["pretrain_data"] is None
    assert plan.data[worst["cifar10"]["pretrain_data"]]["dataset"] == "cifar100"


def test_figure_values_errors(raw_config):
    section = resolve_scale({**copy.deepcopy(raw_config), "scale": "paper"})["yoon"]
    bad = copy.deepcopy(section)
    bad["figures"]["fig8"]["grid"] = {"clip_nrom": [1.0]}
    with pytest.raises(ValueError, match=r"unknown keys \['clip_nrom'\]"):
        figure_values(bad, "fig8")
    with pytest.raises(ValueError, match="yoon.figures has no figure 'fig9'"):
        figure_values(section, "fig9")
    bad = copy.deepcopy(section)
    bad["figures"]["fig3"]["grid"] = {"dataset": ["svhn"]}
    with pytest.raises(ValueError, match="no entry for dataset 'svhn'"):
        figure_values(bad, "fig3")


def test_smoke_plan_is_small(raw_config):
    plan = yplan(raw_config, scale="smoke")
    assert all(pop["models_per_world"] == 3 and pop["steps"] == 2 for pop in plan.trainings.values())
    assert {p.runs for pts in plan.figures.values() for p in pts} == {1}


def test_plan_data_splits_d_from_the_auxiliary_half(raw_config, tmp_path):
    """D is a prefix of a seeded permutation, the auxiliary examples come after the first half: no row is in both
    (prepared as prepare_yoon_data does, on synthetic MNIST IDX files), with the spec's normalisation."""
    from hsaudit.data.datasets import configured_dataset

    def here(section):
        for name in section["data"]:
            section["data"][name]["data_dir"] = str(tmp_path)

    plan = yplan(raw_config, scale="smoke", edit=here)
    (spec,) = [s for s in plan.data.values() if s["dataset"] == "mnist"]
    assert (spec["d_size"], spec["aux_size"], spec["aux_offset"]) == (12, 20, 40)
    common = {**spec["section"], "subset_seed": spec["split_seed"]}
    d = configured_dataset("mnist", {**common, "subset": spec["d_size"], "subset_offset": 0})
    aux = configured_dataset("mnist", {**common, "subset": spec["aux_size"], "subset_offset": spec["aux_offset"]})
    assert d.X.shape == (12, *SHAPE) and aux.X.shape == (20, *SHAPE) and d.data_source == "mnist:synthetic"
    flat_d, flat_aux = d.X.reshape(12, -1), aux.X.reshape(20, -1)
    assert not (flat_d[:, None, :] == flat_aux[None, :, :]).all(-1).any()
    np.testing.assert_allclose(d.mean, MEAN)
    np.testing.assert_allclose(d.scale, STD)


# -------------------------------------------------------------------------------------- one audit job


def test_craft_run_scores_every_model_and_audit_table_audits_each_block(data, theta0):
    """An audit job: a_c, a_ude and a_ade at each margin crafted on the crafting population, every model of both
    populations scored by −ℓ(x_a); one audit row per sample × split, each the GDP audit of its own block."""
    X = data[0]
    craft = worlds(data, theta0, models_per_world=3, sigma=0.5, noise_key=31)
    held = worlds(data, theta0, models_per_world=2, sigma=0.5, noise_key=32)
    run = {"craft_theta": craft[0], "craft_members": craft[1], "audit_theta": held[0], "members": held[1],
           **blank().arrays()}  # fmt: skip
    spec = {"craft": {"steps": 3, "lr": 0.05}, "access": "white", "margins": [0.1, 0.2]}
    samples, scores = crafting.craft_run(run, {"X": X, "mean": MEAN, "std": STD}, spec=spec,
                                         population={"model": MNIST, "seed": 0}, arch=ARCH, audit_key="k", run_index=4,
                                         device="cpu")  # fmt: skip
    assert [(s.adversary, s.margin) for s in samples][1:] == [("a_ude", 0.0), ("a_ade", 0.1), ("a_ade", 0.2)]
    assert len(scores) == len(samples) * (6 + 4) and set(scores["run"]) == {4}
    kw = dict(delta=1e-5, confidence=0.95, rule=parse_rule("paper"), seed=0)
    table = audit.audit_table(scores, crafting.sample_table(samples), access="white", facts={"dataset": "mnist"},
                              **kw)  # fmt: skip
    assert list(zip(table["adversary"], table["split"])) == [(a, s) for a in ("a_c", "a_ude", "a_ade", "a_ade")
                                                             for s in crafting.SPLITS]  # fmt: skip
    for row, sample in zip(table.itertuples(), [s for s in samples for _ in crafting.SPLITS]):
        theta, bits = (craft if row.split == "same" else held)
        expected = audit.audit_scores(crafting.sample_scores(ARCH, theta, sample, device="cpu"), bits, **kw)
        assert row.epsilon == expected["epsilon"] and row.mu == expected["mu"]
        assert (row.epsilon_valid, row.mu_valid) == (expected["epsilon_valid"], expected["mu_valid"])
        assert row.valid_threshold_rule == "crossing"
        assert not row.rule_valid  # the paper's rule: not a valid bound
        assert row.objective_end == sample.objective_end or math.isnan(sample.objective_end)
    assert list(table.columns[:5]) == ["run", "adversary", "margin", "split", "access"]
    assert table.columns[-1] == "dataset" and table["access"].eq("white").all()
    with pytest.raises(ValueError, match="one row per"):
        audit.audit_table(scores, pd.concat([crafting.sample_table(samples)] * 2), access="white", **kw)
