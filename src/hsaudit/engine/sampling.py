"""Poisson subsampling of DP-SGD populations (Steinke, Nasr et al. 2025, Algorithm 1), drawn on the device.

At step t every training example is in model i's batch B_t independently with probability q, and so is the canary
(an input canary ``(x*, y*)`` or a gradient canary ∇*) for an inserted model at an insertion step. Every draw is
keyed by (sampling key, global model index i, step t): the batch is the Bernoulli(q) process over the examples
0..N−1 written as its geometric gaps (:func:`hsaudit.engine.noise.counter_geometric`: members at
``cumsum(G + 1) − 1``, so a step costs O(qN) per model, not O(N)), the canary's inclusion is draw 0 of
:func:`hsaudit.engine.noise.counter_bernoulli`. A model's batches and canary inclusions are therefore a pure
function of its own index, whatever the shard size, the chunking or the order of work (like the noise), and the
canary's draw does not depend on the training set size.

:class:`PoissonSampler` packs every model's batch into one padded index tensor ``[m, B_max]`` (the model's examples
first, in increasing order, then padding with weight 0, :func:`slot_weights`), so that the DP-SGD layer hands per-model batches to the
backends' ``clipped_sum_per_model`` without a Python loop over models. :func:`poisson_schedule` replays one model's
batches on the host (for the Opacus reference).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import torch

from hsaudit.engine.noise import counter_bernoulli, counter_geometric


@dataclass(frozen=True)
class Poisson:
    """Poisson subsampling with rate q (Steinke et al. Alg. 1): a value of :class:`hsaudit.engine.dpsgd.DPSGDConfig`.

    Attributes:
        rate: q in (0, 1], the probability that an example (or the canary) is in a step's batch.
    """

    rate: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.rate) and 0.0 < self.rate <= 1.0):
            raise ValueError(f"rate must be in (0, 1], got {self.rate}")

    def expected_batch_size(self, n: int) -> float:
        """qN, the expected batch size of a training set of ``n`` examples."""
        return self.rate * int(n)


@dataclass(frozen=True)
class PoissonBatch:
    """One step's batches of a population (on the device).

    Attributes:
        index: int64 ``[m, B_max]``; row i holds model i's examples (indices into the sampler's ``n`` examples,
            increasing; with an input canary, index ``n`` is the canary) and then padding (index 0).
        counts: the batch sizes ``[m]`` on the host (canary included), for backends that work model by model.
        canary: bool ``[m]``, whether the canary is in model i's batch (already ANDed with the membership mask).
    """

    index: torch.Tensor
    counts: list[int]
    canary: torch.Tensor

    @property
    def weight(self) -> torch.Tensor:
        """float32 ``[m, B_max]``, 1 on the model's examples (its first ``counts[i]`` slots), 0 on padding; built
        on request (:func:`hsaudit.engine.dpsgd.run_poisson` builds its chunks' own from ``counts``)."""
        return slot_weights(self.counts, self.index.shape[1], self.index.device)


class PoissonSampler:
    """``t -> PoissonBatch``: the Poisson batches of a fixed set of global model indices (module docstring).

    Args:
        key: the sampling key (derive it apart from the noise key).
        models: global model indices ``[m]``.
        n: the training set size N.
        rate: q.
        mask: ``[m]`` membership (1 = inserted); ``None``: no canary.
        canary_in_batch: the canary is an input (``(x*, y*)``), packed into the batch as index ``n``; ``False``
            for a gradient canary (only ``canary`` is reported).
        period: k; the canary may be included only at steps with ``t % k == 0``.
        device: where to draw.
    """

    def __init__(
        self,
        key: int,
        models: torch.Tensor | range | npt.ArrayLike,
        *,
        n: int,
        rate: float,
        mask: torch.Tensor | None = None,
        canary_in_batch: bool = False,
        period: int = 1,
        device: torch.device | str = "cpu",
    ) -> None:
        if isinstance(models, range):
            models = torch.arange(models.start, models.stop, models.step or 1, dtype=torch.int64)
        self.key, self.n, self.rate, self.period = int(key), int(n), float(Poisson(rate).rate), int(period)
        self.models = torch.as_tensor(models, dtype=torch.int64, device=device).reshape(-1)
        self.mask = None if mask is None else mask.to(device=device).bool()
        self.canary_in_batch = bool(canary_in_batch) and mask is not None
        mean = self.rate * self.n
        sd = math.sqrt(mean * (1.0 - self.rate))
        # gaps drawn at first: the batch size's mean + 4 sd + 8, so that one draw covers the N examples of a model
        # but with probability ≈ 10⁻⁵; the rare rows that need more draw them, ``k_more`` at a time (same streams,
        # later counters). The draws are the sampler's main cost (O(k0) per model-step): 6 sd drew 8 % more at
        # qN = 400; 3 sd left a row short in a quarter of the steps of 1,000 models (each a wider copy of the batch).
        self.k0 = int(math.ceil(mean + 4.0 * sd + 8.0))
        self.k_more = int(math.ceil(sd + 8.0))

    def positions(self, t: int) -> torch.Tensor:
        """int64 ``[m, K]``: strictly increasing positions of every model's Bernoulli(q) process at step t, the last
        ≥ n (members of the batch: the positions < n; past the first position ≥ n a row may be filler)."""
        pos = counter_geometric(self.key, self.models, t, self.k0, self.rate).add_(1).cumsum_(1).sub_(1)
        short = (pos[:, -1] < self.n).nonzero()[:, 0]
        if short.numel() == 0:
            return pos
        # rare: extend the rows that have not reached n with their next counters, the others with filler ≥ n
        ext = pos[short]
        while True:
            more = counter_geometric(self.key, self.models[short], t, self.k_more, self.rate, start=ext.shape[1])
            ext = torch.cat([ext, more.add_(1).cumsum_(1).add_(ext[:, -1:])], dim=1)
            if not bool((ext[:, -1] < self.n).any()):
                break
        extra = ext.shape[1] - pos.shape[1]
        filler = pos[:, -1:] + torch.arange(1, extra + 1, dtype=pos.dtype, device=pos.device)
        pos = torch.cat([pos, filler], dim=1)
        pos[short] = ext
        return pos

    def canary_draws(self, t: int) -> torch.Tensor:
        """bool ``[m]``: the canary's Bernoulli(q) draws at step t (before the mask and the period)."""
        return counter_bernoulli(self.key, self.models, t, 1, self.rate)[:, 0]

    def __call__(self, t: int) -> PoissonBatch:
        if self.mask is None or t % self.period != 0:  # no draw needed (≈ 35 small ops, 0.2 ms at 100 models)
            canary = torch.zeros(self.models.shape, dtype=torch.bool, device=self.models.device)
        else:
            canary = self.canary_draws(t) & self.mask
        pos = self.positions(t)
        bound = torch.full((pos.shape[0], 1), self.n, dtype=pos.dtype, device=pos.device)
        counts_t = torch.searchsorted(pos, bound)[:, 0]  # the positions < n (rows increase): O(m log K), not O(mK)
        total = counts_t + canary if self.canary_in_batch else counts_t
        counts = total.tolist()  # the host synchronisation of a step: B_max sizes the padded batch
        b_max = max(1, max(counts, default=0))  # ≤ K: the last position is ≥ n
        slot = torch.arange(b_max, device=pos.device)[None, :]
        index = torch.where(slot < counts_t[:, None], pos[:, :b_max], 0)
        if self.canary_in_batch:  # the canary is example n, after the model's examples
            rows = canary.nonzero()[:, 0]
            index[rows, counts_t[rows]] = self.n
        return PoissonBatch(index=index, counts=counts, canary=canary)


def slot_weights(counts: list[int], width: int, device: torch.device | str) -> torch.Tensor:
    """float32 ``[len(counts), width]``: 1 in the first ``counts[i]`` slots of row i, 0 after (the weights of
    padded batches whose row i holds ``counts[i]`` samples: :attr:`PoissonBatch.weight`, or a block of its rows)."""
    bound = torch.as_tensor(counts, dtype=torch.int64, device=device)[:, None]
    return (torch.arange(width, device=device)[None, :] < bound).to(torch.float32)


def poisson_schedule(
    key: int, model: int, *, steps: int, n: int, rate: float, inserted: bool = False, period: int = 1
) -> tuple[list[np.ndarray], np.ndarray]:
    """Model ``model``'s batches on the host: ``(batches, canary)`` with ``batches[t - 1]`` the example indices of
    B_t (increasing, canary excluded) and ``canary`` bool ``[steps]`` whether the canary was in B_t.

    The same draws as :class:`PoissonSampler` (exposed so that a reference trainer replays them).
    """
    sampler = PoissonSampler(key, [int(model)], n=n, rate=rate)
    batches, canary = [], np.zeros(steps, dtype=bool)
    for t in range(1, steps + 1):
        pos = sampler.positions(t)[0].numpy()
        batches.append(pos[pos < n])
        canary[t - 1] = bool(inserted) and t % period == 0 and bool(sampler.canary_draws(t)[0])
    return batches, canary
