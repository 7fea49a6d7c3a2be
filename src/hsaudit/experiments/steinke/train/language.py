"""Steinke, Nasr et al. §3.2, Table 1: DP fine-tuning of a causal language model with unused tokens as the
differing example (the training side).

The paper fine-tunes Gemma 2 on PersonaChat with DP-SGD (App. D: 2 epochs, batch 2,048 / 1,024 / 512, σ set so that
the heuristic ε is about 6), trains 128 models with and 128 without the canary, and "directly looks at the
difference in the embedding table of the model for the tokens used as canaries before and after the finetuning".
Here:

* **Model** — any Hugging Face causal LM directory (:func:`load_causal_lm`; ``transformers`` is the optional extra
  ``lm``, imported only inside the loaders), in float32 and in eval mode (no dropout, so a per-sample gradient is a
  function of the parameters and the example) [inferred: the paper trains in FP16 with JAX].
* **Data** — PersonaChat as text by path (:func:`read_dialogues`: ``.txt`` one dialogue or utterance per line;
  ``.jsonl`` / ``.json`` records with a ``text`` field or ParlAI/HF ``personachat`` records with ``personality``
  and ``utterances[-1].history`` + the last candidate, the true reply). The last ``eval_fraction`` of the dialogues
  is held out (perplexity); each split is tokenised, joined with the EOS token and cut into blocks of
  ``block_size`` tokens (:func:`tokenise_blocks`, ``examples: blocks``): one block is one example of DP-SGD
  [inferred]; or each record is one example, truncated to ``block_size`` tokens and padded (``examples: records``;
  the paper's accounting implies about one example per PersonaChat record, docs/steinke.md).
* **Canary** — ``canary_tokens`` vocabulary ids that occur nowhere in the tokenised data and are not special
  tokens (:func:`unused_tokens`), drawn with the seed, cycled to one block (:func:`build_canary`).
* **Training** — the engine's Poisson DP-SGD (:func:`hsaudit.engine.dpsgd.train_population` with
  ``sampling=Poisson(q)``, q = B/N, its counter-based noise and sampling streams, the canary an input example of
  the batch with its own Bernoulli(q) draw, clipped like the others), with :class:`CausalLMPopulation` as the
  per-sample-gradient backend: the engine's backends take registry models, this one takes a loaded module and
  computes per-sample gradients model by model, one example at a time (one backward pass each: what vmap would do
  for a billion-parameter model anyway, without its memory). θ_0 is the loaded checkpoint, shared and known.
* **Score** (``score``, [inferred]: the paper names no statistic) — with Δ the change of the canary tokens' rows of
  the input embedding table, θ_T − θ_0 restricted to them, and B/(ηC) the unit of one inclusion:
  ``gradient`` (default): s = −⟨Δ, u⟩·B/(ηC), u the unit direction of the canary's own gradient on those rows at θ_0
  (the Dirac score of Figure 2 with the canary's gradient as the direction; a one-dimensional projection, so the
  noise of the other coordinates does not enter); ``norm``: s = ‖Δ‖·B/(ηC). Higher ⇒ canary present.
  Rows of tokens that no example contains move only through the canary (and the noise) when the embeddings are
  untied; with tied input/output embeddings (Gemma 2) every row also moves through the softmax of every example.
* **Perplexity** — exp of the mean next-token cross-entropy over the held-out blocks (:func:`perplexity`), per
  final model.

This module imports the engine and ``util`` only (a training job's code version must not cover the audit layer);
σ is calibrated and the table is made in :mod:`hsaudit.experiments.steinke.audit`; the plan (keys, shards) is
:func:`hsaudit.experiments.steinke.plan.plan_table1`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from hsaudit.engine.dpsgd import DPSGDConfig, pick_device, train_population
from hsaudit.engine.sampling import Poisson
from hsaudit.experiments.steinke.train.shards import shard_models
from hsaudit.experiments.steinke.values import EXAMPLES, LM_EXTRA, SCORE_ENTRIES
from hsaudit.util.seeding import derive_seed, rng_for

PAD = -1  # token id of padding in the arrays of `examples: records` (masked out of the loss and the attention)


def _transformers():
    try:
        import transformers
    except ImportError as err:  # the optional extra is missing: say which one
        raise ImportError(f"Steinke Table 1 loads language models with `transformers`: {LM_EXTRA}") from err
    return transformers


def load_causal_lm(path: str | os.PathLike) -> torch.nn.Module:
    """A Hugging Face causal LM from a local directory (``config.json`` + weights), float32, eval mode, eager
    attention (plain autograd through every op).

    Raises:
        ImportError: ``transformers`` is not installed (names the ``lm`` extra).
        ValueError: ``path`` is not a directory.
    """
    if not Path(path).is_dir():
        raise ValueError(f"model must be a Hugging Face model directory, got {str(path)!r}")
    tf = _transformers()
    model = tf.AutoModelForCausalLM.from_pretrained(
        str(path), dtype=torch.float32, attn_implementation="eager", local_files_only=True
    )
    return model.eval()


def load_tokenizer(path: str | os.PathLike):
    """The tokenizer saved in the model directory ``path`` (offline)."""
    if not Path(path).is_dir():
        raise ValueError(f"model must be a Hugging Face model directory, got {str(path)!r}")
    return _transformers().AutoTokenizer.from_pretrained(str(path), local_files_only=True)


def _record_text(record: Any) -> str:
    if isinstance(record, str):
        return record
    if isinstance(record, Mapping):
        if "text" in record:
            return str(record["text"])
        if "utterances" in record:  # ParlAI / HF personachat: persona + the last turn's history + its true reply
            last = record["utterances"][-1]
            parts = [*record.get("personality", []), *last.get("history", []), *last.get("candidates", [])[-1:]]
            return "\n".join(str(p) for p in parts)
    raise ValueError(f"a record must be a string, have a 'text' field or PersonaChat 'utterances', got {record!r:.80}")


def read_dialogues(path: str | os.PathLike, *, limit: int | None = None) -> list[str]:
    """The dialogues of a PersonaChat-format file (module docstring): ``.txt`` (one per non-empty line),
    ``.jsonl`` (one record per line) or ``.json`` (a list of records, or ``{"train": [...]}``).

    Args:
        path: the file.
        limit: keep the first ``limit`` dialogues (``None``: all).

    Raises:
        ValueError: a missing file, an unknown suffix, a record without text, or no dialogue.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"data must be a PersonaChat file (.txt, .jsonl, .json), got {str(path)!r}")
    suffix = path.suffix.lower()
    text = path.read_text(encoding="utf-8")
    if suffix == ".txt":
        out = [line.strip() for line in text.splitlines() if line.strip()]
    elif suffix == ".jsonl":
        out = [_record_text(json.loads(line)) for line in text.splitlines() if line.strip()]
    elif suffix == ".json":
        data = json.loads(text)
        if isinstance(data, Mapping):
            data = data.get("train", next(iter(data.values()), []))
        out = [_record_text(r) for r in data]
    else:
        raise ValueError(f"data must end in .txt, .jsonl or .json, got {str(path)!r}")
    out = [t for t in out if t.strip()][: None if limit is None else int(limit)]
    if not out:
        raise ValueError(f"no dialogue in {str(path)!r}")
    return out


