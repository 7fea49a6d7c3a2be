"""Scores → the report: ε̂ under valid rules, the verdict against the claim, our accountant and the heuristic.

The verdict (docs/byo.md "The verdict"), stated at confidence c:

- ``violation``: the claimed ε is below what our accountant gives for the declared mechanism (an accounting bug,
  found without training), the training gives the same model for every seed while the canary changes it, or the
  valid lower bound ε̂ exceeds the claimed ε;
- ``consistent``: no evidence against the claim *and* the audit has power: the same design flags a positive
  control — the user's training at σ/f in the audit setting (:class:`Power`) — with probability at least the target,
  and the control's own look (against the most the declared mechanism lets it show) does not flag it; the report
  states that probability. The user's own configuration's control, the canary repeated k times, is trained and
  reported but cannot make a verdict consistent: its power does not bound a σ bug (:func:`bounds_noise_bugs`);
- ``inconclusive``: otherwise — too few runs for any ε̂ to exceed the claim (decided before training), or a control
  the design does not see (the report names the reason and the change that gives the audit its power).

ε̂ comes from one threshold rule fixed in advance (:class:`AuditOptions`, default crossing), at joint confidence c: a rule
whose ε̂ rests on two one-sided Clopper–Pearson bounds (held-out) gets c' = 1 − (1 − c)/2 per bound; trying both
score directions halves 1 − c once more (:class:`hsaudit.audit.auditor.Auditor`). Its basis:

- ``gdp``: ε of the μ-GDP curve that the bound on μ rejects. Valid for the claim when the declared mechanism's
  trade-off curve lies above the μ-GDP curve of the claimed ε over the false-positive rates an audit of this size can
  read (:func:`region`; exact for the full batch, checked on the dp-accounting PLD curve for Poisson sampling): then
  a correct implementation of the declared mechanism is flagged with probability at most 1 − c.
- ``assumption-free``: the (ε, δ) bound of the same Clopper–Pearson bounds (Kairouz et al. 2015), valid for any
  mechanism, looser; used when the GDP check fails or cannot be made (shuffled or fixed-size batches).

Imports the audit and accounting layers only (the audit side of the package): a claim arrives as a value handed
down, read through :class:`Claim`'s attributes.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
from scipy import optimize, special

from hsaudit.accounting.gaussian import (
    calibrate_noise,
    default_epsilon_grid,
    gaussian_epsilon,
    gdp_epsilon,
    mixture_gaussian_pld,
    tradeoff_from_deltas,
)
from hsaudit.accounting.last_iterate import heuristic_epsilon, pld_deltas
from hsaudit.audit.auditor import Auditor, Crossing, Grid, HeldOut, Rays, ThresholdRule, parse_rule
from hsaudit.audit.crossing import CROSSING_RAYS, DEFAULT_RAYS
from hsaudit.audit.one_run import one_run_audit
from hsaudit.audit.one_run_fdp import one_run_fdp_audit
from hsaudit.audit.rules import VALID_MODES
from hsaudit.experiments.byo.values import DATA_USE_ALPHA

class Claim(Protocol):
    """What the audit reads of a training's claim (:class:`hsaudit.experiments.byo.values.Claim` is one, handed
    down by the training side): the claimed (ε, δ) and the declared mechanism."""

    epsilon: float
    delta: float
    noise_multiplier: float
    sampling: str
    steps: int
    neighbouring: str

    def sampling_rate(self, n: int) -> float: ...

    def to_dict(self) -> dict[str, Any]: ...


VERDICTS = ("violation", "consistent", "inconclusive")
GUESS_FRACTIONS = (0.05, 0.1, 0.25)
"""A few-runs audit's default guesses per side, as fractions of the m canaries (Bonferroni over them): a gross leak
separates most canaries (the largest fraction sees it best), a moderate one only the extremes. Audit-side: changing
them reruns no training."""
BASES = ("auto", "gdp", "assumption-free")
_TWO_BOUNDS = (HeldOut, Grid)  # ε̂ rests on two one-sided CP bounds, each at the auditor's confidence
ACCOUNTING_RTOL = 0.02
"""A claim is an accounting bug when it is below ours by more than this share (and 1e-3): PLD discretisation and
other accountants' own error bounds stay inside it."""
MAX_RUNS = 10**6
"""The largest runs per world :func:`runs_needed` searches."""
EPSILON_GRID = default_epsilon_grid()[default_epsilon_grid() <= 20.0]
"""ε′ of the declared mechanism's δ(ε′) (its trade-off curve is the envelope of these lines): 0 to 20 by 0.02,
enough for every FPR above e⁻²⁰ ≈ 2e−9."""


@dataclass(frozen=True)
class AuditOptions:
    """How the scores are audited, fixed before they are seen.

    Attributes:
        confidence: joint confidence c of the verdict's ε̂.
        rule: the verdict's threshold rule, a valid one (default :class:`~hsaudit.audit.auditor.Rays`).
        directions: ``"one"`` (higher score ⇒ canary present, as every canary's score is built) or ``"both"`` (also
            the other orientation, paid for).
        basis: ``"auto"`` (GDP when the declared mechanism allows it, else assumption-free), ``"gdp"`` or
            ``"assumption-free"``.
        selection_fraction: the selection share of the held-out rule of the assumption-free basis and of the
            held-out row of the report.
        bootstrap: resamples of the point estimates' intervals (0: none).
        seed: seed of the held-out split, the rays' calibration and the bootstrap.
        power_factor: the positive control repeats the canary k times, the least k ≥ 2 whose worst case for the
            declared mechanism is at least this multiple of the claimed ε (:func:`control_copies`).
        power_target: the probability of flagging the control that a ``consistent`` verdict needs; below it the
            verdict is ``inconclusive``.
        power_resamples: bootstrap resamples of the control's models that measure that probability (:func:`power`).
    """

    confidence: float = 0.95
    rule: ThresholdRule = Crossing()
    directions: str = "one"
    basis: str = "auto"
    selection_fraction: float = 0.5
    bootstrap: int = 200
    seed: int = 0
    power_factor: float = 1.5
    power_target: float = 0.8
    power_resamples: int = 100

    def __post_init__(self) -> None:
        if not 0.0 < float(self.confidence) < 1.0:
            raise ValueError(f"confidence must be in (0, 1), got {self.confidence!r}")
        if not isinstance(self.rule, ThresholdRule) or not self.rule.valid:
            raise ValueError(f"the verdict needs a valid rule ({', '.join(VALID_MODES)}), got {self.rule!r}")
        if self.directions not in ("one", "both"):
            raise ValueError(f"directions must be 'one' or 'both', got {self.directions!r}")
        if self.basis not in BASES:
            raise ValueError(f"basis must be one of {', '.join(BASES)}, got {self.basis!r}")
        if not 0.0 < float(self.selection_fraction) < 1.0:
            raise ValueError(f"selection_fraction must be in (0, 1), got {self.selection_fraction!r}")
        if not float(self.power_factor) > 1.0:
            raise ValueError(f"power_factor must be > 1 (a leak larger than the claim), got {self.power_factor!r}")
        if not 0.0 < float(self.power_target) < 1.0:
            raise ValueError(f"power_target must be in (0, 1), got {self.power_target!r}")
        if int(self.power_resamples) != self.power_resamples or self.power_resamples < 10:
            raise ValueError(f"power_resamples must be an integer >= 10, got {self.power_resamples!r}")

    def auditor(self, rule: ThresholdRule, delta: float) -> Auditor:
        """The auditor of ``rule`` at joint confidence c (per bound c' = 1 − (1 − c)/2 for two-bound rules)."""
        c = float(self.confidence)
        per = 1.0 - (1.0 - c) / 2.0 if isinstance(rule, _TWO_BOUNDS) else c
        return Auditor(delta=delta, confidence=per, rule=rule, directions=self.directions)

    def held_out(self) -> HeldOut:
        return HeldOut(fraction=self.selection_fraction, seed=self.seed)

    def to_dict(self) -> dict[str, Any]:
        """Plain values (the rule by its spec), :meth:`from_dict`'s inverse."""
        out = dataclasses.asdict(self)
        out["rule"] = self.rule.spec
        return out

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> AuditOptions:
        """Options from plain values (the rule by its spec, seeded with ``seed``)."""
        values = dict(values)
        values["rule"] = parse_rule(str(values.get("rule", "crossing")), seed=int(values.get("seed", 0)))
        return cls(**values)


