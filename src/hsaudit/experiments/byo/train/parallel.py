"""A block of a design's models, trained here or in a worker process (``hsaudit audit-training --jobs``).

A worker receives plain values — the design (:meth:`~hsaudit.experiments.byo.values.Design.to_dict`), the
check's :class:`~hsaudit.experiments.byo.train.harness.Probe` and the canary — never the user's functions (closures
need not pickle): it calls the user's ``make()`` and ``dataset()`` itself, once per process. A block is a shard of
the design split into more shards; each model's bit and seed come from the design by its index, so the rows do not
depend on the split. Imports the harness only (no pandas, no audit), so that a worker starts fast.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from hsaudit.experiments.byo.train.errors import UserCodeError
from hsaudit.experiments.byo.train.harness import Loaded, Prepared, Probe, load, prepare, train_shard
from hsaudit.experiments.byo.values import Design


def train_block(prepared: Prepared, count: int, index: int, *, progress: bool = False) -> dict[str, np.ndarray]:
    """:func:`~hsaudit.experiments.byo.train.harness.train_shard` of shard ``index`` of the design split in ``count``
    shards.

    Raises:
        UserCodeError: the user's code raised; the error names the model(s) of its seed(s) and their world.
    """
    if count != prepared.design.shards:
        prepared = replace(prepared, design=replace(prepared.design, shards=count))
    try:
        return train_shard(prepared, index, progress=progress)
    except UserCodeError as err:
        raise located(err, prepared.design, prepared.design.shard_models(index)) from err


def located(err: UserCodeError, design: Design, models: range) -> UserCodeError:
    """``err`` with the models among ``models`` whose seeds it carries (index, world), or as it is."""
    seeds = set(err.seeds)
    found = [i for i in models if design.model_seed(i) in seeds]
    if not found:
        return err
    worlds = sorted({"with the canary" if b else "without the canary" for b in design.bits(found)})
    which = f"model {found[0]}" if len(found) == 1 else f"models {', '.join(map(str, found[:8]))}"
    return err.located(f"{which} of {design.models}, world {' and '.join(worlds)}")


_WORKER: dict[str, Prepared] = {}
"""A worker process's prepared trainings by design (its JSON), each built at its first block: a worker that lives
for a whole audit trains the pilot's candidates, the audit and its control."""

_LOADS: dict[str, Loaded] = {}
"""A worker process's loaded trainings by what :func:`~hsaudit.experiments.byo.train.harness.load` reads of a design
(entry, setting, claim, data): the pilot's candidates and the audit share one ``make()``, a σ/f control another."""

LOAD_KEYS = ("entry", "setting", "claim", "data")
"""The fields of a design that :func:`~hsaudit.experiments.byo.train.harness.load` reads."""


def _kept(cache: dict[str, Any], key: str, build: Any) -> Any:
    """``cache[key]``, built at its first use; the oldest of more than four entries goes (a pilot's candidates are
    done with)."""
    if key not in cache:
        if len(cache) >= 4:
            del cache[next(iter(cache))]
        cache[key] = build()
    return cache[key]


def worker_block(
    design: dict[str, Any], found: Probe, canary: Any, threads: int, count: int, index: int
) -> dict[str, np.ndarray]:
    """A worker's block: the training prepared once per process and design (``threads`` torch threads, the user's
    ``make()`` and ``dataset()`` once per :data:`LOAD_KEYS`, the worlds of the given canary), then
    :func:`train_block`."""
    import json

    import torch

    def prepared() -> Prepared:
        torch.set_num_threads(threads)
        whole = Design.from_dict(design)
        which = json.dumps([design.get(k) for k in LOAD_KEYS], sort_keys=True, default=str)
        return prepare(whole, _kept(_LOADS, which, lambda: load(whole)), found=found, canary=canary)

    return train_block(_kept(_WORKER, json.dumps(design, sort_keys=True, default=str), prepared), count, index)
