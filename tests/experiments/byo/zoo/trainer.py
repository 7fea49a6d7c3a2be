"""The bug zoo's training step: small DP-SGD trainings on CPU, many models at once, each bug one switch.

A :class:`Step` is the configuration of one zoo entry: the model (logistic regression, a small MLP, a logistic
regression whose weight is shared by two input blocks, or one behind a standardisation layer with running
statistics), the DP-SGD hyper-parameters it really runs, and the bug switches. :func:`training` turns it and a claim
into what a user's ``make()`` returns, with ``train_batch`` (every model of one call trained together: parameters
``[m, p]``, per-example gradients by ``torch.func``) and ``train`` (one model: the same code at m = 1).

Correct DP-SGD, as hsaudit's engine runs it (:func:`hsaudit.engine.dpsgd.run_poisson`): every example joins the
batch with probability q (each model its own draws), per-example gradients are clipped to C with Opacus' factor
min(1, C / (‖g‖ + 1e-6)), summed, N(0, σ²C²) noise is added, and the sum is divided by the nominal batch size B = qN
(N the data's size without a canary, the same in both worlds).

Every random number of model ``seed`` is a pure function of (seed, step, index): the engine's counter-based streams
(:func:`hsaudit.engine.noise.counter_normals`, :func:`~hsaudit.engine.noise.counter_bernoulli`) with the seed as the
model index; θ0 is fixed (:data:`THETA0_SEED`). So ``train_batch(data, seeds)[i]`` equals ``train(data, seeds[i])``,
and the two worlds' models of one seed draw the same batches of the rows they share.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch
from torch.func import grad, vmap

from hsaudit.engine.noise import counter_bernoulli, counter_normals

THETA0_SEED = 20240521
NOISE_KEY, SAMPLING_KEY = 101, 202  # the zoo's stream keys; a model's seed is its index in them


@dataclass(frozen=True)
class Step:
    """One zoo training: what it runs (model, data, DP-SGD) and its bug switches (defaults: correct DP-SGD).

    Bug switches:
        clipping: ``"per_example"`` (correct), ``"none"`` (clipping skipped), ``"batch"`` (the batch's mean gradient
            clipped instead of each example's, Tramèr et al. 2022), ``"first_use"`` (a weight shared by two input
            blocks whose per-example norm is taken from its first use only).
        noise_factor: the noise's std is ``noise_factor · σC``: 1/B is noise added to the mean, 1/C noise that
            ignores the clipping norm, > 1 more noise than claimed (safe).
        accumulation: micro-batches of rate q accumulated per noisy step (the sampling rate forgets them).
        noise_key: ``"seed"`` (correct), ``"constant"`` (the noise drawn from one fixed key in every run) or
            ``"step"`` (each run's first noise draw reused at every step).
        running_stats: ``model="bn"``'s standardisation statistics updated from each private batch, unclipped and
            without noise (False: fixed at mean 0, variance 1).
        normalise: ``"expected"`` (divide by B = qN) or ``"actual"`` (by the batch's real size).
        sampling: ``"poisson"`` or ``"shuffle"`` (each epoch a permutation cut into batches of qN).

    Not a bug: ``theta0`` is ``"fixed"`` (:data:`THETA0_SEED`, the zoo's own form) or ``"seed"`` (as people write
    code: each model's θ0 drawn from its seed, unless :func:`train_batch` gets an ``init_seed``).
    """

    model: str = "logreg"
    n: int = 200
    features: int = 10
    classes: int = 2
    hidden: int = 16
    steps: int = 20
    sigma: float = 1.0
    q: float = 0.2
    clip: float = 1.0
    lr: float = 1.0
    clipping: str = "per_example"
    noise_factor: float = 1.0
    accumulation: int = 1
    noise_key: str = "seed"
    running_stats: bool = False
    momentum: float = 0.1
    normalise: str = "expected"
    sampling: str = "poisson"
    theta0: str = "fixed"

    @property
    def batch(self) -> float:
        return self.q * self.n

    @property
    def parameters(self) -> int:
        d, k, h = self.features, self.classes, self.hidden
        if self.model == "mlp":
            return d * h + h + h * k + k
        if self.model == "tied":
            return (d // 2) * k + k
        if self.model == "bn":
            return d * k + k + 2 * d  # W, b, then the running mean and variance (buffers, not trained)
        return d * k + k


def dataset(step: Step, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Two-class Gaussian blobs (means ±1.5/√d along the all-ones direction), N × d; for the tied model the second
    half of the features (the second use of the shared weight) varies ten times less."""
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, step.classes, (step.n,), generator=g)
    x = torch.randn(step.n, step.features, generator=g)
    x += 1.5 * (2.0 * y[:, None].float() - 1.0) / math.sqrt(step.features)
    if step.model == "tied":
        x[:, step.features // 2 :] *= 0.1
    return x, y


# ---- the models, as functions of flat parameters -------------------------------------------------------------------
def _split(step: Step, theta: torch.Tensor) -> list[torch.Tensor]:
    d, k, h = step.features, step.classes, step.hidden
    if step.model == "mlp":
        sizes = [(h, d), (h,), (k, h), (k,)]
    elif step.model == "tied":
        sizes = [(k, d // 2), (k,)]
    elif step.model == "bn":
        sizes = [(k, d), (k,), (d,), (d,)]
    else:
        sizes = [(k, d), (k,)]
    out, at = [], 0
    for shape in sizes:
        size = math.prod(shape)
        out.append(theta[..., at : at + size].reshape(*theta.shape[:-1], *shape))
        at += size
    return out


def logits(step: Step, theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Outputs of one model ``theta [p]`` on inputs ``x [n, d]``: ``[n, k]``."""
    parts = _split(step, theta)
    if step.model == "mlp":
        w1, b1, w2, b2 = parts
        return torch.tanh(x @ w1.T + b1) @ w2.T + b2
    if step.model == "tied":
        w, b = parts
        half = step.features // 2
        return x[:, :half] @ w.T + x[:, half:] @ w.T + b
    if step.model == "bn":
        w, b, mean, var = parts
        return ((x - mean) / torch.sqrt(var + 1e-5)) @ w.T + b
    w, b = parts
    return x @ w.T + b


def loss(step: Step, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Per-example cross-entropy ``[n]`` of one model."""
    return torch.nn.functional.cross_entropy(logits(step, theta, x), y, reduction="none")


def _example_loss(step: Step, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return loss(step, theta, x[None], y[None])[0]


def theta0(step: Step, seed: int = THETA0_SEED) -> torch.Tensor:
    """The initialisation drawn from ``seed`` (default: the zoo's fixed one): weights and biases uniform in
    ±1/√fan_in (PyTorch's Linear), running mean 0 and variance 1."""
    g = torch.Generator().manual_seed(int(seed))
    theta = torch.empty(step.parameters)
    at, fan_in = 0, 1
    for i, part in enumerate(_split(step, torch.zeros(step.parameters))):
        size = part.numel()
        if step.model == "bn" and i >= 2:
            theta[at : at + size] = 0.0 if i == 2 else 1.0
        else:
            fan_in = part.shape[-1] if part.dim() == 2 else fan_in  # a bias takes its weight's fan-in
            theta[at : at + size] = (torch.rand(size, generator=g) * 2 - 1) / math.sqrt(fan_in)
        at += size
    return theta


def _trainable(step: Step) -> int:
    return step.parameters - (2 * step.features if step.model == "bn" else 0)


# ---- per-example gradients, derived by hand -----------------------------------------------------------------------
# A model's per-example gradient is a list of blocks in flat-parameter order: (left [m, n, a], right [m|1, n, b]) for a
# weight [a, b] (its gradient is left ⊗ right) and (vector [m, n, a], None) for a bias. Norms and clipped sums are
# then contractions of these factors: nothing of size [m, n, p] is built (torch.func gives the same gradients,
# tests/experiments/byo/test_zoo.py; it is ten times slower here).
def _parts(step: Step, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> list:
    parts = _split(step, theta)
    onehot = torch.nn.functional.one_hot(y, step.classes).to(theta.dtype)
    if step.model == "mlp":
        w1, b1, w2, b2 = parts
        h = torch.tanh(torch.einsum("nd,mhd->mnh", x, w1) + b1[:, None, :])
        r = _softmax(torch.einsum("mnh,mkh->mnk", h, w2) + b2[:, None, :]) - onehot
        delta = torch.einsum("mnk,mkh->mnh", r, w2) * (1.0 - h**2)
        return [(delta, x[None]), (delta, None), (r, h), (r, None)]
    w, b = parts[0], parts[1]
    if step.model == "tied":
        half = step.features // 2
        u = (x[:, :half] + x[:, half:])[None]
    elif step.model == "bn":
        mean, var = parts[2], parts[3]
        u = (x[None] - mean[:, None, :]) / torch.sqrt(var[:, None, :] + 1e-5)
    else:
        u = x[None]
    r = _softmax(torch.einsum("mnd,mkd->mnk", u.expand(theta.shape[0], -1, -1), w) + b[:, None, :]) - onehot
    return [(r, u), (r, None)]


def _softmax(z: torch.Tensor) -> torch.Tensor:
    e = (z - z.max(-1, keepdim=True).values).exp()  # (torch.softmax is slow over a last axis of 2)
    return e / e.sum(-1, keepdim=True)


def _norms2(parts: list) -> torch.Tensor:
    """Squared per-example gradient norms ``[m, n]``."""
    total = 0.0
    for left, right in parts:
        sq = left.pow(2).sum(-1)
        total = total + (sq if right is None else sq * right.pow(2).sum(-1))
    return total


def _weighted_sum(parts: list, weights: torch.Tensor) -> torch.Tensor:
    """Σ_n weights[m, n] · g_n, flat ``[m, p_trainable]``."""
    blocks = []
    for left, right in parts:
        if right is None:
            blocks.append(torch.einsum("mn,mna->ma", weights, left))
        else:
            blocks.append(torch.einsum("mn,mna,mnb->mab", weights, left, right.expand(left.shape[0], -1, -1)).flatten(1))
    return torch.cat(blocks, dim=1)


def _row(parts: list, j: int) -> torch.Tensor:
    """The full gradient of example j, ``[m, p_trainable]``."""
    blocks = []
    for left, right in parts:
        l = left[:, j]
        blocks.append(l if right is None else (l[:, :, None] * right.expand(l.shape[0], -1, -1)[:, j, None, :]).flatten(1))
    return torch.cat(blocks, dim=1)


def per_example(step: Step, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Per-example gradients ``[m, n, p]`` (zero on the running statistics), built from the hand-derived factors."""
    parts = _parts(step, theta, x, y)
    g = torch.stack([_row(parts, j) for j in range(x.shape[0])], dim=1)
    return torch.nn.functional.pad(g, (0, step.parameters - g.shape[-1]))


def per_example_autograd(step: Step, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The same per-example gradients by ``torch.func`` (the reference)."""
    g = vmap(vmap(grad(lambda t, xi, yi: _example_loss(step, t, xi, yi)), (None, 0, 0)), (0, None, None))
    out = g(theta, x, y)
    out[..., _trainable(step) :] = 0.0
    return out


def _first_use_norms2(step: Step, parts: list, x: torch.Tensor) -> torch.Tensor:
    """The tied model's squared per-example norms as the bug takes them: of the shared weight's first use (and the
    bias) only."""
    r = parts[1][0]
    first = x[:, : step.features // 2].pow(2).sum(-1)
    return r.pow(2).sum(-1) * (first[None] + 1.0)


def _batches(step: Step, seeds: torch.Tensor, n: int, draw: int, t: int, perms: list) -> torch.Tensor:
    """Membership ``[m, n]`` of each model's batch: Poisson draws ``draw`` (1-based), or slot ``t`` of an epoch."""
    if step.sampling == "shuffle":
        size = max(1, round(step.batch))
        per_epoch = max(1, step.n // size)
        slot = (t - 1) % per_epoch
        rows = []
        for i, seed in enumerate(seeds.tolist()):
            if slot == 0:
                perms[i] = torch.randperm(n, generator=torch.Generator().manual_seed(seed * 7919 + t))
            member = torch.zeros(n, dtype=torch.bool)
            member[perms[i][slot * size : (slot + 1) * size]] = True
            rows.append(member)
        return torch.stack(rows).float()
    return counter_bernoulli(SAMPLING_KEY, seeds, draw, n, step.q).float()


def initial(step: Step, seeds: list[int], init_seed: int | None = None) -> torch.Tensor:
    """θ0 of each model ``[m, p]``: from ``init_seed`` if given, else the fixed one, or (``theta0="seed"``) each
    model's own drawn from its seed."""
    if init_seed is None and step.theta0 == "seed":
        return torch.stack([theta0(step, 1_000_003 * int(s) + 7) for s in seeds])
    return theta0(step, THETA0_SEED if init_seed is None else init_seed).repeat(len(seeds), 1)


def train_batch(step: Step, x: torch.Tensor, y: torch.Tensor, w: torch.Tensor | None,
                direction: torch.Tensor | None, seeds: list[int], record=None, *,
                init_seed: int | None = None) -> torch.Tensor:  # fmt: skip
    """Train ``len(seeds)`` models on ``(x, y)`` (``w``: the per-example weights of a gradient canary's term
    ``w · ⟨direction, θ⟩``) from θ0 :func:`initial`; returns ``[m, p]``. ``record(step, theta [m, p])`` is called
    after every step."""
    m, n = len(seeds), x.shape[0]
    index = torch.as_tensor(seeds, dtype=torch.int64)
    noise_index = torch.zeros_like(index) if step.noise_key == "constant" else index
    theta = initial(step, seeds, init_seed)
    trainable = _trainable(step)
    carriers = [] if w is None else [int(c) for c in torch.nonzero(w).flatten()]  # the canary's rows (k for a control)
    extras = {c: float(w[c]) * direction[:trainable] for c in carriers}
    perms: list = [None] * m
    for t in range(1, step.steps + 1):
        total = torch.zeros(m, trainable)
        for j in range(step.accumulation):
            member = _batches(step, index, n, (t - 1) * step.accumulation + j + 1, t, perms)  # [m, n]
            if step.running_stats:  # the batch's raw statistics, no clipping, no noise
                d = step.features
                size = member.sum(1, keepdim=True).clamp(min=1.0)
                bm = member @ x / size
                bv = member @ (x**2) / size - bm**2
                theta[:, trainable : trainable + d] *= 1 - step.momentum
                theta[:, trainable : trainable + d] += step.momentum * bm
                theta[:, trainable + d :] *= 1 - step.momentum
                theta[:, trainable + d :] += step.momentum * bv
            parts = _parts(step, theta, x, y)
            sq = _first_use_norms2(step, parts, x) if step.clipping == "first_use" else _norms2(parts)
            weights = member.clone()
            rows = {}
            for c in carriers:  # the gradient canary's rows: their data gradient plus the term, taken whole
                rows[c] = _row(parts, c) + extras[c]
                weights[:, c] = 0.0
            if step.clipping == "none":
                g = _weighted_sum(parts, weights)
                for c, row in rows.items():
                    g += member[:, c, None] * row
            elif step.clipping == "batch":  # the batch's mean gradient clipped, as if it were one example's
                g = _weighted_sum(parts, weights)
                for c, row in rows.items():
                    g += member[:, c, None] * row
                mean_g = g / step.batch
                g = mean_g * (step.clip / (mean_g.norm(dim=1, keepdim=True) + 1e-6)).clamp(max=1.0) * step.batch
            else:
                factor = (step.clip / (sq.sqrt() + 1e-6)).clamp(max=1.0)
                g = _weighted_sum(parts, weights * factor)
                for c, row in rows.items():
                    row_factor = (step.clip / (row.norm(dim=1, keepdim=True) + 1e-6)).clamp(max=1.0)
                    g += member[:, c, None] * row_factor * row
            total += g
        noise = counter_normals(NOISE_KEY, noise_index, 1 if step.noise_key == "step" else t, trainable)
        total += step.noise_factor * step.sigma * step.clip * noise
        denominator = step.batch * step.accumulation
        if step.normalise == "actual":
            denominator = member.sum(1, keepdim=True).clamp(min=1.0)
        theta[:, :trainable] -= step.lr * total / denominator
        if record is not None:
            record(t, theta.clone())
    return theta


def with_bug(step: Step, **switches) -> Step:
    """``step`` with some switches changed."""
    return replace(step, **switches)
