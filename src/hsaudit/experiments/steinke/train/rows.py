"""What every DP-SGD population of Steinke et al.'s image targets shares with its Table 2 η candidates: the θ0 of a
spec (:func:`row_theta0`, one per seed: fig2, fig4 and every Table 2 row and its candidates start from it) and the
Poisson DP-SGD setting of a spec on ``n`` training examples (:func:`poisson_config`).

Imported by the image trainer (:mod:`hsaudit.experiments.steinke.train.images`) and the η candidates
(:mod:`hsaudit.experiments.steinke.train.candidates`), not by the language model's trainer: an edit here retrains
those and only those.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from hsaudit.engine.dpsgd import DPSGDConfig, init_theta0
from hsaudit.engine.models import ModelSpec
from hsaudit.engine.sampling import Poisson
from hsaudit.util.seeding import derive_seed


def row_theta0(arch: ModelSpec, spec: Mapping[str, Any], device: torch.device) -> torch.Tensor:
    """θ0 of ``spec``'s populations: PyTorch's default initialisation of ``arch``, seeded by ``spec["seed"]``."""
    return torch.as_tensor(
        init_theta0(arch, scheme="default", seed=derive_seed(spec["seed"], "steinke-fig2-theta0")), device=device
    )


def poisson_config(spec: Mapping[str, Any], *, n: int) -> DPSGDConfig:
    """``spec``'s DP-SGD (``steps``, ``batch_size`` B, ``lr``, ``clip_norm``, ``noise_multiplier``) with Poisson
    batches of expected size B from ``n`` examples (q = B / n)."""
    batch = int(spec["batch_size"])
    return DPSGDConfig(
        steps=int(spec["steps"]),
        batch_size=batch,
        lr=float(spec["lr"]),
        clip_norm=float(spec["clip_norm"]),
        noise_multiplier=float(spec["noise_multiplier"]),
        sampling=Poisson(batch / n),
    )


__all__ = ["poisson_config", "row_theta0"]
