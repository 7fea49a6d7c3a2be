"""What every experiment package's plan hands to the workflow and to ``hsaudit plan``: frozen values.

Every experiment package (``hsaudit.experiments.<name>``) has the same shape:

- ``plan.py``: ``plan(config) -> <Name>Plan`` (one argument, every package), from the resolved config (the scale
  preset applied; the whole mapping, so that a study can read the sections it shares with a paper, and another
  experiment's plan through :func:`plan_of`) to frozen values. The plan object has at
  least ``populations`` (a tuple of :class:`Population`: what is trained, keyed by where it lives) and
  ``targets`` (a tuple of :class:`Target`: the figures and tables it makes), beside whatever its rules need (audit
  jobs, shards, keys). The workflow's rule file and :mod:`hsaudit.pipeline.costs` call the same function, so
  ``hsaudit plan`` prices exactly what the rules train.
- ``train.py`` (or a ``train`` package): imports the engine and data layers only; what the training jobs run.
- ``audit.py``: scores → tables; imports the audit layer only.
- ``figures.py`` (or a ``figures`` package): every figure function has the signature
  ``fn(table, *, pdf, csv, facts) -> pd.DataFrame`` (it writes ``pdf`` and ``csv`` and returns the table it wrote
  to ``csv``, every plotted number: a test or a caller checks what was drawn without reading the file back) and is
  listed in one ``FIGURES`` mapping (figure id → function).
- ``values.py``, where a package needs one: plain values that the plan checks and a side reads (imports the util
  layer at most), at the package's top, never inside ``train``.

tests/experiments/test_package_shape.py checks this shape for every package of :data:`EXPERIMENTS`.

This module is imported by plan modules only (never by a training job), so editing it reruns no training.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from hsaudit.util.mapping import grid_points

KINDS = ("cpu", "gpu")

#: The experiment packages (``hsaudit.experiments.<name>``) whose plans the workflow runs, in the order ``hsaudit
#: plan`` lists them and the Snakefile includes their rule files (``workflow/rules/<name>.smk``; ``libraries`` before
#: ``byo``: its rows are audits that byo's rules run). A new experiment is one entry here beside its package and its
#: rule file; tests/experiments/test_package_shape.py checks every entry's shape.
EXPERIMENTS = ("cebere", "section6", "one_run", "steinke", "yoon", "annamalai", "libraries", "byo")


def plan_of(name: str, config: Mapping[str, Any]) -> Any:
    """The plan of experiment ``name`` (:data:`EXPERIMENTS`): ``plan(config)`` of its package.

    A plan that reads what another experiment plans (the one-run study reads Cebere's base audits) asks for that
    plan here, as a value: no package imports another's modules.
    """
    if name not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {name!r}; choose from {', '.join(EXPERIMENTS)}")
    return importlib.import_module(f"hsaudit.experiments.{name}.plan").plan(config)


def figure_grid(
    section: Mapping[str, Any],
    figure: str,
    *,
    where: str,
    not_values: Iterable[str],
    entry_keys: Iterable[str] = (),
    check_grid: bool = True,
) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    """A figure of a config section, split into what its series merge: ``(values, overrides, points)``.

    ``values`` are the section's keys but ``not_values``; ``overrides`` the figure entry's keys but ``grid`` and
    ``entry_keys``; ``points`` the points of its ``grid`` (:func:`hsaudit.util.mapping.grid_points`, ``[{}]``
    without one; its keys checked against ``values`` when ``check_grid``). The caller merges each point over the
    values and overrides in its own order.

    >>> figure_grid({"lr": 1, "figures": {"f": {"lr": 2, "grid": {"lr": [3, 4]}}}}, "f", where="s",
    ...             not_values=("figures",))
    ({'lr': 1}, {'lr': 2}, [{'lr': 3}, {'lr': 4}])

    Raises:
        ValueError: a figure the section does not list, or a grid :func:`hsaudit.util.mapping.grid_points` refuses
            (naming ``where``).
    """
    figures = section.get("figures") or {}
    if figure not in figures:
        raise ValueError(f"{where}.figures has no figure {figure!r} (known: {', '.join(figures)})")
    entry = figures[figure] or {}
    skip = {"grid", *entry_keys}
    values = {k: v for k, v in section.items() if k not in set(not_values)}
    overrides = {k: v for k, v in entry.items() if k not in skip}
    points = grid_points(entry.get("grid"), known=values if check_grid else None, where=f"{where}.figures.{figure}")
    return values, overrides, points


def gpu_requested(section: Mapping[str, Any]) -> bool:
    """Whether a config section's training jobs ask for a GPU (``resources.gpu`` > 0)."""
    return int((section.get("resources") or {}).get("gpu", 0) or 0) > 0


@dataclass(frozen=True)
class Population:
    """A population of trained models that a plan asks for.

    Attributes:
        root: where the population's files live (e.g. ``results/housing/audits/<key>``); two plans that name the
            same root share the population (it is trained once and priced once).
        figures: the figure ids that read it (``fig4``, ``steinke/fig2``).
        model: the name of its model in the model registry (its calibration rows price it).
        models: models trained, both worlds and every repetition together.
        steps: DP-SGD steps per model.
        batch: per-sample gradients per model-step (the expected batch under Poisson sampling).
        gpu: whether its training jobs ask for a GPU.
        role: what the population is for, in a few words (an adversary, a canary, "surrogates").
        detail: the parameters a reader of ``hsaudit plan`` wants to see (C, k, ε, …).
        cost_factor: the model's cost per example relative to its calibration row's (e.g. a language model's
            size against the calibration's reference model).
    """

    root: str
    figures: tuple[str, ...]
    model: str
    models: int
    steps: int
    batch: int
    gpu: bool = False
    role: str = ""
    detail: str = ""
    cost_factor: float = 1.0

    def __post_init__(self) -> None:
        for name in ("models", "steps", "batch"):
            if int(getattr(self, name)) < 0:
                raise ValueError(f"Population {self.root}: {name} must be >= 0, got {getattr(self, name)}")

    @property
    def model_steps(self) -> int:
        return int(self.models) * int(self.steps)


@dataclass(frozen=True)
class Target:
    """A figure or table that a plan makes.

    Attributes:
        path: the target's path (``results/fig3.pdf``, ``results/steinke/table2.md``).
        kind: ``"cpu"`` (``rule all`` builds it) or ``"gpu"`` (sized for a GPU cluster at this scale: built only
            when named).
        trained: whether it reads trained populations (``False``: simulate → audit → plot).
        parts: figure ids whose populations it also reads (e.g. ``fig1`` assembles ``fig1c``'s panel).
    """

    path: str
    kind: str = "cpu"
    trained: bool = True
    parts: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"Target {self.path}: kind must be one of {KINDS}, got {self.kind!r}")

    @property
    def id(self) -> str:
        """``results/fig4.pdf`` → ``fig4``; ``results/steinke/table2.md`` → ``steinke/table2``."""
        stem = self.path.removeprefix("results/")
        return stem.rsplit(".", 1)[0]


def merge_populations(populations: Iterable[Population]) -> tuple[Population, ...]:
    """One entry per root, in first-seen order: the figures of every entry with that root, the largest
    ``models`` (a population that several figures read is trained once, at the largest R any of them asks for)."""
    merged: dict[str, Population] = {}
    for pop in populations:
        seen = merged.get(pop.root)
        if seen is None:
            merged[pop.root] = pop
            continue
        figures = seen.figures + tuple(f for f in pop.figures if f not in seen.figures)
        merged[pop.root] = replace(seen, figures=figures, models=max(seen.models, pop.models))
    return tuple(merged.values())
