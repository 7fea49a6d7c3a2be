"""Which models a training shard of Steinke et al.'s populations holds (shared by the image and language jobs)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np


def shard_models(spec: Mapping[str, Any], shard: int) -> tuple[range, np.ndarray]:
    """Global model indices of ``shard`` and their bits: model i is in world i mod 2 (both worlds in every shard).

    >>> models, bits = shard_models({"shard_size": 4}, 1)
    >>> list(models), bits.tolist()
    ([4, 5, 6, 7], [0, 1, 0, 1])
    """
    size = int(spec["shard_size"])
    models = range(shard * size, (shard + 1) * size)
    return models, np.arange(models.start, models.stop) % 2


__all__ = ["shard_models"]
