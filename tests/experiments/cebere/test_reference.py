"""The vectorised population trainer against the Opacus one-model reference (STYLE.md rule 17).

Both trainers get the same θ0, batches, crafted object and the same explicit noise (hsaudit.engine.dpsgd.model_noise),
so they must agree to float32 tolerance, step after step, for every kind of insertion and both bits.
"""

from __future__ import annotations

import numpy as np
import pytest

from conftest import housing_like, images_like
from hsaudit.experiments.cebere.train.adversaries import craft
from hsaudit.experiments.cebere.reference import reference_scores
from hsaudit.experiments.cebere.train.shards import train_shard
from hsaudit.engine.dpsgd import DPSGDConfig, make_setup, model_noise
from hsaudit.engine.models import model_spec


pytestmark = pytest.mark.usefixtures("torch_one_thread")


def shard_scores(**kw):
    """train_shard's scores, with the old ``seed=`` spelling of the noise key."""
    if "seed" in kw:
        kw["noise_key"] = kw.pop("seed")
    return train_shard(**kw).scores


def _housing_like(n=160, seed=0):
    return housing_like(n, seed)


# C small enough that most samples are clipped; σ = 1 so the noise matters; k = 2 so insertion is periodic.
CFG = DPSGDConfig(steps=6, batch_size=24, lr=0.5, clip_norm=0.3, noise_multiplier=1.0, period=2)
BITS = np.array([0, 1, 1, 0])


@pytest.mark.parametrize(
    ("variant", "adversary", "backend"),
    [
        *[(v, a, "mlp") for v in ("8-3-8-1", "8-6-2") for a in ("gc_r", "cots", "label_flip")],
        # the torch.func engine once here; test_train checks it against the hand-derived one in general
        ("8-6-2", "label_flip", "func"),
        ("8-3-8-1", "gc_r", "func"),
    ],
)
def test_population_matches_opacus_fcnn(variant, adversary, backend):
    X, y = _housing_like()
    kwargs = {"variant": variant}
    setup = make_setup(spec=model_spec("fcnn", **kwargs), n_train=len(X), config=CFG, seed=1)
    crafted = craft(adversary, spec=model_spec("fcnn", **kwargs), X=X, y=y, setup=setup, config=CFG, seed=2)
    scores = shard_scores(
        spec=model_spec("fcnn", **kwargs), X=X, y=y, setup=setup, config=CFG, crafted=crafted, bits=BITS,
        seed=7, progress=False, backend=backend, device="cpu",
    )
    assert scores.shape == (4, 3)
    for i, bit in enumerate(BITS):
        ref, _ = reference_scores(
            spec=model_spec("fcnn", **kwargs), X=X, y=y, setup=setup, config=CFG, crafted=crafted, bit=int(bit),
            noise=model_noise(7, i, CFG.steps, 68),
        )
        np.testing.assert_allclose(scores[i], ref, rtol=1e-4, atol=1e-6)
    # the insertion mattered: the two worlds differ (so agreement is not trivially about b = 0)
    ref0, _ = reference_scores(
        spec=model_spec("fcnn", **kwargs), X=X, y=y, setup=setup, config=CFG, crafted=crafted, bit=0,
        noise=model_noise(7, 1, CFG.steps, 68),
    )
    assert np.abs(ref0 - scores[1]).max() > 1e-4


IMAGE_CASES = [
    # model, image side (ResNet18-GN pools adaptively: 8x8 keeps it quick), feature inputs for the AlexNet head
    ("convnet", 32),
    ("resnet18_gn", 8),
    ("alexnet_head", None),
]


