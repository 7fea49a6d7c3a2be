"""Steinke et al. Table 1 (hsaudit.experiments.steinke.train.language, .audit, .plan): data by path, unused tokens, the
canary, the embedding-row score at zero noise, perplexity against a hand computation, σ per batch size. Most tests
use a plain-torch causal LM (no ``transformers``); the loading test needs the ``lm`` extra."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from hsaudit.accounting.last_iterate import heuristic_epsilon
from hsaudit.experiments.steinke.audit import (
    STANDARD_COLUMNS,
    TABLE1_COLUMNS,
    privacy_plan,
    standard_epsilons,
    table1,
    table1_markdown,
)
from hsaudit.experiments.steinke.plan import plan_table1
from hsaudit.experiments.steinke.train import language as L

pytestmark = pytest.mark.usefixtures("torch_one_thread")
V, D = 24, 8


class TinyCausalLM(torch.nn.Module):
    """A bigram model (causal by construction) with the interface the module uses: ``get_input_embeddings()`` and
    ``forward(input_ids=..., attention_mask=..., use_cache=...) -> .logits``; untied input/output embeddings (a
    bigram model needs no attention mask: position t sees only token t)."""

    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        torch.manual_seed(seed)
        self.embed = torch.nn.Embedding(V, D)
        self.hidden = torch.nn.Linear(D, D)
        self.head = torch.nn.Linear(D, V)

    def get_input_embeddings(self) -> torch.nn.Embedding:
        return self.embed

    def forward(self, input_ids, attention_mask=None, use_cache=False):
        return SimpleNamespace(logits=self.head(torch.tanh(self.hidden(self.embed(input_ids)))))


class WordTokenizer:
    """Whitespace words -> ids of a fixed list; id 0 is EOS (special)."""

    eos_token_id = 0
    all_special_ids = [0]

    def __init__(self, words):
        self.ids = {w: i + 1 for i, w in enumerate(words)}

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": [self.ids[w] for w in text.split()]}

    def __len__(self):
        return len(self.ids) + 1


def test_unused_tokens_exclude_seen_and_special():
    assert L.unused_tokens({0, 2, 5, 99}, vocab_size=8, special_ids=[7, -1]).tolist() == [1, 3, 4, 6]
    assert L.unused_tokens(set(), vocab_size=3).tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="vocab_size"):
        L.unused_tokens(set(), vocab_size=0)


def test_tokenised_data_and_its_unused_tokens():
    words = [f"w{i}" for i in range(10)]
    texts = ["w1 w2 w3", "w2 w3 w4 w1", "w5 w1", "w6 w6 w6", "w1 w2"]
    tok = WordTokenizer(words)
    out = L.tokenise_blocks(texts, tok, block_size=3, eval_fraction=0.2)
    # training split: 4 dialogues, 12 words + 4 EOS = 16 ids -> 5 blocks of 3; held out: "w1 w2" + EOS -> 1 block
    assert out["train"].shape == (5, 3) and out["eval"].tolist() == [[2, 3, 0]]
    assert out["train"].reshape(-1).tolist()[:5] == [2, 3, 4, 0, 3]
    unused = L.unused_tokens(out["seen"], vocab_size=len(tok), special_ids=tok.all_special_ids)
    assert unused.tolist() == [1, 8, 9, 10]  # w0 (id 1) and w7, w8, w9; EOS (id 0) is special
    with pytest.raises(ValueError, match="eval_fraction"):
        L.tokenise_blocks(texts, tok, block_size=3, eval_fraction=1.0)


def test_records_are_one_example_each_truncated_and_padded():
    words = [f"w{i}" for i in range(10)]
    texts = ["w1 w2 w3", "w2 w3 w4 w1 w7", "w5", "w6 w6", "w1 w2"]
    tok = WordTokenizer(words)
    out = L.tokenise_blocks(texts, tok, block_size=4, eval_fraction=0.2, examples="records")
    P = L.PAD
    # one row per training record (+ EOS id 0), cut at 4 tokens, right-padded; "w5" + EOS still predicts one token
    assert out["train"].tolist() == [[2, 3, 4, 0], [3, 4, 5, 2], [6, 0, P, P], [7, 7, 0, P]]
    assert out["eval"].tolist() == [[2, 3, 0, P]]
    assert 8 in out["seen"]  # w7, truncated away, still counts as used
    with pytest.raises(ValueError, match="examples"):
        L.tokenise_blocks(texts, tok, block_size=4, eval_fraction=0.2, examples="turns")


def test_padding_is_never_predicted_nor_seen():
    module = TinyCausalLM(seed=2)
    P = L.PAD
    padded = torch.tensor([[3, 5, 7, P, P], [4, 4, 9, 1, 2]])
    with torch.no_grad():
        nll = L.next_token_nll(module, padded)
        alone = L.next_token_nll(module, torch.tensor([[3, 5, 7]]))
        full = L.next_token_nll(module, padded[1:])
        # the token mean over valid predictions: 2 of the first record, 4 of the second
        sums = L.next_token_nll(module, padded, reduce="sum")
    assert float(nll[0]) == pytest.approx(float(alone[0]), rel=1e-6) and float(nll[1]) == pytest.approx(float(full[0]))
    assert float(sums[0]) == pytest.approx(2 * float(alone[0]), rel=1e-6)
    assert L.perplexity(module, padded, batch=1) == pytest.approx(math.exp(float(sums.sum()) / 6), rel=1e-6)


def test_canary_is_drawn_from_unused_tokens_and_fills_a_block():
    unused = np.array([3, 8, 11, 12, 20])
    tokens, seq = L.build_canary(unused, num_tokens=3, block_size=7, seed=4)
    assert len(set(tokens.tolist())) == 3 and set(tokens.tolist()) <= set(unused.tolist())
    assert seq.tolist() == [*tokens.tolist(), *tokens.tolist(), tokens[0]]
    again, _ = L.build_canary(unused, num_tokens=3, block_size=7, seed=4)
    assert again.tolist() == tokens.tolist()
    with pytest.raises(ValueError, match="needs 6 unused tokens"):
        L.build_canary(unused, num_tokens=6, block_size=7, seed=4)


def test_read_dialogues_formats(tmp_path):
    (tmp_path / "a.txt").write_text("hello there\n\nhow are you\n")
    assert L.read_dialogues(tmp_path / "a.txt") == ["hello there", "how are you"]
    (tmp_path / "b.jsonl").write_text(json.dumps({"text": "x y"}) + "\n" + json.dumps({"text": "z"}) + "\n")
    assert L.read_dialogues(tmp_path / "b.jsonl", limit=1) == ["x y"]
    record = {"personality": ["i like cats ."], "utterances": [
        {"history": ["hi"], "candidates": ["wrong", "hello !"]},
        {"history": ["hi", "hello !", "cats ?"], "candidates": ["no", "yes , cats ."]}]}
    (tmp_path / "c.json").write_text(json.dumps({"train": [record], "valid": []}))
    assert L.read_dialogues(tmp_path / "c.json") == ["i like cats .\nhi\nhello !\ncats ?\nyes , cats ."]
    with pytest.raises(ValueError, match=r"\.txt, \.jsonl or \.json"):
        (tmp_path / "d.csv").write_text("a\n")
        L.read_dialogues(tmp_path / "d.csv")
    with pytest.raises(ValueError, match="PersonaChat file"):
        L.read_dialogues(tmp_path / "missing.txt")


def test_perplexity_against_a_hand_computation():
    module = TinyCausalLM(seed=1)
    blocks = torch.randint(0, V, (3, 6), generator=torch.Generator().manual_seed(0))
    total, count = 0.0, 0
    with torch.no_grad():
        for block in blocks:
            for pos in range(len(block) - 1):
                h = torch.tanh(module.hidden.weight @ module.embed.weight[block[pos]] + module.hidden.bias)
                logits = (module.head.weight @ h + module.head.bias).double()
                total -= float(logits[block[pos + 1]] - torch.logsumexp(logits, 0))
                count += 1
    assert L.perplexity(module, blocks, batch=2) == pytest.approx(math.exp(total / count), rel=1e-5)
    with torch.no_grad():  # a uniform model: perplexity = vocabulary size
        module.head.weight.zero_()
        module.head.bias.zero_()
    assert L.perplexity(module, blocks) == pytest.approx(V, rel=1e-6)


def _data(n=12, block=5, seed=0, padded=False):
    rng = np.random.default_rng(seed)
    canary_tokens = np.array([20, 21, 22])
    train, held = rng.integers(1, 16, size=(n, block)), rng.integers(1, 16, size=(4, block))
    if padded:  # `examples: records`: right padding in every other example
        train[::2, -2:] = L.PAD
        held[0, -1] = L.PAD
    return {"train": train, "eval": held, "canary_tokens": canary_tokens, "canary": np.resize(canary_tokens, block)}


@pytest.mark.parametrize("score,padded", [("gradient", False), ("norm", False), ("gradient", True)])
def test_zero_noise_moves_the_canary_rows_only_with_the_canary(score, padded):
    """σ = 0, untied embeddings, canary tokens absent from the data: the canary's embedding rows stay exactly at θ_0
    (score 0) in every model whose batches never held the canary — all of world 0 — and move (score > 0) in each
    model that drew it (also with padded records)."""
    data = _data(padded=padded)
    module = TinyCausalLM()
    theta0 = torch.nn.utils.parameters_to_vector(module.parameters()).detach().clone()
    spec = {"key": "k", "seed": 3, "shard_size": 8, "batch_size": 4, "lr": 0.1, "clip_norm": 1.0, "score": score}
    privacy = {"sampling_rate": 4 / 12, "steps": 6, "noise_multiplier": 0.0}
    out = L.train_table1_shard(spec, 0, privacy=privacy, data=data, module=module, device="cpu")
    bits, s, drawn = out["bits"].astype(bool), out["scores"][:, -1], out["canary_steps"].sum(1)
    assert out["scores"].shape == (8, 6) and (drawn[~bits] == 0).all() and drawn[bits].sum() > 0
    assert (s[drawn == 0] == 0).all()
    assert (s[drawn > 0] > 0).all()
    assert np.isfinite(out["perplexity"]).all() and out["perplexity"].shape == (8,)
    # the module is handed back at θ_0
    assert torch.equal(torch.nn.utils.parameters_to_vector(module.parameters()), theta0)
    # with the gradient score one inclusion at θ_0 counts ⟨clip(g), u⟩/C = min(‖g‖, C)·‖g_rows‖/‖g‖ ≤ 1 per step
    if score == "gradient":
        assert (s[bits] <= drawn[bits] * (1 + 1e-6) + 0.5).all()


def test_embedding_index_points_at_the_rows():
    module = TinyCausalLM()
    idx = L.embedding_index(module, [2, 5])
    flat = torch.nn.utils.parameters_to_vector(module.parameters())
    assert torch.equal(flat[idx].view(2, D), module.embed.weight[[2, 5]])
    with pytest.raises(ValueError, match="canary tokens"):
        L.embedding_index(module, [V])


def test_privacy_plan_calibrates_the_heuristic():
    rows = [{"batch_size": 100, "heuristic_epsilon": 2.0}, {"batch_size": 50, "noise_multiplier": 1.5}]
    plan = privacy_plan(rows, n_train=1000, epochs=2, delta=1e-5)
    assert [(r["steps"], r["sampling_rate"]) for r in plan] == [(20, 0.1), (40, 0.05)]
    assert plan[0]["heuristic"] == pytest.approx(2.0, abs=1e-4)
    assert plan[1]["heuristic"] == pytest.approx(
        heuristic_epsilon(1e-5, steps=40, sampling_rate=0.05, noise_multiplier=1.5))
    with pytest.raises(ValueError, match="batch_size must be in"):
        privacy_plan([{"batch_size": 2000, "noise_multiplier": 1.0}], n_train=1000, epochs=2, delta=1e-5)


def test_plan_needs_one_of_sigma_and_heuristic():
    section = {"model": None, "data": None, "block_size": 8, "eval_fraction": 0.1, "max_dialogues": None,
               "canary_tokens": 4, "lr": 0.5, "clip_norm": 1.0, "epochs": 2, "score": "gradient", "shard_size": 2,
               "models_per_world": 3, "delta": 1e-5,
               "rows": [{"batch_size": 8, "heuristic_epsilon": 6.0}, {"batch_size": 4, "noise_multiplier": 1.0}]}
    plan = plan_table1(section, seed=0)
    assert len({r.key for r in plan.rows}) == 2 and plan.rows[0].shards == (0, 1, 2)
    assert plan.rows[0].root == f"results/steinke/table1/{plan.rows[0].key}" and plan.rows[0].spec["data"] == plan.data_key
    # without model and data paths the target says what is missing (and is no target of the plan)
    assert "Missing: steinke.table1.model, steinke.table1.data" in plan.missing
    assert not plan_table1({**section, "model": "m", "data": "d.txt"}, seed=0).missing
    with pytest.raises(ValueError, match="exactly one of"):
        plan_table1({**section, "rows": [{"batch_size": 8}]}, seed=0)
    with pytest.raises(ValueError, match="score"):
        plan_table1({**section, "score": "loss"}, seed=0)
    records = plan_table1({**section, "examples": "records"}, seed=0)
    assert records.data["examples"] == "records" and records.data_key != plan.data_key
    assert "examples" not in plan.data  # the default keeps the keys it had before the option
    with pytest.raises(ValueError, match="examples"):
        plan_table1({**section, "examples": "turns"}, seed=0)


def test_table_audits_the_shards():
    data = _data(n=12)
    spec = {"key": "k", "seed": 3, "shard_size": 4, "batch_size": 4, "lr": 0.1, "clip_norm": 1.0,
            "score": "gradient"}
    privacy = {"sampling_rate": 4 / 12, "steps": 3, "noise_multiplier": 1.0}
    shards = [L.train_table1_shard(spec, k, privacy=privacy, data=data, module=TinyCausalLM(), device="cpu")
              for k in range(2)]
    table = table1([{"shards": shards, "noise_multiplier": 1.0, "steps": 3, "paper": {"heuristic": 6.0}}],
                   delta=1e-5, confidence=0.95, seed=0)
    row = table.iloc[0]
    assert row["runs_per_world"] == 4 and row["batch_size"] == 4 and row["n_train"] == 12
    assert row["heuristic"] == pytest.approx(heuristic_epsilon(1e-5, steps=3, sampling_rate=1 / 3,
                                                               noise_multiplier=1.0))
    assert row["standard"] >= row["heuristic"] - 1e-6 and row["paper_heuristic"] == 6.0
    assert math.isfinite(row["perplexity_mean"])
    assert list(table.columns) == list(TABLE1_COLUMNS)  # every accountant's standard ε (issue 24 §4)
    expected = standard_epsilons(1e-5, steps=3, sampling_rate=1 / 3, noise_multiplier=1.0)
    assert {c: row[c] for c in STANDARD_COLUMNS} == pytest.approx({c: expected[c] for c in STANDARD_COLUMNS})
    md = table1_markdown(table, footer="").splitlines()
    assert "Standard ε: PLD (paper)" in md[0] and "RDP, classic / improved conversion, α = 2…256" in md[0]
    assert md[0].count("|") == md[1].count("|") == md[2].count("|")


def test_transformers_loading_path(tmp_path):
    """The real path: a tiny random GPT-2 and its tokenizer saved to a directory, loaded offline, tokenised data
    with the unused words as the canary."""
    pytest.importorskip("transformers")
    from tiny_lm import UNUSED, make_dialogues, make_tiny_lm

    make_tiny_lm(tmp_path / "m", block_size=16)
    make_dialogues(tmp_path / "d.jsonl", n=30)
    data = L.prepare_table1_data(model=str(tmp_path / "m"), data=str(tmp_path / "d.jsonl"), block_size=16,
                                 eval_fraction=0.2, canary_tokens=4, seed=0)
    tok = L.load_tokenizer(tmp_path / "m")
    unused_ids = set(tok.convert_tokens_to_ids(UNUSED))
    assert int(data["n_unused"]) == len(UNUSED) and set(data["canary_tokens"].tolist()) <= unused_ids
    module = L.load_causal_lm(tmp_path / "m")
    assert L.embedding_index(module, data["canary_tokens"].tolist()).numel() == 4 * 32
    assert 1 < L.perplexity(module, torch.as_tensor(data["eval"])) < 10 * int(data["vocab_size"])
    # one example per record: GPT-2 with right padding masked gives each record the loss it has alone
    records = L.prepare_table1_data(model=str(tmp_path / "m"), data=str(tmp_path / "d.jsonl"), block_size=16,
                                    eval_fraction=0.2, canary_tokens=4, seed=0, examples="records")
    padded = torch.as_tensor(records["train"])
    assert (padded == L.PAD).any()  # 7-15 tokens per record in blocks of 16
    row = int(torch.nonzero((padded == L.PAD).any(1))[0])
    length = int((padded[row] != L.PAD).sum())
    with torch.no_grad():
        together = L.next_token_nll(module, padded[row : row + 1])
        alone = L.next_token_nll(module, padded[row : row + 1, :length])
    assert float(together[0]) == pytest.approx(float(alone[0]), rel=1e-5)
    assert 1 < L.perplexity(module, torch.as_tensor(records["eval"])) < 10 * int(data["vocab_size"])
