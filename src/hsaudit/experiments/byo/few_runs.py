"""The few-runs audit of a user's training: M canaries per training, each in or out by its own fair coin, K trainings,
audited with the one-run bounds pooled over the K trainings (docs/byo.md, "When your training is expensive").

**Pooling is valid.** Each canary is in exactly one training, so the K trainings together are one mechanism (K
independent runs of the user's training on K disjoint canary sets): (ε, δ)-DP — or f-DP — in every canary if each
training is, with m = K·M independent fair coins: the setting of Steinke et al. (2023, Thm 3.1) and Mahloujifar et
al. (2024) with m canaries.

**Guesses.** Each training's scores are centred on their median (a function of the outputs: allowed, it removes a
shift common to one training's canaries), the pooled scores ranked, and the audit guesses "in" on the k highest and
"out" on the k lowest, abstaining elsewhere, for each k = round(f·m) of the fractions ``guesses`` declared before any
score is seen (default :data:`GUESS_FRACTIONS`); the best is kept and paid with Bonferroni
(:func:`hsaudit.audit.one_run.one_run_audit_search`).

**Two bounds, one verdict.** The counting bound (Steinke et al.) tests (ε, δ)-DP itself: valid for any mechanism.
The f-DP bound (Mahloujifar et al.) tests μ-GDP, so its ε is a bound for the claim only where the declared mechanism
*is* μ-GDP: the full batch (the audit setting). There the verdict's ε̂ is the larger of the two, each at confidence
1 − α/2 (Bonferroni across the two); elsewhere the verdict's ε̂ is the counting bound at 1 − α and the f-DP bound is
reported as information. The ceiling: the ε̂ of all guesses right (every k, at its level) — what m canaries can show
at most; a ceiling at or below the claim decides "inconclusive: more canaries or trainings" before any training.

**Power, at the same cost.** The positive control is K trainings more (not 2R): in the audit setting the training at
σ/``power_factor`` (exactly that multiple of the declared μ, full batch, through every canary), else every included
canary repeated k copies (k the least whose worst case is ``power_factor`` × the claim, as the population control).
The power is the share of half-samples of the control's m canaries (m/2 drawn without replacement, the same
guess fractions, the bound for m/2 canaries) whose verdict ε̂ exceeds the claim. Half-samples, not the bootstrap:
a resample with replacement repeats canaries, and a repeated canary's score and coin count twice among the guesses,
so the bootstrap overstated the power near the ceiling (measured: a 10× bug of the wide test mechanism called
"consistent" in 3 of 20 seeds); an audit of half the canaries has less power than the audit of all of them, so the
half-sample power errs on the side of "inconclusive". Its limit: the canaries of one training share a model, so they
are not independent draws, which understates the spread across trainings (a control seen in one training's lucky
noise draw). With K = 1 the power is the power *given this noise draw*; more trainings average it.

**Only the σ/f control makes a verdict consistent.** M canaries in one training pull on each other's scores (and the
rows on theirs): a score is signal S·[in] + noise N + interference I, and its separation S/√(N² + I²). A σ bug (σ/10,
noise not scaled by C) only shrinks N, so where I dominates its separation saturates; k copies multiply S (and only
the canaries' share of I), so a leak of the same factor through copies is always at least as visible as one through σ
— the copies control's power is no promise for a σ bug. Measured (the wide test mechanism, M = 200, K = 2, seed
2122351178): the σ/10 bug — a 10× leak — reaches separation 2.4 (noise alone would give 11) and ε̂ 4.39 below its
claim 4.98, while its 2-copies control reaches 3.5 and the ceiling, power 1.00: "consistent" for a 10× bug. The
σ/f control shrinks N alone, the least visible leak of its size among the zoo's bug classes (σ, unscaled noise, no
clipping, the optimizer re-created: each shrinks N, grows S, or both), so its power transfers to them. Outside the
audit setting the copies control is still trained and reported — not flagged, the design cannot see even a signal
leak (more canaries or trainings) — but the verdict is at best "inconclusive", naming ``--audit-setting``.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from hsaudit.audit.one_run import OneRunResult, one_run_audit, one_run_audit_search, one_run_epsilon
from hsaudit.audit.one_run_fdp import one_run_fdp_audit, one_run_fdp_epsilon
from hsaudit.experiments.byo.api import control_design
from hsaudit.experiments.byo.audit import (
    GUESS_FRACTIONS,
    Accounting,
    AuditOptions,
    accounting,
    accounting_bug,
    bounds_noise_bugs,
    copies_caveat,
    data_use_reason,
    jsonable,
)
from hsaudit.experiments.byo.train.families import (
    TABLE_COLUMNS,
    FewCheck,
    FewRunsDesign,
    check_few,
    load_few,
    prepare_few,
    train_one,
)
from hsaudit.experiments.byo.train.harness import load
from hsaudit.experiments.byo.values import data_use_of, reads_text

MAX_CANARIES = 10**6
"""The largest m :func:`canaries_needed` searches."""

OWN_NOT_CHECKED = ("not checked: a few-runs audit trains only the audit setting (make(setting)), whose full batch "
                   "removes your own configuration's sampling; the population audit's check (--runs R) tests it")
"""The report's reads line for the user's own configuration in the audit setting (:func:`check_reads`)."""


@dataclass(frozen=True)
class Bounds:
    """The bounds of one pooled table: the verdict's ε̂ and basis, both bounds (the best k each), the ceiling."""

    epsilon_hat: float
    basis: str
    counting: OneRunResult
    fdp: OneRunResult
    ceiling: float


