"""Cebere, Bellet & Papernot (2025): the plan, from the resolved config to the frozen values its rules run.

:func:`plan` reads the ``housing``, ``cifar10`` and ``audit`` sections (after the scale preset) and
returns a :class:`CeberePlan`: the trained populations and the figure targets (the values
``workflow/rules/cebere.smk`` and ``hsaudit plan`` both read), the audits, setups and figure jobs of the trained-model
experiments (Section 6, the one-dimensional process, is its own package: :mod:`hsaudit.experiments.section6`).

Trained-model experiments (§5, Appendices C–E): the FCNN on California Housing (fig1c, fig4, fig7) and the
ConvNet, ResNet18-GN and an AlexNet last layer on CIFAR-10 (fig1, fig2, fig5, fig6a, fig8, fig11, fig12, fig13;
Table 2 lists their hyper-parameters). One dataset section (``housing``, ``cifar10``) plans into a
:class:`DatasetPlan`:

- An audit is a value: one adversary in one repetition with one set of values, identified by a short hash
  (:func:`hsaudit.util.mapping.key_of`) of every parameter that changes its result (dataset and its preparation,
  model, adversary, C, σ, k, T, η, batch size, seed, repetition, r for the noisy simulations, and the θ0 scheme /
  recorded observations where they differ from the default). R and the shard size are not in the key: they name
  the sub-directory ``R{runs}-s{shard_size}`` of the gathered scores, while the shard files
  (``shards/s{size}/{index}.npz``) depend on the shard size and index only, so raising R only adds shards. Two
  figures asking for the same audit share its files. A figure lists its adversaries, optional overrides of the
  section's values, and an optional ``grid`` (lists of values whose Cartesian product gives its series, e.g.
  ``{model: [convnet, resnet18_gn], clip_norm: [1, 2, 4]}``).
- The section's own configuration (its values before any figure's overrides) audited by A_GC-R is its
  :class:`BaseAudit`: the population audit that a study of the same configuration compares with (the one-run
  study, :mod:`hsaudit.experiments.one_run`, receives it as a value).

No job imports this module (the training jobs run :mod:`hsaudit.experiments.cebere.train`, the audits
:mod:`hsaudit.experiments.cebere.audit`), so editing the plan reruns no job whose values it leaves alone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hsaudit.audit.rules import DEFAULT_RULE, ThresholdRule, config_rules
from hsaudit.data.datasets import configured_identity
from hsaudit.engine.models import ModelSpec, option_names, spec_of
from hsaudit.experiments.plans import Population, Target, figure_grid, gpu_requested
from hsaudit.util.mapping import deep_merge, key_of
from hsaudit.util.seeding import derive_seed

DATASETS = ("housing", "cifar10")
"""Config sections whose figures are trained-model audits (the ``{dataset}`` of ``results/{dataset}/...``)."""

HOUSING_FIGURES = ("fig1c", "fig4", "fig7")
CIFAR_FIGURES = ("fig1", "fig2", "fig5", "fig6a", "fig8", "fig11", "fig12", "fig13")
TABLE2 = "results/table2.md"

# The keys of a dataset section that are not audit values (every other key may be overridden per figure).
NOT_AUDIT_VALUES = ("data", "resources", "figures")
# Keys of a figure entry that are not overrides.
FIGURE_ENTRY_KEYS = ("adversaries", "grid")
# The adversary of a section's base audit (the population audit a study of the same configuration compares with).
BASE_ADVERSARY = "gc_r"


# ------------------------------------------------------------------------------------------ audit values


def figure_values(section: Mapping[str, Any], figure: str, *, dataset: str) -> list[dict[str, Any]]:
    """The audit values of each series of ``figure``: the section's values, the figure's overrides merged over,
    then one dict per point of the figure's ``grid`` (one dict when there is no grid).

    Raises:
        ValueError: if the figure is unknown or the merged values are inconsistent (naming the key).
    """
    base, override, points = figure_grid(section, figure, where=dataset, not_values=NOT_AUDIT_VALUES,
                                         entry_keys=FIGURE_ENTRY_KEYS)
    merged = deep_merge(base, override)
    out = []
    where = f"{dataset}.figures.{figure}" if override or points != [{}] else dataset
    for point in points:
        values = {**merged, **point}
        per_model = (values.get("model_shard_sizes") or {}).get(values["model"])
        if per_model and "shard_size" not in override:
            values["shard_size"] = int(per_model)
        if values["runs"] % values["shard_size"] != 0:
            raise ValueError(
                f"{where}: runs ({values['runs']}) must be a multiple of shard_size ({values['shard_size']})"
            )
        if values["shard_size"] % 2 != 0 or values["shard_size"] < 2:
            raise ValueError(f"{where}: shard_size must be even and >= 2, got {values['shard_size']}")
        if values["period"] > total_steps(values):
            raise ValueError(
                f"{where}: period ({values['period']}) must not exceed steps ({total_steps(values)}): no insertion"
            )
        out.append(values)
    return out


def total_steps(values: Mapping[str, Any]) -> int:
    """T: ``steps`` when given, else ``insertions · period`` (Cebere et al. §5: T = 250·k)."""
    if values.get("steps") is not None:
        return int(values["steps"])
    return int(values["insertions"]) * int(values["period"])


def data_identity(data: Mapping[str, Any], *, dataset: str, model: ModelSpec | None = None) -> dict[str, Any]:
    """The parts of a dataset section's ``data`` that change the prepared arrays (not the cache directory).

    :func:`hsaudit.data.datasets.configured_identity` (Housing's is the one its audit keys were first made with, so
    they never change), plus the feature extractor and its weights for a model trained on features
    (:attr:`hsaudit.engine.models.ModelSpec.feature_extractor`: ``alexnet_head``).
    """
    identity = configured_identity(dataset, data)
    if model is not None and model.feature_extractor:
        identity["features"] = model.feature_extractor
        identity["weights"] = data.get(f"{model.feature_extractor}_weights") or "torchvision"
    return identity


def dataset_file(dataset: str, model: ModelSpec) -> str:
    """The prepared data an audit of ``model`` on ``dataset`` trains on (``results/data/cifar10_alexnet.npz``)."""
    name = f"{dataset}_{model.feature_extractor}" if model.feature_extractor else dataset
    return f"results/data/{name}.npz"


def model_options(values: Mapping[str, Any]) -> dict[str, Any]:
    """The options the audit values give their model: ``model_<option>`` for each option of its registry entry
    (:func:`hsaudit.engine.models.option_names`; Housing's ``model_variant`` is the FCNN's ``variant``). An option
    the values leave out takes its default and is not written, so that no existing setup key changes."""
    return {name: values[f"model_{name}"] for name in option_names(values["model"]) if f"model_{name}" in values}


def dpsgd_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments of ``hsaudit.engine.dpsgd.DPSGDConfig`` from audit values."""
    return {
        "steps": total_steps(values),
        "batch_size": int(values["batch_size"]),
        "lr": float(values["lr"]),
        "clip_norm": float(values["clip_norm"]),
        "noise_multiplier": float(values["noise_multiplier"]),
        "period": int(values["period"]),
    }