# ---- our accountant -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Accounting:
    """Our accounting of the declared mechanism.

    Attributes:
        epsilon: ε at the claim's δ, an upper bound for the declared mechanism (tight up to the PLD's pessimistic
            discretisation for the full batch and Poisson sampling; an RDP bound, which overstates, for fixed-size
            batches; the bound without amplification for shuffled batches).
        method: how it was computed, and what the accounting-bug check compares against.
        sampling_rate: q.
        comparable: whether a claim below ``lower`` is an accounting bug (False where we have no valid lower figure:
            shuffled batches).
        heuristic: the last-iterate heuristic ε (Steinke et al. 2025, Thm 1, under the claim's neighbouring
            relation): what a final-model audit of a correct implementation can reach with a worst-case canary, for
            linear losses.
        full_batch_mu: μ of the declared mechanism when it is exactly μ-GDP (the full batch), else None.
        deltas: δ(ε′) of the declared mechanism on :data:`EPSILON_GRID` (dp-accounting PLD), or None without a PLD.
        lower: a valid lower figure for the declared mechanism's ε at δ (at most its true ε): the closed form for
            the full batch, dp-accounting's optimistic PLD otherwise; None where there is none. The accounting-bug
            check compares the claim against it, never against an upper bound that may overstate.
    """

    epsilon: float
    method: str
    sampling_rate: float
    comparable: bool
    heuristic: float
    full_batch_mu: float | None = None
    deltas: np.ndarray | None = field(default=None, compare=False, repr=False)
    lower: float | None = None

    def gdp_mu(self, low: float, high: float) -> float | None:
        """The smallest μ such that the declared mechanism's trade-off curve lies above the μ-GDP curve for every
        FPR in [low, high]: max of Φ⁻¹(1 − α) − Φ⁻¹(f(α)) there (None without a curve)."""
        if self.full_batch_mu is not None:
            return self.full_batch_mu
        if self.deltas is None:
            return None
        alpha = np.geomspace(low, high, 400)
        f = tradeoff_from_deltas(alpha, EPSILON_GRID, self.deltas)
        with np.errstate(divide="ignore"):
            return float(np.max(special.ndtri(1.0 - alpha) - special.ndtri(f)))


def mu_for_epsilon(epsilon: float, delta: float) -> float:
    """The μ whose μ-GDP curve has ε at δ (1 / the σ of one Gaussian mechanism with that ε)."""
    return 1.0 / calibrate_noise(epsilon=float(epsilon), delta=float(delta), compositions=1)


def _subsampled_pld(q: float, sigma: float, steps: int, *, replace: bool, pessimistic: bool):
    """dp-accounting PLD of T Poisson-subsampled Gaussians (sensitivity C = 1 of one record), add-remove or
    replace-one — (1 − q)N(0, σ²) + qN(−1, σ²) vs (1 − q)N(0, σ²) + qN(1, σ²) per step (x and x' pull opposite ways,
    so the atoms are 2C apart). ``pessimistic=False``: the privacy-buckets lower estimate."""
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    rel = pld_lib.NeighborRel.REPLACE_ONE if replace else pld_lib.NeighborRel.ADD_OR_REMOVE_ONE
    return pld_lib.from_gaussian_mechanism(
        standard_deviation=sigma,
        sampling_prob=q,
        value_discretization_interval=1e-4,
        neighboring_relation=rel,
        pessimistic_estimate=pessimistic,
        use_connect_dots=pessimistic,
    ).self_compose(steps)


@functools.lru_cache(maxsize=64)
def _accounting(claim: Claim, n: int) -> Accounting:
    from dp_accounting import dp_event
    from dp_accounting.rdp import rdp_privacy_accountant as rdp_lib

    q = claim.sampling_rate(n)
    sigma, steps, delta = claim.noise_multiplier, claim.steps, claim.delta
    replace = claim.neighbouring == "replace-one"
    sens = 2.0 if replace else 1.0
    heuristic = heuristic_epsilon(
        delta, steps=steps, sampling_rate=q, noise_multiplier=sigma, neighbouring=claim.neighbouring
    )
    if q >= 1.0:
        mu = sens * math.sqrt(steps) / sigma
        eps = gdp_epsilon(mu=mu, delta=delta)
        return Accounting(
            epsilon=eps,
            method=f"Gaussian mechanism composed {steps} times (full batch, sensitivity {sens:g}C): μ-GDP, μ = {mu:.4g} "
            "(exact)",
            sampling_rate=q,
            comparable=True,
            heuristic=heuristic,
            full_batch_mu=mu,
            lower=eps,
        )
    if claim.sampling == "poisson":
        pld, low = (_subsampled_pld(q, sigma, steps, replace=replace, pessimistic=p) for p in (True, False))
        deltas = pld_deltas(pld, EPSILON_GRID)
        lower = max(0.0, float(low.get_epsilon_for_delta(delta)))
        return Accounting(
            epsilon=max(0.0, float(pld.get_epsilon_for_delta(delta))),
            method=f"dp-accounting PLD: Poisson-subsampled Gaussian (q = {q:.4g}) composed {steps} times, "
            f"{claim.neighbouring} (pessimistic; the optimistic PLD, {lower:.4g}, is the accounting-bug check's figure)",
            sampling_rate=q,
            comparable=True,
            heuristic=heuristic,
            deltas=deltas,
            lower=lower,
        )
    if claim.sampling == "fixed":  # B of N without replacement, replace-one (Claim.sampling_rate refuses add-remove)
        # dp-accounting's noise multiplier is σ over the l2-sensitivity (its q = 1 case is the Gaussian α/(2σ²)),
        # and Wang et al. (2019) Thm 27 takes the base mechanism's RDP under replace-one: sensitivity 2C, so σ/2.
        batch = round(q * n)
        acc = rdp_lib.RdpAccountant(neighboring_relation=rdp_lib.NeighborRel.REPLACE_ONE)
        acc.compose(
            dp_event.SelfComposedDpEvent(
                dp_event.SampledWithoutReplacementDpEvent(n, batch, dp_event.GaussianDpEvent(sigma / sens)), steps
            )
        )
        # A lower figure: on data sets where every other record's gradient is 0, x is in each step's batch with
        # probability B/N independently across steps, so the outputs are exactly the Poisson replace-one pair's.
        low = _subsampled_pld(batch / n, sigma, steps, replace=True, pessimistic=False)
        lower = max(0.0, float(low.get_epsilon_for_delta(delta)))
        return Accounting(
            epsilon=float(acc.get_epsilon(delta)),
            method=f"dp-accounting RDP: {batch} of {n} sampled without replacement, Gaussian at sensitivity 2C, "
            f"composed {steps} times, replace-one (an upper bound that overstates; the accounting-bug check's figure "
            f"is a lower one, {lower:.4g}: the optimistic PLD of the Poisson replace-one pair at q = B/N, which the "
            "fixed-size mechanism contains)",
            sampling_rate=q,
            comparable=True,
            heuristic=heuristic,
            lower=lower,
        )
    # shuffled, replace-one (Claim.sampling_rate refuses add-remove)
    per_epoch = max(1, math.floor(1.0 / q))
    appearances = math.ceil(steps / per_epoch)
    return Accounting(
        epsilon=gaussian_epsilon(noise_multiplier=sigma / sens, compositions=appearances, delta=delta),
        method=f"shuffled batches: no proven amplification; the bound of {appearances} appearance(s) of an example "
        f"without it, sensitivity {sens:g}C (Poisson accounting of shuffled batches is not a proven bound, Chua et al. "
        "2024; no lower figure, so no accounting-bug check)",
        sampling_rate=q,
        comparable=False,
        heuristic=heuristic,
    )


