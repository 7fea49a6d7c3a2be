"""The training side of a few-runs audit: M canaries per training, each in or out by its own fair coin, K trainings
of the user's own configuration (docs/byo.md, "When your training is expensive").

Training k's data is the background plus the canaries whose coin is 1 (add-remove), or, under replace-one, the
background with canary j's own background row replaced by it when its coin is 1 (M distinct rows, drawn once). The
canaries (:mod:`hsaudit.engine.canary_families`), the coins, the models' seeds and the replaced rows derive from the
design's seed by streams of their own, so one training can be rebuilt alone (a job per training); θ0 is fixed by
``init_seed`` as in the population audit (:func:`~hsaudit.experiments.byo.train.harness.init_seed_for`).

Every canary is scored in the model of its training, higher ⇒ canary present: −loss(θ_T) on it, relative to a
baseline that depends on no coin — the loss at the training's θ0 where it is observed (as the population audit's
``relative`` score), else none (the final model's score; ``score="reference"``: the loss at the check's reference
model, trained on the data without any canary, seeds of its own — measured weaker on the zoo, whose many canaries
move the model far from the reference). The baseline removes the canaries' own differences (a canary the model fits badly anyway), which matter much more
here than in the population audit, where one canary is compared with itself. Valid: the baseline is independent of
the coins, so releasing it beside the final model costs no privacy (docs/byo.md).

A Dirac family (gradient canaries, :func:`hsaudit.engine.canary_families.dirac_family`) is carried by M all-zero
rows of a :class:`~hsaudit.experiments.byo.train.harness.CanaryData` ``(x, y, w, k)``; canary j's score is
−(θ_T[k_j] − baseline), the baseline the reference model's θ[k_j] where θ0 is fixed (:func:`reference_first`), else
θ0[k_j] where observed.

Imports the harness, the values and the engine (train side); the population audit's jobs import none of it.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
import torch

from hsaudit.engine.canaries import CanarySource, background, canary_type
from hsaudit.engine.canary_families import CanaryFamily, canary_family, family_arrays, family_from_arrays
from hsaudit.experiments.byo.train.harness import (
    CanaryData,
    Loaded,
    Probe,
    Training,
    UserData,
    bias_coordinates,
    init_seed_for,
    load,
    model_losses,
    model_parameters,
    probe,
    reference_function,
    train_observed,
)
from hsaudit.experiments.byo.values import FEW_SCORES, AuditSetting, Design
from hsaudit.util.seeding import derive_seed, rng_for

TABLE_COLUMNS = ("training", "canary", "member", "score", "score_final", "baseline", "seed", "train_seconds")
"""A few-runs scores table: one row per (training, canary); ``score`` and ``member`` are what ``hsaudit one-run``
reads."""


@dataclass(frozen=True)
class FewRunsSetting(AuditSetting):
    """The audit setting of a many-canary audit: as :class:`AuditSetting`, and ``rows``, the most rows a training
    set of this audit holds (the background plus every canary, with its copies). A training whose full batch is a
    loader of fixed batch size (Opacus: q = 1/len(loader)) must take B ≥ ``rows``, or the canaries' training sets
    split into two batches (q = ½ where the claim says 1)."""

    rows: int | None = None


@dataclass(frozen=True)
class FewRunsDesign:
    """What a few-runs audit trains: ``trainings`` (K) trainings of the user's training, each with ``canaries`` (M)
    canaries of one family, each included by its own fair coin.

    Attributes:
        population: the population audit's :class:`Design` this one shares its entry, canary type (one with a family
            form: :data:`hsaudit.engine.canary_families.FAMILIES`), seed, background, setting, claim, data and
            control (``copies`` of every included canary, or ``noise_factor``) with; its ``runs`` is unused.
        canaries: M.
        trainings: K.
        score: one of :data:`FEW_SCORES`.
    """

    population: Design
    canaries: int
    trainings: int = 1
    score: str = "auto"

    def __post_init__(self) -> None:
        for name in ("canaries", "trainings"):
            v = getattr(self, name)
            if int(v) != v or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        if self.canaries < 2:
            raise ValueError(f"a few-runs audit needs at least 2 canaries per training, got {self.canaries}")
        if self.score not in FEW_SCORES:
            raise ValueError(f"score must be one of {', '.join(FEW_SCORES)}, got {self.score!r}")
        canary_family(self.population.canary)  # a type without a family form fails here, saying why
        if self.population.canary_options:
            raise ValueError("the few-runs audit's canary families take no canary options")

    @classmethod
    def of(cls, entry: str, canaries: int, trainings: int = 1, *, canary: str = "out_of_support",
           score: str = "auto", **design: Any) -> FewRunsDesign:  # fmt: skip
        """The design of ``entry`` with ``design``'s other fields (seed, background, setting, claim, data)."""
        return cls(Design(entry=entry, canary=canary, runs=1, **design), int(canaries), int(trainings), score)

    def __getattr__(self, name: str) -> Any:  # entry, canary, seed, setting, copies, noise_factor, ...
        if name in ("population", "__setstate__") or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.population, name)

    @property
    def models(self) -> int:
        """The trainings (as :attr:`Design.models`, so that what prices a population audit prices this one)."""
        return int(self.trainings)

    @property
    def shards(self) -> int:
        """Training jobs: one per training (the workflow's ``train_byo_training``)."""
        return int(self.trainings)

    @property
    def m(self) -> int:
        """Canaries in all, K · M: each in exactly one training."""
        return int(self.canaries) * int(self.trainings)

    def base(self) -> Design:
        """The population design (:func:`~hsaudit.experiments.byo.train.harness.load` and the check read it)."""
        return self.population

    def _role(self) -> tuple[object, ...]:
        if self.population.noise_factor != 1.0:
            return ("control", "noise", float(self.population.noise_factor))
        return () if self.population.copies == 1 else ("control", int(self.population.copies))

    def coins(self, training: int) -> np.ndarray:
        """Training k's coins: canary j is in it when True (independent fair coins)."""
        return rng_for(self.population.seed, "byo", "few", *self._role(), "coins", int(training)).random(self.canaries) < 0.5

    def model_seed(self, training: int) -> int:
        """The ``seed`` training k's ``train(data, seed)`` gets."""
        return derive_seed(self.population.seed, "byo", "few", *self._role(), "model", int(training)) % 2**31

    def stream(self, *key: object) -> int:
        """A seed for another stream of this design, shared by the audit and its control (the canaries, the
        background, the replaced rows)."""
        return derive_seed(self.population.seed, "byo", "few", *key) % 2**31

    def control(self, copies: int) -> FewRunsDesign:
        """The positive control in the user's configuration: every included canary repeated ``copies`` times
        (:meth:`Design.control`); the canaries, background and replaced rows are the audit's, the coins and seeds
        streams of their own."""
        return replace(self, population=self.population.control(copies))

    def control_noise(self, factor: float) -> FewRunsDesign:
        """The positive control in the audit setting: the setting's σ divided by ``factor`` (:meth:`Design.control_noise`)."""
        return replace(self, population=self.population.control_noise(factor))

    def to_dict(self) -> dict[str, Any]:
        """Plain values (JSON, Snakemake params), :meth:`from_dict`'s inverse."""
        return {"population": self.population.to_dict(), "canaries": self.canaries, "trainings": self.trainings,
                "score": self.score}  # fmt: skip

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> FewRunsDesign:
        population = dict(values["population"])
        setting = population.pop("setting", None)
        design = Design.from_dict(population)
        if setting is not None:
            setting = (FewRunsSetting if "rows" in setting else AuditSetting)(**setting)
            design = replace(design, setting=setting)
        return cls(design, int(values["canaries"]), int(values.get("trainings", 1)), str(values.get("score", "auto")))


