"""The values of an audit of a user's training: the claim's checks, the audit setting, the design's streams."""

from __future__ import annotations

import numpy as np
import pytest

from hsaudit.experiments.byo.values import AuditSetting, Claim, Design, check_setting, entry_file, split_entry

CLAIM = dict(epsilon=2.0, delta=1e-5, noise_multiplier=1.0, max_grad_norm=1.0, sampling="poisson", sample_rate=0.1,
             steps=10, neighbouring="add-remove")  # fmt: skip


def test_a_claim_from_a_mapping():
    c = Claim.from_mapping(CLAIM)
    assert c.sampling_rate(100) == 0.1 and c.to_dict()["steps"] == 10


@pytest.mark.parametrize(
    "change, message",
    [
        ({"epsilon": None}, "lacks epsilon"),
        ({"epsiloon": 1.0}, "unknown key"),
        ({"delta": 1.5}, "delta must be in"),
        ({"sampling": "uniform"}, "sampling must be one of"),
        ({"neighbouring": "swap"}, "neighbouring must be one of"),
        ({"steps": 2.5}, "positive integer"),
        ({"noise_multiplier": -1}, "noise_multiplier"),
        ({"sample_rate": None}, "sample_rate or batch_size"),
        ({"sample_rate": 1.5}, "sample_rate must be in"),
    ],
)
def test_a_bad_claim_is_named(change, message):
    claim = {k: v for k, v in {**CLAIM, **change}.items() if v is not None}
    with pytest.raises(ValueError, match=message):
        Claim.from_mapping(claim)


def test_a_claim_inconsistent_with_itself():
    with pytest.raises(ValueError, match="disagree"):
        Claim.from_mapping({**CLAIM, "batch_size": 50}).sampling_rate(100)
    with pytest.raises(ValueError, match="exceeds"):
        Claim.from_mapping({**CLAIM, "sample_rate": None, "batch_size": 200}).sampling_rate(100)
    with pytest.raises(ValueError, match="replace-one"):
        Claim.from_mapping({**CLAIM, "sampling": "fixed"}).sampling_rate(100)
    assert Claim.from_mapping({**CLAIM, "sampling": "fixed", "sample_rate": 1.0}).sampling_rate(100) == 1.0
    with pytest.raises(ValueError, match="shuffled batches need replace-one"):  # shuffled: the batch size fixed too
        Claim.from_mapping({**CLAIM, "sampling": "shuffle"}).sampling_rate(100)
    assert Claim.from_mapping({**CLAIM, "sampling": "shuffle", "sample_rate": 1.0}).sampling_rate(100) == 1.0
    replace_one = {**CLAIM, "sampling": "shuffle", "neighbouring": "replace-one"}
    assert Claim.from_mapping(replace_one).sampling_rate(100) == CLAIM["sample_rate"]
    assert Claim.from_mapping({**CLAIM, "sample_rate": None, "batch_size": 25}).sampling_rate(100) == 0.25


def test_check_setting_names_what_make_ignored():
    setting = AuditSetting(steps=5, noise_multiplier=2.0, sample_rate=1.0)
    check_setting(Claim.from_mapping({**CLAIM, "steps": 5, "noise_multiplier": 2.0, "sample_rate": 1.0}), setting)
    with pytest.raises(ValueError, match=r"steps 10 \(asked 5\)"):
        check_setting(Claim.from_mapping(CLAIM), setting)
    assert setting.batch_size(240) == 240 and AuditSetting(2, 1.0, 0.1).batch_size(240) == 24


def test_shards_partition_the_models_and_bits_do_not_depend_on_them():
    one = Design(entry="m.py:make", canary="dirac", runs=37, shards=1, seed=3)
    four = Design(entry="m.py:make", canary="dirac", runs=37, shards=4, seed=3)
    parts = [list(four.shard_models(i)) for i in range(4)]
    assert sorted(sum(parts, [])) == list(range(74)) and max(map(len, parts)) - min(map(len, parts)) <= 1
    assert np.array_equal(one.bits(), four.bits()) and one.model_seed(5) == four.model_seed(5)
    # fair coins: the count of canary models is Binomial(74, 1/2) (within 4 sd here)
    assert abs(one.bits().sum() - 37) <= 4 * np.sqrt(74) / 2
    assert Design.from_dict(four.to_dict()) == four


def test_design_errors():
    with pytest.raises(ValueError, match="entry must look like"):
        Design(entry="nocolon", canary="dirac", runs=2)
    with pytest.raises(ValueError, match="shards"):
        Design(entry="m.py:make", canary="dirac", runs=2, shards=5)
    with pytest.raises(ValueError, match="shard must be in"):
        Design(entry="m.py:make", canary="dirac", runs=2, shards=2).shard_models(2)


def test_entries():
    assert split_entry("pkg.mod:make") == ("pkg.mod", "make")
    assert split_entry("a/b.py:make") == ("a/b.py", "make")
    with pytest.raises(ValueError, match="look like"):
        split_entry("a/b.py:")
    with pytest.raises(ValueError, match="no such file"):
        entry_file("missing/file.py:make")
    assert entry_file("json:loads").name == "__init__.py"