def accounting(claim: Claim, n: int) -> Accounting:
    """Our accounting of the mechanism ``claim`` declares, for a data set of ``n`` examples (cached: a study of many
    seeds computes it once).

    Raises:
        ValueError: a claim inconsistent with ``n`` (:meth:`Claim.sampling_rate`).
    """
    claim.sampling_rate(n)
    return _accounting(claim, int(n))


def accounting_bug(claim: Claim, ours: Accounting) -> bool:
    """Whether the claimed ε is below a valid lower figure for the declared mechanism (:attr:`Accounting.lower`,
    beyond :data:`ACCOUNTING_RTOL`): never flagged against an upper bound alone, which may overstate."""
    if not ours.comparable or ours.lower is None:
        return False
    return claim.epsilon < ours.lower * (1.0 - ACCOUNTING_RTOL) - 1e-3


def _gdp_curve(mu: float, alpha: np.ndarray) -> np.ndarray:
    return special.ndtr(special.ndtri(1.0 - alpha) - mu)


def region(rule: ThresholdRule, mu: float, runs: int) -> tuple[float, float]:
    """The false-positive rates at which ``rule``'s test of μ-GDP reads the trade-off curve.

    Crossing and rays reject μ from where the empirical curve crosses their rays (FNR = ρ·FPR; ρ = 1, or nine slopes
    in [1/4, 4]); the rejection event at a crossing is one comparison of two order statistics there
    (:mod:`hsaudit.audit.crossing`), so the curve matters around the rays' crossings of the μ-GDP curve: the FPRs and
    FNRs of those points, widened by a factor 2 each way. A rule that picks a threshold (held-out, grid,
    Bonferroni) may read any FPR an audit of ``runs`` models per world can bound: [1/(10 runs), 1 − 1/(10 runs)].
    """
    if isinstance(rule, (Crossing, Rays)):
        rays = CROSSING_RAYS if isinstance(rule, Crossing) else DEFAULT_RAYS
        points = []
        for rho in rays:
            t = optimize.brentq(lambda a: _gdp_curve(mu, np.array(a)) - rho * a, 1e-15, 1.0 / (1.0 + rho))
            points += [t, rho * t]
        return max(min(points) / 2.0, 1e-12), min(0.5, 2.0 * max(points))
    low = min(0.5, 1.0 / (10.0 * runs))
    return low, 1.0 - low


def basis_for(claim: Claim, ours: Accounting, options: AuditOptions, *, runs: int) -> tuple[str, str]:
    """The verdict's basis and why (see the module docstring): GDP when the declared mechanism's curve lies above
    the claim's μ-GDP curve wherever the verdict's rule reads it (:func:`region`), else assumption-free."""
    if options.basis != "auto":
        return options.basis, "asked for"
    mu_claim = mu_for_epsilon(claim.epsilon, claim.delta)
    low, high = region(options.rule, mu_claim, runs)
    mu = ours.gdp_mu(low, high)
    if mu is None:
        return "assumption-free", "the declared mechanism has no trade-off curve here to check the GDP reading against"
    where = f"FPR in [{low:.2g}, {high:.2g}], where the {options.rule.name} rule reads it"
    if mu <= mu_claim * (1.0 + 1e-6) + 1e-9:
        return "gdp", f"the declared mechanism's curve lies above the claim's μ-GDP curve (μ = {mu_claim:.4g}) for {where}"
    return "assumption-free", (
        f"the declared mechanism's curve dips below the claim's μ-GDP curve for {where} (it needs μ = {mu:.4g} > "
        f"{mu_claim:.4g}): the GDP reading could flag a correct implementation"
    )


def _rule_for(options: AuditOptions, basis: str) -> ThresholdRule:
    return options.rule if basis == "gdp" else options.held_out()


def _epsilon(auditor: Auditor, basis: str, s0: np.ndarray, s1: np.ndarray) -> float:
    res = auditor.gdp(s0, s1)
    value = res.epsilon if basis == "gdp" else res.epsilon_assumption_free
    return 0.0 if not math.isfinite(value) or value < 0 else float(value)  # no evidence is 0


def perfect_epsilon(options: AuditOptions, basis: str, *, delta: float, out: int, into: int) -> float:
    """The ε̂ of perfectly separated scores (``out`` zeros, ``into`` ones): the most this audit can show."""
    auditor = options.auditor(_rule_for(options, basis), delta)
    return _epsilon(auditor, basis, np.zeros(int(out)), np.ones(int(into)))


def runs_needed(
    options: AuditOptions, basis: str, *, epsilon: float, delta: float, start: int = 8, limit: int = MAX_RUNS
) -> int | None:
    """The runs per world (within 25 %) at which perfectly separated scores give an ε̂ above ``epsilon``, or None
    beyond ``limit``. With rays as the rule, the search uses the crossing rule (as tight on perfectly
    separated scores, within 1 %, and not Monte Carlo calibrated), which can only overstate the runs needed."""
    probe = options if not isinstance(options.rule, Rays) else dataclasses.replace(options, rule=Crossing())
    runs = max(int(start), 2)
    while runs <= limit:
        if perfect_epsilon(probe, basis, delta=delta, out=runs, into=runs) > epsilon:
            return runs
        runs = math.ceil(runs * 1.25)
    return None


# ---- the positive control ----------------------------------------------------------------------------------------------
MAX_COPIES = 64
"""The most copies of the canary a positive control repeats (a claim far above the declared mechanism's ε needs
many: the control then says the multiple it reached)."""


CONTROL_DISCRETIZATION = 1e-2
"""The PLD discretisation of :func:`control_epsilon` under Poisson sampling: dp-accounting's pessimistic estimate,
so the figure errs upwards (by ≈ 1e-3 at ε ≈ 2–11 against 1e-3; 0.3–0.7 s against 2–5 s); it picks k and states
the control's size, it is no bound of the verdict."""


