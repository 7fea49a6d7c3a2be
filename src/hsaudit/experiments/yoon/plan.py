"""The plan of the Yoon et al. experiments: which data, populations and audits every figure needs, and their keys.

A figure entry of the ``yoon`` config section lists overrides of the section's values and an optional ``grid``
(lists whose Cartesian product gives its series, e.g. ``{canary: [blank, in_distribution]}``). Every series is
audited at each ε of ``epsilons`` in ``runs`` independent runs. Three kinds of work, each keyed by a short hash
(:func:`hsaudit.experiments.cebere.plan.key_of`) of the values that change its result, so figures share work:

- **data** (``results/yoon/data/{key}.npz``): D (``d_size`` rows of a seeded permutation of the training split)
  and the auxiliary half (``aux_size`` rows after the first half), or the whole pre-training set (CIFAR-100);
- **population** (``results/yoon/models/{key}/run{r}.npz``): one run's two populations of 2N full-batch DP-SGD
  models (crafting and audit), their θ0, canary and σ; the key covers the dataset, model, initialisation,
  canary, C, ε, T, η, N and the seed;
- **audit** (``results/yoon/audits/{key}/run{r}.csv``): the crafted samples of a population and their audits,
  keyed by the population, the access (white/black box), the margins, the crafting and distillation options and
  the audit's mode, confidence and δ.

A figure's CSV is the concatenation of its audits' rows with its series columns.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hsaudit.data.datasets import DATASETS, configured_identity
from hsaudit.accounting.gaussian import calibrate_noise
from hsaudit.util.mapping import deep_merge, grid_points, key_of

FIGURES = ("fig2", "fig3", "fig4", "fig5", "fig6", "fig7", "fig8", "table1", "crafting")
"""The Yoon et al. targets (``results/yoon/{figure}.pdf``; table1 is ``results/yoon/table1.md``)."""
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
    """Everything the Yoon rules need: data, populations, audits (key → parameters) and each figure's points."""

    data: dict[str, dict[str, Any]]
    populations: dict[str, dict[str, Any]]
    audits: dict[str, dict[str, Any]]
    figures: dict[str, list[Point]]


def figure_values(section: Mapping[str, Any], figure: str) -> list[dict[str, Any]]:
    """The values of every series of ``figure``, merged in this order: the section's values, the series'
    dataset entry (``datasets.<name>``, its null values skipped), the figure's overrides, the grid cell; then the
    named recipe ``craft_recipe`` (an entry of ``craft_recipes``) is merged over ``craft``.

    Raises:
        ValueError: an unknown figure, dataset or recipe, a grid key that is not a value of the section, or a
            validation-stopped recipe without a validation population.
    """
    figures = section.get("figures", {})
    if figure not in figures:
        raise ValueError(f"yoon.figures has no entry {figure!r}; known: {sorted(figures)}")
    base = {k: v for k, v in section.items() if k not in NOT_VALUES}
    entry = dict(figures[figure] or {})
    grid = entry.pop("grid", None) or {}
    cells = grid_points(grid, where=f"yoon.figures.{figure}")  # keys checked below, per dataset
    out = []
    for cell in cells:
        dataset = cell.get("dataset", entry.get("dataset", base["dataset"]))
        per_dataset = section.get("datasets", {}).get(dataset)
        if per_dataset is None:
            raise ValueError(f"yoon.datasets has no entry for dataset {dataset!r}")
        values = deep_merge(base, {k: v for k, v in per_dataset.items() if v is not None})
        unknown = sorted(set(grid) - set(values))
        if unknown:
            raise ValueError(f"yoon.figures.{figure}.grid: unknown keys {unknown}")
        out.append(_with_recipe(deep_merge(deep_merge(values, entry), cell), section, figure))
    return out


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


def _population_params(values: Mapping[str, Any], data_key: str, pre_key: str | None) -> dict[str, Any]:
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


OPTIMIZERS = ("adam", "sgd", "sign_sgd")
BUDGET_NORMS = ("l2", "linf")