def _ks(m: int, fractions: Sequence[float]) -> list[tuple[int, int]]:
    """(k, k) for every fraction, k = round(f·m) ≥ 1 and 2k ≤ m, without repeats."""
    out = []
    for f in fractions:
        if not 0.0 < float(f) <= 0.5:
            raise ValueError(f"a guess fraction must be in (0, 0.5], got {f!r}")
        k = min(max(1, round(float(f) * m)), m // 2)
        if k >= 1 and (k, k) not in out:
            out.append((k, k))
    if not out:
        raise ValueError(f"no guess fits {m} canaries")
    return out


def gdp_valid(ours: Accounting) -> bool:
    """Whether the declared mechanism is μ-GDP (the full batch), so that the f-DP bound's ε bounds the claim."""
    return ours.full_batch_mu is not None


def ceiling(m: int, delta: float, confidence: float, fractions: Sequence[float], gdp: bool) -> float:
    """The verdict's ε̂ when every guess is right: the most m canaries can show with these guesses."""
    ks = _ks(m, fractions)
    level = 1.0 - (1.0 - confidence) / (len(ks) * (2 if gdp else 1))
    best = max(one_run_epsilon(canaries=m, guesses=2 * k, correct=2 * k, delta=delta, confidence=level) for k, _ in ks)
    if gdp:
        best = max(best, *(one_run_fdp_epsilon(canaries=m, guesses=2 * k, correct=2 * k, delta=delta,
                                                confidence=level) for k, _ in ks))  # fmt: skip
    return float(best)


def canaries_needed(epsilon: float, delta: float, confidence: float, fractions: Sequence[float], gdp: bool,
                    start: int) -> int | None:  # fmt: skip
    """The least m (doubling from ``start``) whose :func:`ceiling` exceeds ``epsilon``, or None beyond
    :data:`MAX_CANARIES`."""
    m = max(2, int(start))
    while m <= MAX_CANARIES:
        if ceiling(m, delta, confidence, fractions, gdp) > epsilon:
            return m
        m *= 2
    return None


def centred(table: pd.DataFrame) -> np.ndarray:
    """The scores, each training's centred on its median (the guesses' input; module docstring)."""
    s = table["score"].to_numpy(float)
    if "training" not in table:
        return s - np.median(s)
    return s - table.groupby("training")["score"].transform("median").to_numpy(float)


def bounds(scores: np.ndarray, members: np.ndarray, *, delta: float, confidence: float,
           fractions: Sequence[float], gdp: bool) -> Bounds:  # fmt: skip
    """Both one-run bounds of pooled (centred) scores, and the verdict's ε̂ (module docstring)."""
    s, b = np.asarray(scores, dtype=float), np.asarray(members).astype(bool)
    if not np.isfinite(s).all():
        raise ValueError("scores must be finite (a NaN score is a diverged training)")
    ks = _ks(s.size, fractions)
    level = 1.0 - (1.0 - confidence) / (2 if gdp else 1)
    counting = one_run_audit_search(s, b, ks=ks, delta=delta, confidence=level, audit=one_run_audit)
    fdp = one_run_audit_search(s, b, ks=ks, delta=delta, confidence=level, audit=one_run_fdp_audit)
    eps, basis = counting.epsilon, "assumption-free"
    if gdp and fdp.epsilon > eps:
        eps, basis = fdp.epsilon, "gdp"
    return Bounds(float(eps), basis, counting, fdp, ceiling(s.size, delta, confidence, fractions, gdp))


@dataclass(frozen=True)
class FewPower:
    """What the positive control of a few-runs audit measured (module docstring).

    Attributes:
        probability: the share of half-samples of the control's canaries whose verdict ε̂ exceeds the claim.
        epsilon_hat: the control's own verdict ε̂.
        epsilon_worst: the control's worst case for the declared mechanism; ``multiple``: over the claim.
        copies, noise_factor: what the control changed (k copies of each included canary, or σ/f).
        resamples, target: the half-samples drawn; the probability a consistent verdict needs.
        trainings: the control's trainings.
    """

    probability: float
    epsilon_hat: float
    epsilon_worst: float
    multiple: float
    copies: int
    noise_factor: float
    resamples: int
    target: float
    trainings: int

    @property
    def enough(self) -> bool:
        return self.probability >= self.target

    @property
    def like_sigma(self) -> bool:
        """Whether this control's power can make a verdict consistent: the population audit's rule
        (:func:`~hsaudit.experiments.byo.audit.bounds_noise_bugs`)."""
        return bounds_noise_bugs(self.noise_factor)

    def statement(self) -> str:
        what = (f"at σ/{self.noise_factor:g} (a leak of {self.multiple:.3g}× the claim through every canary)"
                if self.noise_factor != 1.0 else f"with every included canary repeated {self.copies} times "
                f"({self.copies}× this training's own leak: {self.multiple:.3g}× the claim if the training is "
                "correct)")  # fmt: skip
        return (f"the same audit of this training {what} flags it with probability {self.probability:.2f} (half-"
                f"samples of its canaries in {self.trainings} control training(s), {self.resamples} resamples; the control's "
                f"own ε̂ = {self.epsilon_hat:.4g})")  # fmt: skip


def power(control: pd.DataFrame, claim: Any, options: AuditOptions, fractions: Sequence[float], gdp: bool, *,
          epsilon_worst: float, copies: int, noise_factor: float) -> FewPower:  # fmt: skip
    """The probability that this design flags the control: half-samples of its canaries (module docstring)."""
    s, b = centred(control), control["member"].to_numpy().astype(bool)
    kw = dict(delta=claim.delta, confidence=options.confidence, fractions=fractions, gdp=gdp)
    own = bounds(s, b, **kw).epsilon_hat
    rng = np.random.default_rng([int(options.seed), 7532])
    flagged = 0
    for _ in range(int(options.power_resamples)):
        i = rng.choice(s.size, size=max(1, s.size // 2), replace=False)
        flagged += bounds(s[i], b[i], **kw).epsilon_hat > claim.epsilon
    return FewPower(probability=flagged / int(options.power_resamples), epsilon_hat=own,
                    epsilon_worst=float(epsilon_worst), multiple=float(epsilon_worst) / claim.epsilon,
                    copies=int(copies), noise_factor=float(noise_factor), resamples=int(options.power_resamples),
                    target=float(options.power_target), trainings=int(control["training"].nunique()))  # fmt: skip


@dataclass(frozen=True)
class FewRunsReport:
    """The few-runs audit of a user's training: the verdict (same words and rules as the population audit's), both
    bounds, the ceiling, the power and the cost."""

    verdict: str
    reason: str
    claim: Any
    n: int
    accounting: Accounting
    canaries: int
    trainings: int
    confidence: float
    guesses: tuple[float, ...]
    ceiling: float
    epsilon_hat: float | None = None
    basis: str | None = None
    counting: OneRunResult | None = None
    fdp: OneRunResult | None = None
    power: FewPower | None = None
    canaries_needed: int | None = None
    model_steps: int = 0
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = {
            "verdict": self.verdict,
            "reason": self.reason,
            "epsilon_hat": self.epsilon_hat,
            "basis": self.basis,
            "epsilon_claimed": self.claim.epsilon,
            "delta": self.claim.delta,
            "epsilon_ours": self.accounting.epsilon,
            "ceiling": self.ceiling,
            "canaries": self.canaries,
            "trainings": self.trainings,
            "m": self.canaries * self.trainings,
            "confidence": self.confidence,
            "guesses": list(self.guesses),
            "counting": None if self.counting is None else self.counting.to_dict(),
            "fdp": None if self.fdp is None else self.fdp.to_dict(),
            "power": None if self.power is None else dict(dataclasses.asdict(self.power),
                                                          statement=self.power.statement()),
            "canaries_needed": self.canaries_needed,
            "model_steps": self.model_steps,
            "n": self.n,
            "claim": self.claim.to_dict(),
            "details": dict(self.details),
        }  # fmt: skip
        return jsonable(out)


def check_reads(found: Mapping[str, Any], claim: Any, in_setting: bool) -> tuple[str | None, dict[str, str]]:
    """The data-use finding of the check's reads (``found``: its probe as a dict, probe.json) against the claim's
    sampling (:func:`~hsaudit.experiments.byo.values.data_use_of`), and the report's lines on the reads. Only the
    check's own training is read: in the audit setting the user's own configuration is not trained
    (:data:`OWN_NOT_CHECKED`)."""
    uses, trainings = found.get("uses"), int(found["use_trainings"])
    lines = {"reads of each row (check)": reads_text(uses, tuple(found.get("whole", ())), trainings, claim)}
    if in_setting:
        lines["reads of each row (own configuration)"] = OWN_NOT_CHECKED
    return data_use_of(claim, uses, trainings), lines


def before_training(claim: Any, n: int, options: AuditOptions, *, canaries: int, trainings: int,
                    fractions: Sequence[float] = GUESS_FRACTIONS, data_use: str | None = None,
                    details: Mapping[str, Any] | None = None) -> FewRunsReport | None:  # fmt: skip
    """The verdict that needs no training — an accounting bug, the check's reads of the data against the claim's
    sampling (``data_use``: :func:`check_reads`'s finding), or a ceiling at or below the claim — or None."""
    ours = accounting(claim, n)
    gdp = gdp_valid(ours)
    m = int(canaries) * int(trainings)
    top = ceiling(m, claim.delta, options.confidence, fractions, gdp)
    common = dict(claim=claim, n=int(n), accounting=ours, canaries=int(canaries), trainings=int(trainings),
                  confidence=float(options.confidence), guesses=tuple(float(f) for f in fractions), ceiling=top,
                  details=dict(details or {}))  # fmt: skip
    if accounting_bug(claim, ours):
        return FewRunsReport("violation", f"accounting: the claimed ε = {claim.epsilon:.4g} is below our accountant's "
                             f"{ours.epsilon:.4g} for the declared mechanism ({ours.method}); nothing needs training "
                             "to show it", **common)  # fmt: skip
    if data_use is not None:
        return FewRunsReport("violation", data_use_reason(data_use), **common)
    if top <= claim.epsilon:
        need = canaries_needed(claim.epsilon, claim.delta, options.confidence, fractions, gdp, 2 * m)
        more = (f"about {need} canaries in all (K·M) could" if need else f"more than {MAX_CANARIES} canaries would")
        return FewRunsReport("inconclusive", f"too few canaries: even every guess right gives at most ε̂ = {top:.4g} ≤ "
                             f"the claimed {claim.epsilon:.4g} with {m} canaries; {more} exceed it (more canaries "
                             "per training, or more trainings)", canaries_needed=need, **common)  # fmt: skip
    return None


def few_report(table: pd.DataFrame, claim: Any, n: int, options: AuditOptions = AuditOptions(), *,
               fractions: Sequence[float] = GUESS_FRACTIONS, control: FewPower | None = None,
               details: dict[str, Any] | None = None, advice: str | None = None) -> FewRunsReport:  # fmt: skip
    """The report of a few-runs scores table (:data:`~hsaudit.experiments.byo.train.families.TABLE_COLUMNS`): the
    verdict — violation when the claim is an accounting bug or the verdict's ε̂ exceeds it; inconclusive when
    the ceiling cannot exceed it, or the control is not flagged with probability ≥ the target (or not trained), or
    the control is the copies one (:attr:`FewPower.like_sigma`: its power is no promise for a σ bug), or the ceiling
    is below the control's leak (measured on the zoo's wide twin, K = 2, M = 100: two bugs of 4× and more came back
    consistent beside a control flagged with power 0.82–1.00, their ε̂ just below the claim: near the ceiling a
    flag needs every guess right, and a bug that saturates the score may miss it); consistent otherwise; ``advice``: another change that could give an inconclusive audit its power."""
    trainings = int(table["training"].nunique()) if "training" in table else 1
    canaries = len(table) // max(trainings, 1)
    early = before_training(claim, n, options, canaries=canaries, trainings=trainings, fractions=fractions)
    if early is not None and early.verdict == "violation":
        return early
    ours = accounting(claim, n)
    found = bounds(centred(table), table["member"].to_numpy(), delta=claim.delta, confidence=options.confidence,
                   fractions=fractions, gdp=gdp_valid(ours))  # fmt: skip
    common = dict(claim=claim, n=int(n), accounting=ours, canaries=canaries, trainings=trainings,
                  confidence=float(options.confidence), guesses=tuple(float(f) for f in fractions),
                  ceiling=found.ceiling, epsilon_hat=found.epsilon_hat, basis=found.basis, counting=found.counting,
                  fdp=found.fdp, power=control, details=dict(details or {}))  # fmt: skip
    eps = found.epsilon_hat
    what = (f"ε̂ = {eps:.4g} ({'f-DP, Mahloujifar et al.' if found.basis == 'gdp' else 'counting, Steinke et al.'}, "
            f"{canaries} canaries × {trainings} training(s), confidence {options.confidence:g})")  # fmt: skip
    if eps > claim.epsilon:
        return FewRunsReport("violation", f"the valid lower bound {what} exceeds the claimed ε = {claim.epsilon:.4g} "
                             f"at δ = {claim.delta:g}; a correct implementation is flagged with probability at most "
                             f"{1 - options.confidence:.2g}", **common)  # fmt: skip
    if early is not None:
        return dataclasses.replace(early, **{k: v for k, v in common.items() if k not in ("ceiling",)},
                                   ceiling=found.ceiling)  # fmt: skip
    if control is None:
        return FewRunsReport("inconclusive", f"{what} does not exceed the claimed ε = {claim.epsilon:.4g}, but the "
                             "audit's power was not measured (no positive control)", **common)  # fmt: skip
    if control.enough and control.like_sigma and found.ceiling < control.epsilon_worst:
        return FewRunsReport("inconclusive", f"{what} does not exceed the claimed ε = {claim.epsilon:.4g}, and "
                             f"{control.statement()}, but the ceiling {found.ceiling:.4g} is below the control's "
                             f"leak ({control.epsilon_worst:.4g}): flagging it takes nearly every guess right, a power "
                             "no promise can rest on; more canaries per training or more trainings", **common)  # fmt: skip
    if control.enough and control.like_sigma:
        return FewRunsReport("consistent", f"{what} does not exceed the claimed ε = {claim.epsilon:.4g}; "
                             f"{control.statement()}", **common)  # fmt: skip
    if control.enough:
        return FewRunsReport("inconclusive", f"{what} does not exceed the claimed ε = {claim.epsilon:.4g}, and "
                             f"{control.statement()}, but {copies_caveat(options.power_factor)}",
                             **common)  # fmt: skip
    return FewRunsReport("inconclusive", f"{what} does not exceed the claimed ε = {claim.epsilon:.4g}, but this design "
                         f"cannot see a leak of that size: {control.statement()}, below the {control.target:g} a "
                         "verdict needs; to give it power: more canaries per training or more trainings (the ceiling "
                         f"is {found.ceiling:.4g})" + (f", or {advice}" if advice else ""), **common)  # fmt: skip


@dataclass(frozen=True, eq=False)
class FewResult:
    """A few-runs audit's report, its scores and the control's (None when not trained)."""

    report: FewRunsReport
    scores: pd.DataFrame
    control: pd.DataFrame | None = None


def train_table(design: FewRunsDesign, loaded: Any = None, *, trainings: Sequence[int] | None = None,
                progress: bool = False, checked: FewCheck | None = None) -> pd.DataFrame:  # fmt: skip
    """The scores table of ``design``'s trainings (all, or ``trainings``), one row per (training, canary); ``checked``:
    the audit's check (:func:`~hsaudit.experiments.byo.train.families.check_few`), else it is run here."""
    prepared = prepare_few(design, loaded, checked)
    chosen = range(design.trainings) if trainings is None else trainings
    if progress:
        from tqdm.auto import tqdm

        chosen = tqdm(list(chosen), desc="trainings", unit="training")
    frames = [pd.DataFrame(train_one(prepared, k)) for k in chosen]
    return pd.concat(frames, ignore_index=True)[list(TABLE_COLUMNS)]


def audit_tables(table: pd.DataFrame, claim: Any, n: int, options: AuditOptions, *, fractions: Sequence[float],
                 details: dict[str, Any], in_setting: bool,
                 control: tuple[pd.DataFrame, FewRunsDesign, float] | None = None) -> FewRunsReport:  # fmt: skip
    """The report of the audit's scores table and — unless its verdict is a violation — of the positive control's
    power, ``control`` = (its scores table, its design, its worst case); ``in_setting``: the audit ran in the audit
    setting (else the report advises it)."""
    found = few_report(table, claim, n, options, fractions=fractions, details=details)
    if control is None or found.verdict == "violation":
        return found
    twin_table, twin, worst = control
    checked = power(twin_table, claim, options, fractions, gdp_valid(found.accounting), epsilon_worst=worst,
                    copies=twin.copies, noise_factor=twin.noise_factor)  # fmt: skip
    advice = None if in_setting else "the audit setting (--audit-setting)"
    return few_report(table, claim, n, options, fractions=fractions, control=checked, details=details, advice=advice)


def audit_training_few(design: FewRunsDesign, options: AuditOptions = AuditOptions(), *,
                       fractions: Sequence[float] = GUESS_FRACTIONS, control: bool = True,
                       progress: bool = False) -> FewResult:  # fmt: skip
    """The few-runs audit end to end: the verdict that needs no training, else the check (its reads of the data that
    contradict the claim's sampling are a violation before any training: :func:`check_reads`), K trainings of M
    canaries each, their bounds, and (unless the verdict is a violation) the positive control's K trainings (the audit's
    canaries) and its power. The workflow runs the same steps as jobs (workflow/rules/byo.smk).

    Raises:
        ValueError: as :func:`~hsaudit.experiments.byo.train.families.prepare_few`.
    """
    design, loaded = load_few(design)
    claim, n = loaded.training.claim, loaded.n
    early = before_training(claim, n, options, canaries=design.canaries, trainings=design.trainings,
                            fractions=fractions)  # fmt: skip
    steps = int(claim.steps)
    if early is not None:
        return FewResult(early, pd.DataFrame(columns=list(TABLE_COLUMNS)))
    start = time.perf_counter()
    checked = check_few(design, loaded)
    use, reads = check_reads(dataclasses.asdict(checked.probe), claim, design.setting is not None)
    details = {"entry": design.entry, "canary family": design.canary, "background": design.background,
               "seed": design.seed, **reads}  # fmt: skip
    if use is not None:  # the check's reads contradict the claim's sampling: no training needed to show it
        found = before_training(claim, n, options, canaries=design.canaries, trainings=design.trainings,
                                fractions=fractions, data_use=use, details=details)  # fmt: skip
        return FewResult(found, pd.DataFrame(columns=list(TABLE_COLUMNS)))
    table = train_table(design, loaded, progress=progress, checked=checked)
    details.update({"score baseline": str(table["baseline"].iloc[0]), "audit seconds": time.perf_counter() - start})
    model_steps = design.trainings * steps
    found = few_report(table, claim, n, options, fractions=fractions, details=details)
    twin_table = None
    if control and found.verdict != "violation":
        twin, worst = control_design(design, claim, n, options)  # a few-runs design reads as a population one
        twin_loaded = loaded if twin.noise_factor == 1.0 else load(twin.base())
        twin_table = train_table(twin, twin_loaded, progress=progress, checked=checked)
        model_steps += twin.trainings * int(twin_loaded.training.claim.steps)
        found = audit_tables(table, claim, n, options, fractions=fractions, details=details,
                             in_setting=design.setting is not None, control=(twin_table, twin, worst))  # fmt: skip
    return FewResult(dataclasses.replace(found, model_steps=model_steps), table, twin_table)


def markdown_few(rep: dict[str, Any]) -> str:
    """A few-runs report (:meth:`FewRunsReport.to_dict`) as Markdown."""
    def f(v: Any) -> str:
        return "–" if v is None else (f"{v:.4g}" if isinstance(v, float) else str(v))

    lines = [f"# Few-runs audit of {rep['details'].get('entry', 'a training')}", "",
             f"**Verdict: {rep['verdict']}** — {rep['reason']}.", "",
             "| quantity | value |", "|---|---:|",
             f"| claimed ε at δ = {rep['delta']:g} | {f(rep['epsilon_claimed'])} |",
             f"| ours | {f(rep['epsilon_ours'])} |",
             f"| ε̂ (verdict, {rep['basis'] or '–'}) | {f(rep['epsilon_hat'])} |",
             f"| counting bound (Steinke et al. 2023) | {f((rep['counting'] or {}).get('epsilon'))} |",
             f"| f-DP bound (Mahloujifar et al. 2024) | {f((rep['fdp'] or {}).get('epsilon'))} |",
             f"| ceiling (every guess right) | {f(rep['ceiling'])} |",
             f"| canaries × trainings | {rep['canaries']} × {rep['trainings']} |",
             f"| model-steps paid (audit + control) | {rep['model_steps']} |"]  # fmt: skip
    if rep.get("power"):
        lines += ["", f"Power: {rep['power']['statement']}."]
    lines += ["", "## Claim", "", *(f"- {k}: {v}" for k, v in rep["claim"].items())]
    if rep["details"]:
        lines += ["", "## Design", "", *(f"- {k}: {f(v)}" for k, v in rep["details"].items())]
    return "\n".join(lines) + "\n"
