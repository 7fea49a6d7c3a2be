"""Annamalai, "It's Our Loss: No Privacy Amplification for Hidden State DP-SGD With Non-Convex Loss".

A scalar DP-SGD run (θ0 = 0, η = C = 1) on D = 10¹⁰ zeros or D′ = D ∪ {1} with an adversarial gradient
(Algorithm 1) that, at every step, decodes the latest noisy value v_k from θ_k, computes its per-step
log-likelihood ratio λ(v_k) = log(q·exp((2v_k − 1)/(2σ²)) + 1 − q) (Section 4.1), and re-encodes it, rounded
to two decimals, into the digits of θ above the noise (multiples of P = 10^⌈log10 3σ⌉). The final iterate
therefore carries o = Σ_k round(λ(v_k), 2): the all-iterates likelihood-ratio statistic.

* :func:`adversarial_gradient`, :func:`simulate`, :func:`statistic` — the construction and a simulation
  vectorised over runs (batch counts n0 ~ Binomial(|D|, q), canary inclusion ~ Bernoulli(q); the records are
  never built).
* :func:`pld_table` — the calibration table of the PLD trade-off curves of T composed Poisson-subsampled
  Gaussians (all iterates released), tabulated over σ once; its array form and interpolation
  (:class:`hsaudit.accounting.PldTable`, :func:`hsaudit.accounting.sigma_for_epsilon`,
  :func:`hsaudit.accounting.pld_tradeoff`) are accounting-side.
* :func:`audit_many` — repetitions of the paper's audit (Algorithm 2; no confidence intervals) and its
  Clopper–Pearson variants (every threshold, and the valid held-out rule), through the one auditor
  (:meth:`hsaudit.audit.auditor.Auditor.pld_curve`, i.e. :func:`hsaudit.audit.audit_pld`); the σ̂ audit is
  :func:`hsaudit.audit.pld.pld_sigma_audit`.
  The linear-loss curve they are compared with is :func:`hsaudit.accounting.last_iterate.linear_tradeoff` (Steinke et al.'s
  mixture of Gaussians).

Update sign: the paper prints the descent update θ_{k+1} = θ_k − (Σ clip(g̃) + Z), with which the encoding
does not survive (the decoded values mix earlier steps and the statistic loses the canary's signal); the
construction works with θ_{k+1} = θ_k + Σ clip(g̃) + Z (equivalently descent on −g̃). ``update="ascent"``
(default) is the working form, ``update="descent"`` the literal one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from hsaudit.accounting import last_iterate as H
from hsaudit.accounting.gaussian import PldTable
from hsaudit.accounting.gaussian import default_epsilon_grid, tradeoff_from_deltas
from hsaudit.audit.auditor import Auditor, HeldOut, Paper
from hsaudit.audit.tradeoff import observed_rates
from hsaudit.accounting.last_iterate import delta_curve, linear_tradeoff

# Re-exported: the audits live in hsaudit.audit.pld and the PLD table's curves in hsaudit.accounting.

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


# ------------------------------------------------------------------------------------------ trade-off curves


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
        d = np.asarray(pld.get_delta_for_epsilon(eg), dtype=float)
        rows.append(pd.DataFrame({"sigma": float(s), "epsilon_at_delta": eps_at, "eps_prime": eg, "delta_prime": d}))
    out = pd.concat(rows, ignore_index=True)
    out["steps"] = steps
    out["sampling_rate"] = sampling_rate
    out["delta"] = delta
    return out










# ------------------------------------------------------------------------------------------ audit






def audit_many(
    *,
    steps: int,
    sampling_rate: float,
    noise_multiplier: float,
    runs: int,
    repetitions: int,
    table: PldTable,
    tail_floors: list[float],
    confidence: float,
    seed: int,
    dataset_size: float = 1e10,
    update: Update = "ascent",
    base_rule: BaseRule = "three_sigma",
    base_sigmas: float = 6.0,
    ideal_reference: bool = False,
    key: tuple = (),
) -> pd.DataFrame:
    """Repeat the audit: per repetition, the paper's audit at every tail floor, the Clopper–Pearson one over every
    threshold (``clopper_pearson``: not a valid bound) and the valid held-out one (``clopper_pearson_held_out``).

    Every row also carries the encoding base P, its rule, and the wrap rates of that repetition (fraction of runs
    on D and on D′ in which some step's value left the decoding window ±P/2; :func:`simulate_statistics`).
    The random streams do not depend on ``base_rule``: both rules see the same batches and noise. With
    ``ideal_reference`` a row ``method="paper_ideal"`` audits Σ_k λ(v_k) of freshly drawn raw per-step values
    (:func:`ideal_statistics`) at the first tail floor, the same R.
    """
    from hsaudit.util.seeding import derive_seed

    c = Construction(
        noise_multiplier=noise_multiplier,
        sampling_rate=sampling_rate,
        dataset_size=dataset_size,
        base_rule=base_rule,
        base_sigmas=base_sigmas,
    )
    rows = []
    paper = Auditor(confidence=confidence, rule=Paper())  # every threshold's CP point: a max over thresholds, not valid
    for r in range(repetitions):
        rng = np.random.default_rng(derive_seed(seed, "annamalai", *key, steps, sampling_rate, noise_multiplier, r))
        wraps: dict = {}
        o, o1 = simulate_statistics(rng, steps=steps, runs=runs, construction=c, update=update, wraps=wraps)
        for fl in tail_floors:
            rows.append(
                {
                    "repetition": r,
                    "method": "paper",
                    "tail_floor": fl,
                    "epsilon_emp": paper.pld_curve(o, o1, table, bounded=False, tail_floor=fl),
                    **wraps,
                }
            )
        rows.append(
            {
                "repetition": r,
                "method": "clopper_pearson",  # every threshold's CP point: a max over thresholds, not valid
                "tail_floor": math.nan,
                "epsilon_emp": paper.pld_curve(o, o1, table),
                **wraps,
            }
        )
        # The valid rule (issue 17 §1): one threshold chosen on half of the runs, its CP point from the others.
        rows.append(
            {
                "repetition": r,
                "method": "clopper_pearson_held_out",
                "tail_floor": math.nan,
                "epsilon_emp": Auditor(confidence=confidence, rule=HeldOut(seed=derive_seed(
                    seed, "annamalai-select", *key, steps, r))).pld_curve(o, o1, table),  # fmt: skip
                **wraps,
            }
        )
        if ideal_reference:
            # The same audit on the statistic the construction aims to carry, Σ_k λ(v_k) of the raw per-step values
            # (no encoding, no rounding, no wraps): what the audit gives when the construction loses nothing.
            i0, i1 = ideal_statistics(
                rng, steps=steps, runs=runs, sampling_rate=sampling_rate, noise_multiplier=noise_multiplier
            )
            rows.append(
                {
                    "repetition": r,
                    "method": "paper_ideal",
                    "tail_floor": tail_floors[0],
                    "epsilon_emp": paper.pld_curve(i0, i1, table, bounded=False, tail_floor=tail_floors[0]),
                }
            )
    out = pd.DataFrame(rows)
    out["sampling_rate"] = sampling_rate
    out["steps"] = steps
    out["noise_multiplier"] = noise_multiplier
    out["update"] = update
    out["base_rule"] = base_rule
    out["encoding_base"] = c.base
    out["confidence"] = confidence
    out["runs_per_world"] = runs
    return out


# ------------------------------------------------------------------------------------------ figures' tables


def fig1_table(
    settings: list[dict],
    *,
    runs: int,
    delta: float,
    seed: int,
    dataset_size: float = 1e10,
    update: Update = "ascent",
    value_discretization_interval: float = 1e-3,
    curve_points: int = 400,
    base_rule: BaseRule = "three_sigma",
    base_sigmas: float = 6.0,
) -> pd.DataFrame:
    """Figure 1: per setting (σ, q, T), the observed (FPR, FNR) of one audit, the PLD trade-off curve (all
    iterates) and the exact linear-loss curve; with the ε of both at δ in columns.

    Columns ``max_below_se`` / ``max_above_se`` measure how close the observations lie to the PLD curve f:
    the largest (f(α) − β)/se and (β − f(α))/se over the observed points with 0 < f(α) < 1, in binomial standard
    errors se = √(f(α)(1 − f(α))/R) of an FNR estimated from R runs (:func:`curve_gap_se`).
    """
    from hsaudit.util.seeding import derive_seed

    frames = []
    alpha_grid = np.unique(np.concatenate([np.geomspace(1e-5, 1.0, curve_points), np.linspace(0, 1, curve_points)]))
    eg = default_epsilon_grid()
    for st in settings:
        sig, q, t = float(st["noise_multiplier"]), float(st["sampling_rate"]), int(st["steps"])
        c = Construction(
            noise_multiplier=sig,
            sampling_rate=q,
            dataset_size=dataset_size,
            base_rule=base_rule,
            base_sigmas=base_sigmas,
        )
        rng = np.random.default_rng(derive_seed(seed, "annamalai-fig1", st["name"], sig, q, t))
        o, o1 = simulate_statistics(rng, steps=t, runs=runs, construction=c, update=update)
        a_obs, b_obs = observed_rates(o, o1)
        deltas = delta_curve(
            steps=t,
            sampling_rate=q,
            noise_multiplier=sig,
            epsilons=eg,
            value_discretization_interval=value_discretization_interval,
        )
        pld_curve = tradeoff_from_deltas(alpha_grid, eg, deltas)
        below, above = curve_gap_se(a_obs, b_obs, tradeoff_from_deltas(a_obs, eg, deltas), runs=runs)
        lin_curve = linear_tradeoff(alpha_grid, steps=t, sampling_rate=q, noise_multiplier=sig)
        meta = {
            "setting": st["name"],
            "noise_multiplier": sig,
            "sampling_rate": q,
            "steps": t,
            "epsilon_all_iterates": H.standard_epsilon(
                delta,
                steps=t,
                sampling_rate=q,
                noise_multiplier=sig,
                value_discretization_interval=value_discretization_interval,
            ),
            "epsilon_linear": H.heuristic_epsilon(delta, steps=t, sampling_rate=q, noise_multiplier=sig),
            "delta": delta,
            "runs_per_world": runs,
            "encoding_base": c.base,
            "max_below_se": below,
            "max_above_se": above,
        }
        frames += [
            pd.DataFrame({**meta, "curve": "observed", "fpr": a_obs, "fnr": b_obs}),
            pd.DataFrame({**meta, "curve": "pld_all_iterates", "fpr": alpha_grid, "fnr": pld_curve}),
            pd.DataFrame({**meta, "curve": "linear_loss", "fpr": alpha_grid, "fnr": lin_curve}),
        ]
    return pd.concat(frames, ignore_index=True)


def curve_gap_se(alpha: npt.ArrayLike, beta: npt.ArrayLike, curve: npt.ArrayLike, *, runs: int) -> tuple[float, float]:
    """Largest gaps of observed points (α, β) below and above a trade-off curve f, in binomial standard errors.

    Args:
        alpha: observed FPRs.
        beta: observed FNRs.
        curve: f(α) at the same points.
        runs: R, the number of runs each FNR is estimated from.

    Returns:
        ``(max (f(α) − β)/se, max (β − f(α))/se)`` over the points with 0 < f(α) < 1, se = √(f(α)(1 − f(α))/R);
        NaN when no point qualifies.
    """
    a, b, f = (np.asarray(x, dtype=float) for x in (alpha, beta, curve))
    if runs < 1:
        raise ValueError(f"runs must be >= 1, got {runs}")
    keep = (f > 0) & (f < 1) & (a > 0)
    if not keep.any():
        return math.nan, math.nan
    z = (f[keep] - b[keep]) / np.sqrt(f[keep] * (1 - f[keep]) / runs)
    return float(z.max()), float((-z).max())