def control_epsilon(claim: Claim, n: int, copies: int) -> float:
    """The worst case, for the declared mechanism, of a training whose world 1 holds ``copies`` copies of the canary:
    its ε at the claim's δ.

    The full batch is exact: k copies add k·C (2kC under replace-one) to every step's sum, μ = k·sens·√T/σ. Poisson
    sampling: each copy joins a step independently with probability q, so a step's shift is Binomial(k, q)·C — the
    mixture-of-Gaussians mechanism (dp-accounting) composed T times; under replace-one the same with 2C, an upper
    figure. Shuffled and fixed-size batches: the declared mechanism's bound at σ/k (k copies shift a step by at most
    k·C), an upper figure.
    """
    q, k = claim.sampling_rate(n), int(copies)
    if q >= 1.0:
        return gdp_epsilon(mu=_copies_mu(claim, k), delta=claim.delta)
    if claim.sampling == "poisson":
        return max(0.0, float(_copies_pld(claim, q, k).get_epsilon_for_delta(claim.delta)))
    return accounting(dataclasses.replace(claim, noise_multiplier=claim.noise_multiplier / k), n).epsilon


def _sensitivity(claim: Claim) -> float:
    """One record's sensitivity in units of C: 2 under replace-one (x and its replacement pull opposite ways)."""
    return 2.0 if claim.neighbouring == "replace-one" else 1.0


def _copies_mu(claim: Claim, copies: int) -> float:
    """μ of k copies in the full batch: k·sens·√T/σ."""
    return int(copies) * _sensitivity(claim) * math.sqrt(claim.steps) / float(claim.noise_multiplier)


def _copies_pld(claim: Claim, q: float, copies: int):
    """dp-accounting PLD (pessimistic, :data:`CONTROL_DISCRETIZATION`) of k copies under Poisson sampling: a step's
    shift is Binomial(k, q)·sens·C, the mixture-of-Gaussians mechanism composed T times (cached)."""
    j = np.arange(int(copies) + 1)
    probs = special.comb(copies, j) * q**j * (1.0 - q) ** (copies - j)
    return mixture_gaussian_pld(standard_deviation=float(claim.noise_multiplier), sensitivities=_sensitivity(claim) * j,
                                probabilities=probs / probs.sum(), compositions=int(claim.steps),
                                discretization=CONTROL_DISCRETIZATION)  # fmt: skip


def control_accounting(claim: Claim, n: int, control: Control) -> Accounting | None:
    """The declared mechanism's accounting of the control where its trade-off curve is known exactly: the noise
    control (the declared mechanism at σ/f), k copies in the full batch (μ-GDP, μ = k·√T/σ) or under Poisson
    sampling, add-remove (the Binomial(k, q) mixture's PLD, pessimistic). None elsewhere."""
    if control.noise_factor != 1.0:
        return accounting(dataclasses.replace(claim, noise_multiplier=claim.noise_multiplier / control.noise_factor), n)
    if not control_is_exact(claim, n):
        return None
    q, k = claim.sampling_rate(n), int(control.copies)
    if q >= 1.0:
        mu = _copies_mu(claim, k)
        return Accounting(epsilon=gdp_epsilon(mu=mu, delta=claim.delta), method=f"{k} copies, full batch: μ = {mu:.4g}",
                          sampling_rate=q, comparable=False, heuristic=math.nan, full_batch_mu=mu)  # fmt: skip
    deltas = pld_deltas(_copies_pld(claim, q, k), EPSILON_GRID)
    return Accounting(epsilon=control.epsilon_worst, method=f"{k} copies, Poisson: the Binomial({k}, {q:.4g}) mixture",
                      sampling_rate=q, comparable=False, heuristic=math.nan, deltas=deltas)  # fmt: skip


def control_threshold(claim: Claim, n: int, control: Control, rule: ThresholdRule, runs: int) -> float | None:
    """The GDP ε̂ above which the control leaks more than the declared mechanism allows it: ε of the least μ whose
    GDP curve lies below the control's exact trade-off curve wherever ``rule`` reads it (:func:`region`, at the μ
    of the control's worst case and at that μ), as :func:`basis_for` checks the claim's. For the full batch it is
    the control's worst case itself. None where the control's curve is not known exactly."""
    acc = control_accounting(claim, n, control)
    if acc is None:
        return None
    mu = mu_for_epsilon(control.epsilon_worst, claim.delta)
    low, high = region(rule, mu, runs)
    needed = acc.gdp_mu(low, high)
    if needed is None:
        return None
    low2, high2 = region(rule, max(needed, 1e-6), runs)
    needed = acc.gdp_mu(min(low, low2), max(high, high2))
    return gdp_epsilon(mu=needed, delta=claim.delta) if needed and needed > 0 else None


def control_noise_epsilon(claim: Claim, n: int, factor: float) -> float:
    """The ε of the declared mechanism at σ/``factor``: the worst case of the audit setting's noise control
    (:meth:`Design.control_noise`), exactly ``factor`` × the declared μ for the full batch."""
    return accounting(dataclasses.replace(claim, noise_multiplier=float(claim.noise_multiplier) / float(factor)),
                      n).epsilon  # fmt: skip


def control_is_exact(claim: Claim, n: int) -> bool:
    """Whether :func:`control_epsilon` is the exact worst case of k copies (the full batch; Poisson sampling under
    add-remove, up to the PLD's pessimistic discretisation), so that a control's ε̂ above it is a violation. Not
    for replace-one under Poisson sampling, fixed-size or shuffled batches, where it is an upper figure of
    another mechanism's."""
    if claim.sampling_rate(n) >= 1.0:
        return True
    return claim.sampling == "poisson" and claim.neighbouring == "add-remove"


def control_copies(claim: Claim, n: int, factor: float) -> tuple[int, float]:
    """The copies k of the positive control — the least k ≥ 2 (at most :data:`MAX_COPIES`) whose worst case
    (:func:`control_epsilon`) is at least ``factor`` × the claimed ε — and that worst case."""
    target = float(factor) * float(claim.epsilon)
    one = max(accounting(claim, n).epsilon, 1e-9)
    k = int(min(MAX_COPIES, max(2, math.floor(target / one))))  # ε grows about linearly in k: start near the answer
    eps = control_epsilon(claim, n, k)
    while eps < target and k < MAX_COPIES:
        k += 1
        eps = control_epsilon(claim, n, k)
    while k > 2:
        lower = control_epsilon(claim, n, k - 1)
        if lower < target:
            break
        k, eps = k - 1, lower
    return k, eps


