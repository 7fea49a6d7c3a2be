"""A CPU population split into groups of models, one worker thread each (docs/trainer.md).

Models of a population never interact, so on the CPU a population splits into contiguous groups, each trained by
its own thread with single-threaded ops (torch releases the GIL inside ops). Far more robust than intra-op
threading, whose per-op barriers stall whenever another process takes a core (measured in docs/trainer.md). Every
model keeps its own noise stream (:mod:`hsaudit.engine.noise`), so results do not depend on the number of workers.

:func:`population_workers` resolves and checks a worker count; :func:`run_in_groups` runs one function per group and
returns the parts in model order; :func:`train_in_groups` is the shard driver on top of them: one
:func:`hsaudit.engine.dpsgd.train_population` per group, the group's models drawing the noise of their global
indices. Both the Cebere et al. shards (:func:`hsaudit.experiments.cebere.train.shards.train_shard`) and the one-run
shards (:func:`hsaudit.experiments.one_run.train.train_one_run_shard`) train through it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import numpy as np
import torch

from hsaudit.engine.dpsgd import DPSGDConfig, Observations, train_population
from hsaudit.engine.psg import MLPPopulation

MIN_MODELS_PER_WORKER = 32
"""Smaller groups are not worth a thread."""

R = TypeVar("R")


def population_workers(workers: int | None, *, engine, device: torch.device, models: int, name: str) -> int:
    """The number of worker threads for a population of ``models`` on ``engine`` (at most ``models``).

    Args:
        workers: the caller's choice; ``None``: ``torch.get_num_threads()`` for the hand-derived MLP engine on the
            CPU (at most one per :data:`MIN_MODELS_PER_WORKER` models), else 1 (intra-op threads).
        engine: the per-sample gradient backend (:func:`hsaudit.engine.psg.population_engine`).
        device: the models' device.
        models: the population size.
        name: the model's registry name (for the error message).

    Raises:
        ValueError: ``workers`` not a positive integer, or ``workers > 1`` with an engine other than the MLP one
            (``torch.func.functional_call`` swaps the module's parameters in place: not thread-safe).
    """
    if workers is None:
        workers = torch.get_num_threads() if device.type == "cpu" and isinstance(engine, MLPPopulation) else 1
        workers = min(workers, models // MIN_MODELS_PER_WORKER or 1)
    if int(workers) != workers or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers}")
    if workers > 1 and not isinstance(engine, MLPPopulation):
        raise ValueError(f"workers > 1 needs the FCNN ('mlp') engine, got workers={workers} for {name!r}")
    return min(int(workers), models)


def run_in_groups(run_group: Callable[[range, bool], R], *, models: int, workers: int, progress: bool) -> list[R]:
    """``run_group(rows, show)`` over contiguous groups of ``range(models)``, one thread each; the parts in order.

    Args:
        run_group: trains the models ``rows`` (a ``range``) and returns their part; ``show`` is True for the first
            group only, when ``progress`` is (one progress bar).
        models: the population size.
        workers: the number of groups (:func:`population_workers`); 1 runs ``run_group(range(models), progress)``
            in the calling thread with torch's threads unchanged.
        progress: whether the first group shows a progress bar.

    Returns:
        The parts, first model's group first (the caller concatenates them).
    """
    if workers == 1:
        return [run_group(range(models), progress)]
    bounds = np.linspace(0, models, workers + 1).astype(int)
    groups = [range(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(run_group, g, progress and i == 0) for i, g in enumerate(groups)]
            return [f.result() for f in futures]
    finally:
        torch.set_num_threads(threads)


def train_in_groups(
    *,
    engine,
    X: torch.Tensor,
    y: torch.Tensor,
    batches: np.ndarray | None,
    config: DPSGDConfig,
    noise_key: int,
    first_model: int,
    models: int,
    workers: int,
    progress: bool,
    desc: str,
    group: Callable[[range], Mapping[str, Any]],
    finish: Callable[[Observations, range], R],
) -> list[R]:
    """Train a shard of ``models`` DP-SGD models in groups (:func:`run_in_groups`), one
    :func:`hsaudit.engine.dpsgd.train_population` per group; the parts in model order.

    Model ``first_model + i`` of the shard draws the noise of that global index under ``noise_key``, so a model's
    result depends neither on the shard it is trained in nor on the number of workers.

    Args:
        engine, X, y, batches, config, noise_key: as :func:`hsaudit.engine.dpsgd.train_population` (on the device).
        first_model: global index of the shard's first model.
        models: the shard's size.
        workers: the number of groups (:func:`population_workers`).
        progress: whether the first group shows a progress bar (described by ``desc``).
        group: ``rows -> keyword arguments`` of ``train_population`` for the shard's models ``rows`` (their θ0,
            insertion, observer, ``keep_final`` …), built before the group trains.
        finish: ``(observations, rows) -> part``: what the group returns (the observations themselves, or a score
            read from them).
    """

    def run_group(rows: range, show: bool) -> R:
        kwargs = group(rows)
        # torch.func.grad ignores an outer no_grad (a function transform), so this is safe for every backend.
        with torch.no_grad():
            obs = train_population(
                engine=engine,
                X=X,
                y=y,
                batches=batches,
                config=config,
                noise_key=noise_key,
                models=range(first_model + rows.start, first_model + rows.stop),
                progress=show,
                desc=desc,
                **kwargs,
            )
        return finish(obs, rows)

    return run_in_groups(run_group, models=models, workers=workers, progress=progress)
