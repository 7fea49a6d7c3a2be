"""Steinke et al. (2023)'s canaries and scores as values: which canaries and backgrounds their config may name, and
the score-registry entry of each score. Torch-free and numpy-free, so that the plan (imported by every ``snakemake``
call and ``hsaudit plan``) checks a spec without importing the training modules; imported by the image training
(:mod:`hsaudit.experiments.steinke.train.images`), not by Table 1's language-model jobs, whose own values are
:mod:`hsaudit.experiments.steinke.values`.

The canaries themselves are entries of the canary registry (:mod:`hsaudit.engine.canaries`): the label-flipped input
is ``mislabelled``, the Dirac canary's gradient is :func:`hsaudit.engine.canaries.dirac_gradient` on the coordinate
:func:`hsaudit.engine.canaries.dirac_coordinate`.
"""

from __future__ import annotations

from hsaudit.experiments.steinke.values import SCORE_ENTRIES
from hsaudit.util.scores import Score, score_entry

STEINKE_CANARIES = ("dirac", "label_flip")
"""Steinke et al.'s image canaries: the Dirac gradient canary C·e_d added unclipped (their Figure 2, Table 2) and the
label-flipped input (Figure 4; the registry's ``mislabelled`` entry with a fixed row and label,
:func:`hsaudit.experiments.steinke.train.images.fig4_canary`)."""
DIRAC_BACKGROUNDS = ("natural", "zero")
"""The other examples of a Dirac-canary training: ``natural`` (the data) or ``zero`` (every other example's clipped
gradient is 0: the adversarial dataset of Steinke et al.'s Figure 3)."""
LABEL_FLIP_BACKGROUNDS = ("blank", "natural", "zero_gradient")
"""The other examples of a label-flipped-input training (Steinke et al.'s Figure 4 panels): ``zero_gradient`` (every
other example's clipped gradient is 0 while the canary's is computed and clipped: the paper's "all zero gradient
inputs" of panel (a)), ``blank`` (all-zero images, labels kept: the ``blank`` of
:data:`hsaudit.engine.canaries.BACKGROUNDS`, whose bias gradients are not 0) or ``natural`` (the data; panel (b))."""
LABEL_FLIP_SOURCES = ("test", "train")
"""The splits a label-flipped input canary is taken from (test: an image the models never see otherwise)."""

SCORES: dict[str, Score] = {
    "dirac": score_entry("inclusions"),
    "label_flip": score_entry("final"),
    **SCORE_ENTRIES,
}
"""The score-registry entry (:data:`hsaudit.util.scores.SCORES`) of each image canary's score (``dirac``:
:func:`hsaudit.experiments.steinke.train.images.dirac_score`; ``label_flip``: −ℓ(θ_t; x*, y*)) and of each of Table
1's scores (``steinke.table1.score``, :data:`hsaudit.experiments.steinke.values.SCORE_ENTRIES`:
:func:`hsaudit.experiments.steinke.train.language.embedding_score`). :func:`hsaudit.experiments.steinke.train.images.observer`
computes an image canary's score after every step as its entry says."""

__all__ = ["DIRAC_BACKGROUNDS", "LABEL_FLIP_BACKGROUNDS", "LABEL_FLIP_SOURCES", "SCORES", "STEINKE_CANARIES"]
