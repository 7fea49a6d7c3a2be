"""The plan of the Yoon et al. experiments: from the resolved config to the data, populations, audits and figures
that the rules (``workflow/rules/yoon.smk``) and ``hsaudit plan`` read (:func:`plan`).

A figure entry of the ``yoon`` config section lists overrides of the section's values and an optional ``grid``
(lists whose Cartesian product gives its series, e.g. ``{canary: [blank, in_distribution]}``). Every series is
audited at each ε of ``epsilons`` in ``runs`` independent runs. Three kinds of work, each keyed by a short hash
(:func:`hsaudit.util.mapping.key_of`) of the values that change its result, so figures share work:

- **data** (``results/yoon/data/{key}.npz``): D (``d_size`` rows of a seeded permutation of the training split)
  and the auxiliary half (``aux_size`` rows after the first half), or the whole pre-training set (CIFAR-100);
- **population** (``results/yoon/models/{key}/run{r}.npz``): one run's two populations of 2N full-batch DP-SGD
  models (crafting and audit), their θ0, canary and σ; the key covers the dataset, model, initialisation,
  canary, C, ε, T, η, N and the seed;
- **audit** (``results/yoon/audits/{key}/run{r}.csv``): the crafted samples of a population and their audits,
  keyed by the population, the access (white/black box), the margins, the crafting and distillation options and
  the audit's mode, confidence and δ.

A figure's CSV is the concatenation of its audits' rows with its series columns. No job imports this module: the
jobs take its values as parameters.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hsaudit.accounting.gaussian import calibrate_noise
from hsaudit.audit.rules import DEFAULT_RULE, ThresholdRule, config_rules
from hsaudit.data.datasets import DATASETS, configured_identity
from hsaudit.experiments.plans import Population, Target, figure_grid
from hsaudit.experiments.yoon.recipe import craft_key
from hsaudit.util.mapping import deep_merge, key_of

SCORED_FIGURES = ("fig2",)
"""The figures drawn from the per-model scores (``run<r>_scores.csv``) beside the audit rows."""
NOT_VALUES = ("data", "resources", "figures", "datasets", "craft_recipes")
PRETRAIN_DATASET = {"cifar10": "cifar100"}
"""θ_worst of a dataset is pre-trained on this dataset first (then fine-tuned on the auxiliary half)."""


@dataclass(frozen=True)
class Point:
    """One series × ε of a figure: its audit and population keys, run count and the values that label it."""

    figure: str
    audit: str
    population: str
    runs: int
    values: dict[str, Any]


@dataclass(frozen=True)
class YoonPlan:
    """Everything the Yoon rules and ``hsaudit plan`` need.

    Attributes:
        data: data key → what ``prepare_yoon_data`` prepares.
        trainings: population key → the values its training jobs take (``train_yoon_models``).
        audits: audit key → the values its audit jobs take (``audit_yoon_run``).
        figures: figure id → its points (series × ε), in the config's order.
        populations: what is trained, keyed by where it lives: one entry per population (both worlds of the
            crafting, audit and validation populations of every run) and one per black-box audit (its surrogates).
        targets: the figures and tables (every one GPU-sized: named, not built by ``rule all``).
        facts: what every figure's footer says of the run (the scale).
        resources: the resources of its training jobs (threads, mem_mb, runtime, gpu; ``yoon.resources``).
        device: the torch device of its training and audit jobs (``yoon.device``).
        rule, valid_rule: the audits' threshold rule and the valid rule beside it, built once from the config's
            ``audit`` section (:func:`hsaudit.audit.rules.config_rules`); an audit's key keeps the config's
            ``mode`` and ``selection_fraction``, so that the audits keep their keys.
    """

    data: dict[str, dict[str, Any]]
    trainings: dict[str, dict[str, Any]]
    audits: dict[str, dict[str, Any]]
    figures: dict[str, tuple[Point, ...]]
    populations: tuple[Population, ...]
    targets: tuple[Target, ...]
    facts: dict[str, Any]
    resources: Mapping[str, Any] = field(default_factory=dict)
    device: str = "cpu"
    rule: ThresholdRule = DEFAULT_RULE
    valid_rule: ThresholdRule = DEFAULT_RULE
    delta: float | None = None
    confidence: float | None = None

    def noise_multiplier(self, population: str) -> float:
        """σ of a population's full-batch DP-SGD at its ε, δ and T (:func:`noise_multiplier`)."""
        spec = self.trainings[population]
        return noise_multiplier(spec["epsilon"], steps=spec["steps"], delta=spec["delta"])

    def training_inputs(self, population: str) -> dict[str, str]:
        """The prepared data of a population (and the pre-training set of a CIFAR-10 θ_worst)."""
        spec = self.trainings[population]
        inputs = {"data": data_path(spec["data"])}
        if spec.get("pretrain_data"):
            inputs["pretrain"] = data_path(spec["pretrain_data"])
        return inputs

    def audit_inputs(self, audit: str, run: int | str) -> dict[str, str]:
        """The run an audit crafts on and scores, and the prepared data of its population (the black box queries
        D′'s inputs)."""
        population = self.audits[audit]["population"]
        return {"models": run_path("models", population, run), "data": data_path(self.trainings[population]["data"])}

    def audit_paths(self, figure: str) -> list[str]:
        """Every audit CSV a figure reads, in point order."""
        return [path for point in self.figures[figure] for path in run_paths("audits", point.audit, point.runs)]

    def score_paths(self, figure: str) -> list[str]:
        """The per-model scores behind a figure that draws them (:data:`SCORED_FIGURES`); none for the others."""
        if figure not in SCORED_FIGURES:
            return []
        return [path.removesuffix(".csv") + "_scores.csv" for path in self.audit_paths(figure)]