def with_rows(design: FewRunsDesign, n: int) -> FewRunsDesign:
    """``design`` whose audit setting (if any) says the most rows a training set holds: ``n`` rows of data plus
    every canary with its copies (:class:`FewRunsSetting`)."""
    if design.setting is None:
        return design
    fields = {k: v for k, v in asdict(design.setting).items() if k != "rows"}
    setting = FewRunsSetting(**fields, rows=int(n) + design.canaries * design.copies)
    return replace(design, population=replace(design.population, setting=setting))


def load_few(design: FewRunsDesign) -> tuple[FewRunsDesign, Loaded]:
    """Load the user's training for ``design`` and give the audit setting (if any) its rows (:func:`with_rows`):
    the design every training of the audit runs, and the training loaded in it.

    Raises:
        ValueError: as :func:`~hsaudit.experiments.byo.train.harness.load`.
    """
    first = load(design.base())
    design = with_rows(design, first.n)
    return design, (first if design.setting is None else load(design.base()))


@dataclass(frozen=True, eq=False)
class FewPrepared:
    """Everything a training of a few-runs audit needs: the training, the check's findings, the family, the
    background, the replaced rows (replace-one) and the reference model's baseline losses."""

    design: FewRunsDesign
    training: Training
    probe: Probe
    family: CanaryFamily
    x: torch.Tensor
    y: torch.Tensor
    replaced: np.ndarray | None
    reference_losses: np.ndarray


