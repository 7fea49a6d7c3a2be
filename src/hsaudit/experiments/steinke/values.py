"""The values a Steinke et al. training spec may take that the plan checks (Table 1's language model): torch-free,
so that the plan (imported by every ``snakemake`` call and ``hsaudit plan``) validates a spec without importing
the training modules. The image canaries' values are the canary registry's (:mod:`hsaudit.engine.canaries`)."""

from __future__ import annotations

SCORES = ("gradient", "norm")
"""Table 1's scores of the unused-token canary (:mod:`hsaudit.experiments.steinke.train.language`)."""
LM_EXTRA = "pip install -e '.[lm]' (the `lm` extra: transformers)"
"""How to install what Table 1 needs."""
EXAMPLES = ("blocks", "records")
"""Table 1's training examples: fixed-length token blocks or one record per dialogue."""

__all__ = ["EXAMPLES", "LM_EXTRA", "SCORES"]