def figure_values(section: Mapping[str, Any], figure: str) -> list[dict[str, Any]]:
    """The values of every series of ``figure``, merged in this order: the section's values, the series'
    dataset entry (``datasets.<name>``, its null values skipped), the figure's overrides, the grid cell; then the
    named recipe ``craft_recipe`` (an entry of ``craft_recipes``) is merged over ``craft``. A grid's ``craft``
    entry may be a recipe's name, or ``{recipe: name, ...}`` with options over it: it stands for that recipe's
    options (the cell's key is the same as if they were written out).

    Raises:
        ValueError: an unknown figure, dataset or recipe, a grid key that is not a value of the section, or a
            validation-stopped recipe without a validation population.
    """
    # The grid's keys are checked below, per dataset (a dataset entry adds values).
    base, entry, cells = figure_grid(section, figure, where="yoon", not_values=NOT_VALUES, check_grid=False)
    out = []
    for cell in cells:
        dataset = cell.get("dataset", entry.get("dataset", base["dataset"]))
        per_dataset = section.get("datasets", {}).get(dataset)
        if per_dataset is None:
            raise ValueError(f"yoon.datasets has no entry for dataset {dataset!r}")
        values = deep_merge(base, {k: v for k, v in per_dataset.items() if v is not None})
        unknown = sorted(set(cell) - set(values))
        if unknown:
            raise ValueError(f"yoon.figures.{figure}.grid: unknown keys {unknown}")
        cell = {**cell, "craft": _named_craft(cell["craft"], section, figure)} if "craft" in cell else cell
        out.append(_with_recipe(deep_merge(deep_merge(values, entry), cell), section, figure))
    return out


def _named_craft(craft: Any, section: Mapping[str, Any], figure: str) -> Any:
    """A grid's ``craft`` entry with a recipe's name replaced by that recipe's options: ``NAME`` or
    ``{recipe: NAME, **overrides}`` (the overrides win, e.g. a smoke grid's ``check_every: 1``)."""
    overrides: dict[str, Any] = {}
    if isinstance(craft, Mapping) and "recipe" in craft:
        overrides = {k: v for k, v in craft.items() if k != "recipe"}
        craft = craft["recipe"]
    if not isinstance(craft, str):
        return craft
    recipes = section.get("craft_recipes") or {}
    if craft not in recipes:
        raise ValueError(f"yoon.figures.{figure}.grid.craft: {craft!r} is not in yoon.craft_recipes "
                         f"({sorted(recipes)})")  # fmt: skip
    return {**(recipes[craft] or {}), **overrides}