@dataclass(frozen=True)
class CraftRecipe:
    """How x_a is crafted from the canary (Yoon et al. give the objectives, not the optimisation).

    Attributes:
        optimizer: ``adam`` (per-coordinate normalised steps), ``sgd`` (plain gradient steps) or ``sign_sgd``
            (x ← x − lr·sign(∇), an L∞ steepest-descent step).
        lr: step size.
        steps: optimisation steps (the budget; with ``stop_on_validation`` the best checkpoint is kept).
        pixel_range: keep every pixel inside the data's range (a projection after every step; needs the
            ``pixel_range`` bounds at crafting time).
        budget_norm, budget: keep ‖x_a − x_c‖ ≤ ``budget`` in ``budget_norm`` (``l2`` or ``linf``; None: unbounded),
            in the normalised input space.
        stop_on_validation: choose the checkpoint (step 0 = the canary itself, then every ``check_every`` steps)
            whose moment estimate of μ on a validation population (fresh noise, never the audited one) is highest.
        check_every: steps between validation checkpoints.

    The paper's reading is :data:`PAPER_RECIPE` (Adam, lr 0.01, 100 steps, unconstrained) [inferred].
    """

    optimizer: str = "adam"
    lr: float = 0.01
    steps: int = 100
    pixel_range: bool = False
    budget_norm: str | None = None
    budget: float = 0.0
    stop_on_validation: bool = False
    check_every: int = 10

    def __post_init__(self) -> None:
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"craft.optimizer must be one of {OPTIMIZERS}, got {self.optimizer!r}")
        if int(self.steps) < 1 or not float(self.lr) > 0:
            raise ValueError(f"crafting needs steps >= 1 and lr > 0, got steps={self.steps}, lr={self.lr}")
        if self.budget_norm is not None and (self.budget_norm not in BUDGET_NORMS or not float(self.budget) > 0):
            raise ValueError(f"craft.budget_norm must be one of {BUDGET_NORMS} with budget > 0, got "
                             f"{self.budget_norm!r}, {self.budget!r}")  # fmt: skip
        if int(self.check_every) < 1:
            raise ValueError(f"craft.check_every must be >= 1, got {self.check_every}")

    @classmethod
    def from_config(cls, values) -> CraftRecipe:
        """From the config's ``yoon.craft`` mapping (unknown keys are an error, naming them)."""
        values = dict(values or {})
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"yoon.craft has unknown keys {unknown} (known: {sorted(known)})")
        return cls(**values)


PAPER_RECIPE = CraftRecipe()


def craft_key(craft: Mapping[str, Any]) -> dict[str, Any]:
    """The crafting recipe as it enters an audit's key: steps and lr always, every other option only where it
    differs from the paper's reading (:data:`PAPER_RECIPE`), so that the audits
    crafted with the paper's recipe keep the keys they had before the recipe grew options."""
    recipe = CraftRecipe.from_config(craft)
    paper = CraftRecipe()
    out = {"steps": int(recipe.steps), "lr": float(recipe.lr)}
    for name in CraftRecipe.__dataclass_fields__:
        if name not in out and getattr(recipe, name) != getattr(paper, name):
            out[name] = getattr(recipe, name)
    return out


def recipe_label(craft: Mapping[str, Any]) -> str:
    """A short name of a crafting recipe for tables and legends, e.g. ``"adam lr=0.01 T=100, pixels in range"``.

    >>> recipe_label({"steps": 100, "lr": 0.01})
    'adam lr=0.01 T=100'
    >>> recipe_label({"optimizer": "sign_sgd", "steps": 50, "lr": 0.005, "budget_norm": "linf", "budget": 0.5})
    'sign_sgd lr=0.005 T=50, L∞ ≤ 0.5'
    """
    r = CraftRecipe.from_config(craft)
    parts = [f"{r.optimizer} lr={r.lr:g} T={r.steps}"]
    if r.pixel_range:
        parts.append("pixels in range")
    if r.budget_norm:
        parts.append(f"{'L2' if r.budget_norm == 'l2' else 'L∞'} ≤ {r.budget:g}")
    if r.stop_on_validation:
        parts.append(f"validation stop/{r.check_every}")
    return ", ".join(parts)


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


def plan_yoon(section: Mapping[str, Any], *, seed: int, audit: Mapping[str, Any]) -> YoonPlan:
    """Turn the ``yoon`` config section into data, population and audit entries and each figure's points.

    Args:
        section: the (scale-resolved) ``yoon`` section.
        seed: the project's master seed.
        audit: the project's ``audit`` section (mode, confidence, selection_fraction).
    """
    data: dict[str, dict[str, Any]] = {}
    populations: dict[str, dict[str, Any]] = {}
    audits: dict[str, dict[str, Any]] = {}
    figures: dict[str, list[Point]] = {}
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
                pop = _population_params(values, data_key, pre_key)
                pop_key = key_of(pop)
                populations.setdefault(pop_key, pop)
                aud = _audit_params(values, pop_key, audit)
                aud_key = key_of(aud)
                audits.setdefault(aud_key, aud)
                label = {k: values[k] for k in ("dataset", "canary", "init", "clip_norm", "access", "epsilon",
                                                "craft_recipe")}  # fmt: skip
                points.append(Point(figure, aud_key, pop_key, int(values["runs"]), label))
        figures[figure] = points
    return YoonPlan(data=data, populations=populations, audits=audits, figures=figures)


def run_paths(kind: str, key: str, runs: int) -> list[str]:
    """``results/yoon/{models|audits}/{key}/run{r}.{npz|csv}`` for r = 0..runs-1."""
    ext = {"models": "npz", "audits": "csv"}[kind]
    return [f"results/yoon/{kind}/{key}/run{r}.{ext}" for r in range(int(runs))]


def figure_audit_paths(plan: YoonPlan, figure: str) -> list[str]:
    """Every audit CSV a figure reads, in point order."""
    return [path for point in plan.figures[figure] for path in run_paths("audits", point.audit, point.runs)]


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
