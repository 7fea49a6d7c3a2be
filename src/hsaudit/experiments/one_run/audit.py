"""The audit table of the one-run study: audits in one training run against population audits of the same DP-SGD
configuration, with the compute of each (docs/one_run.md).

For every number of models M (:class:`hsaudit.experiments.one_run.plan.OneRunAudit`): the M·m canaries of the first
M models are pooled (each included independently with probability ½, so the pool is one "run" of M·m canaries in
the sense of Steinke et al. 2023) and audited with both one-run bounds — the counting bound
(:func:`hsaudit.audit.one_run.one_run_audit`) and the f-DP (μ-GDP) bound of Mahloujifar et al. 2024
(:func:`hsaudit.audit.one_run_fdp.one_run_fdp_audit`) — each the best of a few guess sizes paid for with Bonferroni
(:func:`hsaudit.audit.one_run.one_run_audit_search`). Beside them, the population audit of A_GC-R (one canary,
R models, half inserted) at its last step, from the per-step audit tables of :func:`hsaudit.experiments.cebere.audit.audit_table`
(the project's auditor, :class:`hsaudit.audit.auditor.Auditor`, under the configured threshold rule): its GDP ε̂
and its assumption-free (ε, δ) bound from the same Clopper–Pearson bounds.

Every one-run point is audited under each configured score (:data:`SCORES`, ``one_run.scores``) of the same models:
A_GC-R's raw score, or one of four drift corrections that read no inclusion bit (:func:`corrected_scores`), so each is
post-processing of the released models (and, for ``noiseless``, of what the adversary knows before training; for
``reference`` and ``calibrated``, of reference models trained independently of every audited bit) and both one-run
bounds stay valid.

Compute is counted in model-steps: a model trained for T steps costs T, whatever its canaries (M·T for a one-run
point, R·T for a population point; the crafting of ``least_moving`` coordinates adds one noiseless simulation, T;
the ``noiseless`` score adds its one canary-free, noise-free run, T, shared by the M models because they share θ0
and the batches; the ``reference`` and ``calibrated`` scores their K reference models, K·T each, shared the same
way).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt
import pandas as pd

from hsaudit.audit.one_run import one_run_audit, one_run_audit_search, one_run_delta_term
from hsaudit.audit.one_run_fdp import one_run_fdp_audit
from hsaudit.experiments.one_run.values import SCORES
from hsaudit.util.seeding import rng_for

COLUMNS = (
    "family", "method", "score", "models", "runs_per_world", "model_steps", "canaries", "epsilon", "mu", "epsilon_upper",
    "guesses", "correct", "k_plus", "k_minus", "delta_term", "bound", "valid", "confidence", "delta", "steps",
    "canaries_per_model", "coordinates",
)
"""The columns of :func:`one_run_table` (and of the figure's CSV)."""

METHODS = {
    "counting": "one run: counting (Steinke et al. 2023)",
    "fdp": "one run: f-DP, GDP (Mahloujifar et al. 2024)",
    "population_gdp": "population: GDP",
    "population_free": "population: (ε, δ), assumption-free",
    "population_gdp_valid": "population: GDP, valid rule",
    "ceiling_counting": "ceiling: ideal canaries, counting",
    "ceiling_fdp": "ceiling: ideal canaries, f-DP",
}
"""Method labels of the table, in legend order."""

CEILINGS = ("valid", "paper", "none")
"""The μ of the ideal canaries of the ceiling series (``one_run.ceiling``): the largest population's valid μ̂ or its
paper-rule μ̂ (``mu_valid`` / ``mu`` of its last step), or no ceiling."""

SCORE_REASONS = {
    "median_centred": "undefined at M = 1: the median over one model is its own score (every centred score 0)",
    "standardised": "undefined: a coordinate's MAD over the M models is 0 (always at M = 1), so its scores have no scale",
    "reference": "undefined: a coordinate's standard deviation over the reference models is 0 (or fewer than 2 of them)",
    "calibrated": "undefined: a coordinate has fewer than 2 reference models with or without its canary, or no spread",
}
"""Why a score has no point at some M (its row is kept, ε̂ NaN, the reason in ``bound``)."""

MAD_SCALE = 1.4826
"""1/Φ⁻¹(¾): 1.4826·MAD estimates the standard deviation of a Gaussian sample (``standardised``)."""


def score_undefined(
    scores: npt.ArrayLike,
    score: str,
    *,
    reference: npt.ArrayLike | None = None,
    calibration: tuple[npt.ArrayLike, npt.ArrayLike] | None = None,
) -> bool:
    """Whether ``score`` is undefined on the raw scores ``[M, m]`` of a point (:data:`SCORE_REASONS`): ``median_centred``
    at M = 1, ``standardised`` where some coordinate's MAD over the M models is 0 (always at M = 1), ``reference``
    where the reference models ``[K, m]`` are fewer than 2 or some coordinate's standard deviation over them is 0,
    ``calibrated`` where some coordinate has fewer than 2 reference models on a side of its own bit or a pooled
    variance of 0. Reads the audited models' scores only, never their bits.

    >>> score_undefined([[1.0, 2.0]], "standardised"), score_undefined([[1.0, 2.0], [3.0, 5.0]], "standardised")
    (True, False)
    """
    s = np.asarray(scores, dtype=np.float64)
    if score == "median_centred":
        return s.shape[0] < 2
    if score == "standardised":
        return bool(s.shape[0] < 2 or (_mad(s) == 0).any())
    if score == "reference" and reference is not None:
        r = np.asarray(reference, dtype=np.float64)
        return bool(r.ndim != 2 or r.shape[0] < 2 or (r.std(axis=0, ddof=1) == 0).any())
    if score == "calibrated" and calibration is not None:
        b = np.asarray(calibration[0]).astype(bool)
        ones = b.sum(axis=0)
        if (ones < 2).any() or (b.shape[0] - ones < 2).any():
            return True
        return bool((_calibrated_laws(b, np.asarray(calibration[1], dtype=np.float64))[2] == 0).any())
    return False


def _calibrated_laws(bits: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per coordinate of reference models with known bits ``[K, m]``: the mean score without (μ⁰) and with (μ¹) the
    canary and the pooled within-group variance σ², each ``[m]``."""
    b = bits.astype(bool)
    n1, n0 = b.sum(axis=0), (~b).sum(axis=0)
    mu1 = np.where(b, scores, 0.0).sum(axis=0) / n1
    mu0 = np.where(~b, scores, 0.0).sum(axis=0) / n0
    ss = np.where(b, (scores - mu1) ** 2, (scores - mu0) ** 2).sum(axis=0)
    return mu0, mu1, ss / (n1 + n0 - 2)


def _mad(s: np.ndarray) -> np.ndarray:
    """The median absolute deviation of every column of ``s`` from its median, ``[1, m]``."""
    return np.median(np.abs(s - np.median(s, axis=0, keepdims=True)), axis=0, keepdims=True)


def guess_sizes(pooled: int, fractions: Sequence[float], counts: Sequence[int] = ()) -> list[tuple[int, int]]:
    """(k_plus, k_minus) for each fraction f of the ``pooled`` canaries, k = round(f·n/2) on each side (at least 1),
    then for each absolute count k of ``counts`` (at most n/2), duplicates dropped.

    >>> guess_sizes(100, [0.02, 0.1, 0.5, 1.0])
    [(1, 1), (5, 5), (25, 25), (50, 50)]
    >>> guess_sizes(1000, [0.5], counts=[5, 20])
    [(250, 250), (5, 5), (20, 20)]
    """
    n = int(pooled)
    if n < 2:
        raise ValueError(f"need at least 2 canaries to guess on both sides, got {n}")
    out: list[tuple[int, int]] = []
    sizes = []
    for f in fractions:
        if not 0.0 < float(f) <= 1.0:
            raise ValueError(f"guess fractions must be in (0, 1], got {f}")
        sizes.append(int(round(float(f) * n / 2)))
    for k in counts:
        if int(k) < 1 or int(k) != k:
            raise ValueError(f"guess counts must be positive integers, got {k}")
        sizes.append(int(k))
    for size in sizes:
        k = min(max(1, size), n // 2)
        if (k, k) not in out:
            out.append((k, k))
    return out


def load_one_run_shards(paths: Sequence[str | os.PathLike]) -> tuple[np.ndarray, np.ndarray]:
    """Bits and scores ``[models, m]`` of one-run shard files, in shard order."""
    bits, scores, coords = [], [], None
    for path in paths:
        with np.load(path) as f:
            bits.append(f["bits"])
            scores.append(f["scores"])
            if coords is None:
                coords = f["coordinates"]
            elif not np.array_equal(coords, f["coordinates"]):
                raise ValueError(f"shard {path} has other canary coordinates than the first shard")
    if not bits:
        raise ValueError("load_one_run_shards needs at least one shard")
    return np.concatenate(bits), np.concatenate(scores)


def corrected_scores(
    scores: npt.ArrayLike,
    score: str,
    *,
    noiseless: npt.ArrayLike | None = None,
    reference: npt.ArrayLike | None = None,
    shift: float | None = None,
    calibration: tuple[npt.ArrayLike, npt.ArrayLike] | None = None,
) -> np.ndarray:
    """The ``[M, m]`` scores under ``score`` (:data:`SCORES`), from the raw scores of M models alone.

    Takes no inclusion bit by construction: a drift correction that read the bits would not be post-processing and
    would void the one-run bounds; one that reads only the released models (``median_centred``, ``standardised``:
    the median and MAD of each coordinate over the M released models) or values fixed
    before training (``noiseless``: θ0, the batches and the data are drawn independently of the bits, and the
    gradient canaries are added by the bits alone, never subsampled with the batches) or models trained
    independently of every audited bit (``reference``: canary-free, with noise of their own; ``calibrated``: with
    canary bits and noise of their own) leaves both bounds valid.

    Args:
        scores: raw scores ``[M, m]`` (:func:`load_one_run_shards`; higher ⇒ included).
        score: one of :data:`SCORES`.
        noiseless: ``noiseless`` only: s⁰ ``[m]``, the raw score of every canary coordinate in the canary-free,
            noise-free run from the same θ0 and batches.
        reference: ``reference`` only: the raw scores ``[K, m]`` of K canary-free reference models (same θ0,
            batches and σ, every bit 0, noise of their own).
        shift: ``reference`` only: Δ, the nominal shift one canary gives its score (η·C·⌊T/k⌋/B, > 0).
        calibration: ``calibrated`` only: (bits, scores), each ``[K, m]``, of K reference models with their own
            known canary bits (never the audited models' bits).

    Raises:
        ValueError: unknown score, ``median_centred`` with fewer than 2 models, ``standardised`` where a
            coordinate's MAD is 0 (:func:`score_undefined`), ``noiseless`` without s⁰ of shape ``[m]``,
            ``reference`` without reference scores ``[K ≥ 2, m]`` of nonzero spread or without Δ > 0,
            ``calibrated`` without (bits, scores) ``[K, m]`` that give every coordinate 2 models on each side of its
            bit and a pooled variance > 0.

    >>> corrected_scores([[1.0, 5.0], [3.0, 9.0]], "median_centred").tolist()
    [[-1.0, -2.0], [1.0, 2.0]]
    >>> corrected_scores([[1.0, 5.0]], "noiseless", noiseless=[0.5, 4.0]).tolist()
    [[0.5, 1.0]]

    ``standardised`` divides the centred scores by 1.4826 times the coordinate's MAD: for (0, 1, 4) the median is
    1 and the absolute deviations (1, 0, 3) have median 1; for (10, 20, 30) the median is 20 and the MAD 10.

    >>> (corrected_scores([[0.0, 10.0], [1.0, 20.0], [4.0, 30.0]], "standardised") * MAD_SCALE).round(12).tolist()
    [[-1.0, -1.0], [0.0, 0.0], [3.0, 1.0]]

    ``reference`` is the log-likelihood ratio Δ·(s − μ − Δ/2)/σ² of N(μ + Δ, σ²) against N(μ, σ²), μ and σ from
    the reference models: for references (0, 2) on the first coordinate μ = 1, σ² = 2, and with Δ = 2 a score of 3
    gives 2·(3 − 1 − 1)/2 = 1; on the second (10, 14) μ = 12, σ² = 8, and 12 gives 2·(12 − 12 − 1)/8 = −0.25.

    >>> corrected_scores([[3.0, 12.0]], "reference", reference=[[0.0, 10.0], [2.0, 14.0]], shift=2.0).tolist()
    [[1.0, -0.25]]

    ``calibrated`` measures both laws: reference scores (0, 2) without the canary and (4, 6) with it give μ⁰ = 1,
    μ¹ = 5 and a pooled variance (1 + 1 + 1 + 1)/2 = 2, so a score of 4 gives (5 − 1)·(4 − 3)/2 = 2.

    >>> corrected_scores([[4.0]], "calibrated", calibration=([[0], [0], [1], [1]], [[0.0], [2.0], [4.0], [6.0]])).tolist()
    [[2.0]]
    """
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 2:
        raise ValueError(f"scores must be [models, m], got shape {s.shape}")
    if score == "raw":
        return s.copy()
    if score == "median_centred":
        if s.shape[0] < 2:
            raise ValueError(f"median_centred needs at least 2 models, got {s.shape[0]} ({SCORE_REASONS[score]})")
        return s - np.median(s, axis=0, keepdims=True)
    if score == "standardised":
        if score_undefined(s, score):
            raise ValueError(f"standardised needs every coordinate's MAD over the models > 0 ({SCORE_REASONS[score]})")
        return (s - np.median(s, axis=0, keepdims=True)) / (MAD_SCALE * _mad(s))
    if score == "noiseless":
        if noiseless is None or np.shape(noiseless) != (s.shape[1],):
            raise ValueError(f"noiseless needs s0 of shape ({s.shape[1]},), got "
                             f"{None if noiseless is None else np.shape(noiseless)}")
        return s - np.asarray(noiseless, dtype=np.float64)[None, :]
    if score == "reference":
        if reference is None or np.ndim(reference) != 2 or np.shape(reference)[1] != s.shape[1]:
            raise ValueError(f"reference needs reference scores of shape (K, {s.shape[1]}), got "
                             f"{None if reference is None else np.shape(reference)}")
        if shift is None or not float(shift) > 0:
            raise ValueError(f"reference needs the canary's nominal shift > 0, got {shift}")
        if score_undefined(s, score, reference=reference):
            raise ValueError(f"reference needs K >= 2 reference models with every coordinate's sd > 0 "
                             f"({SCORE_REASONS[score]})")
        r = np.asarray(reference, dtype=np.float64)
        mean, var = r.mean(axis=0, keepdims=True), r.var(axis=0, ddof=1, keepdims=True)
        return float(shift) * (s - mean - float(shift) / 2) / var
    if score == "calibrated":
        if calibration is None or np.shape(calibration[0]) != np.shape(calibration[1]) or np.ndim(calibration[1]) != 2 \
                or np.shape(calibration[1])[1] != s.shape[1]:
            raise ValueError(f"calibrated needs (bits, scores) of reference models, each of shape (K, {s.shape[1]})")
        if score_undefined(s, score, calibration=calibration):
            raise ValueError(f"calibrated: {SCORE_REASONS[score]}")
        mu0, mu1, var = _calibrated_laws(np.asarray(calibration[0]), np.asarray(calibration[1], dtype=np.float64))
        return (mu1 - mu0)[None, :] * (s - ((mu0 + mu1) / 2)[None, :]) / var[None, :]
    raise ValueError(f"score must be one of {SCORES}, got {score!r}")


def one_run_rows(
    bits: np.ndarray,
    scores: np.ndarray,
    *,
    models: Sequence[int],
    steps: int,
    guess_fractions: Sequence[float],
    delta: float,
    confidence: float,
    guess_counts: Sequence[int] = (),
    names: tuple[str, str] = ("counting", "fdp"),
    score: str = "raw",
    noiseless: npt.ArrayLike | None = None,
    reference: npt.ArrayLike | None = None,
    shift: float | None = None,
    calibration: tuple[npt.ArrayLike, npt.ArrayLike] | None = None,
) -> list[dict]:
    """The one-run points: for each M, the two bounds on the pooled canaries of the first M models (``names``: the
    methods of :data:`METHODS` the two rows are labelled with), each with the δ term of the counting bound's
    p-value at its ε̂ (:func:`hsaudit.audit.one_run.one_run_delta_term`; NaN for the f-DP bound).

    ``score`` (:data:`SCORES`) is computed from the first M models' raw scores alone (:func:`corrected_scores`; the
    median of ``median_centred`` is over those M models, so the point costs M·T), never from the bits; where it is
    undefined (:func:`score_undefined`: ``median_centred`` at M = 1, ``standardised`` where a coordinate's MAD over
    the M models is 0, ``reference`` where a coordinate's sd over the reference models is 0, ``calibrated`` where a
    coordinate lacks 2 reference models on a side of its bit) both rows have ε̂ NaN and the reason in ``bound``. A
    ``noiseless`` row counts its canary-free run, M·T + T model-steps; a ``reference`` row its K reference models,
    M·T + K·T (a ``calibrated`` row its own K)."""
    bits, scores = np.asarray(bits), np.asarray(scores, dtype=np.float64)
    if bits.shape != scores.shape or bits.ndim != 2:
        raise ValueError(f"bits and scores must both be [models, m], got {bits.shape} and {scores.shape}")
    if score not in SCORES:
        raise ValueError(f"score must be one of {SCORES}, got {score!r}")
    free = {"noiseless": 1, "reference": 0 if reference is None else int(np.shape(reference)[0]),
            "calibrated": 0 if calibration is None else int(np.shape(calibration[1])[0])}.get(score, 0)
    extra = free * int(steps)
    why = {"noiseless": " (+T: the canary-free noiseless run, shared by the M models)",
           "reference": f" (+{free}·T: the {free} canary-free reference models, shared by the M models)",
           "calibrated": f" (+{free}·T: the {free} reference models with their own bits, shared by the M models)",
           }.get(score, "")
    rows = []
    for M in models:
        M = int(M)
        if not 1 <= M <= bits.shape[0]:
            raise ValueError(f"M = {M} models asked, {bits.shape[0]} trained")
        b = bits[:M].ravel().astype(bool)
        undefined = score_undefined(scores[:M], score, reference=reference, calibration=calibration)
        s = (np.zeros(b.size) if undefined else
             corrected_scores(scores[:M], score, noiseless=noiseless, reference=reference, shift=shift,
                              calibration=calibration).ravel())
        ks = guess_sizes(s.size, guess_fractions, guess_counts)
        for name, audit in zip(names, (one_run_audit, one_run_fdp_audit), strict=True):
            if undefined:
                rows.append({"method": METHODS[name], "score": score, "models": M, "runs_per_world": np.nan,
                             "model_steps": M * int(steps) + extra, "canaries": int(s.size), "epsilon": np.nan,
                             "mu": np.nan, "guesses": 0, "correct": 0, "k_plus": 0, "k_minus": 0, "delta_term": np.nan,
                             "bound": SCORE_REASONS[score], "valid": True, "confidence": float(confidence),
                             "delta": float(delta)})  # fmt: skip
                continue
            res = one_run_audit_search(s, b, ks=ks, delta=delta, confidence=confidence, audit=audit)
            term = (one_run_delta_term(canaries=int(s.size), guesses=res.guesses, correct=res.correct,
                                       epsilon=float(res.epsilon), delta=delta)
                    if audit is one_run_audit else np.nan)
            rows.append(
                {
                    "method": METHODS[name],
                    "score": score,
                    "models": M,
                    "runs_per_world": np.nan,
                    "model_steps": M * int(steps) + extra,
                    "canaries": int(s.size),
                    "epsilon": float(res.epsilon),
                    "mu": np.nan if res.mu is None else float(res.mu),
                    "guesses": res.guesses,
                    "correct": res.correct,
                    "k_plus": res.k_plus,
                    "k_minus": res.k_minus,
                    "delta_term": term,
                    "bound": res.method + why,
                    "valid": True,  # both one-run bounds hold for any scores (their guess search is Bonferroni'd)
                    "confidence": float(confidence),
                    "delta": float(delta),
                }
            )
    return rows


def population_rows(tables: Sequence[pd.DataFrame], *, steps: int) -> list[dict]:
    """The population points: the last step of each per-step audit table (one per R), GDP and assumption-free
    under the audit's rule (``threshold_rule``), and the GDP audit under the valid rule (``valid_threshold_rule``) of
    the same scores when the table carries one beside a rule that is not valid."""
    rows = []
    for table in tables:
        last = table.loc[table["step"].idxmax()]
        runs = int(last["runs"])
        valid = bool(last["rule_valid"]) if "rule_valid" in last else None
        points = [("population_gdp", "epsilon", float(last["mu"]), last["threshold_rule"], valid),
                  ("population_free", "epsilon_free", np.nan, last["threshold_rule"], valid)]
        if "epsilon_valid" in last and valid is False:
            points.append(("population_gdp_valid", "epsilon_valid", float(last["mu_valid"]),
                           last["valid_threshold_rule"], True))
        for name, column, mu, rule, rule_valid in points:
            rows.append(
                {
                    "method": METHODS[name],
                    "score": "raw",
                    "models": runs,
                    "runs_per_world": runs // 2,
                    "model_steps": runs * int(steps),
                    "canaries": runs,
                    "epsilon": float(last[column]),
                    "mu": mu,
                    "guesses": runs,
                    "correct": np.nan,
                    "k_plus": np.nan,
                    "k_minus": np.nan,
                    "bound": f"Auditor, rule {rule}, step {int(last['step'])}",
                    "valid": rule_valid,
                    "confidence": float(last["confidence"]),
                    "delta": float(last["delta"]),
                    "epsilon_upper": float(last["epsilon_upper"]),
                }
            )
    return rows


def ceiling_rows(
    mu: float,
    *,
    shape: tuple[int, int],
    seed: int,
    source: str,
    **kwargs,
) -> list[dict]:
    """The ceiling: the same one-run bounds (:func:`one_run_rows`, same m, M and guess grid) on simulated ideal
    canaries — each included independently with probability ½, its score N(0, 1) shifted by ``mu`` when included,
    independent of every other canary. The gap between the measured one-run points and these is what the real
    canaries lose (drift, interference); the gap between these and the population audit is the bound's own.

    Args:
        mu: the ideal canaries' shift (a population audit's μ̂, named by ``source``).
        shape: ``[models, m]`` of the real one-run scores.
        seed: the simulation's seed.
        source: what ``mu`` is, recorded in the ``bound`` column.
        **kwargs: :func:`one_run_rows`' ``models``, ``steps``, ``guess_fractions``, ``guess_counts``, ``delta``,
            ``confidence``.
    """
    rng = rng_for(seed, "one-run-ceiling")
    bits = rng.random(shape) < 0.5
    scores = rng.standard_normal(shape) + float(mu) * bits
    rows = one_run_rows(bits, scores, names=("ceiling_counting", "ceiling_fdp"), **kwargs)
    for row in rows:
        row["score"] = "ideal"
        row["bound"] = f"ideal canaries N(μ·b, 1), μ = {float(mu):.4g} ({source}); {row['bound']}"
    return rows


def ceiling_mu(population: Sequence[pd.DataFrame], ceiling: str) -> tuple[float, str] | None:
    """The ideal canaries' μ for ``ceiling`` (:data:`CEILINGS`) from the largest population's last step, and what
    it is; None for ``"none"`` (or when that population has no valid column)."""
    if ceiling not in CEILINGS:
        raise ValueError(f"ceiling must be one of {CEILINGS}, got {ceiling!r}")
    if ceiling == "none":
        return None
    table = max(population, key=lambda t: int(t["runs"].max()))
    last = table.loc[table["step"].idxmax()]
    if ceiling == "valid":
        if "mu_valid" not in last:
            return None
        return float(last["mu_valid"]), f"valid μ̂ ({last['valid_threshold_rule']}) of the R = {int(last['runs'])} population"
    return float(last["mu"]), f"μ̂ ({last['threshold_rule']}) of the R = {int(last['runs'])} population"


def one_run_table(
    *,
    dataset: str,
    bits: np.ndarray,
    scores: np.ndarray,
    population: Sequence[pd.DataFrame],
    models: Sequence[int],
    steps: int,
    guess_fractions: Sequence[float],
    delta: float,
    confidence: float,
    coordinates: str,
    guess_counts: Sequence[int] = (),
    ceiling: str = "none",
    seed: int = 0,
    score_names: Sequence[str] = ("raw",),
    noiseless: npt.ArrayLike | None = None,
    reference: npt.ArrayLike | None = None,
    shift: float | None = None,
    calibration: tuple[npt.ArrayLike, npt.ArrayLike] | None = None,
) -> pd.DataFrame:
    """Every point of one dataset: the one-run bounds for each M, the population audits for each R and the ceiling
    (:func:`ceiling_rows`).

    Args:
        dataset: the config section audited (``housing``, ``cifar10``; the table's ``family`` column).
        bits, scores: ``[models, m]`` of the one-run models (:func:`load_one_run_shards`; higher score ⇒ included).
        population: the population audit's per-step tables (:func:`hsaudit.experiments.cebere.audit.audit_table`), one
            per R; their ``epsilon_upper`` (the μ-GDP bound of the configuration) fills the column for every row.
        models: the M of the one-run points.
        steps: T.
        guess_fractions, guess_counts: the guess sizes searched (:func:`guess_sizes`).
        delta, confidence: of the one-run bounds.
        coordinates: the coordinate rule (recorded).
        ceiling: the ideal canaries' μ (:data:`CEILINGS`; ``"none"``: no ceiling rows).
        seed: the ceiling's simulation seed.
        score_names: the scores audited (:data:`SCORES`, ``one_run.scores``), each its own rows on the same models.
        noiseless: s⁰ ``[m]`` of the canary-free, noise-free run (needed when ``score_names`` has ``noiseless``).
        reference, shift: the K reference models' raw scores ``[K, m]`` and the canary's nominal shift Δ (needed
            when ``score_names`` has ``reference``).
        calibration: (bits, scores) ``[K, m]`` of the reference models with their own bits (``calibrated``).

    Returns:
        :data:`COLUMNS`, rows by method, then score (in :data:`SCORES` order), then compute.
    """
    if not population:
        raise ValueError("one_run_table needs at least one population audit table")
    if not score_names or len(set(score_names)) != len(score_names) or set(score_names) - set(SCORES):
        raise ValueError(f"score_names must be distinct names of {SCORES}, got {list(score_names)}")
    kw = dict(models=models, steps=steps, guess_fractions=guess_fractions, guess_counts=guess_counts, delta=delta,
              confidence=confidence)
    rows = [row for name in score_names
            for row in one_run_rows(bits, scores, score=name, noiseless=noiseless, reference=reference, shift=shift,
                                    calibration=calibration, **kw)]
    mu = ceiling_mu(population, ceiling)
    if mu is not None:
        rows += ceiling_rows(mu[0], shape=np.asarray(bits).shape, seed=seed, source=mu[1], **kw)
    pop = population_rows(population, steps=steps)
    upper = pop[0]["epsilon_upper"]
    frame = pd.DataFrame(rows + pop)
    frame["epsilon_upper"] = upper
    frame["family"] = dataset
    frame["steps"] = int(steps)
    frame["canaries_per_model"] = int(np.asarray(bits).shape[1])
    frame["coordinates"] = coordinates
    order = {label: i for i, label in enumerate(METHODS.values())}
    score_order = {name: i for i, name in enumerate((*SCORES, "ideal"))}
    ranks = {"method": order, "score": score_order}
    frame = frame.sort_values(["method", "score", "model_steps"],
                              key=lambda c: c.map(ranks[c.name]) if c.name in ranks else c, kind="stable")
    return frame[list(COLUMNS)].reset_index(drop=True)


def summary_lines(table: pd.DataFrame) -> list[str]:
    """One log line per method: its ε̂ at the least and the most compute."""
    out = []
    keys = ["family", "method", "score"] if "score" in table else ["family", "method"]
    for group, rows in table.groupby(keys, sort=False):
        family, method = group[0], ", ".join(str(g) for g in group[1:])
        rows = rows.dropna(subset=["epsilon"])
        if rows.empty:
            continue
        first, last = rows.iloc[0], rows.iloc[-1]
        out.append(
            f"{family} {method}: eps_hat {first['epsilon']:.3f} at {int(first['model_steps']):,} model-steps "
            f"... {last['epsilon']:.3f} at {int(last['model_steps']):,} (upper {last['epsilon_upper']:.3f})"
        )
    return out


def stack_tables(tables: Mapping[str, pd.DataFrame] | Sequence[pd.DataFrame]) -> pd.DataFrame:
    """The figure's table: the datasets' tables one under the other."""
    frames = list(tables.values()) if isinstance(tables, Mapping) else list(tables)
    if not frames:
        raise ValueError("stack_tables needs at least one table")
    return pd.concat(frames, ignore_index=True)
