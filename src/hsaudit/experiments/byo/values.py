"""The values an audit of a user's training is made of: what the training claims, the cheap setting an audit may
ask it to run in, and the design of the population (which canary, how many models, which of them get it).

Both the harness (:mod:`hsaudit.experiments.byo.train.harness`) and the audit (:mod:`hsaudit.experiments.byo.audit`) read
these; the module imports only the seeding helpers, so that an edit here reruns both and nothing else.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from hsaudit.util.scores import score_entry
from hsaudit.util.seeding import derive_seed, rng_for

SAMPLINGS = ("poisson", "shuffle", "fixed")
"""``poisson``: every example joins each step's batch independently with probability q; ``shuffle``: each epoch is a
random permutation cut into batches of B; ``fixed``: each step draws B examples uniformly without replacement (B = N:
the full batch)."""
NEIGHBOURINGS = ("add-remove", "replace-one")
SCORED = tuple(score_entry(name).name for name in ("final", "relative"))
"""The entries of the score registry (:data:`hsaudit.util.scores.SCORES`) the harness computes
(:func:`hsaudit.experiments.byo.train.harness.canary_scores`): ``final`` from the final model θ_T alone; ``relative``
to its initialisation θ0 (observed during the training: :func:`hsaudit.experiments.byo.train.harness.train_observed`)."""
SCORES = ("auto", *SCORED)
"""How a model's canary score is taken (``--score``, ``byo.score``): one of :data:`SCORED`, or ``auto``: relative when
θ0 is observed and varies with the seed, final otherwise."""
FEW_SCORES = ("auto", "final", "reference")
"""A few-runs audit's score (:mod:`hsaudit.experiments.byo.train.families`): ``auto`` relative to θ0 where observed,
else the final model's alone; ``final`` the final model's alone; ``reference`` relative to the check's reference model
(trained without any canary)."""


def few_score(score: str) -> str:
    """A score name of :data:`SCORES` as the few-runs audit's (:data:`FEW_SCORES`): ``relative`` is its ``auto``."""
    return {"relative": "auto"}.get(score, score)


AUTO = "auto"
"""A design's ``canary`` (and ``background``) when the audit chooses them: the candidate design whose positive
control separates most in a pilot of its own (:func:`hsaudit.experiments.byo.api.choose_design`)."""
PINNED = ("out_of_support", "data")
"""The canary and background of a design pinned by one of the two alone: the other takes its value here."""
DESIGNS = (("dirac", "blank"), ("opposing", "copies"), ("out_of_support", "data"))
"""The candidate designs (canary, background) of a chosen one, strongest first where they apply: a Dirac gradient
canary on a blank background (a loss that takes the canary's term), Nasr et al.'s worst-case dataset (classes), an
input outside the data's support (:func:`hsaudit.experiments.byo.api.choose_design`)."""
PILOT_RUNS = 50
"""Runs per world of each candidate's pilot control when the design is chosen (:attr:`Design.pilot_runs`)."""
REQUIRED = ("epsilon", "delta", "noise_multiplier", "max_grad_norm", "sampling", "steps", "neighbouring")
OPTIONAL = ("sample_rate", "batch_size", "accountant")


def _positive(name: str, value: Any, *, integer: bool = False) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"claim {name} must be a number, got {value!r}") from None
    if not (math.isfinite(v) and v > 0) or (integer and v != int(v)):
        kind = "a positive integer" if integer else "a positive number"
        raise ValueError(f"claim {name} must be {kind}, got {value!r}")
    return v


def split_entry(entry: str) -> tuple[str, str]:
    """``"pkg.mod:make"`` → ``("pkg.mod", "make")``; ``"path/file.py:make"`` → ``("path/file.py", "make")``."""
    target, sep, attr = str(entry).rpartition(":")
    if not sep or not target or not attr.isidentifier():
        raise ValueError(f"entry must look like package.module:make or path/to/file.py:make, got {entry!r}")
    return target, attr


def entry_file(entry: str) -> Path:
    """The file of an entry's module (what a code version hashes), without running the module itself.

    Raises:
        ValueError: no such file or module.
    """
    target, _ = split_entry(entry)
    if target.endswith(".py"):
        path = Path(target)
        if not path.is_file():
            raise ValueError(f"entry {entry!r}: no such file {target}")
        return path.resolve()
    try:
        spec = importlib.util.find_spec(target)
    except (ImportError, ValueError) as err:
        raise ValueError(f"entry {entry!r}: cannot find module {target}: {err}") from None
    if spec is None or spec.origin is None or not Path(spec.origin).is_file():
        raise ValueError(f"entry {entry!r}: cannot find module {target}")
    return Path(spec.origin).resolve()



