"""How the adversary of Yoon, Jeung & No crafts x_a: the recipe, a frozen value that the plan validates and puts
into the audits' keys, and that the crafting job follows.

Apart from :mod:`hsaudit.experiments.yoon.crafting` so that the plan never imports torch, and apart from the plan so
that a plan edit reruns no audit job (an audit job's code version covers this module, not the plan).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

OPTIMIZERS = ("adam", "sgd", "sign_sgd")
BUDGET_NORMS = ("l2", "linf")
OBJECTIVES = ("loss_difference", "snr")


@dataclass(frozen=True)
class CraftRecipe:
    """How x_a is crafted from the canary (Yoon et al. give the objectives, not the optimisation).

    Attributes:
        optimizer: ``adam`` (per-coordinate normalised steps), ``sgd`` (plain gradient steps) or ``sign_sgd``
            (x ← x − lr·sign(∇), an L∞ steepest-descent step).
        lr: step size.
        steps: optimisation steps (the budget; with ``stop_on_validation`` the best checkpoint is kept).
        pixel_range: keep every pixel inside the data's range (a projection after every step; needs the
            ``pixel_range`` bounds at crafting time).
        budget_norm, budget: keep ‖x_a − x_c‖ ≤ ``budget`` in ``budget_norm`` (``l2`` or ``linf``; None: unbounded),
            in the normalised input space.
        stop_on_validation: choose the checkpoint (step 0 = the canary itself, then every ``check_every`` steps)
            whose moment estimate of μ on a validation population (fresh noise, never the audited one) is highest.
        check_every: steps between validation checkpoints.
        objective: ``loss_difference`` (the paper's UDE and ADE on raw losses) or ``snr`` (the same objectives on
            losses standardised by the pooled sd of the two worlds' losses: UDE becomes −(mean ℓ − mean ℓ′)/sd, the
            moment estimate of μ that the validation stop scores, and ADE's margin α is in sd units); see
            :func:`hsaudit.experiments.yoon.crafting.objective`.

    The paper's reading is :data:`PAPER_RECIPE` (Adam, lr 0.01, 100 steps, unconstrained) [inferred].
    """

    optimizer: str = "adam"
    lr: float = 0.01
    steps: int = 100
    pixel_range: bool = False
    budget_norm: str | None = None
    budget: float = 0.0
    stop_on_validation: bool = False
    check_every: int = 10
    objective: str = "loss_difference"

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise ValueError(f"craft.objective must be one of {OBJECTIVES}, got {self.objective!r}")
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"craft.optimizer must be one of {OPTIMIZERS}, got {self.optimizer!r}")
        if int(self.steps) < 1 or not float(self.lr) > 0:
            raise ValueError(f"crafting needs steps >= 1 and lr > 0, got steps={self.steps}, lr={self.lr}")
        if self.budget_norm is not None and (self.budget_norm not in BUDGET_NORMS or not float(self.budget) > 0):
            raise ValueError(f"craft.budget_norm must be one of {BUDGET_NORMS} with budget > 0, got "
                             f"{self.budget_norm!r}, {self.budget!r}")  # fmt: skip
        if int(self.check_every) < 1:
            raise ValueError(f"craft.check_every must be >= 1, got {self.check_every}")

    @classmethod
    def from_config(cls, values: Mapping[str, Any] | None) -> CraftRecipe:
        """From the config's ``yoon.craft`` mapping (unknown keys are an error, naming them)."""
        values = dict(values or {})
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"yoon.craft has unknown keys {unknown} (known: {sorted(known)})")
        return cls(**values)


PAPER_RECIPE = CraftRecipe()


def craft_key(craft: Mapping[str, Any]) -> dict[str, Any]:
    """The crafting recipe as it enters an audit's key: steps and lr always, every other option only where it
    differs from the paper's reading (:data:`PAPER_RECIPE`), so that the audits
    crafted with the paper's recipe keep the keys they had before the recipe grew options."""
    recipe = CraftRecipe.from_config(craft)
    out = {"steps": int(recipe.steps), "lr": float(recipe.lr)}
    for name in CraftRecipe.__dataclass_fields__:
        if name not in out and getattr(recipe, name) != getattr(PAPER_RECIPE, name):
            out[name] = getattr(recipe, name)
    return out


def recipe_label(craft: Mapping[str, Any]) -> str:
    """A short name of a crafting recipe for tables and legends, e.g. ``"adam lr=0.01 T=100, pixels in range"``.

    >>> recipe_label({"steps": 100, "lr": 0.01})
    'adam lr=0.01 T=100'
    >>> recipe_label({"optimizer": "sign_sgd", "steps": 50, "lr": 0.005, "budget_norm": "linf", "budget": 0.5})
    'sign_sgd lr=0.005 T=50, L∞ ≤ 0.5'
    >>> recipe_label({"objective": "snr", "budget_norm": "l2", "budget": 3.0})
    'adam lr=0.01 T=100, SNR objective, L2 ≤ 3'
    """
    r = CraftRecipe.from_config(craft)
    parts = [f"{r.optimizer} lr={r.lr:g} T={r.steps}"]
    if r.objective != PAPER_RECIPE.objective:
        parts.append("SNR objective")
    if r.pixel_range:
        parts.append("pixels in range")
    if r.budget_norm:
        parts.append(f"{'L2' if r.budget_norm == 'l2' else 'L∞'} ≤ {r.budget:g}")
    if r.stop_on_validation:
        parts.append(f"validation stop/{r.check_every}")
    return ", ".join(parts)