def setup_params(
    values: Mapping[str, Any], *, data: Mapping[str, Any], seed: int, rep: int, dataset: str
) -> dict[str, Any]:
    """Parameters of one setup (θ0 and the minibatch schedule, shared by all adversaries of a repetition)."""
    model = {"model": values["model"], "model_kwargs": model_options(values)}
    params = {
        "data": data_identity(data, dataset=dataset, model=spec_of(model)),
        **model,
        "dpsgd": dpsgd_values(values),
        "seed": int(seed),
        "rep": int(rep) if values["resample_setup"] else "shared",
    }
    # θ0's initialisation scheme enters the key only when it is not PyTorch's default (existing setups keep theirs).
    if values.get("theta0_init", "default") != "default":
        params["theta0_init"] = values["theta0_init"]
    return params


def audit_params(
    values: Mapping[str, Any], *, adversary: str, data: Mapping[str, Any], seed: int, rep: int, dataset: str
) -> dict[str, Any]:
    """Every parameter that changes the result of one audit (R and the shard size aside, see module doc).

    Keys that are at their default (θ0 known, d over all coordinates, no gradient norms recorded) are left out, so that adding such an
    option never changes the keys of existing audits.
    """
    setup = setup_params(values, data=data, seed=seed, rep=rep, dataset=dataset)
    params = {
        "setup": setup,
        "setup_key": key_of(setup),
        "adversary": adversary,
        "rep": int(rep),
        # r only matters to the noisy simulations; leaving it out elsewhere keeps those audits' keys stable.
        "simulations": int(values["simulations"]) if adversary.startswith("gc_s_noisy") else None,
    }
    if values.get("theta0", "known") != "known":
        params["theta0"] = values["theta0"]
    if values.get("coordinates", "all") != "all":
        if adversary != "gc_r":
            raise ValueError(
                f"{dataset}: coordinates {values['coordinates']!r} restricts A_GC-R's uniform d; got adversary {adversary!r}"
            )
        params["coordinates"] = values["coordinates"]
    if values.get("canary_norms"):
        params["canary_norms"] = True
    return params


