"""Poisson subsampling of DP-SGD populations (Steinke, Nasr et al. 2025, Algorithm 1), drawn on the device.

At step t every training example is in model i's batch B_t independently with probability q, and so is the canary
(an input canary ``(x*, y*)`` or a gradient canary ∇*) for an inserted model at an insertion step. The draws are
:func:`hsaudit.engine.noise.counter_bernoulli` keyed by (sampling key, global model index i, step t): draw 0 is
the canary's, draw 1 + j is example j's. A model's batches and canary inclusions are therefore a pure function of
its own index, whatever the shard size, the chunking or the order of work (like the noise), and the canary's draw
does not depend on the training set size.

:class:`PoissonSampler` packs every model's batch into one padded index tensor ``[m, B_max]`` (the model's examples
first, in increasing order, then padding with weight 0), so that the DP-SGD layer hands per-model batches to the
backends' ``clipped_sum_per_model`` without a Python loop over models. :func:`poisson_schedule` replays one model's
batches on the host (for the Opacus reference).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import torch

from hsaudit.engine.noise import counter_bernoulli


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
        weight: float32 ``[m, B_max]``, 1 on the model's examples, 0 on padding.
        counts: the batch sizes ``[m]`` on the host (canary included), for backends that work model by model.
        canary: bool ``[m]``, whether the canary is in model i's batch (already ANDed with the membership mask).
    """

    index: torch.Tensor
    weight: torch.Tensor
    counts: list[int]
    canary: torch.Tensor


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
        budget: bytes of int64 temporaries per chunk of models.
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
        budget: int = 64 * 2**20,
    ) -> None:
        if isinstance(models, range):
            models = torch.arange(models.start, models.stop, models.step or 1, dtype=torch.int64)
        self.key, self.n, self.rate, self.period = int(key), int(n), float(Poisson(rate).rate), int(period)
        self.models = torch.as_tensor(models, dtype=torch.int64, device=device).reshape(-1)
        self.mask = None if mask is None else mask.to(device=device).bool()
        self.canary_in_batch = bool(canary_in_batch) and mask is not None
        self.chunk = max(1, budget // (8 * (self.n + 1)))

    def draws(self, t: int) -> torch.Tensor:
        """bool ``[m, 1 + n]``: column 0 the canary's draw (before the mask and the period), 1 + j example j's."""
        m = self.models.numel()
        if self.chunk >= m:
            return counter_bernoulli(self.key, self.models, t, self.n + 1, self.rate)
        return torch.cat(
            [
                counter_bernoulli(self.key, self.models[m0 : m0 + self.chunk], t, self.n + 1, self.rate)
                for m0 in range(0, m, self.chunk)
            ]
        )

    def __call__(self, t: int) -> PoissonBatch:
        draws = self.draws(t)
        canary = draws[:, 0]
        if self.mask is None or t % self.period != 0:
            canary = torch.zeros_like(canary)
        else:
            canary = canary & self.mask
        member = draws[:, 1:]
        if self.canary_in_batch:
            member = torch.cat([member, canary[:, None]], dim=1)  # the canary is example n
        counts_t = member.sum(1)
        counts = counts_t.tolist()  # the one host synchronisation of a step: B_max sizes the padded batch
        b_max = max(1, max(counts, default=0))
        rows, cols = member.nonzero(as_tuple=True)  # row-major: each row's examples in increasing order
        pos = member.cumsum(1).sub_(1)[rows, cols]
        index = torch.zeros((member.shape[0], b_max), dtype=torch.int64, device=member.device)
        index[rows, pos] = cols
        weight = (torch.arange(b_max, device=member.device)[None, :] < counts_t[:, None]).to(torch.float32)
        return PoissonBatch(index=index, weight=weight, counts=counts, canary=canary)


def poisson_schedule(
    key: int, model: int, *, steps: int, n: int, rate: float, inserted: bool = False, period: int = 1
) -> tuple[list[np.ndarray], np.ndarray]:
    """Model ``model``'s batches on the host: ``(batches, canary)`` with ``batches[t - 1]`` the example indices of
    B_t (increasing, canary excluded) and ``canary`` bool ``[steps]`` whether the canary was in B_t.

    The same draws as :class:`PoissonSampler` (exposed so that a reference trainer replays them).
    """
    batches, canary = [], np.zeros(steps, dtype=bool)
    for t in range(1, steps + 1):
        draws = counter_bernoulli(key, torch.tensor([int(model)]), t, int(n) + 1, rate)[0].numpy()
        batches.append(np.flatnonzero(draws[1:]))
        canary[t - 1] = bool(inserted) and t % period == 0 and bool(draws[0])
    return batches, canary