@dataclass(frozen=True)
class Claim:
    """The guarantee a training states and the mechanism its accountant assumed.

    Attributes:
        epsilon, delta: the claimed (ε, δ).
        noise_multiplier: σ; the noise added to the sum of clipped per-example gradients is N(0, σ²C²I).
        max_grad_norm: C.
        sampling: one of :data:`SAMPLINGS`.
        steps: T, optimiser steps (noise draws).
        neighbouring: ``"add-remove"`` or ``"replace-one"``.
        sample_rate: q (Poisson), or None when ``batch_size`` gives it as B/N.
        batch_size: B (expected batch size under Poisson), or None when ``sample_rate`` gives it.
        accountant: the accountant that gave ε, as the user names it (informational).
    """

    epsilon: float
    delta: float
    noise_multiplier: float
    max_grad_norm: float
    sampling: str
    steps: int
    neighbouring: str
    sample_rate: float | None = None
    batch_size: int | None = None
    accountant: str | None = None

    def __post_init__(self) -> None:
        _positive("epsilon", self.epsilon)
        if not 0.0 < float(self.delta) < 1.0:
            raise ValueError(f"claim delta must be in (0, 1), got {self.delta!r}")
        _positive("noise_multiplier", self.noise_multiplier)
        _positive("max_grad_norm", self.max_grad_norm)
        _positive("steps", self.steps, integer=True)
        if self.sampling not in SAMPLINGS:
            raise ValueError(f"claim sampling must be one of {', '.join(SAMPLINGS)}, got {self.sampling!r}")
        if self.neighbouring not in NEIGHBOURINGS:
            raise ValueError(f"claim neighbouring must be one of {', '.join(NEIGHBOURINGS)}, got {self.neighbouring!r}")
        if self.sample_rate is None and self.batch_size is None:
            raise ValueError("claim needs sample_rate or batch_size (the accountant's sampling rate is q = B/N)")
        if self.sample_rate is not None and not 0.0 < float(self.sample_rate) <= 1.0:
            raise ValueError(f"claim sample_rate must be in (0, 1], got {self.sample_rate!r}")
        if self.batch_size is not None:
            _positive("batch_size", self.batch_size, integer=True)
        object.__setattr__(self, "steps", int(self.steps))
        if self.batch_size is not None:
            object.__setattr__(self, "batch_size", int(self.batch_size))

    @classmethod
    def from_mapping(cls, claim: Mapping[str, Any]) -> Claim:
        """A claim from a mapping (``make().claim``, a config's ``claim:``).

        Raises:
            ValueError: a missing or unknown key, or a value out of range (the message names it).
        """
        if isinstance(claim, Claim):
            return claim
        if not isinstance(claim, Mapping):
            raise ValueError(f"a claim must be a mapping with keys {', '.join(REQUIRED)}, got {type(claim).__name__}")
        missing = [k for k in REQUIRED if claim.get(k) is None]
        if missing:
            raise ValueError(f"claim lacks {', '.join(missing)} (it needs {', '.join(REQUIRED)})")
        unknown = sorted(set(claim) - set(REQUIRED) - set(OPTIONAL))
        if unknown:
            raise ValueError(f"claim has unknown key(s) {', '.join(unknown)}; known: {', '.join(REQUIRED + OPTIONAL)}")
        return cls(**{k: claim[k] for k in REQUIRED + OPTIONAL if k in claim and claim[k] is not None})

    def sampling_rate(self, n: int) -> float:
        """q for a data set of ``n`` examples: ``sample_rate``, or B/N.

        Raises:
            ValueError: the claim is inconsistent with itself at this n: B > N, sample_rate and batch_size that
                disagree (|qN − B| > 1), or fixed-size or shuffled batches (q < 1) under add-remove: both fix the
                batch size, so adding or removing a record changes every batch after it, and neither has an
                add-remove guarantee (the full batch, q = 1, is the Gaussian mechanism and has one).
        """
        n = int(n)
        if n < 1:
            raise ValueError(f"the data set must have at least one example, got n = {n}")
        if self.batch_size is not None and self.batch_size > n:
            raise ValueError(f"claim batch_size {self.batch_size} exceeds the data set's {n} examples")
        if self.sample_rate is not None and self.batch_size is not None:
            if abs(self.sample_rate * n - self.batch_size) > 1.0:
                raise ValueError(
                    f"claim sample_rate {self.sample_rate} and batch_size {self.batch_size} disagree for n = {n} "
                    f"(q·N = {self.sample_rate * n:.6g})"
                )
        q = float(self.sample_rate) if self.sample_rate is not None else self.batch_size / n
        if self.sampling in ("fixed", "shuffle") and q < 1.0 and self.neighbouring == "add-remove":
            what = {"fixed": "B of N without replacement", "shuffle": "each epoch a permutation cut into batches of B"}
            raise ValueError(
                f"claim sampling '{self.sampling}' ({what[self.sampling]}) with neighbouring 'add-remove' is "
                f"inconsistent: {'fixed-size' if self.sampling == 'fixed' else 'shuffled'} batches need replace-one "
                "(or the full batch, B = N)"
            )
        return q

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass(frozen=True)
class AuditSetting:
    """A cheap configuration in which a final-model audit can be tight: few steps, the full batch, a small σ.

    A user's ``make(setting)`` receives it (``None`` for the user's own configuration) and returns a training that
    runs ``steps`` steps with noise multiplier ``noise_multiplier`` and, when ``sample_rate`` is not None, that
    sampling rate (1.0: every example at every step), and a claim for that configuration.

    Attributes:
        steps: T.
        noise_multiplier: σ, calibrated so that the declared mechanism's ε at ``delta`` is ``epsilon``.
        sample_rate: q, or None to keep the user's.
        epsilon, delta: the (ε, δ) σ was calibrated to.
        neighbouring: the relation σ was calibrated under (``add-remove``, or ``replace-one`` for a training whose
            batches have a fixed size: twice the σ, its sensitivity being 2C).
    """

    steps: int
    noise_multiplier: float
    sample_rate: float | None = 1.0
    epsilon: float | None = None
    delta: float | None = None
    neighbouring: str = "add-remove"

    def __post_init__(self) -> None:
        _positive("setting steps", self.steps, integer=True)
        _positive("setting noise_multiplier", self.noise_multiplier)
        if self.sample_rate is not None and not 0.0 < float(self.sample_rate) <= 1.0:
            raise ValueError(f"setting sample_rate must be in (0, 1], got {self.sample_rate!r}")
        if self.neighbouring not in ("add-remove", "replace-one"):
            raise ValueError(f"setting neighbouring must be add-remove or replace-one, got {self.neighbouring!r}")
        object.__setattr__(self, "steps", int(self.steps))

    def batch_size(self, n: int) -> int:
        """The batch size B = round(qN) of this setting for ``n`` examples (N when the rate is the user's)."""
        q = 1.0 if self.sample_rate is None else float(self.sample_rate)
        return max(1, round(q * int(n)))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_setting(claim: Claim, setting: AuditSetting | None) -> None:
    """That a claim describes the setting the training was asked to run in.

    Raises:
        ValueError: naming what ``make(setting)`` ignored (steps, noise multiplier or sampling rate).
    """
    if setting is None:
        return
    wrong = []
    if claim.steps != setting.steps:
        wrong.append(f"steps {claim.steps} (asked {setting.steps})")
    if not math.isclose(claim.noise_multiplier, setting.noise_multiplier, rel_tol=1e-6):
        wrong.append(f"noise_multiplier {claim.noise_multiplier} (asked {setting.noise_multiplier:.6g})")
    if setting.sample_rate is not None and claim.sample_rate is not None:
        if not math.isclose(claim.sample_rate, setting.sample_rate, rel_tol=1e-6):
            wrong.append(f"sample_rate {claim.sample_rate} (asked {setting.sample_rate})")
    if wrong:
        raise ValueError("make(setting) returned a claim for another configuration: " + ", ".join(wrong))


