"""Annamalai, "It's our loss": the construction whose hidden state gives no amplification
(:mod:`~hsaudit.experiments.annamalai.construction`) and its figures (:mod:`~hsaudit.experiments.annamalai.figures`).
docs/annamalai.md."""
