"""Audits in one training run on Cebere et al.'s settings (hsaudit.experiments.one_run): plan, canaries, bits,
training, table and figure."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
import yaml

from conftest import REPO, check_pdf, housing_like
from hsaudit.engine.dpsgd import DPSGDConfig, make_setup
from hsaudit.engine.models import model_spec
from hsaudit.experiments.cebere.plan import plan as cebere_plan
from hsaudit.experiments.cebere.train.adversaries import craft
from hsaudit.experiments.one_run.audit import COLUMNS, METHODS, guess_sizes, one_run_table
from hsaudit.experiments.one_run.figures import FIGURES
from hsaudit.experiments.one_run.plan import REFERENCE_KINDS, plan
from hsaudit.experiments.one_run.train import Canaries, canary_bits, craft_canaries, train_one_run_shard
from hsaudit.pipeline.config import resolve_scale

pytestmark = pytest.mark.usefixtures("torch_one_thread")

SEED = 2024
KW = {"variant": "8-3-8-1"}


@pytest.fixture(scope="module")
def config() -> dict:
    return resolve_scale({**yaml.safe_load((REPO / "config" / "config.yaml").read_text()), "seed": SEED})


def one_run_plan(config: dict, one_run: dict | None = None):
    """The one-run plan as the rules build it: from the config and Cebere et al.'s plan's base audits."""
    config = {**config, "one_run": one_run or config["one_run"]}
    return plan(config)


def test_plan_shares_the_population_audit_with_fig1c(config):
    spec = one_run_plan(config).audits["housing"]
    cebere = cebere_plan(config).datasets["housing"]
    fig1c = {r.root for r in cebere.figures["fig1c"] if r.adversary == "gc_r" and r.rep == 0}
    assert fig1c == {spec.population.root}
    assert spec.params["setup_key"] == spec.population.params["setup_key"]
    assert spec.population_tables() == [f"{spec.population.root}/R{r}-s{cebere.values['fig1c'][0]['shard_size']}"
                                        f"/epsilon.csv" for r in spec.population_runs]
    # The key covers m and the coordinate rule, not the number of models or the population's R.
    section = copy.deepcopy(config["one_run"])
    section["housing"]["canaries"] = spec.canaries - 1
    assert one_run_plan(config, section).audits["housing"].key != spec.key
    section = copy.deepcopy(config["one_run"])
    section["housing"]["models"] = [1, 2]
    section["housing"]["population_runs"] = [section["housing"]["population_runs"][0]]
    assert one_run_plan(config, section).audits["housing"].key == spec.key
    # Nor the scores: they are computed by the audit job from the same shards (choosing them retrains nothing);
    # the noiseless score adds the canary-free run's file to the audit's inputs.
    assert spec.scores == tuple(config["one_run"]["scores"]) and spec.noiseless_inputs() == [spec.noiseless_path]
    section = copy.deepcopy(config["one_run"])
    section["scores"] = ["raw"]
    raw = one_run_plan(config, section).audits["housing"]
    assert raw.key == spec.key and raw.noiseless_inputs() == [] and raw.reference_inputs() == []
    assert raw.calibration_inputs() == []
    # The reference score reads K canary-free models (a file per K) and the canary's nominal shift η·C·⌊T/k⌋/B; the
    # calibrated score K models with their own bits.
    d = spec.params["setup"]["dpsgd"]
    assert spec.reference_inputs() == [f"{spec.root}/reference/free/k{spec.reference_models}.npz"]
    assert spec.calibration_inputs() == [f"{spec.root}/reference/bits/k{spec.reference_models}.npz"]
    assert spec.canary_shift == pytest.approx(d["lr"] * d["clip_norm"] * (d["steps"] // d["period"]) / d["batch_size"])
    section = copy.deepcopy(config["one_run"])
    section["housing"]["reference_models"] = 1
    with pytest.raises(ValueError, match="reference_models must be >= 2"):
        one_run_plan(config, section)


@pytest.mark.parametrize("scale", ["paper", "laptop", "smoke"])
def test_every_scale_plans(config, scale):
    resolved = resolve_scale({**config, "scale": scale})
    planned = one_run_plan(resolved)
    assert set(planned.audits) == set(resolved["one_run"]["families"])
    # One population of one-run models and the compared population per dataset, the latter with Cebere's root, and
    # the noiseless score's one-model run where that score is audited (priced as one model of T steps).
    roots = {p.root for p in planned.populations}
    # The reference score's K canary-free models likewise (priced as K models of T steps).
    noiseless = {a.noiseless_root for a in planned.audits.values() if "noiseless" in a.scores}
    reference = {a.reference_root(kind): a.reference_models for a in planned.audits.values()
                 for kind, score in REFERENCE_KINDS.items() if score in a.scores}
    assert roots == ({a.root for a in planned.audits.values()} | {a.population.root for a in planned.audits.values()}
                     | noiseless | set(reference))  # fmt: skip
    assert noiseless == {a.noiseless_root for a in planned.audits.values()}  # the default scores audit it
    assert set(reference) == {a.reference_root(kind) for a in planned.audits.values() for kind in REFERENCE_KINDS}
    assert all(p.models == 1 for p in planned.populations if p.root in noiseless)
    assert all(p.models == reference[p.root] >= 2 for p in planned.populations if p.root in reference)
    assert [t.id for t in planned.targets] == ["one_run/fig1"] and set(FIGURES) == {"one_run/fig1"}


@pytest.mark.parametrize(
    "change, needle",
    [
        ({"coordinates": "best"}, "coordinates"),
        ({"housing": {"models": [4, 2]}}, "models"),
        ({"housing": {"population_runs": [250]}}, "population_runs"),
        ({"housing": {"models": [1, 3], "shard_size": 2}}, "shard_size"),
        ({"scores": ["raw", "best"]}, "one_run.scores"),
        ({"scores": []}, "one_run.scores"),
    ],
)
def test_plan_refuses_bad_values_naming_the_key(config, change, needle):
    section = copy.deepcopy(config["one_run"])
    for k, v in change.items():
        section[k] = {**section[k], **v} if isinstance(v, dict) else v
    with pytest.raises(ValueError, match=needle):
        one_run_plan(config, section)


def test_bits_are_fair_independent_and_per_model():
    bits = canary_bits(seed=SEED, key="k", models=range(400), canaries=50, dataset="housing")
    assert bits.shape == (400, 50)
    # Inclusion rate ½ per canary (20,000 draws: sd 0.0035) and per model.
    assert abs(bits.mean() - 0.5) < 0.015
    assert np.abs(bits.mean(0) - 0.5).max() < 0.1 and np.abs(bits.mean(1) - 0.5).max() < 0.25
    # Independent: pairwise correlations between canaries near 0 (sd 1/√400 = 0.05).
    corr = np.corrcoef(bits.T.astype(float))
    off = corr[~np.eye(50, dtype=bool)]
    assert abs(off.mean()) < 0.01 and np.abs(off).max() < 0.25
    # Model i's bits do not depend on the shard it is drawn in.
    np.testing.assert_array_equal(bits[100:110], canary_bits(seed=SEED, key="k", models=range(100, 110), canaries=50,
                                                                dataset="housing"))


def test_canaries_gradients_and_validation():
    c = Canaries(np.array([1, 4]), 2.0, "random")
    g = c.gradients(np.array([[1, 0], [1, 1]]), 6)
    np.testing.assert_array_equal(g, [[0, 2, 0, 0, 0, 0], [0, 2, 0, 0, 2, 0]])
    with pytest.raises(ValueError, match="distinct"):
        Canaries(np.array([1, 1]), 1.0, "random")
    with pytest.raises(ValueError, match="bits"):
        c.gradients(np.array([[1, 2]]), 6)


@pytest.mark.parametrize("rule", ["random", "least_moving"])
def test_craft_canaries_distinct_coordinates(rule):
    X, y = housing_like(100, 0)
    cfg = DPSGDConfig(steps=3, batch_size=10, lr=0.1, clip_norm=1.0, noise_multiplier=1.0)
    setup = make_setup(spec=model_spec("fcnn", **KW), n_train=100, config=cfg, seed=1)
    training = dict(spec=model_spec("fcnn", **KW), X=X, y=y, setup=setup, config=cfg, seed=3)
    # least_moving ranks by A_GC-S Noiseless-PS's simulation, as the crafting job does.
    ranking = craft("gc_s_noiseless_ps", **training, simulations=1).ranking if rule == "least_moving" else None
    c = craft_canaries(rule, canaries=20, ranking=ranking, **training)
    assert c.m == 20 and np.unique(c.coordinates).size == 20 and c.coordinates.max() < 68
    if rule == "least_moving":
        assert c.ranking[c.coordinates].max() <= np.delete(c.ranking, c.coordinates).min()
        with pytest.raises(ValueError, match="ranking"):
            craft_canaries(rule, canaries=20, **training)
    with pytest.raises(ValueError, match="canaries"):
        craft_canaries(rule, canaries=69, ranking=ranking, **training)


def test_training_scores_the_included_canaries_higher_and_splits_by_model():
    X, y = housing_like(200, 0)
    cfg = DPSGDConfig(steps=8, batch_size=20, lr=0.5, clip_norm=1.0, noise_multiplier=0.5)
    setup = make_setup(spec=model_spec("fcnn", **KW), n_train=200, config=cfg, seed=1)
    c = craft_canaries("random", canaries=30, spec=model_spec("fcnn", **KW), X=X, y=y, setup=setup, config=cfg, seed=2)
    bits = canary_bits(seed=SEED, key="t", models=range(6), canaries=30, dataset="housing")
    kw = dict(spec=model_spec("fcnn", **KW), X=X, y=y, setup=setup, config=cfg, canaries=c, noise_key=9)
    scores = train_one_run_shard(bits=bits, **kw)
    assert scores.shape == (6, 30)
    assert scores[bits == 1].mean() > scores[bits == 0].mean()
    # A model's scores do not depend on the shard it is trained in (global noise index).
    np.testing.assert_allclose(train_one_run_shard(bits=bits[4:], first_model=4, **kw), scores[4:], rtol=0, atol=1e-6)


def _population_table(runs: int, eps: float) -> pd.DataFrame:
    return pd.DataFrame({"step": [1, 2], "insertions": [1, 2], "runs": [runs, runs], "mu": [0.1, 0.5],
                         "epsilon": [0.2, eps], "epsilon_free": [0.1, eps / 2], "threshold": [0, 0],
                         "fpr_upper": [0.5, 0.4], "fnr_upper": [0.5, 0.4], "mu_upper": [1.0, 1.5],
                         "epsilon_upper": [3.0, 4.0], "threshold_rule": ["paper"] * 2, "rule_valid": [False] * 2,
                         "valid_threshold_rule": ["crossing"] * 2, "mu_valid": [0.05, 0.4], "epsilon_valid": [0.1, eps - 0.25],
                         "confidence": [0.95] * 2, "delta": [1e-5] * 2})


def test_table_columns_methods_and_monotone_compute():
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 2, (8, 50))
    scores = rng.standard_normal((8, 50)) + 3.0 * bits
    table = one_run_table(dataset="housing", bits=bits, scores=scores,
                          population=[_population_table(20, 1.0), _population_table(40, 1.5)],
                          models=[1, 2, 4, 8], steps=2, guess_fractions=[0.1, 0.5], delta=1e-5, confidence=0.95,
                          coordinates="random")
    assert list(table.columns) == list(COLUMNS)
    assert list(dict.fromkeys(table["method"])) == [m for k, m in METHODS.items() if not k.startswith("ceiling")]
    for _, rows in table.groupby("method"):
        assert rows["model_steps"].is_monotonic_increasing and rows["model_steps"].is_unique
    one = table[table["method"] == METHODS["counting"]]
    assert one["canaries"].tolist() == [50, 100, 200, 400] and one["model_steps"].tolist() == [2, 4, 8, 16]
    pop = table[table["method"] == METHODS["population_gdp"]]
    assert pop["runs_per_world"].tolist() == [10, 20] and pop["epsilon"].tolist() == [1.0, 1.5]
    assert not pop["valid"].any() and "rule paper" in pop["bound"].iloc[0]
    # The valid rule's GDP audit of the same population scores, beside the paper rule's (issue 24 §2).
    valid = table[table["method"] == METHODS["population_gdp_valid"]]
    assert valid["epsilon"].tolist() == [0.75, 1.25] and valid["mu"].tolist() == [0.4, 0.4]
    assert valid["valid"].all() and "rule crossing" in valid["bound"].iloc[0]
    assert table.loc[table["method"].isin([METHODS["counting"], METHODS["fdp"]]), "valid"].all()
    assert (table["epsilon_upper"] == 4.0).all()
    # Strong separation: the one-run bounds grow with the pooled canaries, f-DP above counting.
    fdp = table[table["method"] == METHODS["fdp"]]
    assert one["epsilon"].iloc[-1] > one["epsilon"].iloc[0] > 0
    assert (fdp["epsilon"].to_numpy() >= one["epsilon"].to_numpy() - 1e-9).all()
    assert "Bonferroni" in one["bound"].iloc[0]


def test_guess_sizes():
    assert guess_sizes(10, [0.01, 1.0]) == [(1, 1), (5, 5)]
    assert guess_sizes(10, [1.0], counts=[1, 3, 30]) == [(5, 5), (1, 1), (3, 3)]  # capped at n/2, no duplicates
    with pytest.raises(ValueError, match="fractions"):
        guess_sizes(10, [0.0])
    with pytest.raises(ValueError, match="counts"):
        guess_sizes(10, [0.5], counts=[0])


def test_ceiling_rows_are_the_same_bounds_on_ideal_canaries():
    """The ceiling: ideal independent canaries at the population's μ̂ give the same bounds as measured canaries
    drawn from that law; stronger canaries, a higher ceiling; no ceiling without a population μ̂."""
    rng = np.random.default_rng(3)
    bits = rng.integers(0, 2, (8, 50))
    scores = rng.standard_normal((8, 50)) + 0.5 * bits  # weak measured canaries
    kw = dict(dataset="housing", bits=bits, scores=scores, models=[1, 4, 8], steps=2, guess_fractions=[0.1, 0.5],
              guess_counts=[1, 3], delta=1e-5, confidence=0.95, coordinates="random")
    table = one_run_table(population=[_population_table(20, 1.0), _population_table(40, 1.5)], ceiling="valid",
                          seed=1, **kw)
    ceiling = table[table["method"] == METHODS["ceiling_counting"]]
    assert ceiling["models"].tolist() == [1, 4, 8] and "μ = 0.4 (valid μ̂ (crossing) of the R = 40" in ceiling["bound"].iloc[0]
    assert ceiling["valid"].all()
    paper = one_run_table(population=[_population_table(40, 1.5)], ceiling="paper", seed=1, **kw)
    strong = paper[paper["method"] == METHODS["ceiling_counting"]]  # μ̂ = 0.5 (the paper rule's) > 0.4
    assert "μ = 0.5" in strong["bound"].iloc[0]
    none = one_run_table(population=[_population_table(40, 1.5)], ceiling="none", **kw)
    assert not none["method"].str.startswith("ceiling").any()
    # The same seed, the same ceiling; the simulation is the one_run_rows of the ideal law.
    again = one_run_table(population=[_population_table(20, 1.0), _population_table(40, 1.5)], ceiling="valid",
                          seed=1, **kw)
    pd.testing.assert_frame_equal(table, again)
    with pytest.raises(ValueError, match="ceiling"):
        one_run_table(population=[_population_table(40, 1.5)], ceiling="upper", **kw)


def test_ideal_canaries_reach_a_higher_bound_than_drifting_ones():
    """Canaries whose scores carry a per-canary offset (the training drift of their coordinates) are worse than
    ideal ones of the same shift: the ceiling sits above them."""
    rng = np.random.default_rng(4)
    bits = rng.integers(0, 2, (16, 64))
    drift = 3.0 * rng.standard_normal(64)  # one offset per coordinate, shared by every model
    scores = rng.standard_normal((16, 64)) + 2.0 * bits + drift[None, :]
    pop = _population_table(40, 1.5).assign(mu_valid=2.0)
    table = one_run_table(dataset="housing", bits=bits, scores=scores, population=[pop], models=[16], steps=2,
                          guess_fractions=[0.1, 0.5], guess_counts=[3, 10], delta=1e-5, confidence=0.95,
                          coordinates="random", ceiling="valid", seed=0)
    eps = table.set_index("method")["epsilon"]
    assert eps[METHODS["ceiling_counting"]] > eps[METHODS["counting"]] + 0.5


def test_delta_term_is_reported_and_grows_with_the_pooled_canaries():
    from hsaudit.audit.one_run import one_run_delta_term, one_run_p_value

    kw = dict(guesses=100, correct=90, epsilon=1.5, delta=1e-5)
    small, large = one_run_delta_term(canaries=1_000, **kw), one_run_delta_term(canaries=100_000, **kw)
    assert large == pytest.approx(100 * small) and small > 0
    tail = one_run_p_value(canaries=1_000, **kw) - small
    assert one_run_p_value(canaries=100_000, **kw) == pytest.approx(min(tail + large, 1.0))
    rng = np.random.default_rng(5)
    bits = rng.integers(0, 2, (4, 50))
    table = one_run_table(dataset="housing", bits=bits, scores=rng.standard_normal((4, 50)) + 3.0 * bits,
                          population=[_population_table(40, 1.5)], models=[1, 4], steps=2, guess_fractions=[0.5],
                          delta=1e-5, confidence=0.95, coordinates="random")
    counting = table[table["method"] == METHODS["counting"]]
    assert (counting["delta_term"] > 0).all() and counting["delta_term"].is_monotonic_increasing
    assert table.loc[table["method"] == METHODS["fdp"], "delta_term"].isna().all()


def test_figure_writes_pdf_and_csv(tmp_path):
    rng = np.random.default_rng(1)
    bits = rng.integers(0, 2, (4, 20))
    table = one_run_table(dataset="housing", bits=bits, scores=rng.standard_normal((4, 20)) + bits,
                          population=[_population_table(20, 1.0)], models=[1, 2, 4], steps=2,
                          guess_fractions=[0.5], delta=1e-5, confidence=0.95, coordinates="random")
    FIGURES["one_run/fig1"](table, pdf=tmp_path / "fig1.pdf", csv=tmp_path / "fig1.csv",
                            facts={"scale": "smoke", "data_sources": {"housing": "housing:local"}, "code_version": "abc"})
    check_pdf(tmp_path / "fig1.pdf")
    csv = pd.read_csv(tmp_path / "fig1.csv")
    assert {"method", "models", "model_steps", "epsilon", "scale", "data_source"} <= set(csv.columns)
