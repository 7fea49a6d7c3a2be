"""Snakemake adapter: Steinke et al. Table 1's data — PersonaChat by path tokenised with the model's tokenizer into
blocks, the unused tokens and the canary (hsaudit.experiments.steinke.train.language.prepare_table1_data)."""

from hsaudit.experiments.steinke.train.language import prepare_table1_data
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import atomic_savez

log = script_logging(snakemake)
p = snakemake.params
out = prepare_table1_data(**p.data)
atomic_savez(snakemake.output.data, out)
log.info("%d dialogues -> %d training and %d held-out blocks of %d tokens; %d of %d vocabulary ids unused; canary %s",
         int(out["n_dialogues"]), len(out["train"]), len(out["eval"]), out["train"].shape[1], int(out["n_unused"]),
         int(out["vocab_size"]), out["canary_tokens"].tolist())
