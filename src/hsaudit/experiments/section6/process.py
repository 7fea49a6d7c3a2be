"""The one-dimensional process of Cebere et al., Section 6 (adversary A_S^{h*}), and its Monte Carlo.

The adversary inserts the crafted gradient ∇* = C at step 1 only and crafts a loss landscape whose batch
gradient sum is g(θ) = ±BC depending on the side of a switch point h (Eq. 3):

    θ_1 = Z_1 (not inserted, b = 0)   or   θ̄_1 = C + Z_1 (inserted, b = 1),   Z ~ N(0, σ²C²),
    θ_{t+1} = θ_t − (1/B)(g(θ_t) + Z_{t+1}).

**Sign convention** (docs/section6.md, "Sign decision"). Read literally, ``g = +BC`` above h and ``−BC`` below
makes the process mean-reverting around h (it forgets its start within ~10 steps), which contradicts the
paper's claims and its own "maximally biases subsequent steps" intent. The default rule is therefore

* ``divergent``: θ_{t+1} = θ_t + C·sign(θ_t − h) − Z_{t+1}/B   (pushes θ away from h),

and the literal reading is available as

* ``literal``:   θ_{t+1} = θ_t − C·sign(θ_t − h) − Z_{t+1}/B   (pulls θ back to h).

"sign" follows the paper's threshold function ϕ(X) = 1 iff X > h: a point exactly at h moves as if below.
The default switch point is h* = C/2, the optimal one-step threshold between N(0, σ²C²) and N(C, σ²C²).

The score of a run at step t is θ_t itself (higher ⇒ inserted, since the inserted run starts C higher and
both rules are monotone in θ).

This module holds :class:`Process`, :func:`loss_landscape` (the per-sample loss of Fig. 10), the vectorised
float32 Monte Carlo of one world (:func:`iter_scores`, :func:`simulate_scores`) and its noise streams
(:func:`world_rng`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from hsaudit.util.normals import Normals
from hsaudit.util.seeding import derive_seed

RULES = ("divergent", "literal")

# Runs processed per inner chunk of the Monte Carlo (256 KiB of float32: stays in L2 cache across the few
# elementwise passes of a step). A fixed constant: changing it does not change results (the noise of a step
# is drawn chunk by chunk from the same stream, in order).
_CHUNK = 1 << 16


@dataclass(frozen=True)
class Process:
    """Parameters of the Section 6 process (Cebere et al. Eq. 3).

    Args:
        sigma: noise multiplier σ (> 0).
        batch_size: batch size B (≥ 1); the genuine gradient sum is ±BC, the noise N(0, σ²C²).
        steps: number of steps T (≥ 1); step 1 is the insertion step.
        clip_norm: clipping norm C (> 0); the crafted gradient is ∇* = C.
        rule: ``"divergent"`` (default, pushes away from h) or ``"literal"`` (the paper's text read literally,
            mean-reverting); see the module docstring.
        switch_point: the switch point h as a fraction of C (h = switch_point·C); default ½ (h* = C/2).
            ``inf``/``-inf`` give a constant g (Example 1 of the paper).
    """

    sigma: float
    batch_size: int
    steps: int
    clip_norm: float = 1.0
    rule: str = "divergent"
    switch_point: float = 0.5

    def __post_init__(self) -> None:
        if not (np.isfinite(self.sigma) and self.sigma > 0):
            raise ValueError(f"sigma must be a finite number > 0, got {self.sigma}")
        if int(self.batch_size) != self.batch_size or self.batch_size < 1:
            raise ValueError(f"batch_size must be an integer >= 1, got {self.batch_size}")
        if int(self.steps) != self.steps or self.steps < 1:
            raise ValueError(f"steps must be an integer >= 1, got {self.steps}")
        if not (np.isfinite(self.clip_norm) and self.clip_norm > 0):
            raise ValueError(f"clip_norm must be a finite number > 0, got {self.clip_norm}")
        if self.rule not in RULES:
            raise ValueError(f"rule must be one of {', '.join(RULES)}, got {self.rule!r}")
        if np.isnan(self.switch_point):
            raise ValueError(f"switch_point must be a number (fraction of C), got {self.switch_point}")

    @property
    def h(self) -> float:
        """The switch point in θ units, h = switch_point·C."""
        return float(self.switch_point) * float(self.clip_norm)

    @property
    def drift_sign(self) -> float:
        """+1 for the divergent rule (θ moves away from h), −1 for the literal one."""
        return 1.0 if self.rule == "divergent" else -1.0


def loss_landscape(theta: npt.ArrayLike, process: Process) -> np.ndarray:
    """The per-sample loss ℓ(θ) whose gradient descent gives the update of ``process`` (Fig. 10).

    Each of the B genuine samples contributes a clipped gradient ±C, so with learning rate 1 and the 1/B
    normalisation of DP-SGD the update is θ ← θ − ℓ'(θ) − Z/B. The divergent rule needs ℓ'(θ) = −C·sign(θ − h),
    i.e. ℓ(θ) = −C·|θ − h| (a ridge at h: descent moves away from it); the literal rule ℓ(θ) = +C·|θ − h| (a
    valley). The constant is fixed so that ℓ(h) = 0.

    Args:
        theta: points at which to evaluate the loss.
        process: gives C, h and the rule (σ and B do not enter).

    Returns:
        ℓ(θ), same shape as ``theta``.
    """
    theta = np.asarray(theta, dtype=float)
    return -process.drift_sign * process.clip_norm * np.abs(theta - process.h)


def iter_scores(process: Process, *, runs: int, inserted: bool, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """Simulate ``runs`` independent runs of one world and yield θ_t (float32, shape ``(runs,)``) for t = 1..T.

    Memory is O(runs): one float32 state vector plus chunk-sized temporaries. The yielded array is the internal
    state and is overwritten by the next step: copy it if you keep it.

    Args:
        process: the process parameters.
        runs: number of runs R (≥ 1).
        inserted: True for the world with the crafted gradient (θ̄_1 = C + Z_1).
        rng: the noise source; draws are float32 standard normals (:class:`hsaudit.util.normals.Normals`,
            Box–Muller: 2.4× faster here than ``Generator.standard_normal``), chunk by chunk.

    Yields:
        θ_t for t = 1, ..., T (the score of each run at that step: higher ⇒ inserted).
    """
    runs = check_runs(runs)
    c = np.float32(process.clip_norm)
    h = np.float32(process.h) if np.isfinite(process.h) else process.h
    first_scale = np.float32(process.sigma * process.clip_norm)
    noise_scale = np.float32(-process.sigma * process.clip_norm / process.batch_size)
    push = np.float32(process.drift_sign * process.clip_norm)
    normals = Normals(rng)
    theta = np.empty(runs, dtype=np.float32)
    for lo in range(0, runs, _CHUNK):
        part = theta[lo : lo + _CHUNK]
        normals.fill(part)
        part *= first_scale
        if inserted:
            part += c
    yield theta
    zbuf = np.empty(min(runs, _CHUNK), dtype=np.float32)
    dbuf = np.empty_like(zbuf)
    mask = np.empty(zbuf.shape, dtype=bool)
    for _ in range(process.steps - 1):
        for lo in range(0, runs, _CHUNK):
            part = theta[lo : lo + _CHUNK]
            n = part.shape[0]
            z, d, m = zbuf[:n], dbuf[:n], mask[:n]
            # drift ±C·sign(θ − h) with ϕ(θ) = 1 iff θ > h, from the state before the noise is added
            np.greater(part, h, out=m)
            np.multiply(m, np.float32(2.0) * push, out=d)
            d -= push
            normals.fill(z)
            z *= noise_scale
            part += d
            part += z
        yield theta


def simulate_scores(process: Process, *, runs: int, inserted: bool, rng: np.random.Generator) -> np.ndarray:
    """All per-step scores of one world, shape ``(T, runs)`` float32 (see :func:`iter_scores`)."""
    out = np.empty((process.steps, check_runs(runs)), dtype=np.float32)
    for t, theta in enumerate(iter_scores(process, runs=runs, inserted=inserted, rng=rng)):
        out[t] = theta
    return out


def check_runs(runs: int) -> int:
    """Validate a number of runs (or trials) R: an integer >= 1, returned as ``int``.

    Raises:
        ValueError: naming ``runs`` otherwise.
    """
    if int(runs) != runs or runs < 1:
        raise ValueError(f"runs must be an integer >= 1, got {runs}")
    return int(runs)


def world_rng(seed: int, *key: object) -> np.random.Generator:
    """The noise stream of one world of one repetition: SFC64 seeded with ``derive_seed(seed, *key)``.

    SFC64 was the fastest of numpy's bit generators for float32 normals here; the stream is fixed by the key alone, so results
    do not depend on job order or on how many repetitions run.
    """
    return np.random.Generator(np.random.SFC64(derive_seed(seed, *key)))
