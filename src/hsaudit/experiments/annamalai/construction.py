"""Annamalai, "It's Our Loss: No Privacy Amplification for Hidden State DP-SGD With Non-Convex Loss".

A scalar DP-SGD run (θ0 = 0, η = C = 1) on D = 10¹⁰ zeros or D′ = D ∪ {1} with an adversarial gradient
(Algorithm 1) that, at every step, decodes the latest noisy value v_k from θ_k, computes its per-step
log-likelihood ratio λ(v_k) = log(q·exp((2v_k − 1)/(2σ²)) + 1 − q) (Section 4.1), and re-encodes it, rounded
to two decimals, into the digits of θ above the noise (multiples of P = 10^⌈log10 3σ⌉). The final iterate
therefore carries o = Σ_k round(λ(v_k), 2): the all-iterates likelihood-ratio statistic.

* :func:`adversarial_gradient`, :func:`simulate`, :func:`statistic` — the construction and a simulation
  vectorised over runs (batch counts n0 ~ Binomial(|D|, q), canary inclusion ~ Bernoulli(q); the records are
  never built).
* :func:`ideal_statistics` — the all-iterates likelihood-ratio statistic the construction aims to carry, drawn
  directly (no encoding, rounding or wraps).
* :func:`pld_table` — the calibration table of the PLD trade-off curves of T composed Poisson-subsampled
  Gaussians (all iterates released), tabulated over σ once; its array form and interpolation
  (:class:`hsaudit.accounting.PldTable`, :func:`hsaudit.accounting.sigma_for_epsilon`,
  :func:`hsaudit.accounting.pld_tradeoff`) are accounting-side.
* :func:`repeated_statistics` (fig2's audits) and :func:`setting_statistics` (fig1) — the seeded statistics
  (:class:`Statistics`) that :mod:`hsaudit.experiments.annamalai.audit` turns into tables.

This module is the simulation and the accounting of its mechanism, apart from what audits it: the audits and the
figures' tables are :mod:`hsaudit.experiments.annamalai.audit`, which never imports this module.

Update sign: the paper prints the descent update θ_{k+1} = θ_k − (Σ clip(g̃) + Z), with which the encoding
does not survive (the decoded values mix earlier steps and the statistic loses the canary's signal); the
construction works with θ_{k+1} = θ_k + Σ clip(g̃) + Z (equivalently descent on −g̃). ``update="ascent"``
(default) is the working form, ``update="descent"`` the literal one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from hsaudit.accounting import last_iterate as H
from hsaudit.accounting.gaussian import default_epsilon_grid
from hsaudit.util.seeding import derive_seed

Update = Literal["ascent", "descent"]
BaseRule = Literal["three_sigma", "half_width"]
BASE_RULES = ("three_sigma", "half_width")


def encoding_base(noise_multiplier: float, *, rule: BaseRule = "three_sigma", sigmas: float = 6.0) -> float:
    """The encoding base P (a power of ten): the latest noisy value must stay inside ±P/2 to be decoded.

    Args:
        noise_multiplier: σ.
        rule: ``"three_sigma"`` — the paper's P = 10^⌈log10(3σ)⌉, "the closest power of 10 above 3σ" (Section
            4.2). It bounds the *width* P by 3σ, so the decoding window ±P/2 can be as narrow as ±1.5σ
            (σ = 3.3: P = 10, P/2 = 1.5σ); over T steps most runs then carry a wrapped value.
            ``"half_width"`` [inferred] — the smallest power of ten with P/2 ≥ ``sigmas``·σ + 1 (the + 1 is
            the canary's unit step), so that a value leaves the window with probability ≤ 2Φ̄(``sigmas``) per step.
        sigmas: the half-width in units of σ for ``"half_width"`` (6: ≈ 2e−9 per step).

    Returns:
        P.
    """
    if not noise_multiplier > 0:
        raise ValueError(f"noise_multiplier must be positive, got {noise_multiplier}")
    if rule == "three_sigma":
        return 10.0 ** math.ceil(math.log10(3.0 * noise_multiplier) - 1e-12)
    if rule == "half_width":
        if not sigmas > 0:
            raise ValueError(f"sigmas must be positive, got {sigmas}")
        return 10.0 ** math.ceil(math.log10(2.0 * (sigmas * noise_multiplier + 1.0)) - 1e-12)
    raise ValueError(f"rule must be one of {BASE_RULES}, got {rule!r}")


def step_llr(v: npt.ArrayLike, *, noise_multiplier: float, sampling_rate: float) -> np.ndarray:
    """λ(v) = log(q·N(v; 1, σ²)/N(v; 0, σ²) + 1 − q) = logaddexp(log q + (2v − 1)/(2σ²), log(1 − q))."""
    v = np.asarray(v, dtype=float)
    if sampling_rate >= 1:
        return (2 * v - 1) / (2 * noise_multiplier**2)
    if sampling_rate <= 0:
        return np.zeros_like(v)
    return np.logaddexp(math.log(sampling_rate) + (2 * v - 1) / (2 * noise_multiplier**2), math.log1p(-sampling_rate))


@dataclass(frozen=True)
class Construction:
    """Parameters of the adversarial gradient (all known to the loss function, none sensitive).

    Attributes:
        noise_multiplier: σ.
        sampling_rate: q.
        dataset_size: |D| (number of zeros; the paper's "10B" read as 10¹⁰ [inferred]).
        digits: λ is encoded rounded to 10^−digits (paper: 2 decimals ⇒ factor 100).
        base_rule: how P is chosen (:func:`encoding_base`): ``"three_sigma"`` (paper) or ``"half_width"``.
        base_sigmas: half-width of the decoding window in σ for ``base_rule="half_width"``.
    """

    noise_multiplier: float
    sampling_rate: float
    dataset_size: float = 1e10
    digits: int = 2
    base_rule: BaseRule = "three_sigma"
    base_sigmas: float = 6.0

    def __post_init__(self) -> None:
        if not self.noise_multiplier > 0:
            raise ValueError(f"noise_multiplier must be positive, got {self.noise_multiplier}")
        if not 0 < self.sampling_rate <= 1:
            raise ValueError(f"sampling_rate must be in (0, 1], got {self.sampling_rate}")
        if not self.dataset_size >= 1:
            raise ValueError(f"dataset_size must be >= 1, got {self.dataset_size}")
        encoding_base(self.noise_multiplier, rule=self.base_rule, sigmas=self.base_sigmas)  # validates the rule

    @property
    def base(self) -> float:
        """P (:func:`encoding_base`)."""
        return encoding_base(self.noise_multiplier, rule=self.base_rule, sigmas=self.base_sigmas)

    @property
    def expected_batch(self) -> float:
        """N = q·|D| (the same value for both datasets)."""
        return self.sampling_rate * self.dataset_size

    @property
    def scale(self) -> float:
        """10^digits: o = (θ + N g̃(0, θ)) / (scale·P)."""
        return 10.0**self.digits

    def decode(self, theta: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """(L̂, v): L̂ = P·round(θ/P) (the encoded partial sum), v = θ − L̂ (the latest noisy value)."""
        theta = np.asarray(theta, dtype=float)
        high = self.base * np.round(theta / self.base)
        return high, theta - high

    def encode(self, v: npt.ArrayLike) -> np.ndarray:
        """E(v) = P·round(10^digits · λ(v))."""
        lam = step_llr(v, noise_multiplier=self.noise_multiplier, sampling_rate=self.sampling_rate)
        return self.base * np.round(self.scale * lam)


def adversarial_gradient(x: npt.ArrayLike, theta: npt.ArrayLike, construction: Construction) -> np.ndarray:
    """g̃(x, θ) of Algorithm 1: x at θ = 0; otherwise (E(v) − v)/N + x with (L̂, v) = decode(θ)."""
    x = np.asarray(x, dtype=float)
    theta = np.asarray(theta, dtype=float)
    _, v = construction.decode(theta)
    g = (construction.encode(v) - v) / construction.expected_batch + x
    return np.where(theta == 0, x + 0.0 * theta, g)


def statistic(theta: npt.ArrayLike, construction: Construction) -> np.ndarray:
    """o = (θ_T + N·g̃(0, θ_T)) / (10^digits·P) ≈ Σ_k round(λ(v_k), digits) (Section 4.3)."""
    theta = np.asarray(theta, dtype=float)
    n = construction.expected_batch
    return (theta + n * adversarial_gradient(0.0, theta, construction)) / (construction.scale * construction.base)


def simulate(
    rng: np.random.Generator,
    *,
    steps: int,
    runs: int,
    canary: bool,
    construction: Construction,
    update: Update = "ascent",
    return_trace: bool = False,
    return_wraps: bool = False,
) -> np.ndarray | tuple[np.ndarray, ...]:
    """Final iterates θ_T of ``runs`` independent DP-SGD runs with the adversarial gradient (vectorised).

    Per step: n0 ~ Binomial(|D|, q) zeros and (on D′) the canary with probability q are sampled; the summed
    clipped gradients n0·clip(g̃(0, θ)) + b·clip(g̃(1, θ)) plus Z ~ N(0, σ²) are added (``"ascent"``) or
    subtracted (``"descent"``, the literal printed update).

    Args:
        rng: random generator.
        steps: T ≥ 1.
        runs: number of independent runs.
        canary: True for D′ = D ∪ {1}.
        construction: the adversarial gradient's parameters.
        update: ``"ascent"`` (working) or ``"descent"`` (literal).
        return_trace: also return the decoded values v_1..v_T (runs × T): v_k decoded from θ_k, the last one
            decoded from θ_T as the adversary does.
        return_wraps: also return, per run, the number of steps k at which the latest value left the decoding
            window (|θ_k − L_k| > P/2, L_k = the encoded partial sum the construction wrote), i.e. was decoded
            as a carry into the encoded digits (only meaningful for ``update="ascent"``).

    Returns:
        θ_T (runs,), then the trace and the wrap counts (runs,) when asked, in that order.
    """
    if isinstance(steps, bool) or int(steps) != steps or steps < 1:
        raise ValueError(f"steps must be an integer >= 1, got {steps}")
    if runs < 1:
        raise ValueError(f"runs must be >= 1, got {runs}")
    if update not in ("ascent", "descent"):
        raise ValueError(f"update must be 'ascent' or 'descent', got {update!r}")
    c = construction
    sign = 1.0 if update == "ascent" else -1.0
    theta = np.zeros(runs)
    trace = np.empty((runs, steps)) if return_trace else None
    wraps = np.zeros(runs, dtype=np.int64)
    written = np.zeros(runs)  # L_k: the multiple of P the construction meant θ_k to carry
    n_total = int(round(c.dataset_size))
    for k in range(steps):
        if k > 0:
            high, v = c.decode(theta)
            if return_trace:
                trace[:, k - 1] = v
            wraps += high != written
            written = high + c.encode(v)
        n0 = rng.binomial(n_total, c.sampling_rate, size=runs).astype(float)
        g0 = np.clip(adversarial_gradient(0.0, theta, c), -1.0, 1.0)
        total = n0 * g0
        if canary:
            b = rng.random(runs) < c.sampling_rate
            total = total + b * np.clip(adversarial_gradient(1.0, theta, c), -1.0, 1.0)
        total = total + rng.normal(0.0, c.noise_multiplier, size=runs)
        theta = theta + sign * total
    high, v = c.decode(theta)
    wraps += high != written
    extra = ((trace,) if return_trace else ()) + ((wraps,) if return_wraps else ())
    if return_trace:
        trace[:, steps - 1] = v
    return (theta, *extra) if extra else theta


def simulate_statistics(
    rng: np.random.Generator,
    *,
    steps: int,
    runs: int,
    construction: Construction,
    update: Update = "ascent",
    wraps: dict | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(O, O′): statistics of ``runs`` runs on D and ``runs`` runs on D′.

    When ``wraps`` is a dict, it receives ``"wrap_rate_out"`` / ``"wrap_rate_in"``: the fraction of runs on D / D′
    in which at least one step's value left the decoding window ±P/2 (see :func:`simulate`).
    """
    th0, w0 = simulate(
        rng, steps=steps, runs=runs, canary=False, construction=construction, update=update, return_wraps=True
    )
    th1, w1 = simulate(
        rng, steps=steps, runs=runs, canary=True, construction=construction, update=update, return_wraps=True
    )
    if wraps is not None:
        wraps["wrap_rate_out"] = float(np.mean(w0 > 0))
        wraps["wrap_rate_in"] = float(np.mean(w1 > 0))
    return statistic(th0, construction), statistic(th1, construction)


def ideal_statistics(
    rng: np.random.Generator, *, steps: int, runs: int, sampling_rate: float, noise_multiplier: float
) -> tuple[np.ndarray, np.ndarray]:
    """(O, O′) of the all-iterates likelihood-ratio test Σ_k λ(v_k), v_k ~ N(0, σ²) on D and Bern(q) + N(0, σ²) on D′.

    This is what the construction's statistic approximates (without the two-decimal rounding, the batch-size noise
    and wraps); auditing it isolates the audit's own finite-R behaviour from the construction's losses.
    """
    o = np.zeros(runs)
    o1 = np.zeros(runs)
    for _ in range(steps):
        v0 = rng.normal(0.0, noise_multiplier, runs)
        v1 = (rng.random(runs) < sampling_rate) + rng.normal(0.0, noise_multiplier, runs)
        o += step_llr(v0, noise_multiplier=noise_multiplier, sampling_rate=sampling_rate)
        o1 += step_llr(v1, noise_multiplier=noise_multiplier, sampling_rate=sampling_rate)
    return o, o1


# ------------------------------------------------------------------------------------------ PLD table


def pld_table(
    *,
    steps: int,
    sampling_rate: float,
    delta: float,
    epsilon_range: tuple[float, float] = (0.3, 25.0),
    n_sigmas: int = 60,
    epsilon_grid: npt.ArrayLike | None = None,
    value_discretization_interval: float = 1e-3,
) -> pd.DataFrame:
    """ε(σ) at δ and δ(ε′) on a grid, for σ log-spaced over the range mapping to ``epsilon_range``.

    This is the calibration table (computed once per (q, T) and cached by the workflow): σ for a target ε is
    then found by interpolation (:func:`hsaudit.accounting.gaussian.sigma_for_epsilon`) and the trade-off curve at any σ by interpolating
    log δ(ε′) between neighbouring rows (:func:`hsaudit.accounting.gaussian.pld_tradeoff`).

    Returns:
        Tidy frame with columns sigma, epsilon_at_delta, eps_prime, delta_prime.
    """
    if epsilon_grid is None:
        epsilon_grid = default_epsilon_grid()
    eg = np.asarray(epsilon_grid, dtype=float)
    f = lambda s: H.standard_epsilon(
        delta,
        steps=steps,
        sampling_rate=sampling_rate,
        noise_multiplier=s,  # noqa: E731
        value_discretization_interval=value_discretization_interval,
    )
    s_hi = H.calibrate(f, epsilon_range[0], lo=0.1, hi=50.0, rtol=1e-4)
    s_lo = H.calibrate(f, epsilon_range[1], lo=0.05, hi=s_hi, rtol=1e-4, start=s_hi / 4)
    rows = []
    for s in np.geomspace(s_lo, s_hi, n_sigmas):
        pld = H.standard_pld(
            steps=steps,
            sampling_rate=sampling_rate,
            noise_multiplier=float(s),
            value_discretization_interval=value_discretization_interval,
        )
        eps_at = float(pld.get_epsilon_for_delta(delta))
        d = H.pld_deltas(pld, eg)
        rows.append(pd.DataFrame({"sigma": float(s), "epsilon_at_delta": eps_at, "eps_prime": eg, "delta_prime": d}))
    out = pd.concat(rows, ignore_index=True)
    out["steps"] = steps
    out["sampling_rate"] = sampling_rate
    out["delta"] = delta
    return out


# ------------------------------------------------------------------------------------------ the audits' statistics


@dataclass(frozen=True)
class Statistics:
    """The simulated statistics of one audit (higher ⇒ D′) and what produced them.

    Attributes:
        out, inside: O of the runs on D and O′ of the runs on D′ (the same number of runs).
        setting: what was simulated, in the order an audit table lists it: ``name`` (fig1's settings only),
            ``sampling_rate``, ``steps``, ``noise_multiplier``, ``update``, ``base_rule``, ``encoding_base`` (P).
        wraps: ``wrap_rate_out`` / ``wrap_rate_in``, the fraction of runs on D / D′ in which some step's value left
            the decoding window ±P/2 (:func:`simulate_statistics`); empty where not measured.
        ideal: Σ_k λ(v_k) of freshly drawn raw per-step values on D and D′ (:func:`ideal_statistics`), the same
            number of runs, where asked.
    """

    out: np.ndarray
    inside: np.ndarray
    setting: Mapping[str, Any]
    wraps: Mapping[str, float] = field(default_factory=dict)
    ideal: tuple[np.ndarray, np.ndarray] | None = None


def _setting(construction: Construction, *, steps: int, update: Update) -> dict[str, Any]:
    return {"sampling_rate": construction.sampling_rate, "steps": steps,
            "noise_multiplier": construction.noise_multiplier, "update": update,
            "base_rule": construction.base_rule, "encoding_base": construction.base}  # fmt: skip


def repeated_statistics(
    construction: Construction,
    *,
    steps: int,
    runs: int,
    repetitions: int,
    seed: int,
    update: Update = "ascent",
    ideal_reference: bool = False,
    key: tuple = (),
) -> list[Statistics]:
    """The statistics of ``repetitions`` independent audits (``runs`` runs on D and on D′ each), with their wrap
    rates and, with ``ideal_reference``, the ideal statistics Σ_k λ(v_k) of the same number of runs.

    Repetition r draws from its own stream, seeded by (seed, ``key``, T, q, σ, r): it does not depend on the
    encoding-base rule, so both rules see the same batches and noise.
    """
    c = construction
    out = []
    for r in range(int(repetitions)):
        rng = np.random.default_rng(derive_seed(seed, "annamalai", *key, steps, c.sampling_rate, c.noise_multiplier, r))
        wraps: dict[str, float] = {}
        o, o1 = simulate_statistics(rng, steps=steps, runs=runs, construction=c, update=update, wraps=wraps)
        ideal = None
        if ideal_reference:
            ideal = ideal_statistics(rng, steps=steps, runs=runs, sampling_rate=c.sampling_rate,
                                     noise_multiplier=c.noise_multiplier)  # fmt: skip
        out.append(Statistics(o, o1, _setting(c, steps=steps, update=update), wraps, ideal))
    return out


def setting_statistics(
    settings: Sequence[Mapping[str, Any]],
    *,
    runs: int,
    seed: int,
    dataset_size: float = 1e10,
    update: Update = "ascent",
    base_rule: BaseRule = "three_sigma",
    base_sigmas: float = 6.0,
) -> list[Statistics]:
    """fig1: the statistics of one audit (``runs`` runs on D and on D′) per setting (``name``, σ, q, T), each from
    its own stream seeded by (seed, name, σ, q, T)."""
    out = []
    for st in settings:
        sig, q, t = float(st["noise_multiplier"]), float(st["sampling_rate"]), int(st["steps"])
        c = Construction(noise_multiplier=sig, sampling_rate=q, dataset_size=dataset_size, base_rule=base_rule,
                         base_sigmas=base_sigmas)  # fmt: skip
        rng = np.random.default_rng(derive_seed(seed, "annamalai-fig1", st["name"], sig, q, t))
        o, o1 = simulate_statistics(rng, steps=t, runs=runs, construction=c, update=update)
        out.append(Statistics(o, o1, {"name": st["name"], **_setting(c, steps=t, update=update)}))
    return out