def _blocks(texts: Sequence[str], tokenizer, block_size: int) -> tuple[np.ndarray, set[int]]:
    ids: list[int] = []
    eos = tokenizer.eos_token_id
    for text in texts:
        ids.extend(tokenizer(text, add_special_tokens=False)["input_ids"])
        if eos is not None:
            ids.append(int(eos))
    n = len(ids) // block_size
    return np.asarray(ids[: n * block_size], dtype=np.int64).reshape(n, block_size), set(ids)


def _records(texts: Sequence[str], tokenizer, block_size: int) -> tuple[np.ndarray, set[int]]:
    eos = tokenizer.eos_token_id
    rows, seen = [], set()
    for text in texts:
        ids = list(tokenizer(text, add_special_tokens=False)["input_ids"]) + ([int(eos)] if eos is not None else [])
        seen.update(ids)
        if len(ids) >= 2:  # at least one next-token prediction
            rows.append(ids[:block_size] + [PAD] * max(0, block_size - len(ids)))
    return np.asarray(rows, dtype=np.int64).reshape(len(rows), block_size), seen


def tokenise_blocks(
    texts: Sequence[str], tokenizer, *, block_size: int, eval_fraction: float, examples: str = "blocks"
) -> dict[str, Any]:
    """Split the dialogues (the last ``eval_fraction`` held out) and tokenise each split into examples of
    ``block_size`` tokens: ``examples="blocks"`` joins the split's dialogues with EOS and cuts blocks (the remainder
    dropped); ``"records"`` makes one example per dialogue (with its EOS), truncated to ``block_size`` and padded with
    :data:`PAD` (records of fewer than two tokens dropped).

    Returns:
        ``{"train": int64 [N, L], "eval": int64 [M, L], "seen": set of every token id of both splits}`` (with
        ``records``, ``seen`` includes the tokens truncated away).

    Raises:
        ValueError: a bad size, fraction or ``examples``, or a split without an example.
    """
    if examples not in EXAMPLES:
        raise ValueError(f"examples must be one of {EXAMPLES}, got {examples!r}")
    if int(block_size) != block_size or block_size < 2:
        raise ValueError(f"block_size must be an integer >= 2, got {block_size}")
    if not 0.0 < float(eval_fraction) < 1.0:
        raise ValueError(f"eval_fraction must be in (0, 1), got {eval_fraction}")
    n_eval = max(1, int(round(len(texts) * float(eval_fraction))))
    if n_eval >= len(texts):
        raise ValueError(f"{len(texts)} dialogues leave none for training at eval_fraction = {eval_fraction}")
    make = _blocks if examples == "blocks" else _records
    train, seen_train = make(texts[:-n_eval], tokenizer, int(block_size))
    held, seen_eval = make(texts[-n_eval:], tokenizer, int(block_size))
    for name, blocks in (("training", train), ("held-out", held)):
        if len(blocks) == 0:
            raise ValueError(f"the {name} split has no example of block_size = {block_size} tokens ({examples})")
    return {"train": train, "eval": held, "seen": seen_train | seen_eval}