@dataclass(frozen=True)
class Power:
    """What the positive control measured: the same design (canary, background, score, rule, runs, confidence) on the
    user's training in a version that leaks a known amount more — in the audit setting the training at
    σ/``noise_factor`` (exactly that multiple of the declared μ in the full batch, through any canary), else with the
    canary repeated ``copies`` times in world 1.

    k copies of the canary make its contribution to every step k times larger, as noise σ/k would for one copy (the
    full batch: exactly the Gaussian mechanism of σ/k for the canary's direction): a version of the user's own
    training that leaks k times more through this canary. Under Poisson sampling the k copies are sampled
    independently, which leaks less than σ/k: the control is the milder of the two. Its power is no bound on a σ bug
    (:func:`bounds_noise_bugs`): only the σ/f control's makes a verdict consistent.

    Attributes:
        copies: k.
        epsilon_worst: the worst case of the control for the declared mechanism (:func:`control_epsilon`,
            :func:`control_noise_epsilon`).
        multiple: ``epsilon_worst`` / the claimed ε.
        epsilon_hat: the control's own ε̂ (the verdict's rule, basis and confidence).
        probability: the share of bootstrap resamples of the control's models (each world resampled with
            replacement at its size) whose ε̂ exceeds the claim: the estimated probability that this design flags a
            training leaking ``multiple`` × the claim through this canary.
        resamples: the bootstrap's resamples.
        target: the probability a ``consistent`` verdict needs.
        orientation: +1 when the control's canary raises its score (the scores' convention), −1 when it lowers it
            (the audit then reads the scores the other way: decided on the control's models, which the verdict's
            bound does not use).
        runs_out, runs_in: the control's models in each world.
        look: the control's own valid GDP ε̂ (the scores' convention, at the verdict's per-look confidence), read
            against ``look_threshold`` (:func:`control_threshold`); None where the control's curve is not known
            exactly.
        noise_factor: the audit setting's control: σ divided by it (1: the copies control).
        look_threshold: the GDP ε̂ the control may reach under the declared mechanism (its worst case for the full
            batch; under Poisson sampling the GDP curve below its exact curve where the rule reads it).
    """

    copies: int
    epsilon_worst: float
    multiple: float
    epsilon_hat: float
    probability: float
    resamples: int
    target: float
    orientation: int
    runs_out: int
    runs_in: int
    look: float | None = None
    noise_factor: float = 1.0
    look_threshold: float | None = None

    @property
    def enough(self) -> bool:
        return self.probability >= self.target

    @property
    def like_sigma(self) -> bool:
        """Whether this control's power can make a verdict consistent (:func:`bounds_noise_bugs`)."""
        return bounds_noise_bugs(self.noise_factor)

    def statement(self) -> str:
        """The power in a sentence."""
        if self.noise_factor != 1.0:
            return (f"the same audit of this training at σ/{self.noise_factor:g} (the audit setting's noise divided by "
                    f"{self.noise_factor:g}: a leak of {self.multiple:.3g}× the claim through every canary, "
                    f"ε = {self.epsilon_worst:.4g} for the declared mechanism) flags it with probability "
                    f"{self.probability:.2f} (bootstrap of {self.runs_out} + {self.runs_in} control models, "
                    f"{self.resamples} resamples; the control's own ε̂ = {self.epsilon_hat:.4g})")  # fmt: skip
        return (f"the same audit of this training with the canary repeated {self.copies} times — for the declared "
                f"mechanism a leak of up to {self.multiple:.3g}× the claim (ε ≤ {self.epsilon_worst:.4g}) — flags it "
                f"with probability {self.probability:.2f} (bootstrap of {self.runs_out} + {self.runs_in} control "
                f"models, {self.resamples} resamples; the control's own ε̂ = {self.epsilon_hat:.4g})")  # fmt: skip


def bounds_noise_bugs(noise_factor: float) -> bool:
    """Whether a positive control's power can make a verdict ``consistent`` — the one rule of the population and the
    few-runs audits: only the training at σ/f (``noise_factor`` ≠ 1, the audit setting's control) does.

    The k copies of the canary multiply its signal over everything else that moves its score — the other rows'
    sampling and pull, other canaries, θ0 — and so are flagged where less noise is not: a σ bug reduces only the
    noise's share of that variance. A copies control flagged with probability 1 promises nothing for a σ bug
    (docs/journal/byo.md, 2026-11-28: σ/10 came back consistent in the few-runs audit, σ/√2 in the zoo)."""
    return float(noise_factor) != 1.0


COPIES_DO_NOT_BOUND = "the copies control does not bound a noise bug: --audit-setting"
"""The verdict's words when a copies control is seen (:func:`bounds_noise_bugs`): inconclusive, and the change that
gives the audit a power that holds for σ bugs."""


def copies_caveat(power_factor: float) -> str:
    """Why a seen copies control leaves the verdict inconclusive, and what to run instead (both audits' reasons)."""
    return (f"inconclusive ({COPIES_DO_NOT_BOUND}): copies multiply the canary's signal over what the other rows, "
            "canaries and θ0 add to its score, less noise does not (a σ bug can stay below the claim while its copies "
            f"are flagged); the audit setting's control is the training at σ/{power_factor:g}, which does")


def orientation(control_out: npt.ArrayLike, control_in: npt.ArrayLike) -> int:
    """+1 when the control's canary raises the median score, −1 when it lowers it (ties: +1)."""
    return 1 if float(np.median(control_in)) >= float(np.median(control_out)) else -1


def power(
    control_out: npt.ArrayLike,
    control_in: npt.ArrayLike,
    claim: Claim,
    n: int,
    options: AuditOptions,
    *,
    copies: int,
    epsilon_worst: float,
    looks: int = 1,
) -> Power:
    """The probability that this design flags the positive control, by bootstrap of its models (the scores already
    oriented, see :func:`orientation`); each resample is audited as the verdict audits (rule, basis, confidence,
    ``looks``: the verdict's number of looks, whose Bonferroni share each pays)."""
    c0, c1 = np.asarray(control_out, dtype=float), np.asarray(control_in, dtype=float)
    per_look = _per_look(options, looks)
    found = _verdict_before(claim, n, per_look, c0.size, c1.size)
    basis = found["basis"]
    auditor = per_look.auditor(_rule_for(per_look, basis), claim.delta)
    own = _epsilon(auditor, basis, c0, c1)
    rng = np.random.default_rng([int(options.seed), 7531])
    flagged = 0
    for _ in range(int(options.power_resamples)):
        r0 = c0[rng.integers(c0.size, size=c0.size)]
        r1 = c1[rng.integers(c1.size, size=c1.size)]
        flagged += _epsilon(auditor, basis, r0, r1) > claim.epsilon
    return Power(copies=int(copies), epsilon_worst=float(epsilon_worst), multiple=float(epsilon_worst) / claim.epsilon,
                 epsilon_hat=own, probability=flagged / int(options.power_resamples),
                 resamples=int(options.power_resamples), target=float(options.power_target),
                 orientation=1, runs_out=int(c0.size), runs_in=int(c1.size))  # fmt: skip


# ---- the training's use of its data (the test itself: values.data_use_finding) -----------------------------------
def data_use_reason(data_use: str) -> str:
    """The verdict's reason for a :func:`~hsaudit.experiments.byo.values.data_use_finding`."""
    return (f"the training does not sample as its claim declares: {data_use}; nothing else needs training to show it "
            f"(a correct training is flagged by this check with probability at most {DATA_USE_ALPHA:g})")


