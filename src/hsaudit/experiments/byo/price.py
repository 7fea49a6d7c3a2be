"""The price of a few-runs audit (:func:`price_few`): the one function that ``hsaudit plan --few ENTRY`` and ``hsaudit
plan --time-byo`` (a ``byo:`` few-runs section) call. Apart from :mod:`hsaudit.experiments.byo.few_runs` so that the
audit's jobs do not import the plans (editing a plan reruns no audit)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hsaudit.experiments.byo.api import control_design, job_start_seconds
from hsaudit.experiments.byo.audit import AuditOptions, GUESS_FRACTIONS
from hsaudit.experiments.byo.few_runs import before_training
from hsaudit.experiments.byo.plan import NOTHING_TRAINED, FewCost, few_runs_cost
from hsaudit.experiments.byo.train.families import FewRunsDesign, load_few
from hsaudit.experiments.byo.train.harness import Loaded, train_observed


def time_one_training(loaded: Loaded) -> float:
    """Seconds of one of the user's trainings of its data alone (as the check trains it), here, at the current
    torch threads."""
    import torch
    from torch.utils.data import TensorDataset

    data = TensorDataset(torch.as_tensor(loaded.x), torch.as_tensor(loaded.y))
    start = time.perf_counter()
    train_observed(loaded.training, data, [0], init_seed=0, observe=False)
    return time.perf_counter() - start


def job_work_seconds(load_seconds: float) -> float:
    """A job's own work before its training: a fresh interpreter's start (:func:`~hsaudit.experiments.byo.api.
    job_start_seconds`) and the user's ``make()`` and ``dataset()`` (``load_seconds``, timed here)."""
    return job_start_seconds() + float(load_seconds)


@dataclass(frozen=True)
class FewPrice:
    """The price of a few-runs audit (:func:`price_few`): the design's facts, how one training's seconds were had,
    the verdict reached before any training (then nothing is trained), and the cost."""

    entry: str
    canaries: int
    trainings: int
    rows: int
    steps: int
    seconds_per_training: float
    how: str
    copies: int
    noise_factor: float
    early: str | None
    cost: FewCost

    def to_dict(self) -> dict[str, Any]:
        return {**{k: v for k, v in dataclasses.asdict(self).items() if k != "cost"}, **dataclasses.asdict(self.cost),
                "jobs": self.cost.jobs, "seconds_trainings": self.cost.seconds_trainings, "total_trainings": self.cost.trainings, "total_seconds": self.cost.seconds}  # fmt: skip


def price_few(design: FewRunsDesign, options: AuditOptions = AuditOptions(), *,
              fractions: Sequence[float] = GUESS_FRACTIONS, control: bool = True,
              seconds_per_training: float | None = None) -> FewPrice:  # fmt: skip
    """The price of ``design``'s few-runs audit as :func:`audit_training_few` and the workflow run it — the one
    function both ``hsaudit plan --few ENTRY`` and ``hsaudit plan --time-byo`` (a ``byo:`` few-runs section) call:
    nothing when the verdict needs no training (:func:`before_training`), else the check's trainings, K of the
    audit and, with the ``control``, K of its positive control (:func:`~hsaudit.experiments.byo.api.control_design`:
    σ/f in the audit setting, k copies of each included canary outside it), each training of the data taking
    ``seconds_per_training`` (None: one timed here, :func:`time_one_training`), and each job's own work
    (:func:`job_work_seconds`, reported apart: the CLI, one process, does not pay it).

    Raises:
        ValueError: as :func:`~hsaudit.experiments.byo.plan.few_runs_cost` and
            :func:`~hsaudit.experiments.byo.train.harness.load`.
    """
    start = time.perf_counter()
    design, loaded = load_few(design)
    load_seconds = time.perf_counter() - start
    claim, n = loaded.training.claim, loaded.n
    facts = dict(entry=design.entry, canaries=design.canaries, trainings=design.trainings, rows=int(n),
                 steps=int(claim.steps))  # fmt: skip
    early = before_training(claim, n, options, canaries=design.canaries, trainings=design.trainings,
                            fractions=fractions)  # fmt: skip
    if early is not None:
        return FewPrice(**facts, seconds_per_training=0.0, how="nothing trained", copies=1, noise_factor=1.0,
                        early=f"{early.verdict}: {early.reason}", cost=NOTHING_TRAINED)  # fmt: skip
    twin, _ = control_design(design, claim, n, options)
    how = "given"
    if seconds_per_training is None:
        import torch

        seconds_per_training = time_one_training(loaded)
        how = f"timed here, {torch.get_num_threads()} thread(s)"
    cost = few_runs_cost(design.trainings, design.canaries, float(seconds_per_training), rows=n, control=control,
                         copies=twin.copies, job_seconds=job_work_seconds(load_seconds))  # fmt: skip
    return FewPrice(**facts, seconds_per_training=float(seconds_per_training), how=how, copies=int(twin.copies),
                    noise_factor=float(twin.noise_factor), early=None, cost=cost)  # fmt: skip