def _with_recipe(values: dict[str, Any], section: Mapping[str, Any], figure: str) -> dict[str, Any]:
    """``values`` with its named recipe's options merged over ``craft`` (the recipe's options win)."""
    recipes = section.get("craft_recipes") or {"paper": {}}
    name = values.setdefault("craft_recipe", "paper")
    if name not in recipes:
        raise ValueError(f"yoon.figures.{figure}: craft_recipe {name!r} is not in yoon.craft_recipes "
                         f"({sorted(recipes)})")  # fmt: skip
    values["craft"] = deep_merge(values["craft"], recipes[name] or {})
    if values["craft"].get("stop_on_validation") and not validation_size(values):
        raise ValueError(f"yoon.figures.{figure}: recipe {name!r} stops on validation, which needs "
                         "yoon.validation_models_per_world > 0")  # fmt: skip
    return values


def _data_params(section: Mapping[str, Any], dataset: str, *, role: str, values: Mapping[str, Any]) -> dict[str, Any]:
    data = dict(section["data"][dataset])
    n_train = DATASETS[dataset].n_train
    if data.get("source") == "synthetic":
        n_train = int(data["synthetic_train"])
    half = n_train // 2
    params: dict[str, Any] = {
        "dataset": dataset,
        "role": role,
        "section": data,
        "identity": configured_identity(dataset, data),
        "split_seed": int(values["split_seed"]),
    }
    if role == "train":
        params["d_size"] = min(half, int(values["d_size"] or half))
        params["aux_size"] = min(n_train - half, int(values["aux_size"] or n_train - half))
        params["aux_offset"] = half
    else:  # a pre-training set: a prefix of its own permutation
        params["size"] = min(n_train, int(values["pretrain_size"] or n_train))
    return params


def validation_size(values: Mapping[str, Any]) -> int:
    """N_v, models per world of the validation population: ``validation_models_per_world``, null = N // 2."""
    n_v = values.get("validation_models_per_world")
    return int(values["models_per_world"]) // 2 if n_v is None else int(n_v)


def _training_params(values: Mapping[str, Any], data_key: str, pre_key: str | None) -> dict[str, Any]:
    init = values["init"]
    params = {
        "data": data_key,
        "dataset": values["dataset"],
        "model": values["model"],
        "init": init,
        "init_bias": float(values["init_bias"]),
        "shared_init": bool(values["shared_init"]),
        "canary": values["canary"],
        "blank_label": int(values["blank_label"]),
        "clip_norm": float(values["clip_norm"]),
        "epsilon": float(values["epsilon"]),
        "delta": float(values["delta"]),
        "steps": int(values["steps"]),
        "lr": float(values["lr"]),
        "models_per_world": int(values["models_per_world"]),
        "seed": int(values["seed"]),
    }
    if values["canary"] == "mislabeled":
        params["mislabeled_ood"] = values["mislabeled_ood"]
    # Population sizes beyond the paper's design enter the key only when set (existing populations keep theirs).
    if values.get("craft_models_per_world") is not None:
        params["craft_models_per_world"] = int(values["craft_models_per_world"])
    if validation_size(values) > 0:
        params["validation_models_per_world"] = validation_size(values)
    if init == "worst":
        params["worst"] = dict(values["worst"])
        params["pretrain_data"] = pre_key
    return params


