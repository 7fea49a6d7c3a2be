"""The data-use check's record of the rows a training reads (hsaudit.experiments.byo.train.reads), against the rows
each loop below reads by construction: through ``data[i]``, ``data.tensors`` (masks, permutations, slices, splits),
a DataLoader in this process or in workers; evaluation passes under ``torch.no_grad()`` and computations on all
rows at once are not counted, the latter named."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.nn.functional import cross_entropy
from torch.utils.data import DataLoader, TensorDataset

from hsaudit.experiments.byo.train.harness import UserData

pytestmark = pytest.mark.usefixtures("torch_one_thread")
N, B = 40, 8


def _data() -> UserData:
    x = torch.randn(N, 3, generator=torch.Generator().manual_seed(0))
    return UserData(x, (x[:, 0] > 0).long())


def _step(model: torch.nn.Module, xb: torch.Tensor, yb: torch.Tensor) -> None:
    cross_entropy(model(xb), yb).backward()


def poisson_mask(data, model, truth):
    x, y = data.tensors
    for _ in range(6):
        mask = torch.rand(N) < 0.25
        truth[mask.numpy()] += 1
        _step(model, x[mask], y[mask])


def permuted_slices(data, model, truth):
    x, y = data.tensors
    x = x.float() / 2.0  # a conversion keeps the rows
    for _ in range(2):
        perm = torch.randperm(N)
        xs, ys = x[perm], y[perm]  # read through its slices, not itself
        for i in range(0, N - B, B):  # the last batch dropped
            truth[perm[i:i + B].numpy()] += 1
            _step(model, xs[i:i + B], ys[i:i + B])


def split_batches(data, model, truth):
    x, y = data.tensors
    for i, (xb, yb) in enumerate(zip(x.split(B), y.split(B))):
        if i % 2 == 0:  # every other batch
            truth[i * B:(i + 1) * B] += 1
            _step(model, xb, yb)


def evaluated(data, model, truth):
    x, y = data.tensors
    idx = torch.arange(0, N, 3)
    truth[idx.numpy()] += 1
    _step(model, x[idx], y[idx])
    with torch.no_grad():  # an evaluation pass: not a training's reads
        model(x[torch.arange(N)])
        for xb, _ in DataLoader(data, batch_size=B):
            model(xb)


def loader(workers):
    def run(data, model, truth):
        for _ in range(2):
            for xb, yb in DataLoader(TensorDataset(*data.tensors), batch_size=B, shuffle=True, num_workers=workers):
                _step(model, xb, yb)
        truth[:] += 2

    return run


@pytest.mark.parametrize("loop", [poisson_mask, permuted_slices, split_batches, evaluated, loader(0), loader(2)],
                         ids=["mask", "permuted", "split", "no_grad", "loader", "workers"])  # fmt: skip
def test_reads_counted_as_the_loop_reads(loop):
    torch.manual_seed(1)
    data, truth = _data().counting(), np.zeros(N, dtype=np.int64)
    loop(data, torch.nn.Linear(3, 2), truth)
    reads = data.counted()
    assert truth.any() and np.array_equal(reads.uses, truth) and reads.whole == ()
    assert type(data.tensors[0]) is torch.Tensor  # the harness's own tensors again


class _Seen(torch.Tensor):
    """Another tensor subclass, as Opacus' ExpandedWeights (``grad_sample_mode="ew"``): its ``__torch_function__``
    records every op it takes part in."""

    calls: list[str] = []

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        cls.calls.append(getattr(func, "__name__", str(func)))
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **(kwargs or {}))


def test_another_subclass_sees_the_ops_on_the_data_and_the_rows_are_counted():
    """An op on the data and another subclass's tensor (ExpandedWeights' linear under ``ew``) goes through that
    subclass's ``__torch_function__`` (without it Opacus' per-sample gradients are never made), and reads its rows."""
    data = _data().counting()
    x, _ = data.tensors
    _Seen.calls = []
    weight = torch.randn(2, 3).as_subclass(_Seen)
    torch.nn.functional.linear(x[:4], weight)
    assert "linear" in _Seen.calls
    assert data.counted().uses.tolist() == [1] * 4 + [0] * (N - 4)


def test_computations_on_all_rows_are_named_not_counted():
    """A full-batch step and a normalisation compute on every row at once: no row's count, each named; the rows
    selected afterwards from the normalised tensor are counted."""
    data = _data().counting()
    x, y = data.tensors
    model = torch.nn.Linear(3, 2)
    _step(model, x, y)
    x = (x - x.mean(0)) / x.std(0)
    _step(model, x[:5], y[:5])
    reads = data.counted()
    assert reads.uses.tolist() == [1] * 5 + [0] * (N - 5)
    assert {"linear", "cross_entropy", "mean", "std"} <= set(reads.whole)
    assert _data().counting().counted().uses.sum() == 0


def test_the_report_says_what_the_check_did_not_see():
    """No read attributed to a row, or far fewer than the claim's q·T: the report's line says the check did not see
    the training's reads (it never passes them silently); reads as declared are reported as such."""
    from hsaudit.experiments.byo.values import reads_text
    from hsaudit.experiments.byo.values import Claim

    claim = Claim(epsilon=5.0, delta=1e-5, noise_multiplier=1.0, max_grad_norm=1.0, sampling="poisson",
                  sample_rate=0.125, steps=24, neighbouring="add-remove")  # fmt: skip
    assert reads_text(None, ("linear", "numpy"), 2, claim).startswith("not seen") and "numpy" in reads_text(
        None, ("numpy",), 2, claim)
    assert "may not see" in reads_text(np.eye(1, 500, dtype=int)[0] * 4, (), 2, claim)
    assert reads_text(np.full(500, 6), ("mean",), 2, claim) == (
        "3 per training on average; it also computes on all rows at once (mean), not counted")
