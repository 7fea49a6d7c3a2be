"""Step counts of a training schedule, shared by a plan (what it prices) and an audit (what it accounts for),
without importing either side: numpy-free, so that a plan that needs a step count pays no scipy or torch."""

from __future__ import annotations


def training_steps(*, epochs: float, n_train: int, batch_size: int) -> int:
    """T = max(1, round(epochs · N / B)): the steps of ``epochs`` passes over N examples at expected batch B.

    >>> training_steps(epochs=2, n_train=1000, batch_size=80)
    25
    """
    return max(1, int(round(float(epochs) * int(n_train) / int(batch_size))))


__all__ = ["training_steps"]