def _audit_params(values: Mapping[str, Any], population_key: str, audit: Mapping[str, Any]) -> dict[str, Any]:
    params = {
        "population": population_key,
        "access": values["access"],
        "margins": [float(m) for m in values["margins"]],
        "craft": craft_key(values["craft"]),
        "mode": audit["mode"],
        "confidence": float(audit["confidence"]),
        "delta": float(audit["delta"]),
        "selection_fraction": float(audit.get("selection_fraction", 0.5)),
    }
    if values["access"] == "black":
        params["surrogate"] = dict(values["surrogate"])
    return params


def plan(config: Mapping[str, Any]) -> YoonPlan:
    """The Yoon et al. plan of the resolved ``config`` (the scale preset applied).

    Reads ``yoon`` (its figures, their series and the work they need), ``seed`` (the project's master seed),
    ``audit`` (mode, confidence, δ and selection fraction of the audits) and ``scale`` (the figures' footer).

    Raises:
        ValueError: an unknown figure, dataset or recipe, or a grid key that is not a value of the section
            (:func:`figure_values`).
    """
    section, seed, audit = config["yoon"], int(config["seed"]), config["audit"]
    data: dict[str, dict[str, Any]] = {}
    trainings: dict[str, dict[str, Any]] = {}
    audits: dict[str, dict[str, Any]] = {}
    figures: dict[str, tuple[Point, ...]] = {}
    for figure in section.get("figures", {}):
        points = []
        for series in figure_values(section, figure):
            series = {**series, "seed": seed}
            train = _data_params(section, series["dataset"], role="train", values=series)
            data_key = key_of({k: v for k, v in train.items() if k != "section"})
            data.setdefault(data_key, train)
            pre_key = None
            pre_name = PRETRAIN_DATASET.get(series["dataset"])
            if series["init"] == "worst" and pre_name is not None and series["worst"].get("pre_epochs", 0) > 0:
                pre = _data_params(section, pre_name, role="pretrain", values=series)
                pre_key = key_of({k: v for k, v in pre.items() if k != "section"})
                data.setdefault(pre_key, pre)
            for eps in series["epsilons"]:
                values = {**series, "epsilon": float(eps)}
                pop = _training_params(values, data_key, pre_key)
                pop_key = key_of(pop)
                trainings.setdefault(pop_key, pop)
                aud = _audit_params(values, pop_key, audit)
                aud_key = key_of(aud)
                audits.setdefault(aud_key, aud)
                label = {k: values[k] for k in ("dataset", "canary", "init", "clip_norm", "access", "epsilon",
                                                "craft_recipe")}  # fmt: skip
                points.append(Point(figure, aud_key, pop_key, int(values["runs"]), label))
        figures[figure] = tuple(points)
    gpu = int((section.get("resources") or {}).get("gpu", 0) or 0) > 0
    rule, valid_rule = config_rules(config["audit"])
    return YoonPlan(
        data=data,
        trainings=trainings,
        audits=audits,
        figures=figures,
        populations=_populations(data, trainings, audits, figures, gpu=gpu),
        targets=tuple(Target(figure_outputs(figure)[0], kind="gpu") for figure in figures),
        facts={"scale": config["scale"]},
        resources=dict(config["yoon"]["resources"]),
        device=str(config["yoon"]["device"]),
        rule=rule,
        valid_rule=valid_rule,
        delta=float(config["audit"]["delta"]),
        confidence=float(config["audit"]["confidence"]),
    )


