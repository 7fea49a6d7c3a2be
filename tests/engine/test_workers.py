"""A CPU population split over worker threads (hsaudit.engine.workers): the groups, their order, the checks."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from hsaudit.engine.models import model_spec
from hsaudit.engine.psg import population_engine
from hsaudit.engine.workers import MIN_MODELS_PER_WORKER, population_workers, run_in_groups


@pytest.mark.parametrize("models, workers", [(1, 1), (7, 1), (7, 3), (64, 4), (5, 5)])
def test_groups_cover_the_models_in_order_and_one_shows_progress(models, workers):
    seen, shown, names = [], [], set()

    def run_group(rows: range, show: bool) -> np.ndarray:
        seen.append(rows)
        shown.append(show)
        names.add(threading.current_thread().name)
        return np.arange(rows.start, rows.stop)

    threads = torch.get_num_threads()
    parts = run_in_groups(run_group, models=models, workers=workers, progress=True)
    assert torch.get_num_threads() == threads  # restored
    np.testing.assert_array_equal(np.concatenate(parts), np.arange(models))
    assert len(parts) == workers and all(len(p) > 0 for p in parts)
    assert sorted(shown) == [False] * (workers - 1) + [True]
    assert shown[[r.start for r in seen].index(0)]  # the first group's bar
    if workers == 1:
        assert names == {threading.current_thread().name}  # no pool for one group


def test_an_error_in_a_group_is_raised_and_threads_are_restored():
    threads = torch.get_num_threads()

    def run_group(rows: range, show: bool):
        if rows.start > 0:
            raise RuntimeError("group failed")
        return rows

    with pytest.raises(RuntimeError, match="group failed"):
        run_in_groups(run_group, models=10, workers=2, progress=False)
    assert torch.get_num_threads() == threads


def test_population_workers_defaults_and_checks():
    mlp = population_engine(model_spec("fcnn"), "cpu")
    func = population_engine(model_spec("fcnn"), "cpu", backend="func")
    cpu = torch.device("cpu")
    kw = dict(device=cpu, name="fcnn")
    # default: one per MIN_MODELS_PER_WORKER models, at most torch's threads, for the MLP engine on the CPU only
    assert population_workers(None, engine=mlp, models=MIN_MODELS_PER_WORKER - 1, **kw) == 1
    assert population_workers(None, engine=mlp, models=10**6, **kw) == torch.get_num_threads()
    assert population_workers(None, engine=func, models=10**6, **kw) == 1
    assert population_workers(8, engine=mlp, models=3, **kw) == 3  # never more groups than models
    with pytest.raises(ValueError, match="workers must be a positive integer, got 0"):
        population_workers(0, engine=mlp, models=10, **kw)
    with pytest.raises(ValueError, match=r"needs the FCNN \('mlp'\) engine, got workers=2 for 'fcnn'"):
        population_workers(2, engine=func, models=10, **kw)