def stream_key(params: Mapping[str, Any]) -> str:
    """The key that seeds an audit's random streams (crafting, membership bits, DP noise, per-run θ0): its key
    without the θ0 reading, so that audits that differ only in θ0 share d, the bits and the noise (a fair fig12).
    For θ0 known (no ``theta0`` entry) it is the audit key itself, so no existing audit's streams change.

    >>> stream_key({"adversary": "gc_r", "theta0": "unknown"}) == stream_key({"adversary": "gc_r"}) == key_of({"adversary": "gc_r"})
    True
    """
    return key_of({k: v for k, v in params.items() if k != "theta0"})


# --------------------------------------------------------------------------------------- dataset plans


@dataclass(frozen=True)
class AuditRef:
    """One audit as a figure uses it: its key, the values that tell its series apart, and the R and shard size."""

    figure: str
    adversary: str
    rep: int
    key: str
    runs: int
    shard_size: int
    model: str = "fcnn"
    clip_norm: float = 1.0
    period: int = 1
    theta0: str = "known"
    dataset: str = "housing"
    coordinates: str = "all"

    @property
    def run_dir(self) -> str:
        """The sub-directory of the gathered scores and the audit table for this R and shard size."""
        return f"R{self.runs}-s{self.shard_size}"

    @property
    def root(self) -> str:
        """The directory of the audit's files."""
        return f"results/{self.dataset}/audits/{self.key}"


@dataclass(frozen=True)
class BaseAudit:
    """A dataset section's own configuration (its values before any figure's overrides) audited by A_GC-R,
    repetition 0: the population audit that a study of the same configuration compares with. Its files are those
    of any figure's audit with the same key (for Housing at the shipped values: fig1c's first A_GC-R repetition).

    Attributes:
        dataset: the config section.
        key: the audit's key.
        params: its parameters (:func:`audit_params`).
        values: the section's merged values (model, T, η, B, C, σ, k, shard size, θ0 reading, device, ...).
        model: the model its values name, resolved (:func:`hsaudit.engine.models.spec_of` of its setup).
    """

    dataset: str
    key: str
    params: Mapping[str, Any]
    values: Mapping[str, Any]
    model: ModelSpec

    @property
    def root(self) -> str:
        return f"results/{self.dataset}/audits/{self.key}"

    @property
    def setup_path(self) -> str:
        """The setup (θ0, batches) that any audit of this configuration shares."""
        return f"results/{self.dataset}/setups/{self.params['setup_key']}/setup.npz"

    @property
    def data_path(self) -> str:
        return dataset_file(self.dataset, self.model)

    @property
    def shard_size(self) -> int:
        return int(self.values["shard_size"])

    def table_path(self, runs: int) -> str:
        """The per-step audit table of R = ``runs`` models (:func:`hsaudit.experiments.cebere.audit.audit_table`)."""
        return f"{self.root}/R{int(runs)}-s{self.shard_size}/epsilon.csv"


