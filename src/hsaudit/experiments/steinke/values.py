"""The values a Steinke et al. training spec may take that the plan checks (Table 1's language model): torch-free,
so that the plan (imported by every ``snakemake`` call and ``hsaudit plan``) validates a spec without importing
the training modules. The image canaries' values are the canary registry's (:mod:`hsaudit.engine.canaries`)."""

from __future__ import annotations

from hsaudit.util.scores import Score, score_entry

SCORE_ENTRIES: dict[str, Score] = {"gradient": score_entry("inclusions"), "norm": score_entry("norm")}
"""Table 1's scores of the unused-token canary (``steinke.table1.score``), each an entry of the score registry
(:data:`hsaudit.util.scores.SCORES`) that :func:`hsaudit.experiments.steinke.train.language.train_table1_shard`
computes as the entry says: ``inclusions`` projects the canary rows' change on the canary's gradient, ``norm`` takes
its norm (:func:`hsaudit.experiments.steinke.train.language.embedding_score`)."""
SCORES = tuple(SCORE_ENTRIES)
"""Table 1's score names (the config's enum)."""
LM_EXTRA = "pip install -e '.[lm]' (the `lm` extra: transformers)"
"""How to install what Table 1 needs."""
EXAMPLES = ("blocks", "records")
"""Table 1's training examples: fixed-length token blocks or one record per dialogue."""

__all__ = ["EXAMPLES", "LM_EXTRA", "SCORES", "SCORE_ENTRIES"]