def losses(training: Training, model: Any, x: np.ndarray | torch.Tensor, y: np.ndarray | torch.Tensor) -> np.ndarray:
    """The per-example loss of ``model`` on every row (``loss``, or the default one), in chunks.

    Raises:
        ValueError: a flat-tensor or non-torch model without ``loss`` (:func:`~hsaudit.experiments.byo.train.harness.model_losses`).
    """
    return np.concatenate([model_losses(training, model, x[start : start + 4096], y[start : start + 4096])
                           for start in range(0, x.shape[0], 4096)])  # fmt: skip


def family_values(training: Training, family: CanaryFamily, model: Any) -> np.ndarray:
    """What each canary of ``family`` scores in ``model``, lower ⇒ fitted: its loss (:func:`losses`), or for a
    gradient family its coordinate θ[k] (the term ``w · θ[k]`` that gradient descent lowers)."""
    if family.gradient:
        theta = model_parameters(model).to(torch.float64)
        return theta[torch.as_tensor(family.coordinates, dtype=torch.long)].numpy()
    return losses(training, model, family.x, family.y)


def _model_at(model: torch.nn.Module, theta: torch.Tensor) -> torch.nn.Module:
    """A deep copy of the module ``model`` holding the flat parameters ``theta`` (``parameters()`` order)."""
    start, at = copy.deepcopy(model), 0
    with torch.no_grad():
        for p in start.parameters():
            p.copy_(theta[at : at + p.numel()].reshape(p.shape))
            at += p.numel()
    return start


@dataclass(frozen=True, eq=False)
class FewCheck:
    """What a few-runs audit's check found, once for all its trainings and its control's: the probe, the family
    built from the check's reference model, and that model's losses on the family (the ``reference`` score's
    baseline). :meth:`arrays` / :meth:`from_arrays` with the probe as JSON: the workflow's check job writes it."""

    probe: Probe
    family: CanaryFamily
    reference_losses: np.ndarray

    def arrays(self) -> dict[str, np.ndarray]:
        return {**family_arrays(self.family), "reference_losses": np.asarray(self.reference_losses)}

    @classmethod
    def from_arrays(cls, found: Probe, arrays: Mapping[str, np.ndarray]) -> FewCheck:
        return cls(found, family_from_arrays(arrays), np.asarray(arrays["reference_losses"]))


def check_few(design: FewRunsDesign, loaded: Loaded) -> FewCheck:
    """Check the training (:func:`~hsaudit.experiments.byo.train.harness.probe`: determinism, finiteness) and build
    the family from the check's reference model.

    Raises:
        ValueError: as ``probe``; a family the data cannot give.
    """
    training, x, y = loaded.training, loaded.x, loaded.y
    gradient = canary_type(design.canary).kind == "gradient"
    found, reference = probe(training, x, y, loaded.classes, design.base(), gradient, family=gradient)
    source = CanarySource(x=x, y=y, classes=found.classes, parameters=found.parameters,
                          clip_norm=training.claim.max_grad_norm, seed=design.stream("family", design.canary),
                          reference=reference_function(training, reference), biases=bias_coordinates(reference))  # fmt: skip
    family = canary_family(design.canary)(source, design.canaries)
    return FewCheck(found, family, family_values(training, family, reference))


def prepare_few(design: FewRunsDesign, loaded: Loaded | None = None, checked: FewCheck | None = None) -> FewPrepared:
    """The check (:func:`check_few`, unless ``checked`` is given: a training job reads the check job's, and the
    control's trainings take the audit's, so that both insert the very same canaries), the background without the
    family's rows, the replaced rows.

    Raises:
        ValueError: as :func:`~hsaudit.experiments.byo.train.harness.load` and :func:`check_few`; under
            replace-one, more canaries × copies than background rows.
    """
    loaded = loaded if loaded is not None else load(design.base())
    training, x, y = loaded.training, loaded.x, loaded.y
    checked = checked if checked is not None else check_few(design, loaded)
    family = checked.family
    keep = np.ones(x.shape[0], dtype=bool)
    if family.source_rows is not None:
        keep[family.source_rows] = False
    bx, by = background(design.background)(x[keep], y[keep], size=design.background_size,
                                           seed=design.stream("background"))  # fmt: skip
    replaced = None
    if training.claim.neighbouring == "replace-one":
        need = design.canaries * design.copies
        if need > bx.shape[0]:
            raise ValueError(f"replace-one: {design.canaries} canaries x {design.copies} copies replace {need} rows, "
                             f"more than the background's {bx.shape[0]}")  # fmt: skip
        order = np.random.default_rng(design.stream("replaced")).permutation(bx.shape[0])
        replaced = order[:need].reshape(design.canaries, design.copies)
    return FewPrepared(design, training, checked.probe, family, torch.as_tensor(bx), torch.as_tensor(by), replaced,
                       checked.reference_losses)  # fmt: skip