@dataclass(frozen=True)
class Design:
    """What an audit trains: 2 × ``runs`` models of the user's training, each on the data with the canary (bit 1)
    or without it (bit 0), the bits independent fair coins.

    The bits are drawn, not split in halves, so that the scores are also a valid input of the one-run bounds
    (``hsaudit one-run``), which need independent inclusion bits; each world holds ``runs`` models on average.
    Every stream derives from ``seed``: model i's bit, its training seed (``train(data, seed)``) and the canary's
    draw, so a model's outcome does not depend on the shard it is trained in.

    Attributes:
        entry: the user's ``make`` (``package.module:make`` or ``path/to/file.py:make``).
        canary: a canary type of :data:`hsaudit.engine.canaries.CANARIES`, or :data:`AUTO` (the default): the
            audit chooses the canary and the background (:attr:`chosen`); giving either pins the design, the other
            then taking its value in :data:`PINNED`.
        runs: models per world on average (2 × runs models in all; keyword only).
        shards: how many jobs the models are split into (contiguous blocks of model indices).
        seed: the master seed of every stream.
        background: a background of :data:`hsaudit.engine.canaries.BACKGROUNDS`, or :data:`AUTO` (as ``canary``).
        background_size: examples of the ``subset`` background.
        setting: the cheap configuration the training is asked to run in, or None for the user's own.
        claim: values that replace the claim ``make()`` states (a mapping of claim keys), or None.
        data: a ``.npz`` file with arrays ``x`` and ``y`` to use instead of ``make().dataset()``, or None.
        copies: the canary's rows in a model of world 1 (1: the audit; k > 1: the positive control, whose canary
            leaks k times more through the same insertion, see :func:`control`). A control's bits and model seeds
            are streams of their own, so its models are independent of the audit's; the canary, the background and
            the replaced rows are the audit's.
        noise_factor: the positive control in the audit setting: the setting's σ divided by this factor (1: the
            audit), so that the control leaks exactly that multiple of the declared μ (full batch) through any canary
            (see :meth:`control_noise`); its streams are its own as for ``copies``.
        score: one of :data:`SCORES`.
        pilot_runs: runs per world of each candidate's pilot when the design is chosen (:data:`PILOT_RUNS`).
        canary_options: the given canary's and background's options by name (each gets the keys its registry
            entry takes, :attr:`hsaudit.engine.canaries.CanaryType.options`: ``opposing`` and ``copies`` share
            ``amplitude`` and ``feature``), or None.
    """

    entry: str
    canary: str = AUTO
    runs: int = field(kw_only=True)
    shards: int = 1
    seed: int = 0
    background: str = AUTO
    background_size: int = 16
    setting: AuditSetting | None = None
    claim: Mapping[str, Any] | None = None
    data: str | None = None
    copies: int = 1
    noise_factor: float = 1.0
    score: str = "auto"
    pilot_runs: int = PILOT_RUNS
    canary_options: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.canary_options is not None:
            if self.canary == AUTO and self.background == AUTO:
                raise ValueError("canary options need a given canary or background (the audit's choice has its own)")
            object.__setattr__(self, "canary_options", dict(self.canary_options))
        if (self.canary == AUTO) != (self.background == AUTO):  # one of the two given pins the design
            object.__setattr__(self, "canary", PINNED[0] if self.canary == AUTO else self.canary)
            object.__setattr__(self, "background", PINNED[1] if self.background == AUTO else self.background)
        if self.score not in SCORES:
            raise ValueError(f"score must be one of {', '.join(SCORES)}, got {self.score!r}")
        if not isinstance(self.entry, str) or ":" not in self.entry:
            raise ValueError(f"entry must look like package.module:make or path/to/file.py:make, got {self.entry!r}")
        for name in ("runs", "shards", "background_size", "copies", "pilot_runs"):
            v = getattr(self, name)
            if int(v) != v or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        if not float(self.noise_factor) >= 1.0:
            raise ValueError(f"noise_factor must be >= 1, got {self.noise_factor!r}")
        if self.shards > self.models:
            raise ValueError(f"shards ({self.shards}) must not exceed the models (2 x runs = {self.models})")
        if self.claim is not None:
            object.__setattr__(self, "claim", dict(self.claim))

    @property
    def chosen(self) -> bool:
        """Whether the audit chooses the canary and background (:data:`AUTO`) rather than being given them."""
        return self.canary == AUTO

    @property
    def models(self) -> int:
        """Models in all, both worlds."""
        return 2 * int(self.runs)

    def shard_models(self, shard: int) -> range:
        """The model indices of shard ``shard`` (0-based): contiguous blocks, the first ones one longer.

        Raises:
            ValueError: a shard outside [0, shards).
        """
        if int(shard) != shard or not 0 <= shard < self.shards:
            raise ValueError(f"shard must be in [0, {self.shards}), got {shard!r}")
        size, extra = divmod(self.models, self.shards)
        start = shard * size + min(shard, extra)
        return range(start, start + size + (shard < extra))

    def bits(self, models: range | np.ndarray | None = None) -> np.ndarray:
        """Model i's bit (True: trained with the canary), independent fair coins from the seed."""
        bits = rng_for(self.seed, "byo", *self._role(), "bits").random(self.models) < 0.5
        return bits if models is None else bits[np.asarray(models, dtype=np.int64)]

    def model_seed(self, model: int) -> int:
        """The ``seed`` model i's ``train(data, seed)`` gets (below 2**31, as every seeding API takes it)."""
        return derive_seed(self.seed, "byo", *self._role(), "model", int(model)) % 2**31

    def _role(self) -> tuple[object, ...]:
        """The key of this design's own streams (bits, model seeds): none for the audit, ``("control", k)`` for
        the positive control with k copies (so the audit's streams are those of earlier versions)."""
        if self.noise_factor != 1.0:
            return ("control", "noise", float(self.noise_factor))
        return () if self.copies == 1 else ("control", int(self.copies))

    def stream(self, *key: object) -> int:
        """A seed for another stream of this design (the canary's draw, the determinism check's seeds, ``init``: the
        ``init_seed`` every model of the audit gets)."""
        return derive_seed(self.seed, "byo", *key) % 2**31

    def to_dict(self) -> dict[str, Any]:
        """Plain values (JSON, Snakemake params), :meth:`from_dict`'s inverse."""
        out = asdict(self)
        out["setting"] = None if self.setting is None else self.setting.to_dict()
        for name, before in (("copies", 1), ("noise_factor", 1), ("pilot_runs", PILOT_RUNS), ("canary_options", None)):
            if out[name] == before:  # the values as before controls and pilots existed: the same job params
                del out[name]
        return out

    def control(self, copies: int) -> Design:
        """The positive control of this design: the same entry, canary, background, runs, shards and setting, with
        the canary's row repeated ``copies`` times in world 1 and streams of its own for the bits and seeds."""
        if int(copies) != copies or copies < 2:
            raise ValueError(f"a control repeats the canary at least twice, got copies = {copies!r}")
        return replace(self, copies=int(copies))

    def control_noise(self, factor: float) -> Design:
        """The positive control of a design in the audit setting: the same design with the setting's σ divided by
        ``factor`` (the training then declares and runs σ/factor: in the full batch exactly factor × the declared μ)
        and streams of its own for the bits and seeds.

        Raises:
            ValueError: no audit setting, or a factor not above 1.
        """
        if self.setting is None:
            raise ValueError("a noise control needs the audit setting (make(setting) runs the σ it is given)")
        if not float(factor) > 1.0:
            raise ValueError(f"a noise control divides σ by a factor above 1, got {factor!r}")
        setting = replace(self.setting, noise_multiplier=self.setting.noise_multiplier / float(factor), epsilon=None)
        return replace(self, setting=setting, noise_factor=float(factor))

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> Design:
        values = dict(values)
        if values.get("setting") is not None:
            values["setting"] = AuditSetting(**values["setting"])
        return cls(**values)