def unused_tokens(seen: set[int] | np.ndarray, *, vocab_size: int, special_ids: Sequence[int] = ()) -> np.ndarray:
    """The vocabulary ids in [0, vocab_size) that never occur in the tokenised data and are not special tokens
    (the paper's "tokens that are not present in the PersonaChat dataset"), increasing.

    >>> unused_tokens({0, 2, 5}, vocab_size=8, special_ids=[7]).tolist()
    [1, 3, 4, 6]
    """
    if int(vocab_size) < 1:
        raise ValueError(f"vocab_size must be >= 1, got {vocab_size}")
    used = np.zeros(int(vocab_size), dtype=bool)
    for ids in (np.fromiter((int(i) for i in seen), dtype=np.int64), np.asarray(list(special_ids), dtype=np.int64)):
        ids = ids[(ids >= 0) & (ids < vocab_size)]
        used[ids] = True
    return np.flatnonzero(~used).astype(np.int64)


def build_canary(unused: np.ndarray, *, num_tokens: int, block_size: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The differing example: ``num_tokens`` unused ids drawn without replacement (seeded), cycled to one block.

    Returns:
        ``(tokens [num_tokens], sequence [block_size])``, both int64.

    Raises:
        ValueError: fewer unused tokens than ``num_tokens``.
    """
    unused = np.asarray(unused, dtype=np.int64)
    if int(num_tokens) < 1:
        raise ValueError(f"canary_tokens must be >= 1, got {num_tokens}")
    if unused.size < num_tokens:
        raise ValueError(f"the canary needs {num_tokens} unused tokens, the vocabulary has {unused.size}")
    tokens = np.sort(rng_for(seed, "steinke-table1-canary").choice(unused, size=int(num_tokens), replace=False))
    return tokens, np.resize(tokens, int(block_size)).astype(np.int64)


def prepare_table1_data(
    *, model: str, data: str, block_size: int, eval_fraction: float, canary_tokens: int, seed: int,
    max_dialogues: int | None = None, examples: str = "blocks",
) -> dict[str, np.ndarray]:
    """Tokenise the data with the model's tokenizer, find the unused tokens and build the canary (the arrays of
    rule ``prepare_steinke_table1_data``)."""
    tokenizer = load_tokenizer(model)
    texts = read_dialogues(data, limit=max_dialogues)
    blocks = tokenise_blocks(texts, tokenizer, block_size=block_size, eval_fraction=eval_fraction, examples=examples)
    vocab = len(tokenizer)
    unused = unused_tokens(blocks["seen"], vocab_size=vocab, special_ids=tokenizer.all_special_ids)
    tokens, sequence = build_canary(unused, num_tokens=canary_tokens, block_size=block_size, seed=seed)
    return {"train": blocks["train"], "eval": blocks["eval"], "canary_tokens": tokens, "canary": sequence,
            "n_unused": np.int64(unused.size), "vocab_size": np.int64(vocab), "n_dialogues": np.int64(len(texts))}


def next_token_nll(module: torch.nn.Module, ids: torch.Tensor, *, reduce: str = "mean") -> torch.Tensor:
    """Per-sequence next-token cross-entropy ``[n]`` of token blocks ``ids [n, L]``: the mean (``reduce="mean"``)
    or the sum (``"sum"``) over its predictions. :data:`PAD` positions (right padding of ``examples: records``) are
    masked out of the attention and are never predicted."""
    valid = ids != PAD
    inputs = ids.clamp(min=0)
    logits = module(input_ids=inputs, attention_mask=valid.long(), use_cache=False).logits
    targets = ids[:, 1:].masked_fill(~valid[:, 1:], -100)
    nll = torch.nn.functional.cross_entropy(
        logits[:, :-1].flatten(0, 1).float(), targets.flatten(), reduction="none", ignore_index=-100
    ).view(ids.shape[0], -1).sum(1)
    return nll if reduce == "sum" else nll / valid[:, 1:].sum(1).clamp(min=1)


def perplexity(module: torch.nn.Module, blocks: torch.Tensor, *, batch: int = 16) -> float:
    """exp(mean next-token cross-entropy) over every predicted token of ``blocks [n, L]`` (padding excluded)."""
    total, count = 0.0, 0
    with torch.no_grad():
        for i in range(0, blocks.shape[0], batch):
            part = blocks[i : i + batch]
            total += float(next_token_nll(module, part, reduce="sum").double().sum())
            count += int((part[:, 1:] != PAD).sum())
    return float(np.exp(total / max(count, 1)))


class CausalLMPopulation:
    """A per-sample-gradient backend of :func:`hsaudit.engine.dpsgd.run_poisson` for one loaded module.

    A population is ``theta [models, p]`` in the order of ``module.parameters()``; each model's row is copied into
    the module, then every example of its batch gets its own backward pass (the per-example clipped gradients of
    DP-SGD, Opacus' clip factor min(1, C/(‖g‖ + 10⁻⁶))). ``y`` is ignored: the loss of a block is its mean
    next-token cross-entropy (:func:`next_token_nll`).
    """

    def __init__(self, module: torch.nn.Module) -> None:
        self.module = module
        self.params = [p for p in module.parameters()]
        self.p = int(sum(p.numel() for p in self.params))

    def flat(self) -> torch.Tensor:
        """The module's parameters as one float32 vector ``[p]``."""
        return torch.nn.utils.parameters_to_vector(self.params).detach().float().clone()

    def load(self, theta: torch.Tensor) -> None:
        """Copy one flat parameter vector ``[p]`` into the module."""
        with torch.no_grad():
            torch.nn.utils.vector_to_parameters(theta.to(self.params[0].dtype), self.params)

    def gradient(self, ids: torch.Tensor) -> torch.Tensor:
        """The flat gradient ``[p]`` of one block's loss at the module's current parameters."""
        loss = next_token_nll(self.module, ids[None])[0]
        grads = torch.autograd.grad(loss, self.params, allow_unused=True)
        return torch.cat([(torch.zeros_like(p) if g is None else g).reshape(-1) for p, g in zip(self.params, grads)])

    def clipped_sum_per_model(
        self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, clip: float | None, weights: torch.Tensor,
        counts: list[int] | None = None,
    ) -> torch.Tensor:
        del y
        out = torch.zeros_like(theta)
        for i in range(theta.shape[0]):
            self.load(theta[i])
            n = x.shape[1] if counts is None else int(counts[i])
            for j in range(n):
                g = self.gradient(x[i, j]).to(theta.dtype)
                factor = 1.0 if clip is None else min(1.0, float(clip) / (float(g.norm()) + 1e-6))
                out[i].add_(g, alpha=factor * float(weights[i, j]))
        return out


def embedding_index(module: torch.nn.Module, tokens: Sequence[int]) -> torch.Tensor:
    """Positions in the flat parameter vector (``module.parameters()`` order) of the input-embedding rows of
    ``tokens``: int64 ``[len(tokens) · d]``, row by row.

    Raises:
        ValueError: the module has no input embedding among its parameters, or a token outside it.
    """
    weight = module.get_input_embeddings().weight
    offset = 0
    for p in module.parameters():
        if p is weight:
            break
        offset += p.numel()
    else:
        raise ValueError("the module's input embedding is not one of its parameters")
    vocab, d = weight.shape
    tokens = torch.as_tensor(list(tokens), dtype=torch.int64)
    if tokens.numel() == 0 or int(tokens.min()) < 0 or int(tokens.max()) >= vocab:
        raise ValueError(f"canary tokens must be in [0, {vocab}), got {tokens.tolist()}")
    return (offset + tokens[:, None] * d + torch.arange(d)[None, :]).reshape(-1)


def embedding_score(
    theta: torch.Tensor, theta0: torch.Tensor, *, index: torch.Tensor, direction: torch.Tensor | None,
    lr: float, batch_size: float, clip: float,
) -> torch.Tensor:
    """The canary's score ``[m]`` from the change Δ of its embedding rows (module docstring; higher ⇒ canary):
    −⟨Δ, direction⟩·B/(ηC) with a unit ``direction`` (score ``gradient``), ‖Δ‖·B/(ηC) with ``None`` (``norm``)."""
    delta = (theta[:, index] - theta0[index]).double()
    unit = float(batch_size) / (float(lr) * float(clip))
    if direction is None:
        return delta.norm(dim=1) * unit
    return -(delta @ direction.double()) * unit


def canary_direction(engine: CausalLMPopulation, theta0: torch.Tensor, canary: torch.Tensor, index: torch.Tensor):
    """The unit direction of the canary's gradient at θ_0 on its embedding rows (zero vector if it vanishes)."""
    engine.load(theta0)
    g = engine.gradient(canary)[index].double()
    norm = float(g.norm())
    return g / norm if norm > 0 else g


def train_table1_shard(
    spec: Mapping[str, Any],
    shard: int,
    *,
    privacy: Mapping[str, Any],
    data: Mapping[str, np.ndarray],
    module: torch.nn.Module,
    device: str | None = None,
    progress: bool = False,
) -> dict[str, np.ndarray]:
    """Fine-tune one shard of Table 1 (both worlds: model i is in world i mod 2) and score it.

    Args:
        spec: a row's spec (:func:`hsaudit.experiments.steinke.plan.plan_table1`).
        shard: the shard index.
        privacy: the row's ``{"sampling_rate", "steps", "noise_multiplier"}``
            (:func:`hsaudit.experiments.steinke.audit.privacy_plan`).
        data: :func:`prepare_table1_data`'s arrays.
        module: the loaded causal LM (θ_0; its parameters are overwritten).
        device: ``None``/``"auto"`` (CUDA when present), ``"cpu"`` or ``"cuda"``.
        progress: a tqdm bar over the steps.

    Returns:
        ``bits [S]``, ``scores`` float64 ``[S, T]`` (after every step), ``canary_steps`` bool ``[S, T]``,
        ``perplexity [S]`` (final models, held-out blocks), ``sampling_rate``, ``batch_size``, ``n_train``,
        ``n_eval``, ``parameters``.
    """
    if spec["score"] not in SCORE_ENTRIES:
        raise ValueError(f"score must be one of {tuple(SCORE_ENTRIES)}, got {spec['score']!r}")
    kind = SCORE_ENTRIES[spec["score"]].name  # the registry entry: inclusions (a projection) or norm
    dev = pick_device(device)
    module = module.to(dev)
    engine = CausalLMPopulation(module)
    theta0 = engine.flat()
    X = torch.as_tensor(np.asarray(data["train"]), dtype=torch.int64, device=dev)
    held = torch.as_tensor(np.asarray(data["eval"]), dtype=torch.int64, device=dev)
    canary = torch.as_tensor(np.asarray(data["canary"]), dtype=torch.int64, device=dev)
    index = embedding_index(module, np.asarray(data["canary_tokens"]).tolist()).to(dev)
    n, batch = X.shape[0], int(spec["batch_size"])
    q, steps, sigma = float(privacy["sampling_rate"]), int(privacy["steps"]), float(privacy["noise_multiplier"])
    if abs(q * n - batch) > 1e-6 * batch:
        raise ValueError(f"sampling_rate {q} is not B/N = {batch}/{n}")
    lr, clip = float(spec["lr"]), float(spec["clip_norm"])
    direction = canary_direction(engine, theta0, canary, index) if kind == "inclusions" else None
    models, bits = shard_models(spec, shard)
    config = DPSGDConfig(steps=steps, batch_size=batch, lr=lr, clip_norm=clip, noise_multiplier=sigma,
                         sampling=Poisson(q))
    final_ppl: list[float] = []
    calls = [0]

    def observe(theta: torch.Tensor) -> torch.Tensor:
        calls[0] += 1
        if calls[0] == steps:  # the last step: the final models' held-out perplexity
            for i in range(theta.shape[0]):
                engine.load(theta[i])
                final_ppl.append(perplexity(module, held))
        return embedding_score(theta, theta0, index=index, direction=direction, lr=lr, batch_size=batch, clip=clip)

    obs = train_population(
        engine=engine,
        theta0=theta0,
        X=X,
        y=torch.zeros(n, dtype=torch.int64, device=dev),
        batches=None,
        config=config,
        noise_key=derive_seed(spec["seed"], "steinke-table1-noise", spec["key"]),
        sampling_key=derive_seed(spec["seed"], "steinke-table1-sampling", spec["key"]),
        models=models,
        mask=torch.as_tensor(bits, dtype=torch.bool, device=dev),
        canary=(canary[None], torch.zeros(1, dtype=torch.int64, device=dev)),
        observe=observe,
        progress=progress,
        desc="Table 1 fine-tuning",
    )
    engine.load(theta0)
    return {
        "bits": bits.astype(np.int64),
        "scores": obs.scores,
        "canary_steps": obs.canary_steps,
        "perplexity": np.asarray(final_ppl, dtype=np.float64),
        "sampling_rate": np.float64(q),
        "batch_size": np.int64(batch),
        "n_train": np.int64(n),
        "n_eval": np.int64(held.shape[0]),
        "parameters": np.int64(engine.p),
    }


__all__ = [
    "CausalLMPopulation",
    "build_canary",
    "canary_direction",
    "embedding_index",
    "embedding_score",
    "load_causal_lm",
    "load_tokenizer",
    "next_token_nll",
    "perplexity",
    "prepare_table1_data",
    "read_dialogues",
    "tokenise_blocks",
    "PAD",
    "train_table1_shard",
    "unused_tokens",
]
