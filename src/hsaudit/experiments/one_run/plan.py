"""The one-run study's plan: from the resolved config to the frozen values its rules run (docs/one_run.md).

Steinke, Nasr & Jagielski (2023) and Mahloujifar et al. (2024) audit with m canaries inserted independently into
one training run; this study audits Cebere et al.'s trained-model configurations that way and compares with the
population audit of the very same configuration (A_GC-R: one canary, R models). It reads the ``one_run`` section
(which dataset sections it audits, m, the numbers of models M, the population R, the coordinate rule, the guess
sizes) and, for each audited dataset, that configuration's population audit as a value: Cebere et al.'s plan's
base audit (:class:`hsaudit.experiments.cebere.plan.BaseAudit`: its key, parameters, values and files), handed
down by whoever builds both plans (the workflow's rules, ``hsaudit plan``). The population's files are Cebere's
(same root: for Housing at the shipped values, fig1c's first A_GC-R repetition), so they are trained once.

- :func:`plan` → :class:`OneRunPlan`: per dataset a :class:`OneRunAudit` (its key from the setup, m and the
  coordinate rule), the trained populations and the figure target.
- The training jobs run :mod:`hsaudit.experiments.one_run.train`, the audit job
  :mod:`hsaudit.experiments.one_run.audit`, the figure :mod:`hsaudit.experiments.one_run.figures`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from hsaudit.experiments.one_run.values import SCORES
from hsaudit.experiments.plans import Population, Target, gpu_requested, plan_of
from hsaudit.util.mapping import key_of
from hsaudit.util.seeding import derive_seed

COORDINATE_RULES = ("random", "least_moving")
"""How the m canary coordinates are chosen (config ``one_run.coordinates``): ``random`` (m distinct coordinates
drawn uniformly: A_GC-R's draw, m times without replacement) or ``least_moving`` (the m coordinates that move least
in a noiseless, unclipped simulation of training: A_GC-S Noiseless-PS's ranking, Cebere et al. Algorithm 3)."""

SCORE = "gc_r"
"""The score every canary's shard records: A_GC-R's, −(θ_T[d] − θ0[d]) (higher ⇒ included). The drift corrections
of ``one_run.scores`` (:data:`hsaudit.experiments.one_run.values.SCORES`) are computed by the audit job from it, so
they are not in the key and choosing them retrains nothing."""

FIGURE = "results/one_run/fig1.pdf"

REFERENCE_KINDS = {"free": "reference", "bits": "calibrated"}
"""The reference-model sets (``results/one_run/{dataset}/{key}/reference/{kind}/``) and the score that reads each:
canary-free models (``reference``) and models with their own canary bits (``calibrated``)."""


class PopulationAudit(Protocol):
    """What the study reads of the population audit it compares with (Cebere et al.'s plan's ``BaseAudit``)."""

    dataset: str
    key: str
    params: Mapping[str, Any]
    values: Mapping[str, Any]

    @property
    def root(self) -> str: ...

    @property
    def setup_path(self) -> str: ...

    @property
    def data_path(self) -> str: ...

    @property
    def shard_size(self) -> int: ...

    def table_path(self, runs: int) -> str: ...


@dataclass(frozen=True)
class OneRunAudit:
    """The one-run audit of one dataset's configuration, and the population audit it is compared with.

    Attributes:
        dataset: the config section audited (``housing``, ``cifar10``).
        key: the one-run audit's key (its files are under ``results/one_run/{dataset}/{key}/``).
        params: every parameter that changes the one-run audit's result (the key's input): the population's setup,
            m, the coordinate rule, the score.
        canaries: m, canaries per model.
        models: the numbers of models M of the one-run points, ascending.
        shard_size: models per one-run training job.
        population: the population audit of the same configuration (A_GC-R, repetition 0: the same setup, θ0 and
            batches).
        population_runs: the R of the population points (models in both worlds, half of them inserted), ascending.
        scores: the scores audited (``one_run.scores``, :data:`hsaudit.experiments.one_run.values.SCORES`).
        reference_models: K, the reference models of the ``reference`` score (canary-free) and of the
            ``calibrated`` score (their own canary bits), each set K models (0 when neither is audited).
    """

    dataset: str
    key: str
    params: Mapping[str, Any]
    canaries: int
    models: tuple[int, ...]
    shard_size: int
    population: PopulationAudit
    population_runs: tuple[int, ...]
    scores: tuple[str, ...] = ("raw",)
    reference_models: int = 0

    @property
    def root(self) -> str:
        """The directory of the one-run audit's files."""
        return f"results/one_run/{self.dataset}/{self.key}"

    @property
    def noiseless_path(self) -> str:
        """The canary-free, noise-free run's scores s⁰ (one model, σ = 0, no canary, the same θ0 and batches)."""
        return f"{self.root}/noiseless.npz"

    @property
    def noiseless_root(self) -> str:
        """The noiseless run as a priced population of ``hsaudit plan`` (its root; the file is :attr:`noiseless_path`)."""
        return f"{self.root}/noiseless"

    def noiseless_inputs(self) -> list[str]:
        """[:attr:`noiseless_path`] when the ``noiseless`` score is audited, else []."""
        return [self.noiseless_path] if "noiseless" in self.scores else []

    def reference_path(self, kind: str = "free") -> str:
        """The K reference models' scores (the audited σ, the same θ0 and batches): ``free`` (every bit 0, the
        ``reference`` score) or ``bits`` (their own canary bits, the ``calibrated`` score)."""
        return f"{self.reference_root(kind)}/k{self.reference_models}.npz"

    def reference_root(self, kind: str = "free") -> str:
        """A set of reference models (``free`` or ``bits``) as a priced population of ``hsaudit plan``."""
        if kind not in REFERENCE_KINDS:
            raise ValueError(f"reference kind must be one of {REFERENCE_KINDS}, got {kind!r}")
        return f"{self.root}/reference/{kind}"

    def reference_inputs(self) -> list[str]:
        """[:meth:`reference_path`] when the ``reference`` score is audited, else []."""
        return [self.reference_path("free")] if "reference" in self.scores else []

    def calibration_inputs(self) -> list[str]:
        """[:meth:`reference_path` of ``bits``] when the ``calibrated`` score is audited, else []."""
        return [self.reference_path("bits")] if "calibrated" in self.scores else []

    @property
    def canary_shift(self) -> float:
        """Δ = η·C·⌊T/k⌋/B: how far one gradient canary moves its coordinate's score in a linear model (the
        ``reference`` score's nominal shift)."""
        d = self.params["setup"]["dpsgd"]
        return float(d["lr"]) * float(d["clip_norm"]) * (int(d["steps"]) // int(d["period"])) / int(d["batch_size"])

    @property
    def shards(self) -> int:
        """Number of one-run training shards (enough for the largest M)."""
        return -(-max(self.models) // self.shard_size)

    @property
    def steps(self) -> int:
        """T, the DP-SGD steps of every model (one-run and population)."""
        return int(self.params["setup"]["dpsgd"]["steps"])

    @property
    def values(self) -> Mapping[str, Any]:
        """The configuration's values (model, T, η, B, C, σ, k, ...)."""
        return self.population.values

    def shard_paths(self) -> list[str]:
        """The one-run shard files (enough models for the largest M)."""
        return [f"{self.root}/shards/s{self.shard_size}/{i}.npz" for i in range(self.shards)]

    def population_tables(self) -> list[str]:
        """The population audit's per-step tables, one per R (shared with any figure that has that audit)."""
        return [self.population.table_path(r) for r in self.population_runs]


@dataclass(frozen=True)
class OneRunPlan:
    """Everything the one-run rules run and ``hsaudit plan`` prices.

    Attributes:
        seed: the master seed.
        audits: dataset -> its :class:`OneRunAudit`, in config order.
        populations: the one-run models of each dataset and the population audits they are compared with (the
            latter with Cebere's roots, so they merge with Cebere's populations).
        targets: the figure.
        options: what every audit job reads of the ``one_run`` section (guess_fractions, guess_counts, ceiling,
            coordinates, scores) and of the ``audit`` section (delta, confidence).
        devices: dataset -> the torch device of its crafting and training jobs (its section's ``device``).
    """

    seed: int
    audits: Mapping[str, OneRunAudit]
    populations: tuple[Population, ...]
    targets: tuple[Target, ...]
    options: Mapping[str, Any]
    devices: Mapping[str, str]

    @property
    def keys(self) -> str:
        """A regular expression of the audits' keys (the ``{key}`` wildcard of the rules)."""
        return "|".join(a.key for a in self.audits.values()) or "^$"

    def audit(self, dataset: str, key: str) -> OneRunAudit:
        """The one-run audit of ``dataset``, checked to have key ``key``."""
        spec = self.audits[dataset]
        if spec.key != key:
            raise ValueError(f"results/one_run/{dataset}/{key}: the one-run audit of {dataset} is {spec.key}")
        return spec

    def craft_seed(self, dataset: str, key: str) -> int:
        """The seed of a one-run audit's coordinate draw."""
        return derive_seed(self.seed, f"{dataset}-one_run-craft", key)


def _positive_ints(values: Sequence[Any], where: str) -> tuple[int, ...]:
    out = tuple(int(v) for v in values)
    if not out or any(v < 1 or v != w for v, w in zip(out, values)):
        raise ValueError(f"{where} must be a non-empty list of positive integers, got {list(values)}")
    if list(out) != sorted(set(out)):
        raise ValueError(f"{where} must be strictly increasing, got {list(values)}")
    return out


def plan(config: Mapping[str, Any]) -> OneRunPlan:
    """Resolve the ``one_run`` config section into one :class:`OneRunAudit` per audited dataset.

    Each dataset's population audit of its section's own configuration is read from Cebere et al.'s plan, built
    from the same config as a value (:func:`hsaudit.experiments.plans.plan_of`; its ``base``,
    :attr:`hsaudit.experiments.cebere.plan.CeberePlan.base`).

    Args:
        config: the resolved config (``one_run``, the audited dataset sections, ``seed``).

    Raises:
        ValueError: naming the key: an unknown coordinate rule or dataset, θ0 not known, a list that is not
            increasing, or a population R that is not a multiple of the dataset's shard size (m larger than the
            model is caught when the canaries are crafted).
    """
    section = config["one_run"]
    seed = int(config["seed"])
    populations: Mapping[str, PopulationAudit] = plan_of("cebere", config).base
    rule = section["coordinates"]
    if rule not in COORDINATE_RULES:
        raise ValueError(f"one_run.coordinates must be one of {COORDINATE_RULES}, got {rule!r}")
    scores = tuple(section.get("scores", ("raw",)))
    if not scores or len(set(scores)) != len(scores) or set(scores) - set(SCORES):
        raise ValueError(f"one_run.scores must be a non-empty list of distinct names of {SCORES}, got {list(scores)}")
    audits: dict[str, OneRunAudit] = {}
    rows: list[Population] = []
    for dataset in section["families"]:
        if dataset not in populations:
            raise ValueError(f"one_run.families names {dataset!r}, which is no trained-model section")
        entry = section[dataset]
        where = f"one_run.{dataset}"
        pop = populations[dataset]
        values = pop.values
        if values.get("theta0", "known") != "known":
            raise ValueError(f"{where}: one-run audits need {dataset}.theta0 = known, got {values['theta0']!r}")
        canaries = int(entry["canaries"])
        if canaries < 1:
            raise ValueError(f"{where}.canaries must be >= 1, got {entry['canaries']}")
        models = _positive_ints(entry["models"], f"{where}.models")
        shard_size = min(int(entry["shard_size"]), max(models))
        if shard_size < 1 or max(models) % shard_size:
            raise ValueError(
                f"{where}: the largest of models ({max(models)}) must be a multiple of shard_size "
                f"({entry['shard_size']})"
            )
        runs = _positive_ints(entry["population_runs"], f"{where}.population_runs")
        if any(r % pop.shard_size for r in runs):
            raise ValueError(
                f"{where}.population_runs ({list(runs)}) must be multiples of {dataset}.shard_size ({pop.shard_size})"
            )
        params: dict[str, Any] = {
            "setup": pop.params["setup"],
            "setup_key": pop.params["setup_key"],
            "canaries": canaries,
            "coordinates": rule,
            "score": SCORE,
        }
        if rule == "least_moving":
            params["simulation"] = "noiseless_ps"
        kinds = [kind for kind, score in REFERENCE_KINDS.items() if score in scores]
        reference = int(entry.get("reference_models", 0)) if kinds else 0
        if kinds and reference < 2:
            raise ValueError(f"{where}.reference_models must be >= 2 for the reference and calibrated scores, "
                             f"got {reference}")
        spec = OneRunAudit(dataset, key_of(params), params, canaries, models, shard_size, pop, runs, scores, reference)
        audits[dataset] = spec
        dpsgd = params["setup"]["dpsgd"]
        common = dict(
            figures=("one_run/fig1",),
            model=values["model"],
            steps=int(dpsgd["steps"]),
            batch=int(dpsgd["batch_size"]),
            gpu=gpu_requested(config[dataset]),
        )
        rows.append(
            Population(
                root=spec.root,
                models=spec.shards * spec.shard_size,
                role=f"one run, m={canaries}",
                detail=f"{dataset} C={dpsgd['clip_norm']:g} k={dpsgd['period']} {rule}",
                **common,
            )
        )
        if "noiseless" in scores:
            # The noiseless score's canary-free, noise-free run: one model through the same T steps and batches.
            rows.append(
                Population(
                    root=spec.noiseless_root,
                    models=1,
                    role="noiseless run",
                    detail=f"{dataset} C={dpsgd['clip_norm']:g} k={dpsgd['period']} sigma=0, no canary",
                    **common,
                )
            )
        for kind in kinds:
            # The K reference models of the reference (canary-free) or calibrated (own bits) score: the audited σ,
            # their own noise, the same T steps and batches.
            rows.append(
                Population(
                    root=spec.reference_root(kind),
                    models=reference,
                    role="reference models" if kind == "free" else "reference models, own bits",
                    detail=f"{dataset} C={dpsgd['clip_norm']:g} k={dpsgd['period']} "
                           + ("no canary" if kind == "free" else f"m={canaries}, own bits"),
                    **common,
                )
            )
        rows.append(
            Population(
                root=pop.root,
                models=max(runs),
                role=pop.params["adversary"],
                detail=f"C={dpsgd['clip_norm']:g} k={dpsgd['period']} rep=0",
                **common,
            )
        )
    # GPU-sized when one of its datasets trains on a GPU (CIFAR-10 at scale=paper).
    kind = "gpu" if any(gpu_requested(config[d]) for d in section["families"]) else "cpu"
    options = {key: section[key] for key in ("guess_fractions", "guess_counts", "ceiling", "coordinates", "scores")}
    options.update(delta=float(config["audit"]["delta"]), confidence=float(config["audit"]["confidence"]))
    devices = {d: str(config[d]["device"]) for d in section["families"]}
    return OneRunPlan(seed, audits, tuple(rows), (Target(FIGURE, kind=kind),), options, devices)
