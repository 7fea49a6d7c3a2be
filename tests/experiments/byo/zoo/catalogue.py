"""The bug zoo: every entry's kind, canary, background and runs, and where the bug class was reported.

``control``: must not be flagged (≤ 5 % of seeds); ``bug``: must be flagged (≥ 95 %); ``limit``: a bug class a
final-model canary audit does not see (measured, not asserted; docs/byo.md "Limits"). ``scripts/byo_zoo.py`` runs
the study over seeds; ``tests/experiments/byo/test_zoo.py`` a small, fast version of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[3]
ZOO_RUNS = 500
"""Runs per world of the zoo's batched entries (their model-steps cost ~0.1 ms each on one CPU core)."""
ACCUMULATION_RUNS = 2000
"""Runs per world of ``accumulation_rate``, whose claim is the zoo's smallest (see its row)."""
EXAMPLE_RUNS = 100
"""Runs per world of the shipped examples, which train one model per call (Opacus's make_private per model)."""


@dataclass(frozen=True)
class ZooEntry:
    """One row of the zoo.

    Attributes:
        name: its name (``entries.py``'s function, or ``plain_example``/``opacus_example``).
        kind: ``control``, ``bug`` or ``limit``.
        entry: the harness's entry string.
        canary, background: what the audit inserts, and into what.
        runs: runs per world.
        what: the bug (or control) in words.
        source: where it was reported.
    """

    name: str
    kind: str
    entry: str
    canary: str
    background: str
    runs: int
    what: str
    source: str = ""


def _zoo(name: str, kind: str, canary: str, background: str, what: str, source: str = "", *,
         runs: int = ZOO_RUNS) -> ZooEntry:  # fmt: skip
    entry = f"{(HERE / 'entries.py').relative_to(REPO).as_posix()}:{name}"
    return ZooEntry(name, kind, entry, canary, background, runs, what, source)


DIRAC, INPUT = ("dirac", "blank"), ("out_of_support", "data")
ZOO: tuple[ZooEntry, ...] = (
    _zoo("correct", "control", *DIRAC, "correct DP-SGD, logistic regression (Poisson q = 0.2, T = 20, σ = 2)"),
    _zoo("correct_mlp", "control", *INPUT, "correct DP-SGD, MLP 10-16-2"),
    _zoo("tied_correct", "control", *INPUT, "correct DP-SGD, a weight shared by two input blocks"),
    _zoo("bn_correct", "control", *INPUT, "correct DP-SGD behind a fixed standardisation layer"),
    ZooEntry("plain_example", "control", "examples/byo/plain_dpsgd.py:make", *DIRAC, EXAMPLE_RUNS,
             "the shipped plain PyTorch loop (examples/byo/plain_dpsgd.py)"),  # fmt: skip
    ZooEntry("opacus_example", "control", "examples/byo/opacus_dpsgd.py:make", *INPUT, EXAMPLE_RUNS,
             "the shipped Opacus PrivacyEngine loop (examples/byo/opacus_dpsgd.py)"),  # fmt: skip
    _zoo("noise_larger", "control", *DIRAC, "noise 1.5x the claimed σ (safe)"),
    _zoo("steps_overcounted", "control", *DIRAC, "10 steps run, 20 claimed (safe)"),
    _zoo("correct_white_box", "control", *DIRAC, "correct DP-SGD, every iterate recorded (white box)"),
    _zoo("no_clipping", "bug", *DIRAC, "per-example clipping skipped", "Opacus PR #664"),
    _zoo("no_clipping_mlp", "bug", *INPUT, "per-example clipping skipped, MLP", "Opacus PR #664"),
    _zoo("noise_on_mean", "bug", *DIRAC, "noise σC added to the mean, not the sum (σ/B)"),
    _zoo("noise_ignores_clip_norm", "bug", *DIRAC, "noise σ, not σC, with C = 4"),
    _zoo("batch_clipping", "bug", *DIRAC, "the batch's mean gradient clipped, not each example's",
         "Tramèr et al. 2022"),  # fmt: skip
    _zoo("tied_norm_first_use", "bug", *INPUT, "a shared weight's per-example norm taken from its first use",
         "Opacus #413, #417"),  # fmt: skip
    # The smallest claim of the zoo (ε = 0.51) and its subtlest leak: R = 500 flagged it in 18/20 seeds (100–119),
    # so its R is 2,000, confirmed on fresh seeds (120–139) declared before the run (docs/journal/byo.md).
    _zoo("accumulation_rate", "bug", *DIRAC, "4 micro-batches accumulated per step, q of one claimed",
         "jax_privacy PR #271", runs=ACCUMULATION_RUNS),  # fmt: skip
    _zoo("replace_one_as_add_remove", "bug", *DIRAC, "replace-one claimed with the add-remove ε", "TF Privacy #620"),
    _zoo("batchnorm_running_stats", "bug", *INPUT, "standardisation statistics updated from private batches",
         "Opacus #672"),  # fmt: skip
    _zoo("noise_key_reused", "bug", *DIRAC, "the noise drawn from one fixed key in every run"),
    _zoo("noise_reused_across_steps_white_box", "bug", *DIRAC, "the same noise at every step of a run, every "
         "iterate recorded (white box)"),  # fmt: skip
    _zoo("normalise_by_batch", "limit", *DIRAC, "the update divided by the batch's real size",
         "Opacus #571, #819, #420"),  # fmt: skip
    _zoo("shuffle_as_poisson", "limit", *DIRAC, "shuffled batches accounted as Poisson", "Opacus #80"),
    _zoo("noise_reused_across_steps", "limit", *DIRAC, "the same noise at every step of a run, final model only"),
)
BY_NAME = {z.name: z for z in ZOO}