# ---- the training's use of its data: the claim against the check's reads of each row ----------------------------
DATA_USE_ALPHA = 1e-6
"""The level of :func:`data_use_finding`: so small beside the audit's 1 − c that the verdict's false-flag probability
is still the one it states (the bugs it catches read their rows 2× too often, or all alike: p ≪ 1e-6)."""
DATA_USE_SLACK = 1.1
"""Reads beyond the claim's count a violation only past this multiple of its expectation: a library reads a row or
two that it does not train on (Opacus' ``make_private`` reads ``data[0]`` for the shapes of an empty batch)."""


def data_use_finding(claim: Claim, uses: npt.ArrayLike, trainings: int) -> str | None:
    """Why the training's reads of its rows contradict the claim's sampling, or None (they do not, or none was seen).

    ``uses[i]`` counts the reads of row i (``data[i]``: a DataLoader's fetches) over ``trainings`` independent
    trainings of the data. Under the declared Poisson sampling (q, T steps) each count is Binomial(trainings·T, q),
    independently; under the full batch (q = 1) exactly trainings·T. Two exact tests, each at
    :data:`DATA_USE_ALPHA`/2:

    - *more reads than declared*: the total is Binomial(n·trainings·T, q); its upper tail, where the total also
      exceeds :data:`DATA_USE_SLACK` × its expectation. A claim whose q or T is smaller than what runs (a q of the physical batch, of another table, epochs added after the claim) fails it;
    - *too even for Poisson*: the share of rows read exactly v times is Binomial(n, P(Bin(trainings·T, q) = v)); its
      upper tail at the most common v, times the T·trainings + 1 values v may take (Bonferroni). A shuffled or
      fixed-size loader (every row read once per epoch: the DataLoader kept after ``make_private``) fails it; a most
      common v of 0 does not (fewer reads than declared is no leak: reads the check did not see, e.g. a training in
      another process beside Opacus' ``dataset[0]``).

    This sees the sampling that the audit setting's full batch removes, through ``data[i]`` or ``data.tensors``, in
    this process or a DataLoader's workers (:mod:`~hsaudit.experiments.byo.train.reads`); computations on all rows at
    once are not counted (:func:`reads_text` says so). Reads under ``torch.no_grad()`` / ``inference_mode()`` (an
    evaluation pass) are not counted; an evaluation over the training rows with gradients enabled counts as reads,
    and the finding says so.
    """
    from scipy import stats

    counts = np.asarray(uses, dtype=np.int64).ravel()
    n, total = counts.size, int(counts.sum())
    if total == 0 or n == 0 or claim.sampling != "poisson":
        return None
    q = float(claim.sampling_rate(n))
    m = int(trainings) * int(claim.steps)
    per = total / (n * int(trainings))
    more = float(stats.binom.sf(total - 1, n * m, q))
    if more < DATA_USE_ALPHA / 2 and total > DATA_USE_SLACK * n * m * q:
        return (f"it reads each row {per:.3g} times on average, the claim's sampling ({claim.sampling}, "
                f"q = {q:.4g}, T = {claim.steps}) reads it {q * claim.steps:.3g} times (exact binomial test, "
                f"p = {more:.2g}): its q or its steps are larger than the claim's (an evaluation pass over the "
                "training rows belongs under torch.no_grad(), where its reads are not counted)")  # fmt: skip
    values, freq = np.unique(counts, return_counts=True)
    top = int(np.argmax(freq))
    even = float(stats.binom.sf(freq[top] - 1, n, stats.binom.pmf(values[top], m, q))) * (m + 1)
    if q < 1.0 and values[top] > 0 and even < DATA_USE_ALPHA / 2:  # most rows unread: reads not seen, not a loader
        return (f"it reads {freq[top]} of its {n} rows exactly {values[top]} times in {trainings} "
                f"trainings, too even for the claim's Poisson sampling (q = {q:.4g}, T = {claim.steps}; exact "
                f"binomial test, p = {min(even, 1.0):.2g}): a shuffled or fixed-size loader (e.g. the DataLoader "
                "kept after make_private), not Poisson")  # fmt: skip
    return None


