"""Steinke, Nasr et al. Figure 2 on the engine (hsaudit.experiments.steinke.plan, .train.images, .audit): the plan's
keys, the Dirac score, Figure 3's one-dimensional law under the all-zero background (closed form), and the audit
table."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hsaudit.accounting import last_iterate as H
from hsaudit.engine.models import model_spec
from hsaudit.experiments.steinke.audit import COLUMNS, METHODS, fig2_table
from hsaudit.experiments.steinke.plan import plan_fig2
from hsaudit.experiments.steinke.train.images import (
    canary_coordinate,
    train_dirac_shard,
    zero_background_moments,
)
from hsaudit.experiments.steinke.train.shards import shard_models
from hsaudit.pipeline import provenance

def arch_of(spec):
    """The population's architecture, resolved once as ``workflow/scripts/train_steinke_shard.py`` does."""
    return model_spec(spec["model"], **(spec["model_kwargs"] or {}))


pytestmark = pytest.mark.usefixtures("torch_one_thread")

SECTION = dict(
    steps=[1, 5, 20],
    models_per_world=200,
    shard_size=400,
    model="fcnn",
    model_kwargs={},
    background="zero",
    batch_size=20,
    lr=0.5,
    clip_norm=1.0,
    noise_multiplier=1.0,
    canary_dim=None,
    backend="auto",
)
DATA = {"dataset": "toy"}


def _data(n=200, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 8)).astype(np.float32), rng.integers(0, 2, n)


def test_plan_keys_follow_the_training_values():
    base = plan_fig2(SECTION, seed=1, data_identity=DATA)
    assert base.shards == (0,) and base.steps == (1, 5, 20) and base.spec["steps"] == 20
    assert base.root == f"results/steinke/dirac/{base.key}" and base.paths == [f"{base.root}/shard0.npz"]
    # R adds shards, plotted T below the largest and the audit change nothing that is trained
    more = plan_fig2({**SECTION, "models_per_world": 600}, seed=1, data_identity=DATA)
    assert more.key == base.key and more.shards == (0, 1, 2)
    assert plan_fig2({**SECTION, "steps": [2, 20]}, seed=1, data_identity=DATA).key == base.key
    # every training value, the largest T, the seed and the data re-key
    for change in ({"lr": 0.4}, {"noise_multiplier": 2.0}, {"batch_size": 10}, {"background": "natural"},
                   {"canary_dim": 3}, {"steps": [1, 30]}, {"model_kwargs": {"variant": "8-6-2"}}):
        assert plan_fig2({**SECTION, **change}, seed=1, data_identity=DATA).key != base.key, change
    assert plan_fig2(SECTION, seed=2, data_identity=DATA).key != base.key
    assert plan_fig2(SECTION, seed=1, data_identity={"dataset": "other"}).key != base.key
    with pytest.raises(ValueError, match="multiple of shard_size"):
        plan_fig2({**SECTION, "models_per_world": 300}, seed=1, data_identity=DATA)
    with pytest.raises(ValueError, match="background"):
        plan_fig2({**SECTION, "background": "blank"}, seed=1, data_identity=DATA)
    models, bits = shard_models(base.spec, 1)
    assert list(models) == list(range(400, 800)) and bits.sum() == 200 and bits[0] == 0


def test_canary_coordinate_is_seeded_or_given():
    spec = plan_fig2(SECTION, seed=1, data_identity=DATA).spec
    d = canary_coordinate(spec, 68)
    assert 0 <= d < 68 and d == canary_coordinate(spec, 68)
    assert canary_coordinate({**spec, "canary_dim": 7}, 68) == 7
    with pytest.raises(ValueError, match="canary_dim"):
        canary_coordinate({**spec, "canary_dim": 68}, 68)


def test_noiseless_zero_background_score_counts_the_inclusions_exactly():
    """σ = 0, all-zero background: s_t = Σ_{u≤t} c_u for the canary's runs, 0 for the others (the score's scaling)."""
    X, y = _data()
    spec = plan_fig2({**SECTION, "noise_multiplier": 0.0, "models_per_world": 20, "shard_size": 40}, seed=3,
                     data_identity=DATA).spec
    out = train_dirac_shard(spec, 0, arch=arch_of(spec), X=X, y=y, device="cpu")
    bits = out["bits"].astype(bool)
    np.testing.assert_allclose(out["scores"][bits], np.cumsum(out["canary_steps"][bits], axis=1), atol=1e-5)
    np.testing.assert_array_equal(out["scores"][~bits], 0.0)
    assert not out["canary_steps"][~bits].any() and out["canary_steps"][bits].any()
    assert float(out["sampling_rate"]) == 20 / 200