@dataclass(frozen=True)
class DatasetPlan:
    """All setups, audits and figure entries of one dataset section.

    Attributes:
        dataset: the config section (``housing``, ``cifar10``).
        setups: setup key -> setup parameters.
        audits: audit key -> audit parameters (with ``setup_key``); the base audit included.
        figures: figure name -> its audits, in series order, adversaries in legend order, then repetitions.
        values: figure name -> the merged audit values of each of its series.
        base: the section's own configuration audited by A_GC-R (:class:`BaseAudit`).
        models: setup key -> the model its setup names, resolved once here
            (:func:`hsaudit.engine.models.spec_of`); the setup keeps the name and options (the canonical value a
            workflow script resolves with the same function).
    """

    dataset: str
    setups: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    audits: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    figures: Mapping[str, tuple[AuditRef, ...]] = field(default_factory=dict)
    values: Mapping[str, tuple[dict[str, Any], ...]] = field(default_factory=dict)
    base: BaseAudit | None = None
    models: Mapping[str, ModelSpec] = field(default_factory=dict)

    @property
    def root(self) -> str:
        """The results directory of the dataset's audits."""
        return f"results/{self.dataset}"

    def setup_path(self, key: str) -> str:
        """The setup file (θ0 + batches) of audit ``key``."""
        return f"{self.root}/setups/{self.audits[key]['setup_key']}/setup.npz"

    def audit_data(self, key: str) -> str:
        """The prepared data that audit ``key`` trains on."""
        return dataset_file(self.dataset, self.models[self.audits[key]["setup_key"]])

    def setup_data(self, setup: str) -> str:
        """The prepared data of setup ``setup``."""
        return dataset_file(self.dataset, self.models[setup])

    def audit_tables(self, figure: str) -> list[str]:
        """The per-step audit tables of every audit shown in ``figure`` (in the order of ``figures``)."""
        return [f"{ref.root}/{ref.run_dir}/epsilon.csv" for ref in self.figures[figure]]

    def scores(self, figure: str) -> list[str]:
        """The gathered scores tables of every audit shown in ``figure``."""
        return [f"{ref.root}/{ref.run_dir}/scores.parquet" for ref in self.figures[figure]]

    def shards(self, figure: str) -> list[str]:
        """Every shard file of every audit shown in ``figure`` (e.g. for the gradient norms of fig8)."""
        return [
            path
            for ref in self.figures[figure]
            for path in shard_paths(ref.key, runs=ref.runs, shard_size=ref.shard_size, root=self.root)
        ]

    def crafted_path(self, key: str) -> str:
        """The adversary's crafted object of audit ``key``: ``crafted.npz`` (rule ``craft_adversary``), or
        ``crafted-fixed-init.npz`` for d among the fixed-initialisation coordinates (rule ``craft_fixed_init``)."""
        name = "crafted-fixed-init" if self.audits[key].get("coordinates", "all") == "fixed_init" else "crafted"
        return f"{self.root}/audits/{key}/{name}.npz"

    def crafted(self, figure: str) -> list[str]:
        """The adversaries' crafted objects of every audit shown in ``figure``."""
        return [self.crafted_path(ref.key) for ref in self.figures[figure]]

    def datasets(self, figure: str) -> list[str]:
        """The prepared data of every audit shown in ``figure``, in reference order (for their data_source)."""
        return [self.audit_data(ref.key) for ref in self.figures[figure]]


