"""Poisson subsampling in the DP-SGD engine (Steinke, Nasr et al. 2025, Alg. 1; hsaudit.engine.sampling).

The engine is checked against a one-model Opacus loop that replays the same batches and the same noise
(Opacus' own per-sample gradients, clipping and ``expected_batch_size`` normalisation, SGD's weight decay as the
regulariser), the batch sizes and canary draws against their laws, and the regulariser against a closed form.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from scipy import stats

from conftest import housing_like
from hsaudit.engine.dpsgd import DPSGDConfig, model_noise, train_population
from hsaudit.engine.models import (
    build_model,
    flat_parameters,
    load_flat_parameters,
    loss_name,
    model_spec,
    per_sample_loss,
)
from hsaudit.engine.noise import counter_bernoulli, counter_geometric, reference_bernoulli, reference_geometric
from hsaudit.engine.psg import population_engine
from hsaudit.engine.sampling import Poisson, PoissonSampler, poisson_schedule

pytestmark = pytest.mark.usefixtures("torch_one_thread")

NOISE_KEY, SAMPLING_KEY = 11, 12


def opacus_poisson(
    model, theta0, X, y, *, batches, canary_steps, config, noise, gradient=None, canary=None, weight_decay=0.0,
    kwargs=None,
):
    """One model trained by Opacus on replayed Poisson batches: ``GradSampleModule`` + ``DPOptimizer`` with mean
    reduction and ``expected_batch_size = B`` (Opacus' Poisson normalisation), the explicit noise and gradient
    canary added to Opacus' clipped sum before its ``add_noise``/``scale_grad``, then SGD with
    ``weight_decay`` (∇r = αθ, not clipped, not normalised)."""
    from opacus import GradSampleModule
    from opacus.optimizers import DPOptimizer

    net = build_model(model, **(kwargs or {}))
    load_flat_parameters(net, torch.as_tensor(theta0))
    gsm = GradSampleModule(net, loss_reduction="mean")
    params = [p for p in gsm.parameters() if p.requires_grad]
    opt = DPOptimizer(
        torch.optim.SGD(params, lr=config.lr, weight_decay=weight_decay),
        noise_multiplier=0.0,  # the explicit noise is added below
        max_grad_norm=config.clip_norm,
        expected_batch_size=config.batch_size,
        loss_reduction="mean",
    )
    kind = loss_name(model, **(kwargs or {}))
    noise = torch.as_tensor(noise)
    for t in range(1, config.steps + 1):
        idx = torch.as_tensor(batches[t - 1])
        xb, yb = X[idx], y[idx]
        if canary is not None and canary_steps[t - 1]:
            xb, yb = torch.cat([xb, canary[0]]), torch.cat([yb, canary[1]])
        assert len(xb) > 0, "choose N, q so that no batch is empty"
        opt.zero_grad(set_to_none=True)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Full backward hook is firing")
            per_sample_loss(kind, gsm(xb), yb).mean().backward()
        opt.clip_and_accumulate()
        extra = config.noise_multiplier * config.clip_norm * noise[t - 1]
        if gradient is not None and canary_steps[t - 1]:
            extra = extra + gradient
        offset = 0
        for p in params:
            p.summed_grad += extra[offset : offset + p.numel()].view_as(p)
            offset += p.numel()
        opt.add_noise()  # noise_multiplier 0: p.grad = summed_grad
        opt.scale_grad()  # p.grad /= expected_batch_size
        opt.original_optimizer.step()
    return torch.cat([p.detach().reshape(-1) for p in params]).numpy()


def _engine_vs_opacus(
    model, backend, X, y, *, config, m, insertion, weight_decay=0.0, rtol=1e-4, atol=1e-5, kwargs=None
):
    torch.manual_seed(0)
    theta0 = flat_parameters(build_model(model, **(kwargs or {})))
    engine = population_engine(model_spec(model, **(kwargs or {})), "cpu", backend=backend)
    mask = (torch.arange(m) % 2 == 0).float()  # models 0, 2, ... inserted
    p = theta0.numel()
    gradient = canary = None
    if insertion == "gradient":
        gradient = torch.zeros(p)
        gradient[3] = config.clip_norm  # Dirac canary
    elif insertion == "input":
        canary = (torch.zeros((1, *X.shape[1:])), torch.tensor([1], dtype=y.dtype))
    models = range(5, 5 + m)  # global indices not starting at 0
    regulariser = (lambda th: weight_decay * th) if weight_decay else None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # batch_size = qN: no warning
        obs = train_population(
            engine=engine, theta0=theta0, X=X, y=y, batches=None, config=config, noise_key=NOISE_KEY,
            models=models, mask=mask, gradient=gradient, canary=canary, sampling_key=SAMPLING_KEY,
            regulariser=regulariser, keep_final=True,
        )
    assert obs.canary_steps is not None and obs.canary_steps.shape == (m, config.steps)
    assert not obs.canary_steps[1::2].any()  # not inserted: never drawn
    assert obs.canary_steps[0::2].any()  # the test would not see a canary otherwise
    for j, i in enumerate(models):
        batches, steps = poisson_schedule(
            SAMPLING_KEY, i, steps=config.steps, n=len(X), rate=config.sampling.rate, inserted=bool(mask[j]),
            period=config.period,
        )
        np.testing.assert_array_equal(obs.canary_steps[j], steps)
        ref = opacus_poisson(
            model, theta0.numpy(), X, y, batches=batches, canary_steps=steps, config=config,
            noise=model_noise(NOISE_KEY, i, config.steps, p), gradient=gradient, canary=canary,
            weight_decay=weight_decay, kwargs=kwargs,
        )
        np.testing.assert_allclose(obs.theta[j], ref, rtol=rtol, atol=atol)
    return obs


@pytest.mark.parametrize("backend", ["mlp", "func"])
@pytest.mark.parametrize("insertion", ["gradient", "input"])
def test_engine_equals_opacus_fcnn(backend, insertion, monkeypatch):
    import hsaudit.engine.dpsgd as dpsgd

    monkeypatch.setattr(dpsgd, "_POISSON_CHUNK", 3)  # 4 models: two chunks sorted by batch size
    X, y = housing_like(80, 0)
    X, y = torch.as_tensor(X), torch.as_tensor(y)
    q = 0.2
    config = DPSGDConfig(
        steps=6, batch_size=16, lr=0.5, clip_norm=1.0, noise_multiplier=0.7, sampling=Poisson(q)
    )  # qN = 16
    _engine_vs_opacus("fcnn", backend, X, y, config=config, m=4, insertion=insertion, weight_decay=0.3)


@pytest.mark.parametrize("insertion", ["gradient", "input"])
@pytest.mark.parametrize(
    ("model", "backend", "kwargs", "size", "n"),
    [
        ("convnet", "hooks", None, 32, 40),
        # Steinke et al.'s model, small: a weight-standardised WideResNet through `func`, against Opacus, whose
        # hooks do not know WSConv2d and fall back to per-layer torch.func gradients of it
        ("wrn16_4", "func", {"depth": 10, "width": 1}, 8, 24),
    ],
)
def test_engine_equals_opacus_images(model, backend, kwargs, size, n, insertion):
    gen = torch.Generator().manual_seed(0)
    X = torch.randn(n, 3, size, size, generator=gen)
    y = torch.randint(0, 10, (n,), generator=gen)
    config = DPSGDConfig(
        steps=3, batch_size=n // 4, lr=0.2, clip_norm=1.0, noise_multiplier=0.5, sampling=Poisson(0.25)
    )  # qN = n / 4
    _engine_vs_opacus(model, backend, X, y, config=config, m=2, insertion=insertion, weight_decay=0.1, kwargs=kwargs)


def test_bernoulli_and_geometric_draws_equal_the_slow_reference(monkeypatch):
    draws = counter_bernoulli(123, torch.tensor([0, 7, 2**40]), 9, 300, 0.37)
    for row, model in zip(draws, [0, 7, 2**40]):
        np.testing.assert_array_equal(row.numpy(), reference_bernoulli(123, model, 9, 300, 0.37))
    assert counter_bernoulli(1, range(2), 1, 50, 1.0).all() and not counter_bernoulli(1, range(2), 1, 50, 0.0).any()
    gaps = counter_geometric(123, torch.tensor([0, 7, 2**40]), 9, 200, 0.05, start=17)
    for row, model in zip(gaps, [0, 7, 2**40]):
        np.testing.assert_array_equal(row.numpy(), reference_geometric(123, model, 9, 200, 0.05, start=17))
    assert not counter_geometric(1, range(2), 1, 5, 1.0).any()
    # drawn in blocks of rows on the CPU: a block size that cuts the rows unevenly gives the same draws
    import hsaudit.engine.noise as noise

    whole = counter_geometric(123, torch.arange(7), 9, 30, 0.05)
    monkeypatch.setattr(noise, "_GEOMETRIC_BLOCK", 64)  # 2 rows of 30 draws per block
    np.testing.assert_array_equal(counter_geometric(123, torch.arange(7), 9, 30, 0.05).numpy(), whole.numpy())
    assert counter_geometric(123, torch.arange(0), 9, 30, 0.05).shape == (0, 30)
    # the gaps' law: mean (1 − q)/q
    q = 0.05
    mean = counter_geometric(5, range(200), 1, 500, q).double().mean().item()
    assert abs(mean - (1 - q) / q) < 4 * np.sqrt((1 - q) / q**2 / 1e5)


def test_batches_are_the_bernoulli_process_and_extend_past_the_first_draw():
    """Positions are strictly increasing and cover N; a sampler that needs more gaps than its first draw gives the
    same batches as one that does not."""
    n, q = 400, 0.3
    sampler = PoissonSampler(9, range(50), n=n, rate=q)
    for t in (1, 2):
        pos = sampler.positions(t)
        assert (pos.diff(dim=1) > 0).all() and (pos[:, -1] >= n).all()
        small = PoissonSampler(9, range(50), n=n, rate=q)
        small.k0 = 3  # forces the extension loop
        b, s = sampler(t), small(t)
        np.testing.assert_array_equal(b.index.numpy(), s.index.numpy())
        assert b.counts == s.counts


def _binomial_chi2(counts: np.ndarray, n: int, q: float) -> float:
    """p-value of Pearson's χ² test of ``counts`` against Binomial(n, q), tails pooled to expected counts ≥ 5."""
    k = np.arange(n + 1)
    pmf = stats.binom.pmf(k, n, q)
    observed = np.bincount(counts, minlength=n + 1).astype(float)
    expected = pmf * counts.size
    # pool bins from both ends until each holds ≥ 5 expected
    lo, hi = int(np.argmax(np.cumsum(expected) >= 5)), n - int(np.argmax(np.cumsum(expected[::-1]) >= 5))
    obs = np.concatenate([[observed[: lo + 1].sum()], observed[lo + 1 : hi], [observed[hi:].sum()]])
    exp = np.concatenate([[expected[: lo + 1].sum()], expected[lo + 1 : hi], [expected[hi:].sum()]])
    exp *= obs.sum() / exp.sum()
    return float(stats.chisquare(obs, exp).pvalue)


def test_batch_sizes_are_binomial():
    """20,000 batch sizes (500 models × 40 steps) of N = 200, q = 0.1 fit Binomial(N, q); Binomial(N, 1.1 q) is
    rejected (the test has power against a 10 % error in q)."""
    n, q, m, steps = 200, 0.1, 500, 40
    sampler = PoissonSampler(3, range(m), n=n, rate=q)
    sizes = np.concatenate([np.asarray(sampler(t).counts) for t in range(1, steps + 1)])
    assert _binomial_chi2(sizes, n, q) > 1e-3
    assert _binomial_chi2(sizes, n, 1.1 * q) < 1e-6
    assert _binomial_chi2(sizes, n, 0.9 * q) < 1e-6


def test_canary_inclusion_rate_is_q_and_independent_of_the_shard():
    n, q, m, steps = 30, 0.1, 1000, 100  # 10⁵ draws: sd ≈ 95 hits, a 10 % error in q is ≈ 10 sd
    mask = torch.ones(m)
    sampler = PoissonSampler(4, range(m), n=n, rate=q, mask=mask, canary_in_batch=True, period=1)
    batches = [sampler(t) for t in range(1, steps + 1)]
    hits = int(sum(b.canary.sum() for b in batches))
    trials = m * steps
    assert stats.binomtest(hits, trials, q).pvalue > 1e-3
    assert stats.binomtest(hits, trials, 1.1 * q).pvalue < 1e-3
    # the canary is example n of an inserted model's batch exactly when drawn
    for b in batches[:5]:
        last = b.index[torch.arange(m), torch.as_tensor(b.counts) - 1]
        np.testing.assert_array_equal((last == n).numpy(), b.canary.numpy())
    # the same model index gets the same batches and canary draws in another shard, chunking and order
    other = PoissonSampler(4, [999, 17, 250], n=n, rate=q, mask=torch.ones(3), canary_in_batch=True)
    for t in (1, 7, 100):
        b, o = batches[t - 1], other(t)
        for j, i in enumerate([999, 17, 250]):
            np.testing.assert_array_equal(
                o.index[j, : o.counts[j]].numpy(), b.index[i, : b.counts[i]].numpy()
            )
            assert bool(o.canary[j]) == bool(b.canary[i])
    # a model that is not inserted never includes the canary; neither does any model off the insertion steps
    half = PoissonSampler(4, range(m), n=n, rate=q, mask=(torch.arange(m) % 2).float(), period=2)
    assert not half(2).canary[0::2].any() and not half(3).canary.any() and half(2).canary[1::2].any()


@pytest.mark.parametrize("chunk", [64, 2])
def test_population_results_do_not_depend_on_the_shard(chunk, monkeypatch):
    """The same models give the same results in another shard, and whether the population is cut into chunks of
    models sorted by batch size or not (``_POISSON_CHUNK``)."""
    import hsaudit.engine.dpsgd as dpsgd

    monkeypatch.setattr(dpsgd, "_POISSON_CHUNK", chunk)
    X, y = housing_like(60, 1)
    X, y = torch.as_tensor(X), torch.as_tensor(y)
    config = DPSGDConfig(steps=4, batch_size=12, lr=0.3, clip_norm=1.0, noise_multiplier=1.0, sampling=Poisson(0.2))
    engine = population_engine(model_spec("fcnn"), "cpu")
    theta0 = flat_parameters(build_model("fcnn"))
    kw = dict(engine=engine, theta0=theta0, X=X, y=y, batches=None, config=config, noise_key=1, sampling_key=2,
              keep_final=True)
    whole = train_population(models=range(6), **kw).theta
    part = train_population(models=[4, 1], **kw).theta
    np.testing.assert_allclose(part, whole[[4, 1]], rtol=1e-6, atol=1e-7)
    monkeypatch.setattr(dpsgd, "_POISSON_CHUNK", 64)
    single = np.concatenate([train_population(models=[i], **kw).theta for i in range(6)])
    np.testing.assert_allclose(whole, single, rtol=1e-6, atol=1e-7)
    assert not np.allclose(whole[0], whole[1])


@pytest.mark.parametrize("backend", ["mlp", "hooks"])
def test_regulariser_is_applied_unclipped_and_unnormalised(backend):
    """One step from the same θ0 with the same batches and noise, with and without r(θ) = α‖θ‖²/2 with α‖θ0‖ ≫ C:
    the difference is exactly −η α θ0 (a clipped or normalised regulariser would differ by orders of magnitude)."""
    X, y = housing_like(50, 2)
    X, y = torch.as_tensor(X), torch.as_tensor(y)
    config = DPSGDConfig(steps=1, batch_size=10, lr=0.1, clip_norm=1.0, noise_multiplier=1.0, sampling=Poisson(0.2))
    engine = population_engine(model_spec("fcnn"), "cpu", backend=backend)
    theta0 = flat_parameters(build_model("fcnn")) * 10
    alpha = 5.0
    assert alpha * float(theta0.norm()) > 100 * config.clip_norm
    kw = dict(engine=engine, theta0=theta0, X=X, y=y, batches=None, config=config, noise_key=1, sampling_key=2,
              models=range(3), keep_final=True)
    plain = train_population(**kw).theta
    reg = train_population(regulariser=lambda th: alpha * th, **kw).theta
    expected = -config.lr * alpha * theta0.numpy()
    np.testing.assert_allclose(reg - plain, np.broadcast_to(expected, plain.shape), rtol=1e-5, atol=1e-5)


def test_poisson_config_and_input_validation():
    with pytest.raises(ValueError, match="rate"):
        Poisson(0.0)
    with pytest.raises(ValueError, match="rate"):
        Poisson(1.5)
    with pytest.raises(ValueError, match="sampling"):
        DPSGDConfig(steps=1, batch_size=1, lr=1, clip_norm=1, noise_multiplier=0, sampling=0.1)
    X, y = housing_like(20, 0)
    X, y = torch.as_tensor(X), torch.as_tensor(y)
    engine = population_engine(model_spec("fcnn"), "cpu")
    theta0 = flat_parameters(build_model("fcnn"))
    cfg = DPSGDConfig(steps=1, batch_size=4, lr=1, clip_norm=1, noise_multiplier=0, sampling=Poisson(0.2))
    kw = dict(engine=engine, theta0=theta0, X=X, y=y, batches=None, noise_key=0, models=range(2))
    with pytest.raises(ValueError, match="sampling_key"):
        train_population(config=cfg, **kw)
    fixed = DPSGDConfig(steps=1, batch_size=4, lr=1, clip_norm=1, noise_multiplier=0)
    with pytest.raises(ValueError, match="Poisson"):
        train_population(config=fixed, sampling_key=1, **kw)
    with pytest.raises(ValueError, match="batches must be None"):
        train_population(config=cfg, sampling_key=1, **{**kw, "batches": np.zeros((1, 4), dtype=np.int64)})
    with pytest.warns(UserWarning, match="expected batch size"):
        train_population(config=DPSGDConfig(**{**cfg.__dict__, "batch_size": 9}), sampling_key=1, **kw)