def test_zero_background_reproduces_fig3_law():
    """All-zero background on the engine: s = Binomial(T, q) + N(0, Tσ²) vs N(0, Tσ²) (Figure 3's 1-D pair).

    4,000 models per world: means to 5 standard errors, variances to 5 standard errors of a sample variance
    (sd ≈ var·sqrt(2/(n−1)) for near-normal scores), and the canary's inclusions are Binomial(T, q) in mean.
    """
    X, y = _data()
    spec = plan_fig2({**SECTION, "models_per_world": 4000, "shard_size": 8000, "noise_multiplier": 0.7}, seed=5,
                     data_identity=DATA).spec
    out = train_dirac_shard(spec, 0, arch=arch_of(spec), X=X, y=y, device="cpu")
    bits = out["bits"].astype(bool)
    q = float(out["sampling_rate"])
    for t in (1, 5, 20):
        law = zero_background_moments(steps=t, sampling_rate=q, noise_multiplier=0.7)
        for world, mask in (("out", ~bits), ("in", bits)):
            s = out["scores"][mask, t - 1]
            n = s.size
            assert abs(s.mean() - law[f"mean_{world}"]) < 5 * math.sqrt(law[f"var_{world}"] / n), (t, world)
            assert abs(s.var(ddof=1) - law[f"var_{world}"]) < 5 * law[f"var_{world}"] * math.sqrt(2 / (n - 1)), (t, world)
        k = out["canary_steps"][bits, :t].sum(axis=1)
        assert abs(k.mean() - t * q) < 5 * math.sqrt(t * q * (1 - q) / k.size)


def test_fig2_table_columns_and_accounting():
    X, y = _data()
    spec = plan_fig2(SECTION, seed=1, data_identity=DATA).spec
    shard = train_dirac_shard(spec, 0, arch=arch_of(spec), X=X, y=y, device="cpu")
    table = fig2_table([shard], steps=[1, 20], noise_multiplier=1.0, delta=1e-5, confidence=0.95, seed=1,
                       model="fcnn", background="zero", data_source="toy")
    assert list(table.columns) == list(COLUMNS)
    assert len(table) == 2 * len(METHODS) and set(table["method"]) == set(METHODS)
    row = table[(table["steps"] == 20) & (table["method"] == "heuristic")].iloc[0]
    assert row["epsilon"] == pytest.approx(H.heuristic_epsilon(1e-5, steps=20, sampling_rate=0.1, noise_multiplier=1.0))
    std = table[(table["steps"] == 20) & (table["method"] == "standard")]["epsilon"].iloc[0]
    assert std >= row["epsilon"]
    assert (table["runs_per_world"] == 200).all()
    modes = dict(zip(table["method"], table["threshold_rule"]))
    assert modes["empirical_sigma_last_iterate"] == "all_thresholds"
    assert modes["empirical_sigma_last_iterate_held_out"] == "held_out"
    with pytest.raises(ValueError, match="outside the trained steps"):
        fig2_table([shard], steps=[21], noise_multiplier=1.0, delta=1e-5, confidence=0.95, seed=1)


def test_training_module_does_not_import_the_audit_layer():
    """A training job's code version covers its imports: editing an estimator must never retrain (docs/cluster.md)."""
    for module in ("hsaudit.experiments.steinke.train.images", "hsaudit.experiments.steinke.train.language"):
        names = {p.relative_to(provenance.package_dir()).as_posix() for p in provenance.module_files(module)}
        assert not any(n.startswith(("audit/", "accounting/")) for n in names), sorted(names)
        assert not names & {"experiments/steinke/simulations.py", "experiments/steinke/audit.py",
                            "experiments/steinke/plan.py"}, sorted(names)
    # ... and each job covers its own trainer only: editing the image trainer never retrains the language model
    assert "experiments/steinke/train/images.py" not in {
        p.relative_to(provenance.package_dir()).as_posix()
        for p in provenance.module_files("hsaudit.experiments.steinke.train.language")}


def test_split_shards_cuts_consecutive_groups():
    from hsaudit.experiments.steinke.audit import split_shards

    assert split_shards(list("abcdef"), [1, 3, 2]) == [["a"], ["b", "c", "d"], ["e", "f"]]
    with pytest.raises(ValueError, match="cannot be split"):
        split_shards(list("abc"), [1, 1])


def test_spread_draws_distinct_coordinates_and_images():
    """fig4_spread's drawn canaries: draw i is the i-th of one seeded permutation (distinct across draws, the same
    whatever the count), and an explicit value wins."""
    from hsaudit.experiments.steinke.train.images import canary_index

    spec = {"seed": 3, "canary_dim": None}
    dims = [canary_coordinate({**spec, "canary_draw": i}, 68) for i in range(5)]
    assert len(set(dims)) == 5 and all(0 <= d < 68 for d in dims)
    assert canary_coordinate({**spec, "canary_draw": 2, "canary_dim": 9}, 68) == 9
    images = [canary_index({"seed": 3, "canary": {"source": "test", "index": None, "draw": i}}, 20) for i in range(5)]
    assert len(set(images)) == 5 and all(0 <= k < 20 for k in images)
    assert canary_index({"seed": 3, "canary": {"source": "test", "index": 4, "label": None}}, 20) == 4