def training_data(prepared: FewPrepared, coins: np.ndarray) -> UserData:
    """Training k's data: the background with the canaries whose coin is 1 (each ``copies`` times), added
    (add-remove) or in place of their own background rows (replace-one); for a gradient family a
    :class:`~hsaudit.experiments.byo.train.harness.CanaryData` ``(x, y, w, k)``, each canary row's weight ``w`` its
    norm and ``k`` its coordinate (0 and −1 on the background's rows)."""
    family = prepared.family
    chosen = np.flatnonzero(np.asarray(coins, dtype=bool))
    idx = np.repeat(chosen, prepared.design.copies)
    n = prepared.x.shape[0]
    columns = [prepared.x, prepared.y]
    rows = [torch.as_tensor(family.x[idx], dtype=prepared.x.dtype), torch.as_tensor(family.y[idx], dtype=prepared.y.dtype)]
    if family.gradient:
        columns += [torch.zeros(n), torch.full((n,), -1, dtype=torch.long)]
        rows += [torch.full((idx.size,), float(family.norm)), torch.as_tensor(family.coordinates[idx], dtype=torch.long)]
    if prepared.replaced is None:
        out = [torch.cat([c, r]) for c, r in zip(columns, rows)]
    else:
        at = torch.as_tensor(prepared.replaced[chosen].reshape(-1), dtype=torch.long)
        out = [c.clone() for c in columns]
        for c, r in zip(out, rows):
            c[at] = r
    if family.gradient:
        return CanaryData(out[0], out[1], out[2], None, out[3])
    return UserData(out[0], out[1])


def reference_first(prepared: FewPrepared) -> bool:
    """Whether the score's baseline is the reference model's (``score="auto"``): for a gradient family whose θ0 is
    fixed. The reference starts at the same θ0 and trains on the background, so its coordinate θ_ref[k] carries the
    background's own push on k, which differs from coordinate to coordinate and otherwise drowns the canaries' C·e_k
    (measured: the σ/10 bug of plain DP-SGD on 1,026 parameters, M = 100, K = 1, audit setting: ε̂ at the ceiling
    4.18 against 2.06 with θ0; docs/journal/byo.md). Valid: the reference depends on no coin."""
    design = prepared.design
    return design.score == "auto" and prepared.family.gradient and prepared.probe.theta0.startswith("fixed")


def train_one(prepared: FewPrepared, training_index: int) -> dict[str, np.ndarray]:
    """Train training ``training_index`` and score every canary in it (:data:`TABLE_COLUMNS`).

    Raises:
        ValueError: a training index outside [0, K); a NaN or infinite canary loss (the training diverged).
    """
    design, training = prepared.design, prepared.training
    if not 0 <= int(training_index) < design.trainings:
        raise ValueError(f"training must be in [0, {design.trainings}), got {training_index!r}")
    coins = design.coins(training_index)
    seed = design.model_seed(training_index)
    data = training_data(prepared, coins)
    start = time.perf_counter()
    (model,), (theta0,) = train_observed(training, data, [seed], init_seed=init_seed_for(design.base(), training),
                                         observe=design.score == "auto")  # fmt: skip
    seconds = time.perf_counter() - start
    final = family_values(training, prepared.family, model)
    if not np.isfinite(final).all():
        raise ValueError(f"{training.entry}: training {training_index} (seed {seed}) gives a NaN or infinite loss on "
                         "a canary: its training diverged")  # fmt: skip
    if reference_first(prepared):
        start_loss, baseline = prepared.reference_losses, "reference"
    elif theta0 is not None and not isinstance(model, torch.Tensor) and theta0.numel() == model_parameters(model).numel():
        start_loss, baseline = family_values(training, prepared.family, _model_at(model, theta0)), "θ0"
    elif design.score == "reference":
        start_loss, baseline = prepared.reference_losses, "reference"
    else:
        start_loss, baseline = np.zeros_like(final), "none"
    m = design.canaries
    return {
        "training": np.full(m, int(training_index), dtype=np.int64),
        "canary": np.arange(m, dtype=np.int64),
        "member": coins.astype(np.int8),
        "score": -(final - start_loss),
        "score_final": -final,
        "baseline": np.array([baseline] * m, dtype=object),
        "seed": np.full(m, seed, dtype=np.int64),
        "train_seconds": np.full(m, seconds),
    }