def data_use_of(
    claim: Claim, uses: npt.ArrayLike | None, trainings: int, own_claim: Claim | None = None,
    own_uses: npt.ArrayLike | None = None,
) -> str | None:
    """:func:`data_use_finding` of the check's training (``uses``) and, in the audit setting, of the user's own
    configuration (``own_claim``, ``own_uses``: the sampling the setting's full batch replaces); None: neither."""
    why = None if uses is None else data_use_finding(claim, uses, trainings)
    if why is None and own_claim is not None and own_uses is not None:
        own = data_use_finding(own_claim, own_uses, trainings)
        why = None if own is None else f"in your own configuration (make() without the audit setting), {own}"
    return why


def reads_text(uses: npt.ArrayLike | None, whole: Sequence[str], trainings: int, claim: Claim) -> str:
    """The report's line on the check's reads of the data: per training on average, or that the check saw none it
    could attribute to a row (and so did not test the claim's sampling), or fewer than half the claim's q·T (it may
    not see them all); ``whole``: the computations on all rows at once with gradients enabled, which no count
    holds."""
    at_once = f"computes on all rows at once ({', '.join(whole)})"
    if uses is None:
        why = f"the training {at_once}" if whole else "the training reads no row of its data in this process"
        return f"not seen: {why}, so the check could not test the claim's sampling"
    counts = np.asarray(uses)
    per, declared = float(np.mean(counts)) / trainings, float(claim.sampling_rate(counts.size)) * claim.steps
    text = f"{per:.4g} per training on average"
    if per < declared / 2:
        text += f", fewer than half the claim's q·T = {declared:.3g}: the check may not see all of them"
    return f"{text}; it also {at_once}, not counted" if whole else text