def shard_paths(key: str, *, runs: int, shard_size: int, root: str) -> list[str]:
    """The shard files whose models make up R = ``runs`` models of audit ``key``, in shards of ``shard_size``.

    >>> shard_paths("k", runs=4, shard_size=2, root="r")
    ['r/audits/k/shards/s2/0.npz', 'r/audits/k/shards/s2/1.npz']
    """
    runs, shard_size = int(runs), int(shard_size)
    if shard_size < 1 or runs % shard_size:
        raise ValueError(f"runs ({runs}) must be a multiple of the shard size ({shard_size})")
    return [f"{root}/audits/{key}/shards/s{shard_size}/{index}.npz" for index in range(runs // shard_size)]


def plan_dataset(section: Mapping[str, Any], *, seed: int, dataset: str) -> DatasetPlan:
    """Resolve a dataset section into setups, audits and figure entries (see the module docstring).

    Args:
        section: the dataset's config section (after the scale preset), e.g. ``config["cifar10"]``.
        seed: the master seed.
        dataset: the section's name.

    Raises:
        ValueError: an unknown dataset, or a figure whose values are inconsistent (naming the key).
    """
    if dataset not in DATASETS:
        raise ValueError(f"dataset must be one of {DATASETS}, got {dataset!r}")
    setups: dict[str, dict[str, Any]] = {}
    audits: dict[str, dict[str, Any]] = {}
    figures: dict[str, tuple[AuditRef, ...]] = {}
    values_of: dict[str, tuple[dict[str, Any], ...]] = {}
    for figure, entry in section.get("figures", {}).items():
        series = figure_values(section, figure, dataset=dataset)
        values_of[figure] = tuple(series)
        refs = []
        for values in series:
            for adversary in entry["adversaries"]:
                for rep in range(values["repetitions"]):
                    params = audit_params(
                        values, adversary=adversary, data=section["data"], seed=seed, rep=rep, dataset=dataset
                    )
                    key = key_of(params)
                    audits[key] = params
                    setups[params["setup_key"]] = params["setup"]
                    refs.append(
                        AuditRef(
                            figure,
                            adversary,
                            rep,
                            key,
                            values["runs"],
                            values["shard_size"],
                            model=values["model"],
                            clip_norm=float(values["clip_norm"]),
                            period=int(values["period"]),
                            theta0=values.get("theta0", "known"),
                            dataset=dataset,
                            coordinates=values.get("coordinates", "all"),
                        )
                    )
        figures[figure] = tuple(refs)
    # The section's own values, as its figures see them before their overrides (a pseudo-figure with none).
    own = {**section, "figures": {"_base": {"adversaries": [BASE_ADVERSARY]}}}
    values = figure_values(own, "_base", dataset=dataset)[0]
    params = audit_params(values, adversary=BASE_ADVERSARY, data=section["data"], seed=seed, rep=0, dataset=dataset)
    base = BaseAudit(dataset, key_of(params), params, values, spec_of(params["setup"]))
    audits.setdefault(base.key, params)
    setups.setdefault(params["setup_key"], params["setup"])
    models = {key: spec_of(setup) for key, setup in setups.items()}
    return DatasetPlan(dataset, setups, audits, figures, values_of, base, models)


def hyperparameters(plan: DatasetPlan, *, audit: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The hyper-parameters that a dataset's audits run with, one mapping per model (Cebere et al. Table 2).

    Values that differ between the model's series (e.g. C ∈ {1, 2, 4}, k ∈ {1, 5, 25}) are listed; ``audit`` is
    the config's ``audit`` section (δ, confidence, and the rule: its ``threshold_rule``, the rule's spec). Each mapping carries ``model_kwargs``, which
    :func:`hsaudit.experiments.cebere.figures.table2.with_model_facts` turns into the parameter count and loss in
    the Table 2 job (that needs torch and the model built, which the workflow's parse should not pay for).
    """
    by_model: dict[str, dict[str, Any]] = {}
    for figure, series in plan.values.items():
        for values in series:
            model = values["model"]
            row = by_model.setdefault(model, {"dataset": plan.dataset, "model": model, "figures": [], "_v": {}})
            if figure not in row["figures"]:
                row["figures"].append(figure)
            for name in ("batch_size", "lr", "noise_multiplier", "clip_norm", "period", "runs", "repetitions"):
                row["_v"].setdefault(name, []).append(values[name])
            row["_v"].setdefault("steps", []).append(total_steps(values))
    out = []
    for model, row in by_model.items():
        kwargs = model_options(next(v for s in plan.values.values() for v in s if v["model"] == model))
        entry = {
            "dataset": row["dataset"],
            "model": model,
            "figures": row["figures"],
            "model_kwargs": kwargs,
        }
        for name, seen in row["_v"].items():
            distinct = sorted(set(seen))
            entry[name] = distinct[0] if len(distinct) == 1 else distinct
        entry.update({"delta": audit["delta"], "confidence": audit["confidence"], "threshold_rule": config_rules(audit)[0].spec})
        out.append(entry)
    return out


# -------------------------------------------------------------------------------------------- figures


@dataclass(frozen=True)
class FigureJob:
    """The plot job of one trained-model figure (``plot_cebere_<figure>``).

    Attributes:
        target: the figure target.
        dataset: the section whose audits it draws (its script: ``plot_cebere_housing``, ``plot_cebere_cifar``).
        caption: its report caption (``workflow/report/<caption>.rst``).
        inputs: named input lists (audit tables, prepared data, and per figure scores, shards or crafted objects).
        params: what the script needs beside the inputs: the audit references, the facts of the footer.
        mem_mb: the job's memory.
    """

    target: Target
    dataset: str
    caption: str
    inputs: Mapping[str, list[str]]
    params: Mapping[str, Any]
    mem_mb: int = 2000

    @property
    def figure(self) -> str:
        return self.target.id

    @property
    def csv(self) -> str:
        return self.target.path.removesuffix(".pdf") + ".csv"


def _figure_jobs(datasets: Mapping[str, DatasetPlan], *, scale: str) -> tuple[FigureJob, ...]:
    """The Housing figures (CPU-sized) and the CIFAR-10 figures (GPU-sized at paper scale: built only when named)."""
    housing, cifar = datasets["housing"], datasets["cifar10"]
    jobs = []
    for figure in HOUSING_FIGURES:
        first = housing.values[figure][0]
        hyper = {k: first[k] for k in ("lr", "batch_size", "noise_multiplier", "clip_norm", "period")}
        jobs.append(
            FigureJob(
                Target(f"results/{figure}.pdf"),
                "housing",
                f"housing_{figure}",
                {"tables": housing.audit_tables(figure)},
                {"refs": [vars(ref) for ref in housing.figures[figure]], "facts": {"scale": scale, "hyper": hyper}},
                mem_mb=1000,
            )
        )
    for figure in CIFAR_FIGURES:
        inputs = {"tables": cifar.audit_tables(figure), "datasets": cifar.datasets(figure)}
        params: dict[str, Any] = {"refs": [vars(ref) for ref in cifar.figures[figure]], "facts": {"scale": scale}}
        parts: tuple[str, ...] = ()
        if figure == "fig1":  # panel (c) is fig1c's Housing audits
            inputs["housing"] = housing.audit_tables("fig1c")
            params["housing_refs"] = [vars(ref) for ref in housing.figures["fig1c"]]
            parts = ("fig1c",)
        elif figure == "fig6a":
            inputs["scores"] = cifar.scores(figure)
        elif figure == "fig8":  # the canary's gradient norms, from the shards
            inputs = {"shards": cifar.shards(figure), "datasets": cifar.datasets(figure)}
            params["shards_per_ref"] = [ref.runs // ref.shard_size for ref in cifar.figures[figure]]
        elif figure == "fig12":  # its CSV names the crafted coordinate d of every audit
            inputs["crafted"] = cifar.crafted(figure)
        jobs.append(
            FigureJob(
                Target(f"results/{figure}.pdf", kind="gpu", parts=parts),
                "cifar10",
                f"cifar_{figure}",
                inputs,
                params,
                mem_mb=4000 if figure == "fig6a" else 2000,
            )
        )
    return tuple(jobs)


# ------------------------------------------------------------------------------------------------ plan


@dataclass(frozen=True)
class CeberePlan:
    """Everything the Cebere et al. rules run and ``hsaudit plan`` prices (see the module docstring).

    Attributes:
        seed: the master seed.
        datasets: dataset section -> its :class:`DatasetPlan`.
        figure_jobs: the plot jobs of the trained-model figures.
        table2: the rows of Table 2 (:func:`hyperparameters` of CIFAR-10, then Housing).
        data_sources: dataset -> the data source Table 2 names.
        resources: dataset -> the resources of its training jobs (threads, mem_mb, runtime, gpu).
        data_options: dataset -> its ``data`` section (what ``prepare_data`` and ``extract_features`` read).
        devices: dataset -> the torch device of its training and crafting jobs.
        populations: every trained population (one per audit a figure reads), keyed by its directory.
        targets: every figure and table.
        rule, valid_rule: the audits' threshold rule and the valid rule beside it, built once from the config's
            ``audit`` section (:func:`hsaudit.audit.rules.config_rules`); the rules pass on their ``spec``.
        delta, confidence: the audits' δ and confidence (the config's ``audit`` section), for the rules' params.
    """

    seed: int
    datasets: Mapping[str, DatasetPlan]
    figure_jobs: tuple[FigureJob, ...]
    table2: tuple[dict[str, Any], ...]
    data_sources: Mapping[str, str]
    resources: Mapping[str, Mapping[str, Any]]
    data_options: Mapping[str, Mapping[str, Any]]
    devices: Mapping[str, str]
    populations: tuple[Population, ...]
    targets: tuple[Target, ...]
    rule: ThresholdRule = DEFAULT_RULE
    valid_rule: ThresholdRule = DEFAULT_RULE
    delta: float | None = None
    confidence: float | None = None

    CRAFTING_RESOURCES = {"mem_mb": 2000, "runtime": 10, "gpu": 0}
    """What crafting an adversary that does not simulate training needs (it draws a direction or picks a row)."""

    @property
    def base(self) -> dict[str, BaseAudit]:
        """Dataset -> its section's own configuration audited by A_GC-R (:class:`BaseAudit`)."""
        return {name: plan.base for name, plan in self.datasets.items()}

    def audit(self, dataset: str, key: str) -> dict[str, Any]:
        """The parameters of audit ``key`` of ``dataset``."""
        return self.datasets[dataset].audits[key]

    def setup_seed(self, dataset: str, setup: str) -> int:
        """The seed of a setup's θ0 and minibatch schedule."""
        return derive_seed(self.seed, f"{dataset}-setup", setup)

    def stream(self, dataset: str, key: str) -> str:
        """The key of an audit's random streams (:func:`stream_key`)."""
        return stream_key(self.audit(dataset, key))

    def craft_seed(self, dataset: str, key: str) -> int:
        """The adversary's seed of an audit: from its stream key, so audits that differ only in θ0 craft the same d."""
        return derive_seed(self.seed, f"{dataset}-craft", self.stream(dataset, key))

    def crafting_resources(self, dataset: str, key: str) -> Mapping[str, Any]:
        """The resources of an audit's crafting job: the dataset's training resources for A_GC-S (it simulates
        training), else :attr:`CRAFTING_RESOURCES`."""
        if self.audit(dataset, key)["adversary"].startswith("gc_s"):
            return self.resources[dataset]
        return self.CRAFTING_RESOURCES

    def audit_seed(self, dataset: str, key: str, runs: int | str, size: int | str) -> int:
        """The seed of an audit's threshold split (rules that hold data out) for R = ``runs`` in shards of ``size``."""
        return derive_seed(self.seed, f"{dataset}-audit", key, runs, size)


def _populations(datasets: Mapping[str, DatasetPlan], config: Mapping[str, Any]) -> tuple[Population, ...]:
    """One population per audit that a figure reads, with every figure that reads it. Its models are R (per
    repetition: repetitions are separate audits) plus, for the A_GC-S Noisy variants, the r simulated trainings."""
    out = []
    for name, plan in datasets.items():
        figures: dict[str, list[str]] = {}
        refs: dict[str, AuditRef] = {}
        for figure, entries in plan.figures.items():
            for ref in entries:
                figures.setdefault(ref.key, [])
                if figure not in figures[ref.key]:
                    figures[ref.key].append(figure)
                refs.setdefault(ref.key, ref)
        for key, ref in refs.items():
            params = plan.audits[key]
            dpsgd = params["setup"]["dpsgd"]
            noisy = ref.adversary.startswith("gc_s_noisy")
            out.append(
                Population(
                    root=ref.root,
                    figures=tuple(figures[key]),
                    model=ref.model,
                    models=ref.runs + (int(params["simulations"] or 0) if noisy else 0),
                    steps=int(dpsgd["steps"]),
                    batch=int(dpsgd["batch_size"]),
                    gpu=gpu_requested(config[name]),
                    role=ref.adversary,
                    detail=f"C={dpsgd['clip_norm']:g} k={dpsgd['period']} rep={ref.rep}",
                )
            )
    return tuple(out)


def plan(config: Mapping[str, Any]) -> CeberePlan:
    """Resolve the config (after the scale preset) into the values Cebere et al.'s rules run.

    Raises:
        ValueError: naming the key of an inconsistent value (a figure's).
    """
    seed = int(config["seed"])
    datasets = {name: plan_dataset(config[name], seed=seed, dataset=name) for name in DATASETS}
    jobs = _figure_jobs(datasets, scale=config["scale"])
    rule, valid_rule = config_rules(config["audit"])
    return CeberePlan(
        rule=rule,
        valid_rule=valid_rule,
        delta=float(config["audit"]["delta"]),
        confidence=float(config["audit"]["confidence"]),
        seed=seed,
        datasets=datasets,
        figure_jobs=jobs,
        table2=tuple(
            hyperparameters(datasets["cifar10"], audit=config["audit"])
            + hyperparameters(datasets["housing"], audit=config["audit"])
        ),
        data_sources={
            "cifar10": f"cifar10:{config['cifar10']['data']['source']}",
            "housing": f"housing:{config['housing']['data']['path'] or 'sklearn'}",
        },
        resources={name: dict(config[name]["resources"]) for name in DATASETS},
        data_options={name: dict(config[name]["data"]) for name in DATASETS},
        devices={name: str(config[name]["device"]) for name in DATASETS},
        populations=_populations(datasets, config),
        targets=(*(job.target for job in jobs), Target(TABLE2, kind="gpu")),
    )
