"""Simulations of Steinke, Nasr et al., "The Last Iterate Advantage" (figures 1, 3, 5, 6 and §4.1).

All of them are analytic or one-dimensional simulations (no training):

* :func:`fig1_table` — heuristic ε vs standard accounting vs the full-batch proxy across T (Figure 1).
* :func:`simulate_linear_canary` and :func:`fig3_table` — the gradient-space canary with an adversarial
  all-zero "dataset", which reduces exactly to Σ_t Bern(q) + N(0, Tσ²) vs N(0, Tσ²) (Section 3.1, Figure 3),
  audited empirically beside the heuristic: the paper's known-(q, T) σ̂ audit
  and the GDP audit of Nasr et al. 2023, both through the one auditor
  (:class:`hsaudit.audit.auditor.Auditor`), with each audit's infinite-run limit (:func:`population_audits`).
* :func:`quadratic_mixture`, :func:`quadratic_epsilon` and :func:`fig5_table` — linear loss plus quadratic
  regulariser r(m) = αm²/2 (Section 4.2, Figure 5) with the paper's rounding upper bound.
* :func:`zeroing_regulariser_epsilon` — the counterexample of Section 4.1.
* :func:`simulate_malicious` and :func:`fig6_table` — the malicious-dataset attack of Appendix C
  (Algorithms 2–4), whose final model stores every step's canary decision.

Convention: every score is oriented so that higher ⇒ canary present ("member").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from scipy import stats

from hsaudit.accounting import last_iterate as H
from hsaudit.audit.auditor import Auditor, HeldOut, KnownFamily, Paper, ThresholdRule, parse_rule
from hsaudit.audit.pld import SIGMA_FAMILIES, sigma_hat_from_points
from hsaudit.util.seeding import derive_seed

# --------------------------------------------------------------------------------------------- fig1


def fig1_table(panels: list[dict], steps: list[int], *, delta: float) -> pd.DataFrame:
    """ε at δ for heuristic, standard accounting and full-batch proxy, per panel (q, σ) and T (Figure 1).

    Args:
        panels: list of ``{"name", "sampling_rate", "noise_multiplier"}``.
        steps: the T values.
        delta: δ (the paper uses 1e−6).

    Returns:
        Tidy frame: panel, sampling_rate, noise_multiplier, steps, method, epsilon.
    """
    rows = []
    for p in panels:
        kw = dict(sampling_rate=float(p["sampling_rate"]), noise_multiplier=float(p["noise_multiplier"]))
        for t in steps:
            for method, fn in (
                ("heuristic", H.heuristic_epsilon),
                ("standard", H.standard_epsilon),
                ("full_batch", H.full_batch_epsilon),
            ):
                rows.append(
                    {
                        "panel": p["name"],
                        **kw,
                        "steps": int(t),
                        "method": method,
                        "epsilon": fn(delta, steps=int(t), **kw),
                    }
                )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------- fig3


def simulate_linear_canary(
    rng: np.random.Generator, *, steps: int, sampling_rate: float, noise_multiplier: float, runs: int
) -> tuple[np.ndarray, np.ndarray]:
    """Scores ⟨m_T, g⟩ of the Dirac gradient canary with an all-zero adversarial dataset (Section 3.1).

    With η = 1, m_0 = 0 and the canary gradient of norm 1 (sign chosen so that the score is +1 per inclusion),
    the score is exactly Σ_t Bern(q) + N(0, Tσ²) with the canary and N(0, Tσ²) without it; we draw it in that
    closed form (one Binomial and one Gaussian per run instead of T steps).

    Returns:
        ``(scores_out, scores_in)``, each of length ``runs``.
    """
    H._check_params(steps=steps, sampling_rate=sampling_rate, noise_multiplier=noise_multiplier)
    if runs < 1:
        raise ValueError(f"runs must be >= 1, got {runs}")
    s = noise_multiplier * math.sqrt(steps)
    out = rng.normal(0.0, s, size=runs)
    inn = rng.binomial(steps, sampling_rate, size=runs) + rng.normal(0.0, s, size=runs)
    return out, inn


def calibrate_standard_sigma(target_epsilon: float, *, delta: float, steps: int, sampling_rate: float) -> float:
    """σ such that standard accounting (PLD, all iterates) gives ε = target at δ."""
    return H.calibrate(
        lambda s: H.standard_epsilon(delta, steps=steps, sampling_rate=sampling_rate, noise_multiplier=s),
        target_epsilon,
        lo=0.2,
        hi=20.0,
        rtol=1e-4,
    )


FIG3_AUDITS = ("pld_sigma", "gdp")


def linear_canary_rates(
    *, steps: int, sampling_rate: float, noise_multiplier: float, points: int = 4000
) -> tuple[np.ndarray, np.ndarray]:
    """Exact (FPR, FNR) of the threshold tests "score ≥ τ" on the fig3 pair (no sampling error).

    FPR = Φ̄(τ/s), FNR = Σ_k Bin(k; T, q) Φ((τ − k)/s), s = σ√T, for τ such that FPR runs from 1e−14 to 1 − 1e−14
    (log-spaced in both tails). These are the points an audit would see with infinitely many runs.
    """
    mix = H.binomial_mixture(steps=steps, sampling_rate=sampling_rate, noise_multiplier=noise_multiplier)
    half = np.geomspace(1e-14, 0.5, points // 2)
    fpr = np.unique(np.concatenate([half, 1 - half]))
    tau = mix.scale * stats.norm.isf(fpr)
    w = np.exp(mix.log_weights)
    fnr = np.sum(w * stats.norm.cdf((tau[:, None] - mix.atoms) / mix.scale), axis=1)
    return fpr, fnr


def population_audits(
    *,
    steps: int,
    sampling_rate: float,
    noise_multiplier: float,
    delta: float,
    families: tuple[str, ...] = SIGMA_FAMILIES,
) -> dict[str, float]:
    """What each audit converges to with infinitely many runs on the fig3 pair (exact rates, no CP interval).

    * σ̂ audit, both families (:func:`sigma_hat_from_points` on the exact rates). ``last_iterate`` recovers σ and
      the heuristic ε exactly (the family contains the true pair). ``all_iterates`` is *above* the heuristic for
      T > 1: the composed family's curve has another shape, and the largest member below the true curve is less
      private than the true pair — not a lower bound on the released model's ε.
    * GDP audit: μ = sup_τ Φ⁻¹(1 − FPR) − Φ⁻¹(FNR), ε = ε_{μ-GDP}(δ).

    Returns:
        ``{"mu", "epsilon_gdp"}`` and ``"epsilon_<family>"`` for each of ``families``.
    """
    kw = dict(steps=steps, sampling_rate=sampling_rate, noise_multiplier=noise_multiplier)
    fpr, fnr = linear_canary_rates(**kw)
    with np.errstate(divide="ignore", invalid="ignore"):
        mu = float(np.nanmax(stats.norm.isf(fpr) - stats.norm.ppf(fnr)))
    out = {"mu": mu, "epsilon_gdp": H.gdp_epsilon_for(delta, mu)}
    for fam in families:
        out[f"epsilon_{fam}"] = sigma_hat_from_points(fpr, fnr, delta=delta, family=fam, **kw)["epsilon"]
    return out


def fig3_table(
    *,
    sampling_rates: list[float],
    steps: list[int],
    target_epsilon: float,
    delta: float,
    runs: int,
    confidence: float,
    seed: int,
    rule: ThresholdRule | str = "paper",
    sigma_families: list[str] = ("last_iterate",),
    population: bool = True,
) -> pd.DataFrame:
    """Figure 3: per (q, T), σ calibrated so standard ε = target; heuristic ε and the empirical audits of one set of
    scores: the paper's known-(q, T) σ̂ audit for every family in ``sigma_families`` (``empirical_sigma_<family>``,
    CP bounds, :meth:`hsaudit.audit.auditor.Auditor.known_family`) and the GDP audit (``empirical_gdp``, threshold rule ``rule``: the
    plan's rule or its spec); with
    ``population`` also what each audit gives with infinitely many runs (``population_*``,
    :func:`population_audits`).

    Every row records ``threshold_rule`` (GDP: the rule's spec; σ̂: ``all_thresholds``, the paper's — a max
    over thresholds, not a valid 95 % bound — or ``held_out``, the valid rule of
    :func:`hsaudit.audit.tradeoff.held_out_point`, in the rows ``empirical_sigma_<family>_held_out``; population:
    exact rates) and ``confidence`` (of the CP bounds).
    """
    for fam in sigma_families:
        if fam not in SIGMA_FAMILIES:
            raise ValueError(f"sigma_families must be a subset of {SIGMA_FAMILIES}, got {fam!r}")
    rows = []
    nan = math.nan
    gdp_rule = rule if isinstance(rule, ThresholdRule) else parse_rule(rule)
    for q in sampling_rates:
        for t in steps:
            sigma = calibrate_standard_sigma(target_epsilon, delta=delta, steps=int(t), sampling_rate=float(q))
            rng = np.random.default_rng(derive_seed(seed, "steinke-fig3", q, t))
            kw = dict(steps=int(t), sampling_rate=float(q), noise_multiplier=sigma)
            out, inn = simulate_linear_canary(rng, runs=runs, **kw)
            base = {
                "sampling_rate": float(q),
                "steps": int(t),
                "noise_multiplier": sigma,
                "runs_per_world": runs,
                "confidence": confidence,
            }

            def row(method, epsilon, *, mu=nan, sigma_hat=nan, threshold_rule="none"):
                return {
                    **base,
                    "method": method,
                    "epsilon": epsilon,
                    "mu": mu,
                    "sigma_hat": sigma_hat,
                    "threshold_rule": threshold_rule,
                }

            rows += [
                row("standard", H.standard_epsilon(delta, **kw)),
                row("heuristic", H.heuristic_epsilon(delta, **kw)),
            ]
            for fam in sigma_families:
                known = KnownFamily(family=fam, **kw)
                aud = Auditor(delta=delta, confidence=confidence, rule=Paper()).known_family(out, inn, known)
                rows.append(
                    row(
                        f"empirical_sigma_{fam}",
                        aud["epsilon"],
                        sigma_hat=aud["sigma_hat"],
                        threshold_rule="all_thresholds",
                    )
                )
                # The valid rule beside the paper's: one threshold chosen on half of the runs (issue 17 §1).
                rule = HeldOut(seed=derive_seed(seed, "steinke-fig3-select", q, t))
                held = Auditor(delta=delta, confidence=confidence, rule=rule).known_family(out, inn, known)
                rows.append(
                    row(
                        f"empirical_sigma_{fam}_held_out",
                        held["epsilon"],
                        sigma_hat=held["sigma_hat"],
                        threshold_rule="held_out",
                    )
                )
            gdp = Auditor(delta=delta, confidence=confidence, rule=gdp_rule).gdp(out, inn)
            rows.append(row("empirical_gdp", float(gdp.epsilon), mu=max(float(gdp.mu), 0.0),
                            threshold_rule=gdp_rule.spec))
            if population:
                pop = population_audits(delta=delta, families=tuple(sigma_families), **kw)
                rows += [
                    row(f"population_sigma_{f}", pop[f"epsilon_{f}"], threshold_rule="exact_rates") for f in sigma_families
                ]
                rows.append(row("population_gdp", pop["epsilon_gdp"], mu=pop["mu"], threshold_rule="exact_rates"))
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------- fig5


@dataclass(frozen=True)
class Rounding:
    """The paper's rounding of the support of X (Section 4.2), an upper bound on ε.

    Attributes:
        floor: atoms below this are rounded up to it (paper: 0.0005).
        base: every atom is rounded up to the next integer power of ``base`` (paper: 1.05).
        round_zero: whether the atom X = 0 (canary never sampled) is rounded up to ``floor`` as well. The
            paper's sentence covers it literally ("values in the support which are less than .0005");
            keeping 0 exact gives the same ε to 4 digits at the check point (see docs/steinke.md).
        max_exact_steps: steps enumerated exactly (2^K atoms); the contribution of later steps,
            Σ_{i>K} (1−α)^{i−1} = (1−α)^K/α, is added to every atom (a further upper bound).
        direction: ``"up"`` (the paper's words: "round each value in the support up to the nearest integer power
            of 1.05"; an upper bound on ε) or ``"nearest"`` (to the nearest power in log scale; not a bound).
    """

    floor: float = 5e-4
    base: float = 1.05
    round_zero: bool = True
    max_exact_steps: int = 18
    direction: str = "up"

    def __post_init__(self) -> None:
        if self.direction not in ("up", "nearest"):
            raise ValueError(f"direction must be 'up' or 'nearest', got {self.direction!r}")


def quadratic_mixture(
    *, steps: int, sampling_rate: float, noise_multiplier: float, alpha: float, rounding: Rounding | None = Rounding()
) -> H.Mixture:
    """The pair N(X, σ̂²) vs N(0, σ̂²) of Section 4.2, X = Σ_{i≤T} (1−α)^{i−1} Bern_i(q), σ̂² = σ² Σ (1−α)^{2(i−1)}.

    With ``rounding`` the support is rounded up as in the paper (an upper bound on ε by Lemma 4.5 of
    Choquette-Choo et al. 2024); ``rounding=None`` enumerates the 2^T atoms exactly (T ≤ 20).
    """
    H._check_params(steps=steps, sampling_rate=sampling_rate, noise_multiplier=noise_multiplier)
    if not (0.0 <= alpha <= 1.0):
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    decay = 1.0 - alpha
    k_exact = steps if rounding is None else min(steps, rounding.max_exact_steps)
    if rounding is None and steps > 20:
        raise ValueError(f"exact enumeration needs steps <= 20, got {steps}")
    coef = decay ** np.arange(k_exact)
    bits = ((np.arange(2**k_exact)[:, None] >> np.arange(k_exact)) & 1).astype(np.int8)
    values = bits @ coef
    ones = bits.sum(axis=1)
    if 0 < sampling_rate < 1:
        logw = ones * math.log(sampling_rate) + (k_exact - ones) * math.log1p(-sampling_rate)
    else:  # q ∈ {0, 1}: all the mass on "no step sampled" or "every step sampled"
        logw = np.where(ones == (k_exact if sampling_rate == 1 else 0), 0.0, -np.inf)
    var_sum = float(np.sum(decay ** (2 * np.arange(steps))))
    scale = noise_multiplier * math.sqrt(var_sum)
    if rounding is not None:
        if steps > k_exact:
            # Steps after K: with probability (1−q)^{T−K} none is sampled (X = X_K exactly); otherwise
            # X ≤ X_K + Σ_{i>K}(1−α)^{i−1}. Replacing X by this coupled upper value keeps an upper bound.
            tail = decay**k_exact / alpha if alpha > 0 else float(steps - k_exact)
            log_none = (steps - k_exact) * math.log1p(-sampling_rate) if sampling_rate < 1 else -math.inf
            log_some = math.log(-math.expm1(log_none)) if log_none < 0 else -math.inf
            values = np.concatenate([values, values + tail])
            logw = np.concatenate([logw + log_none, logw + log_some])
        fl = rounding.floor
        rounded = (
            np.where(values < fl, fl, values)
            if rounding.round_zero
            else np.where((values > 0) & (values < fl), fl, values)
        )
        pos = rounded > 0
        exps = np.zeros_like(rounded)
        logs = np.log(rounded[pos]) / math.log(rounding.base)
        exps[pos] = np.ceil(logs - 1e-12) if rounding.direction == "up" else np.round(logs)
        values = np.where(pos, rounding.base**exps, 0.0)
    # merge equal atoms
    uniq, inv = np.unique(np.round(values, 12), return_inverse=True)
    merged = np.full(uniq.shape, -np.inf)
    np.logaddexp.at(merged, inv, logw)
    return H.Mixture._pruned(uniq, merged, scale)


def quadratic_epsilon(
    delta: float,
    *,
    steps: int,
    sampling_rate: float,
    noise_multiplier: float,
    alpha: float,
    rounding: Rounding | None = Rounding(),
) -> float:
    """ε at δ of linear loss + quadratic regulariser (Section 4.2); an upper bound when ``rounding`` is set."""
    mix = quadratic_mixture(
        steps=steps, sampling_rate=sampling_rate, noise_multiplier=noise_multiplier, alpha=alpha, rounding=rounding
    )
    return H.mixture_epsilon(delta, mix, solver="brent")


def calibrate_one_step_sigma(target_epsilon: float, *, delta: float, sampling_rate: float) -> float:
    """σ such that one DP-SGD step (N(Bern(q), σ²) vs N(0, σ²)) is (target, δ)-DP (Figure 5's σ per q)."""
    return H.calibrate(
        lambda s: H.heuristic_epsilon(delta, steps=1, sampling_rate=sampling_rate, noise_multiplier=s),
        target_epsilon,
        lo=0.1,
        hi=20.0,
        rtol=1e-8,
    )


def fig5_table(
    *,
    one_step_epsilons: list[float],
    sampling_rates: list[float],
    steps: list[int],
    alpha: float,
    delta: float,
    rounding: Rounding,
    exact_max_steps: int = 0,
) -> pd.DataFrame:
    """Figure 5: ratio ε_quadratic(α) / max_{t≤T} ε_{t,q,σ} for σ set per q so one step is (ε₁, δ)-DP.

    ``ratio`` uses the paper's rounding (``rounding.direction``, by default up: an upper bound); ``ratio_exact``
    enumerates the 2^T atoms exactly and ``ratio_other_direction`` rounds in the other direction, both for
    T ≤ ``exact_max_steps`` (NaN beyond).
    """
    rows = []
    for e1 in one_step_epsilons:
        for q in sampling_rates:
            sigma = calibrate_one_step_sigma(float(e1), delta=delta, sampling_rate=float(q))
            running = 0.0
            t_max = max(steps)
            lin = {}
            for t in range(1, t_max + 1):
                running = max(running, H.heuristic_epsilon(delta, steps=t, sampling_rate=q, noise_multiplier=sigma))
                lin[t] = running
            for t in steps:
                quad = quadratic_epsilon(
                    delta, steps=int(t), sampling_rate=q, noise_multiplier=sigma, alpha=alpha, rounding=rounding
                )
                exact = (
                    quadratic_epsilon(
                        delta, steps=int(t), sampling_rate=q, noise_multiplier=sigma, alpha=alpha, rounding=None
                    )
                    if int(t) <= exact_max_steps
                    else math.nan
                )
                other = replace(rounding, direction="nearest" if rounding.direction == "up" else "up")
                alt = (
                    quadratic_epsilon(
                        delta, steps=int(t), sampling_rate=q, noise_multiplier=sigma, alpha=alpha, rounding=other
                    )
                    if int(t) <= exact_max_steps
                    else math.nan
                )
                rows.append(
                    {
                        "one_step_epsilon": float(e1),
                        "rounding_direction": rounding.direction,
                        "epsilon_quadratic_other_direction": alt,
                        "ratio_other_direction": alt / lin[int(t)],
                        "sampling_rate": float(q),
                        "noise_multiplier": sigma,
                        "steps": int(t),
                        "alpha": alpha,
                        "epsilon_quadratic": quad,
                        "epsilon_quadratic_exact": exact,
                        "epsilon_linear_max": lin[int(t)],
                        "ratio": quad / lin[int(t)],
                        "ratio_exact": exact / lin[int(t)],
                    }
                )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------- §4.1


def zeroing_regulariser_epsilon(delta: float, *, steps: int, sampling_rate: float, noise_multiplier: float) -> float:
    """ε of DP-SGD with the zeroing regulariser r(m) = ‖m‖²/(2η) (Section 4.1).

    The update becomes m_t = η(Σ clip(∇ℓ) + ξ_t) (Eq. 6), so the last iterate is one DP-SGD step whatever T is:
    ε = ε_{1,q,σ}(δ). It equals the quadratic example with α = 1.
    """
    H._check_params(steps=steps, sampling_rate=sampling_rate, noise_multiplier=noise_multiplier)
    return H.heuristic_epsilon(delta, steps=1, sampling_rate=sampling_rate, noise_multiplier=noise_multiplier)


# --------------------------------------------------------------------------------------------- fig6


@dataclass(frozen=True)
class MaliciousConstants:
    """Constants of the malicious-dataset attack (Appendix C), which the paper does not state [inferred].

    Attributes:
        batch_size: N, the number of repeaters in every batch (fixed; the repeaters are present in both
            datasets). Must be large enough that the repeaters' summed update is never clipped.
        big_val: BIG_VAL, the magnitude ±BIG_VAL with which a decision is stored; must be ≫ σ so that the
            noise added later never flips it.
        t_past: threshold that re-reads a stored decision (0, the midpoint of ±BIG_VAL).
        t_last: threshold on the latest raw coordinate (canary step value η + noise vs noise); ``None``
            (default) means the MAP rule η/2 + ησ²·log((1−q)/q), i.e. "the canary was more likely present".
        learning_rate: η.
        store: ``"decision"`` (Algorithm 3 as printed: coordinate i−1 becomes ±BIG_VAL by thresholding, one bit per
            step) or ``"value"`` (a departure, to locate the loss: coordinate i−1 becomes BIG_VAL·x_{i−1} and is
            left alone afterwards, so later noise adds only σ/BIG_VAL per step to the decoded value x_{i−1}).
    """

    batch_size: float = 1.0e4
    big_val: float = 100.0
    t_past: float = 0.0
    t_last: float | None = None
    learning_rate: float = 1.0
    store: str = "decision"

    def __post_init__(self) -> None:
        if self.store not in ("decision", "value"):
            raise ValueError(f"store must be 'decision' or 'value', got {self.store!r}")

    def threshold_last(self, *, sampling_rate: float, noise_multiplier: float) -> float:
        """The threshold on the latest raw coordinate (``t_last`` or the MAP rule)."""
        if self.t_last is not None:
            return float(self.t_last)
        eta = self.learning_rate
        return eta / 2 + eta * noise_multiplier**2 * math.log((1 - sampling_rate) / sampling_rate)


def simulate_malicious(
    rng: np.random.Generator,
    *,
    steps: int,
    sampling_rate: float,
    noise_multiplier: float,
    runs: int,
    canary: bool,
    constants: MaliciousConstants = MaliciousConstants(),
) -> tuple[np.ndarray, dict[str, float]]:
    """Run Algorithm 4 (with Algorithms 2 and 3) for ``runs`` independent trainings, vectorised over runs.

    The model has D = T coordinates; iteration i (0-based) zeroes coordinates ≥ i, writes ±BIG_VAL into
    coordinates < i (coordinate i−1 by thresholding its raw value at ``t_last``, older ones by re-reading their
    sign at ``t_past``), the canary (when sampled, prob. q) adds 1 to coordinate i, and noise N(0, σ²) is
    added to every coordinate. The repeaters' summed gradient is N · clip(r) (Algorithm 4, lines 6–11).

    Returns:
        ``(models, diagnostics)``: the final models (runs × T) and a dict with ``clipped_fraction`` (steps at
        which the repeaters' gradient had norm > C = 1, which would break the construction), ``max_norm`` and
        ``flipped_fraction`` (stored decisions changed by later noise), plus the true inclusion bits under
        key ``bits`` (runs × T array) for checks.
    """
    H._check_params(steps=steps, sampling_rate=sampling_rate, noise_multiplier=noise_multiplier)
    if not 0 < sampling_rate < 1:
        raise ValueError(f"sampling_rate must be in (0, 1) for the malicious attack, got {sampling_rate}")
    c = constants
    n, eta = c.batch_size, c.learning_rate
    t_last = c.threshold_last(sampling_rate=sampling_rate, noise_multiplier=noise_multiplier)
    m = np.zeros((runs, steps))
    bits = np.zeros((runs, steps), dtype=bool)
    first_decision = np.zeros((runs, steps), dtype=bool)
    clipped = 0
    max_norm = 0.0
    for i in range(steps):
        # Algorithm 3 (repeaters): a = concat(h, f); the gradient is −a.
        a = np.empty_like(m)
        a[:, i:] = -m[:, i:] / (eta * n)
        if i > 0:
            hist = np.empty((runs, i))
            last = m[:, i - 1] >= t_last
            first_decision[:, i - 1] = last
            if c.store == "decision":
                if i > 1:
                    hist[:, : i - 1] = c.big_val / (eta * n) * (2.0 * (m[:, : i - 1] >= c.t_past) - 1.0)
                hist[:, i - 1] = c.big_val / (eta * n) * (2.0 * last - 1.0)
            else:  # keep older stored values, amplify the latest raw one
                hist[:, : i - 1] = m[:, : i - 1] / (eta * n)
                hist[:, i - 1] = c.big_val * m[:, i - 1] / (eta * n)
            a[:, :i] = hist - m[:, :i] / (eta * n)
        r = -a
        norm = np.linalg.norm(r, axis=1)
        clipped += int(np.sum(norm > 1.0))
        max_norm = max(max_norm, float(norm.max()))
        r = r / np.maximum(norm, 1.0)[:, None]
        z = r * n
        if canary:  # Algorithm 2: the canary's gradient −e_i, sampled with probability q.
            b = rng.random(runs) < sampling_rate
            bits[:, i] = b
            z[:, i] -= b
        z += rng.normal(0.0, noise_multiplier, size=z.shape)
        m = m - eta * z
    stored = (m[:, : steps - 1] >= c.t_past) if c.store == "decision" else (m[:, : steps - 1] >= c.big_val * t_last)
    flipped = float(np.mean(stored != first_decision[:, : steps - 1])) if steps > 1 else 0.0
    diag = {
        "clipped_fraction": clipped / (runs * steps),
        "max_norm": max_norm,
        "flipped_fraction": flipped,
        "bits": bits,
    }
    return m, diag


def malicious_score(
    models: np.ndarray, *, sampling_rate: float, noise_multiplier: float, constants: MaliciousConstants
) -> np.ndarray:
    """Likelihood-ratio score of a final model of the malicious attack (higher ⇒ canary present).

    The stored decisions d_j = 1[m_j ≥ t_past] (j < T−1) are i.i.d. Bernoulli(p0) without the canary and
    Bernoulli(p1) with it, p0 = Φ̄(t_last/σ), p1 = q Φ̄((t_last − η)/σ) + (1−q) p0; the last coordinate is the raw
    value η·Bern(q) + N(0, (ησ)²). The score is the log-likelihood ratio of all of them.
    """
    c = constants
    sd = noise_multiplier * c.learning_rate
    steps = models.shape[1]
    if c.store == "value":
        # Decoded per-step values x_j = m_j/BIG_VAL (noise σ/BIG_VAL per later step is ignored) and the raw last one.
        v = np.concatenate([models[:, : steps - 1] / c.big_val, models[:, -1:]], axis=1) / c.learning_rate
        lam = np.logaddexp(
            math.log(sampling_rate) + (2 * v - 1) / (2 * noise_multiplier**2), math.log1p(-sampling_rate)
        )
        return lam.sum(axis=1)
    t_last = c.threshold_last(sampling_rate=sampling_rate, noise_multiplier=noise_multiplier)
    p0 = stats.norm.sf(t_last / sd)
    p1 = sampling_rate * stats.norm.sf((t_last - c.learning_rate) / sd) + (1 - sampling_rate) * p0
    d = (models[:, : steps - 1] >= c.t_past).sum(axis=1)
    llr_dec = d * math.log(p1 / p0) + (steps - 1 - d) * math.log((1 - p1) / (1 - p0))
    v = models[:, -1] / c.learning_rate
    llr_last = np.logaddexp(
        math.log(sampling_rate) + (2 * v - 1) / (2 * noise_multiplier**2), math.log1p(-sampling_rate)
    )
    return llr_dec + llr_last


def fig6_table(
    *,
    steps: list[int],
    sampling_rate: float,
    noise_multiplier: float,
    runs: int,
    delta: float,
    confidence: float,
    constants: MaliciousConstants,
    seed: int,
    rule: ThresholdRule | str = "paper",
    value_store: bool = False,
) -> pd.DataFrame:
    """Figure 6: empirical ε of the malicious-dataset attack vs standard and heuristic ε, per T.

    With ``value_store`` the attack is also run with ``store="value"`` (:class:`MaliciousConstants`), same seeds,
    audited with the σ̂ audit (``empirical_pld_cp_value_store``): it shows how much the one-bit decisions lose.

    Two audits of the same scores: the GDP audit (Nasr et al. 2023) and the known-(q, T) σ̂ audit of Steinke et al.
    §3.1 (:func:`hsaudit.audit.pld.pld_sigma_audit`, Clopper–Pearson bounds). References under the GDP audit: the
    linear canary of fig3 and the optimal all-iterates attack.
    """
    rows = []
    gdp_rule = rule if isinstance(rule, ThresholdRule) else parse_rule(rule)
    for t in steps:
        kw = dict(steps=int(t), sampling_rate=sampling_rate, noise_multiplier=noise_multiplier)
        m0, d0 = simulate_malicious(
            np.random.default_rng(derive_seed(seed, "steinke-fig6", t, 0)), runs=runs, canary=False, constants=constants, **kw
        )
        m1, d1 = simulate_malicious(
            np.random.default_rng(derive_seed(seed, "steinke-fig6", t, 1)), runs=runs, canary=True, constants=constants, **kw
        )
        s0 = malicious_score(m0, sampling_rate=sampling_rate, noise_multiplier=noise_multiplier, constants=constants)
        s1 = malicious_score(m1, sampling_rate=sampling_rate, noise_multiplier=noise_multiplier, constants=constants)
        gdp = Auditor(delta=delta, confidence=confidence, rule=gdp_rule).gdp
        aud = gdp(s0, s1)

        def sigma_audit(o0, o1):
            # The known-(q, T) σ̂ audit with the all-iterates family (hsaudit.audit.pld.pld_sigma_audit, on the
            # lower hull of the CP points).
            known = KnownFamily(family="all_iterates", iterations=10, **kw)
            return Auditor(delta=delta, confidence=confidence, rule=Paper()).known_family(o0, o1, known)

        pld_aud = sigma_audit(s0, s1)
        # References under the same R: the linear-loss canary (last iterate, Section 3.1) and the all-iterates
        # likelihood-ratio attack (Σ_t λ(v_t) on the raw per-step values), the latter under both audits.
        rng = np.random.default_rng(derive_seed(seed, "steinke-fig6-ref", t))
        lin = gdp(*simulate_linear_canary(rng, runs=runs, **kw))
        r0, r1 = _all_iterates_llr(rng, runs=runs, **kw)
        ref = gdp(r0, r1)
        ref_pld = sigma_audit(r0, r1)
        extra = []
        if value_store:
            vc = replace(constants, store="value")
            v0, _ = simulate_malicious(
                np.random.default_rng(derive_seed(seed, "steinke-fig6", t, 0)), runs=runs, canary=False, constants=vc, **kw
            )
            v1, _ = simulate_malicious(
                np.random.default_rng(derive_seed(seed, "steinke-fig6", t, 1)), runs=runs, canary=True, constants=vc, **kw
            )
            sv = [
                malicious_score(v, sampling_rate=sampling_rate, noise_multiplier=noise_multiplier, constants=vc)
                for v in (v0, v1)
            ]
            extra.append(("empirical_pld_cp_value_store", sigma_audit(*sv)["epsilon"], math.nan))
        base = {
            "steps": int(t),
            "sampling_rate": sampling_rate,
            "noise_multiplier": noise_multiplier,
            "runs_per_world": runs,
            "clipped_fraction": max(d0["clipped_fraction"], d1["clipped_fraction"]),
            "flipped_fraction": max(d0["flipped_fraction"], d1["flipped_fraction"]),
            "max_norm": max(d0["max_norm"], d1["max_norm"]),
            "confidence": confidence,
        }
        rows += [
            {**base, "method": "standard", "epsilon": H.standard_epsilon(delta, **kw), "mu": math.nan},
            {**base, "method": "heuristic", "epsilon": H.heuristic_epsilon(delta, **kw), "mu": math.nan},
            {**base, "method": "empirical_gdp", "epsilon": float(aud.epsilon), "mu": max(float(aud.mu), 0.0)},
            {**base, "method": "empirical_pld_cp", "epsilon": pld_aud["epsilon"], "mu": math.nan},
            {**base, "method": "empirical_linear_gdp", "epsilon": float(lin.epsilon), "mu": max(float(lin.mu), 0.0)},
            {**base, "method": "empirical_all_iterates_gdp", "epsilon": float(ref.epsilon), "mu": max(float(ref.mu), 0.0)},
            {**base, "method": "empirical_all_iterates_pld_cp", "epsilon": ref_pld["epsilon"], "mu": math.nan},
        ] + [{**base, "method": m, "epsilon": e, "mu": mu} for m, e, mu in extra]
        for r in rows:
            if "threshold_rule" not in r:
                r["threshold_rule"] = (
                    "none"
                    if r["method"] in ("standard", "heuristic")
                    else "all_thresholds" if r["method"].endswith("pld_cp") or "pld_cp_" in r["method"] else gdp_rule.spec
                )
    return pd.DataFrame(rows)


def _all_iterates_llr(
    rng: np.random.Generator, *, steps: int, sampling_rate: float, noise_multiplier: float, runs: int
) -> tuple[np.ndarray, np.ndarray]:
    """Scores of the optimal all-iterates attack: Σ_t λ(v_t), v_t = Bern(q)·1 + N(0, σ²) (or N(0, σ²))."""
    out = np.zeros(runs)
    inn = np.zeros(runs)
    lq, l1q, s2 = math.log(sampling_rate), math.log1p(-sampling_rate), 2 * noise_multiplier**2
    for _ in range(steps):
        v0 = rng.normal(0.0, noise_multiplier, runs)
        v1 = (rng.random(runs) < sampling_rate) + rng.normal(0.0, noise_multiplier, runs)
        out += np.logaddexp(lq + (2 * v0 - 1) / s2, l1q)
        inn += np.logaddexp(lq + (2 * v1 - 1) / s2, l1q)
    return out, inn