# ---- the report ------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ByoReport:
    """The audit of a user's training.

    Attributes:
        verdict: one of :data:`VERDICTS`.
        reason: the verdict in a sentence.
        claim: the claim audited.
        n: examples of the data.
        accounting: ours for the declared mechanism.
        basis: ``"gdp"`` or ``"assumption-free"``; ``basis_reason`` says why.
        rule: the verdict's rule name; ``confidence``: its joint confidence; ``directions``.
        epsilon_hat: the verdict's valid lower bound (0 without evidence; None when nothing was trained).
        epsilon_max: the ε̂ of perfectly separated scores with these runs (what no scores can beat: it decides
            "too few runs" before training; it is not the audit's power, which ``power`` measures).
        runs_out, runs_in: models without and with the canary (the design's runs per world before training).
        runs_needed: runs per world that could exceed the claim, when there are too few (None: beyond the search).
        estimates: every estimate of the scores (rules, one-run bounds, point estimates), one dict each.
        details: what the design and the check recorded (entry, canary, background, probe, seconds).
        looks: the verdict's ε̂ of each score it looked at (``score``: the final model; ``score_iterates``: the
            white-box statistic of a recording training), each at confidence 1 − (1 − c)/len(looks).
        power: what the positive control measured (None: no control was trained).
    """

    verdict: str
    reason: str
    claim: Claim
    n: int
    accounting: Accounting
    basis: str
    basis_reason: str
    rule: str
    confidence: float
    directions: str
    epsilon_hat: float | None
    epsilon_max: float
    runs_out: int
    runs_in: int
    runs_needed: int | None = None
    estimates: tuple[dict[str, Any], ...] = ()
    details: Mapping[str, Any] = field(default_factory=dict)
    looks: Mapping[str, float] = field(default_factory=dict)
    power: Power | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (non-finite floats as None): the verdict first."""
        out = {
            "verdict": self.verdict,
            "reason": self.reason,
            "epsilon_hat": self.epsilon_hat,
            "epsilon_claimed": self.claim.epsilon,
            "delta": self.claim.delta,
            "epsilon_ours": self.accounting.epsilon,
            "epsilon_heuristic": self.accounting.heuristic,
            "epsilon_max": self.epsilon_max,
            "basis": self.basis,
            "basis_reason": self.basis_reason,
            "rule": self.rule,
            "confidence": self.confidence,
            "directions": self.directions,
            "runs_out": self.runs_out,
            "runs_in": self.runs_in,
            "runs_needed": self.runs_needed,
            "n": self.n,
            "claim": self.claim.to_dict(),
            "accounting": {k: v for k, v in dataclasses.asdict(self.accounting).items() if k != "deltas"},
            "estimates": [dict(e) for e in self.estimates],
            "looks": dict(self.looks),
            "power": None if self.power is None else dict(dataclasses.asdict(self.power), statement=self.power.statement()),
            "details": dict(self.details),
        }
        return jsonable(out)


def jsonable(value: Any) -> Any:
    """``value`` for JSON: nested dicts and sequences, NumPy scalars as Python numbers, non-finite floats as None."""
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (np.floating, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def _verdict_before(claim: Claim, n: int, options: AuditOptions, runs_out: int, runs_in: int) -> dict[str, Any]:
    ours = accounting(claim, n)
    basis, why = basis_for(claim, ours, options, runs=max(runs_out, runs_in, 1))
    eps_max = perfect_epsilon(options, basis, delta=claim.delta, out=max(runs_out, 1), into=max(runs_in, 1))
    rule = _rule_for(options, basis).name
    common = dict(
        claim=claim, n=n, accounting=ours, basis=basis, basis_reason=why, rule=rule,
        confidence=float(options.confidence), directions=options.directions, epsilon_max=eps_max,
        runs_out=int(runs_out), runs_in=int(runs_in),
    )  # fmt: skip
    if accounting_bug(claim, ours):
        return dict(
            common,
            verdict="violation",
            reason=f"accounting: the claimed ε = {claim.epsilon:.4g} is below our accountant's {ours.epsilon:.4g} "
            f"for the declared mechanism ({ours.method}); nothing needs training to show it",
        )
    if eps_max <= claim.epsilon:
        needed = runs_needed(options, basis, epsilon=claim.epsilon, delta=claim.delta, start=max(runs_out, runs_in))
        more = f"about {needed} runs per world could" if needed else f"more than {MAX_RUNS} runs per world would"
        return dict(
            common,
            verdict="inconclusive",
            runs_needed=needed,
            reason=f"too few runs: even perfectly separated scores give at most ε̂ = {eps_max:.4g} ≤ the claimed "
            f"{claim.epsilon:.4g} with {runs_out} + {runs_in} runs ({rule}, {basis}); {more} exceed it",
        )
    return common


GDP_MEANING = (": the training is not a correct implementation of the Gaussian mechanism it declares (the gdp basis "
               "reads the declared mechanism's trade-off curve; a mechanism that is (ε, δ)-DP in another way, such as "
               "randomised response, could be flagged: --basis assumption-free tests (ε, δ) alone)")
"""What a violation on the GDP basis means, said with it."""

LOOKS = {"score": "the final model", "score_iterates": "the iterates (white box)"}
"""The scores a verdict may look at: the final model's, and a recording training's iterates statistic."""


def _per_look(options: AuditOptions, looks: int) -> AuditOptions:
    """Options at confidence 1 − (1 − c)/looks: the verdict pays for looking at several scores (Bonferroni)."""
    return dataclasses.replace(options, confidence=1.0 - (1.0 - options.confidence) / looks) if looks > 1 else options


def pre_training(
    claim: Claim, n: int, options: AuditOptions, *, runs: int, looks: int = 1, data_use: str | None = None
) -> ByoReport | None:
    """The verdict that needs no audit model — an accounting bug, the check's reads of the data against the claim's
    sampling (``data_use``: :func:`~hsaudit.experiments.byo.values.data_use_finding`'s reason), or an audit of ``runs`` per world that cannot exceed
    the claim — or None when the models must be trained to decide (``looks``: 2 for a recording training)."""
    found = _verdict_before(claim, n, _per_look(options, looks), runs, runs)
    if data_use is not None and found.get("verdict") != "violation":
        found.update(verdict="violation", runs_needed=None, reason=data_use_reason(data_use))
    found["confidence"] = float(options.confidence)
    return ByoReport(**found, epsilon_hat=None) if "verdict" in found else None


def _scores(scores: Any) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(scores, Mapping) or hasattr(scores, "columns"):
        s, m = np.asarray(scores["score"], dtype=float), np.asarray(scores["member"]).astype(bool)
    else:
        raise ValueError("scores must be a table with columns score and member")
    if s.ndim != 1 or s.shape != m.shape:
        raise ValueError(f"score and member must be 1-D of equal length, got {s.shape} and {m.shape}")
    if not np.isfinite(s).all():
        raise ValueError("scores must be finite (a NaN score is a diverged training)")
    return s, m


def estimates(
    scores_out: npt.ArrayLike, scores_in: npt.ArrayLike, *, delta: float, options: AuditOptions
) -> list[dict[str, Any]]:
    """Every estimate of the scores, one dict each: the valid rules (held-out with its assumption-free bound,
    crossing, rays), the one-run bounds on the pooled runs (Steinke et al. 2023; Mahloujifar et al. 2024: valid, the
    bits being independent fair coins; a cheap first look) and the point estimates (AUROC and the ε of its μ, with
    a bootstrap interval)."""
    s0, s1 = np.asarray(scores_out, dtype=float), np.asarray(scores_in, dtype=float)
    rows: list[dict[str, Any]] = []
    for rule in (options.held_out(), Crossing(), Rays(seed=options.seed)):
        res = options.auditor(rule, delta).gdp(s0, s1)
        rows.append(
            dict(estimate=f"GDP ε̂ ({rule.name})", rule=rule.spec, valid=True, basis="gdp", mu=res.mu,
                 epsilon=max(0.0, res.epsilon), confidence=options.confidence)
        )  # fmt: skip
        if isinstance(rule, HeldOut):
            af = res.epsilon_assumption_free
            rows.append(
                dict(estimate=f"(ε, δ) bound ({rule.name})", rule=rule.spec, valid=True, basis="assumption-free",
                     mu=None, epsilon=max(0.0, af) if math.isfinite(af) else 0.0, confidence=options.confidence)
            )  # fmt: skip
    scores = np.concatenate([s0, s1])
    included = np.concatenate([np.zeros(s0.size, bool), np.ones(s1.size, bool)])
    k = max(1, scores.size // 10)
    for method, audit in (("one-run (Steinke et al. 2023)", one_run_audit), ("one-run f-DP", one_run_fdp_audit)):
        res = audit(scores, included, k_plus=k, k_minus=k, delta=delta, confidence=options.confidence)
        rows.append(
            dict(estimate=f"{method}, k = {k} each side", rule="one-run", valid=True,
                 basis="assumption-free" if res.mu is None else "gdp", mu=res.mu, epsilon=res.epsilon,
                 confidence=options.confidence)
        )  # fmt: skip
    with np.errstate(invalid="ignore"), warnings.catch_warnings():  # perfectly separated resamples: μ = ∞
        warnings.simplefilter("ignore", RuntimeWarning)
        point = Auditor(delta=delta, confidence=options.confidence, rule=Crossing(), bootstrap=options.bootstrap,
                        bootstrap_seed=options.seed).report(s0, s1)  # fmt: skip
    mu = point.estimates["mu_auroc"]
    lo, hi = point.intervals.get("mu_auroc", (math.nan, math.nan))
    rows.append(
        dict(estimate="ε of the AUROC's μ (point estimate, not a bound)", rule="auroc", valid=False, basis="gdp",
             mu=mu, epsilon=_gdp_eps(mu, delta), epsilon_lo=_gdp_eps(lo, delta), epsilon_hi=_gdp_eps(hi, delta),
             auroc=point.estimates["auroc"], confidence=options.confidence)
    )  # fmt: skip
    return rows


def _gdp_eps(mu: float, delta: float) -> float:
    if not math.isfinite(mu):
        return math.nan if math.isnan(mu) else (math.inf if mu > 0 else 0.0)
    return gdp_epsilon(mu=max(mu, 0.0), delta=delta) if mu > 0 else 0.0


def _control_words(control: Control) -> str:
    if control.noise_factor != 1.0:
        return f"the training at σ/{control.noise_factor:g}"
    return f"the canary repeated {control.copies} times"


@dataclass(frozen=True, eq=False)
class Control:
    """The positive control's models: ``copies`` copies of the canary in world 1 (:meth:`Design.control`), or in
    the audit setting the training at σ/``noise_factor`` (:meth:`Design.control_noise`); the worst case of that for
    the declared mechanism (:func:`control_epsilon`, :func:`control_noise_epsilon`) and the scores table (``score``,
    ``member``)."""

    copies: int
    epsilon_worst: float
    scores: Any
    noise_factor: float = 1.0


def report(
    scores: Any,
    claim: Claim,
    n: int,
    options: AuditOptions = AuditOptions(),
    *,
    details: Mapping[str, Any] | None = None,
    every_estimate: bool = True,
    control: Control | None = None,
    same_model: bool = False,
    advice: str | None = None,
    control_look: bool | None = None,
    data_use: str | None = None,
) -> ByoReport:
    """The report of the scores of an audit (columns ``score``, higher ⇒ canary present, and ``member``, 0/1).

    The verdict: ``violation`` when the claim is below our accountant's ε (no training needed), when the training
    gives the same model for every seed while the canary changes it (``same_model``: a deterministic output that
    depends on one example is not (ε, δ)-DP for any ε with δ < 1), or when ε̂ exceeds the claimed ε;
    ``consistent`` when it does not and the positive control (``control``) is the training at σ/f
    (:func:`bounds_noise_bugs`) and is flagged with probability at least ``options.power_target`` (:func:`power`);
    ``inconclusive`` otherwise (too few runs for any ε̂ to exceed the claim, no control, a copies control — reported,
    but no bound on a σ bug —, or a control this design does not see), with the reason and ``advice``: the one change
    that would give the audit its power.

    The control is itself an audit, of a training that holds the canary k times: where the declared mechanism's worst
    case for k copies is exact (:func:`control_is_exact`), a control whose valid ε̂ exceeds it is a violation too
    (a training that leaks 1.8× its claim can pass its own look and fail this one, where its canary counts k times).

    The scores' orientation comes from the control's models (:func:`orientation`), which the verdict's bound does
    not read: a canary that lowers its own score is read the other way round (with ``directions="both"`` both ways
    are paid for instead).

    Args:
        scores: a table (DataFrame or mapping of columns) with ``score`` and ``member``.
        claim: the claim audited.
        n: examples of the data (the declared sampling rate's N).
        options: the audit's options.
        details: what to carry into the report (design, probe, timings).
        every_estimate: also compute :func:`estimates` (False: the verdict alone, for studies of many seeds).
        control: the positive control's models, or None (the verdict is then at best ``inconclusive``).
        same_model: the training gave the same model for two seeds while the canary changed it.
        advice: the change that would give an inconclusive audit its power (shown in its reason).
        data_use: why the training's reads of its data contradict the claim's sampling
            (:func:`~hsaudit.experiments.byo.values.data_use_finding`),
            or None: a violation found without the scores.
        control_look: whether the control's models are also audited against the most k copies can leak under the
            declared mechanism (:func:`control_is_exact`) — a look of its own, paid for with the others (Bonferroni).
            None: exactly when there is a control and its worst case is exact. A caller that reports before
            training the control (to skip it after a violation) passes the value it will use with the control, so
            that both reports pay for the same looks.

    Raises:
        ValueError: scores that are not finite or of the wrong shape; a world without models.
    """
    s, m = _scores(scores)
    s0, s1 = s[~m], s[m]
    if s0.size == 0 or s1.size == 0:
        raise ValueError(f"both worlds need models, got {s0.size} without and {s1.size} with the canary")
    columns = {"score": s}
    if "score_iterates" in getattr(scores, "columns", scores):
        columns["score_iterates"] = _scores({"score": scores["score_iterates"], "member": scores["member"]})[0]
    if control_look is None:
        control_look = control is not None and control_is_exact(claim, n)
    per_look = _per_look(options, len(columns) + bool(control_look))
    found = _verdict_before(claim, n, per_look, s0.size, s1.size)
    basis = found["basis"]
    checked = None
    sign = 1
    control_hat = None
    if control is not None:
        c, cm = _scores(control.scores)
        if c[~cm].size == 0 or c[cm].size == 0:
            raise ValueError("both worlds of the control need models")
        if options.directions == "one":
            sign = orientation(c[~cm], c[cm])
        checked = dataclasses.replace(
            power(sign * c[~cm], sign * c[cm], claim, n, options, copies=control.copies,
                  epsilon_worst=control.epsilon_worst, looks=len(columns) + bool(control_look)),
            orientation=sign, noise_factor=float(control.noise_factor),
        )  # fmt: skip
        threshold = None
        if control_look:  # the control is an audit too, against the most the declared mechanism allows it
            threshold = control_threshold(claim, n, control, per_look.rule, max(c[~cm].size, c[cm].size))
        if threshold is not None:
            control_hat = _epsilon(per_look.auditor(per_look.rule, claim.delta), "gdp", c[~cm], c[cm])
            checked = dataclasses.replace(checked, look=control_hat, look_threshold=threshold)
    auditor = per_look.auditor(_rule_for(per_look, basis), claim.delta)
    looks = {name: _epsilon(auditor, basis, sign * v[~m], sign * v[m]) for name, v in columns.items()}
    top = max(looks, key=looks.get)
    eps_hat = looks[top]
    of = "" if len(looks) == 1 else f" of {LOOKS[top]}, each of {len(looks)} looks at {per_look.confidence:g}"
    flipped = "" if sign == 1 else ", the scores read the other way (the control's canary lowers its score)"
    if "verdict" not in found or found["verdict"] == "inconclusive":
        why_early = found.get("reason")
        if same_model:
            found.update(
                verdict="violation",
                reason="the training gives the same model for every seed, and the canary changes it: no noise, or noise "
                "reused across runs (a deterministic output that depends on one example is not (ε, δ)-DP for any "
                "ε with δ < 1)",
            )
        elif data_use is not None:
            found.update(verdict="violation", reason=data_use_reason(data_use))
        elif eps_hat > claim.epsilon:
            found.update(
                verdict="violation",
                reason=f"the valid lower bound ε̂ = {eps_hat:.4g}{of} ({found['rule']}, {basis}, confidence "
                f"{options.confidence:g}{flipped}) exceeds the claimed ε = {claim.epsilon:.4g} at δ = {claim.delta:g}"
                + (GDP_MEANING if basis == "gdp" else "")
                + f"; a correct implementation is flagged with probability at most {1 - options.confidence:.2g}",
            )
        elif control_hat is not None and control_hat > checked.look_threshold:
            found.update(
                verdict="violation",
                reason=f"the positive control leaks more than the declared mechanism allows: its valid lower bound "
                f"ε̂ = {control_hat:.4g} ({_control_words(control)}, one of {len(columns) + 1} looks at "
                f"{per_look.confidence:g}) exceeds {checked.look_threshold:.4g}, the most the declared mechanism lets "
                f"it show (its worst case ε = {control.epsilon_worst:.4g} at δ = {claim.delta:g})",
            )
        elif why_early is not None:
            pass  # too few runs: inconclusive, said before training
        elif checked is None:
            found.update(
                verdict="inconclusive",
                reason=f"ε̂ = {eps_hat:.4g}{of} does not exceed the claimed ε = {claim.epsilon:.4g}, but the audit's "
                "power was not measured (no positive control)",
            )
        elif checked.enough and checked.look is None:
            found.update(
                verdict="inconclusive",
                reason=f"ε̂ = {eps_hat:.4g}{of} does not exceed the claimed ε = {claim.epsilon:.4g} and the control is "
                f"seen ({checked.statement()}), but the control's own leak cannot be held to the declared mechanism "
                f"here ({claim.sampling} sampling, {claim.neighbouring}: no exact trade-off curve of it), so a bug "
                "between the claim and the control could pass unseen; run the audit setting (--audit-setting: the "
                "full batch, where it is exact)",
            )
        elif checked.enough and not checked.like_sigma:
            found.update(
                verdict="inconclusive",
                reason=f"ε̂ = {eps_hat:.4g}{of} does not exceed the claimed ε = {claim.epsilon:.4g}, and "
                f"{checked.statement()}, but {copies_caveat(options.power_factor)}",
            )
        elif checked.enough:
            found.update(
                verdict="consistent",
                reason=f"ε̂ = {eps_hat:.4g}{of} ({found['rule']}, {basis}, confidence {options.confidence:g}{flipped}) "
                f"does not exceed the claimed ε = {claim.epsilon:.4g}; {checked.statement()}",
            )
        else:
            found.update(
                verdict="inconclusive",
                reason=f"ε̂ = {eps_hat:.4g}{of} does not exceed the claimed ε = {claim.epsilon:.4g}, but this design "
                f"cannot see a leak of that size: {checked.statement()}, below the {checked.target:g} a verdict needs"
                + (f"; to give it power: {advice}" if advice else ""),
            )
    found["confidence"] = float(options.confidence)
    return ByoReport(
        **found,
        epsilon_hat=eps_hat,
        looks=looks,
        power=checked,
        estimates=tuple(estimates(sign * s0, sign * s1, delta=claim.delta, options=options)) if every_estimate else (),
        details=dict(details or {}),
    )


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float):
        return "∞" if math.isinf(value) else f"{value:.4g}"
    return str(value)


def markdown(rep: Mapping[str, Any], *, figure: str | None = None) -> str:
    """A report (:meth:`ByoReport.to_dict`) as Markdown: the verdict first, the numbers beside it, every estimate, the
    claim and the design."""
    claim, acc = rep["claim"], rep["accounting"]
    lines = [
        f"# Audit of {rep['details'].get('entry', 'a training')}",
        "",
        f"**Verdict: {rep['verdict']}** — {rep['reason']}.",
        "",
        f"| ε at δ = {rep['delta']:g} | value | what it is |",
        "|---|---:|---|",
        f"| claimed | {_fmt(rep['epsilon_claimed'])} | the training's own accountant ({claim.get('accountant', 'unnamed')}) |",
        f"| ours | {_fmt(acc['epsilon'])} | {acc['method']} |",
        f"| last-iterate heuristic | {_fmt(acc['heuristic'])} | what a final-model audit of a correct implementation "
        "can reach with a worst-case canary, for linear losses (Steinke et al. 2025, Thm 1) |",
        f"| ε̂ (verdict) | {_fmt(rep['epsilon_hat'])} | valid lower bound: {rep['rule']}, {rep['basis']}, confidence "
        f"{rep['confidence']:g}, {'both directions' if rep['directions'] == 'both' else 'one direction'} |",
        "",
        f"Basis: {rep['basis']} — {rep['basis_reason']}.",
    ]
    pw = rep.get("power")
    if pw:
        lines += ["", "## Power (the positive control)", "",
                  "The same design on your training "
                  + (f"with the canary repeated {pw['copies']} times (a leak of up to " if pw.get("noise_factor", 1) == 1
                     else f"at σ/{pw['noise_factor']:g} (a leak of exactly ")
                  + f"{_fmt(pw['multiple'])}× the claim for the declared mechanism): the control's "
                  f"ε̂ = {_fmt(pw['epsilon_hat'])}; flagged with probability {pw['probability']:.2f} ({pw['resamples']} "
                  f"bootstrap resamples of its {pw['runs_out']} + {pw['runs_in']} models; a consistent verdict needs "
                  f"{_fmt(pw['target'])})."
                  + ("" if pw["orientation"] == 1 else " The control's canary lowers its score: the verdict reads "
                     "the scores the other way.")
                  + ("" if pw.get("look") is None else " Audited itself against the most the declared mechanism lets "
                     f"it show ({_fmt(pw['look_threshold'])}): ε̂ = {_fmt(pw['look'])}.")]  # fmt: skip
    if rep.get("runs_needed") is not None:
        lines.append(f"Runs per world that could exceed the claim: about {rep['runs_needed']}.")
    if len(rep.get("looks") or {}) > 1:
        lines.append("Looks (each at confidence 1 − (1 − c)/2): " + ", ".join(
            f"{LOOKS.get(k, k)} ε̂ = {_fmt(v)}" for k, v in rep["looks"].items()) + ".")  # fmt: skip
    if rep["estimates"]:
        lines += ["", "## Every estimate", "", "| estimate | valid | μ | ε |", "|---|---|---:|---:|"]
        for e in rep["estimates"]:
            eps = _fmt(e["epsilon"])
            if "epsilon_lo" in e:
                eps += f" [{_fmt(e['epsilon_lo'])}, {_fmt(e['epsilon_hi'])}]"
            lines.append(f"| {e['estimate']} | {'yes' if e['valid'] else 'no'} | {_fmt(e.get('mu'))} | {eps} |")
    lines += ["", "## Claim", "", *(f"- {k}: {v}" for k, v in claim.items())]
    if rep["details"]:
        lines += ["", "## Design and checks", "", *(f"- {k}: {_fmt(v)}" for k, v in rep["details"].items())]
    if figure:
        lines += ["", f"![the scores of both worlds and ε̂ against the claim]({figure})"]
    return "\n".join(lines) + "\n"
