"""Annamalai, "It's our loss": the construction whose hidden state gives no amplification
(:mod:`~hsaudit.papers.annamalai.construction`) and its figures (:mod:`~hsaudit.papers.annamalai.figures`).
docs/annamalai.md."""
