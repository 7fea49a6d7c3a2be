"""The values a Steinke et al. training spec may take that the plan checks (Table 1's language model): torch-free,
so that the plan (imported by every ``snakemake`` call and ``hsaudit plan``) validates a spec without importing
the training modules. The image canaries are entries of the canary registry (:mod:`hsaudit.engine.canaries`:
``mislabelled``, and the Dirac gradient :func:`hsaudit.engine.canaries.dirac_gradient`); which of them and which
backgrounds Steinke et al.'s config may name is said here."""

from __future__ import annotations

SCORES = ("gradient", "norm")
"""Table 1's scores of the unused-token canary (:mod:`hsaudit.experiments.steinke.train.language`)."""
LM_EXTRA = "pip install -e '.[lm]' (the `lm` extra: transformers)"
"""How to install what Table 1 needs."""
EXAMPLES = ("blocks", "records")
"""Table 1's training examples: fixed-length token blocks or one record per dialogue."""

STEINKE_CANARIES = ("dirac", "label_flip")
"""Steinke et al.'s image canaries: the Dirac gradient canary C·e_d added unclipped (their Figure 2, Table 2;
coordinate :func:`hsaudit.engine.canaries.dirac_coordinate`, gradient :func:`hsaudit.engine.canaries.dirac_gradient`)
and the label-flipped input (Figure 4; the registry's ``mislabelled`` entry with a fixed row and label,
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

__all__ = ["DIRAC_BACKGROUNDS", "EXAMPLES", "LABEL_FLIP_BACKGROUNDS", "LABEL_FLIP_SOURCES", "LM_EXTRA", "SCORES",
           "STEINKE_CANARIES"]
