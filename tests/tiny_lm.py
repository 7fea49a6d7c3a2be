"""A tiny randomly initialised causal language model and synthetic PersonaChat-format text, written offline to a
directory (Steinke et al. Table 1 tests): the real loading path (``transformers`` from a directory) without the
paper's Gemma 2 weights. Needs the ``lm`` extra."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

# Words of the synthetic dialogues, then words of the vocabulary that the dialogues never use (the canary's pool).
WORDS = [f"w{i}" for i in range(30)]
UNUSED = [f"u{i}" for i in range(20)]
SPECIAL = ["[UNK]", "[EOS]"]


def make_tiny_lm(directory: Path, *, block_size: int = 16, tied: bool = False, seed: int = 0) -> Path:
    """Save a 2-layer GPT-2 (hidden 32) with a word-level tokenizer over SPECIAL + WORDS + UNUSED to ``directory``."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(SPECIAL + WORDS + UNUSED)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", eos_token="[EOS]")
    torch.manual_seed(seed)
    config = GPT2Config(vocab_size=len(vocab), n_positions=block_size, n_embd=32, n_layer=2, n_head=2,
                        tie_word_embeddings=tied, bos_token_id=1, eos_token_id=1)
    model = GPT2LMHeadModel(config)
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory)
    fast.save_pretrained(directory)
    return directory


def make_dialogues(path: Path, *, n: int = 40, seed: int = 0) -> Path:
    """``n`` synthetic dialogues of 6-14 words from WORDS, as JSONL records with a ``text`` field."""
    rng = np.random.default_rng(seed)
    with open(path, "w") as fh:
        for _ in range(n):
            words = rng.choice(WORDS, size=int(rng.integers(6, 15)))
            fh.write(json.dumps({"text": " ".join(words)}) + "\n")
    return path