def _populations(data, trainings, audits, figures, *, gpu: bool) -> tuple[Population, ...]:
    """What is trained, in the order ``hsaudit plan`` lists it: every population, then the black-box surrogates.

    A population shared by figures (e.g. fig2/fig4 reuse fig3's MNIST populations) is listed once, at the most runs
    any point asks for: every run trains its crafting (N_craft per world), audit (N) and validation populations,
    both worlds each, every model T full-batch steps of |D| + 1 per-sample gradients (the engine appends the
    canary to the batch of every model and masks it out of the D models'). A black-box audit adds its surrogates
    (one per crafting model, ``epochs × ⌈(|D| + 1) / b⌉`` Adam steps of batch ``b``, priced as DP-SGD steps: an
    upper estimate, distillation needs no per-sample gradients). Crafting (a few hundred forward/backward passes of
    one input) is not counted.
    """
    readers: dict[tuple[str, str], list[str]] = {}
    runs: dict[tuple[str, str], int] = {}
    for figure, points in figures.items():
        for point in points:
            for name in (("models", point.population), ("audits", point.audit)):
                readers.setdefault(name, [])
                if f"yoon/{figure}" not in readers[name]:
                    readers[name].append(f"yoon/{figure}")
                runs[name] = max(runs.get(name, 0), point.runs)
    out = []
    for (kind, key), figs in readers.items():
        if kind != "models":
            continue
        pop = trainings[key]
        d = int(data[pop["data"]]["d_size"])
        n = int(pop["models_per_world"])
        per_run = 2 * (int(pop.get("craft_models_per_world") or n) + n + int(pop.get("validation_models_per_world", 0)))
        out.append(Population(
            root=f"results/yoon/models/{key}", figures=tuple(figs), model=pop["model"],
            models=per_run * runs[kind, key],
            steps=int(pop["steps"]), batch=d + 1, gpu=gpu, role="full-batch DP-SGD",
            detail=f"{pop['dataset']} eps={pop['epsilon']:g} {pop['canary']} init={pop['init']} "
            f"C={pop['clip_norm']:g} |D|={d} N={n}",
        ))  # fmt: skip
    for (kind, key), figs in readers.items():
        if kind != "audits" or audits[key]["access"] != "black":
            continue
        aud = audits[key]
        pop = trainings[aud["population"]]
        d, s = int(data[pop["data"]]["d_size"]), aud["surrogate"]
        n = int(pop.get("craft_models_per_world") or pop["models_per_world"])  # one surrogate per crafting model
        batch = int(s["batch_size"])
        out.append(Population(
            root=f"results/yoon/audits/{key}", figures=tuple(figs), model=pop["model"], models=2 * n * runs[kind, key],
            steps=int(s["epochs"]) * -(-(d + 1) // batch), batch=min(batch, d + 1), gpu=gpu, role="surrogates",
            detail=f"{pop['dataset']} eps={pop['epsilon']:g} black box, {s['epochs']} epochs",
        ))  # fmt: skip
    return tuple(out)


def data_path(key: str) -> str:
    """``results/yoon/data/{key}.npz``: one prepared dataset."""
    return f"results/yoon/data/{key}.npz"


def run_path(kind: str, key: str, run: int | str) -> str:
    """``results/yoon/{models|audits}/{key}/run{run}.{npz|csv}``: one run's models or audit rows."""
    ext = {"models": "npz", "audits": "csv"}[kind]
    return f"results/yoon/{kind}/{key}/run{run}.{ext}"


def run_paths(kind: str, key: str, runs: int) -> list[str]:
    """:func:`run_path` of r = 0..runs-1."""
    return [run_path(kind, key, r) for r in range(int(runs))]


def figure_outputs(figure: str) -> list[str]:
    """The files a figure target writes: its PDF (Markdown for table1), its CSV (mean ± sd over runs of every
    plotted series) and ``<figure>_runs.csv`` (every run's audit row: run, adversary, margin, split, epsilon,
    mu, the CP bounds, canary, init, clip_norm, epsilon_theory, ...)."""
    main = "results/yoon/table1.md" if figure == "table1" else f"results/yoon/{figure}.pdf"
    return [main, f"results/yoon/{figure}.csv", f"results/yoon/{figure}_runs.csv"]


def noise_multiplier(epsilon: float, *, steps: int, delta: float) -> float:
    """σ of T full-batch Gaussian steps that are (ε, δ)-DP: μ-GDP with μ = √T/σ (q = 1, exact).

    Computed when the workflow is planned and handed to the training job as a parameter, so that the training
    code does not import the accountant: an edit of the accounting code reruns a population only if σ changes.
    """
    return calibrate_noise(epsilon=epsilon, delta=delta, compositions=steps, sampling_rate=1.0)