@pytest.mark.parametrize("adversary", ["gc_r", "label_flip"])
@pytest.mark.parametrize(("model", "side"), IMAGE_CASES)
def test_population_matches_opacus_cifar_models(model, side, adversary):
    """Every CIFAR-10 architecture: the population engine (auto backend) equals Opacus, k = 2, both bits, with
    shared and with per-model θ0, fed the same θ0, batches and noise. (ResNet18-GN: 11.2M parameters, so two
    steps and the per-model θ0 only, to keep the CPU test in seconds.)"""
    from hsaudit.engine.dpsgd import population_theta0

    X, y = images_like(8, (4096,) if side is None else (3, side, side), seed=0)
    heavy = model == "resnet18_gn"
    cfg = DPSGDConfig(steps=2 if heavy else 4, batch_size=3, lr=0.05, clip_norm=0.5, noise_multiplier=1.0, period=2)
    setup = make_setup(spec=model_spec(model), n_train=8, config=cfg, seed=0)
    crafted = craft(adversary, spec=model_spec(model), X=X, y=y, setup=setup, config=cfg, seed=0)
    bits = np.array([1, 0])
    p = setup.theta0.size
    per_model = population_theta0(model_spec(model), scheme="xavier_normal", key=5, models=range(2))
    for theta0 in (per_model,) if heavy else (None, per_model):
        obs = train_shard(
            spec=model_spec(model), X=X, y=y, setup=setup, config=cfg, crafted=crafted, bits=bits,
            noise_key=3, theta0=theta0, progress=False, device="cpu",
        )
        for i, bit in enumerate(bits):
            ref, _ = reference_scores(
                spec=model_spec(model), X=X, y=y, setup=setup, config=cfg, crafted=crafted, bit=int(bit),
                noise=model_noise(3, i, cfg.steps, p), theta0=None if theta0 is None else theta0[i],
            )
            np.testing.assert_allclose(obs.scores[i], ref, rtol=1e-4, atol=1e-5)


def test_reference_rejects_bad_noise():
    X, y = _housing_like()
    setup = make_setup(spec=model_spec("fcnn"), n_train=len(X), config=CFG, seed=1)
    crafted = craft("gc_r", spec=model_spec("fcnn"), X=X, y=y, setup=setup, config=CFG, seed=2)
    with pytest.raises(ValueError, match="noise"):
        reference_scores(
            spec=model_spec("fcnn"), X=X, y=y, setup=setup, config=CFG, crafted=crafted, bit=1,
            noise=np.zeros((2, 68)),
        )


@pytest.mark.parametrize(("adversary", "known"), [("gc_r", True), ("gc_r", False), ("cots", False), ("label_flip", True)])
def test_per_model_theta0_matches_opacus(adversary, known):
    """Every model starts from its own θ0 (Cebere et al. Fig. 12); with θ0 unknown the score cannot subtract it."""
    from hsaudit.engine.dpsgd import population_theta0

    X, y = _housing_like()
    kwargs = {"variant": "8-3-8-1"}
    setup = make_setup(spec=model_spec("fcnn", **kwargs), n_train=len(X), config=CFG, seed=1)
    crafted = craft(adversary, spec=model_spec("fcnn", **kwargs), X=X, y=y, setup=setup, config=CFG, seed=2)
    theta0 = population_theta0(model_spec("fcnn", **kwargs), scheme="xavier_normal", key=11, models=range(10, 14))
    assert not np.allclose(theta0[0], theta0[1])
    obs = train_shard(
        spec=model_spec("fcnn", **kwargs), X=X, y=y, setup=setup, config=CFG, crafted=crafted, bits=BITS,
        noise_key=7, first_model=10, theta0=theta0, known_theta0=known, progress=False, device="cpu",
    )
    for i, bit in enumerate(BITS):
        ref, _ = reference_scores(
            spec=model_spec("fcnn", **kwargs), X=X, y=y, setup=setup, config=CFG, crafted=crafted, bit=int(bit),
            noise=model_noise(7, 10 + i, CFG.steps, 68), theta0=theta0[i], known_theta0=known,
        )
        np.testing.assert_allclose(obs.scores[i], ref, rtol=1e-4, atol=1e-6)


def test_xavier_theta0_is_a_glorot_normal_draw():
    from hsaudit.engine.models import build_model, fcnn_sizes
    from hsaudit.engine.dpsgd import init_theta0

    theta = init_theta0(model_spec("fcnn", variant="8-6-2"), scheme="xavier_normal", seed=3)
    sizes = fcnn_sizes("8-6-2")
    w1 = theta[: 6 * 8]
    assert np.all(theta[48:54] == 0)  # biases are 0
    # Glorot normal: sd = sqrt(2 / (fan_in + fan_out)); 48 draws, so a loose check
    assert 0.5 < w1.std() / np.sqrt(2 / (sizes[0] + sizes[1])) < 1.5
    again = init_theta0(model_spec("fcnn", variant="8-6-2"), scheme="xavier_normal", seed=3)
    np.testing.assert_array_equal(theta, again)
    assert build_model("fcnn", variant="8-6-2") is not None
    with pytest.raises(ValueError, match="scheme"):
        init_theta0(model_spec("fcnn"), scheme="he", seed=0)
