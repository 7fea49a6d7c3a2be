"""`hsaudit plan`: experiment table, cost model, GPU warning and CLI (hsaudit.pipeline.costs, hsaudit.cli.plan)."""

from __future__ import annotations

import json
import math
import pytest
import yaml

from conftest import REPO
from hsaudit.pipeline import costs as P
from hsaudit.cli import main
from hsaudit.pipeline.config import resolve_scale


@pytest.fixture(scope="module")
def config() -> dict:
    return resolve_scale(yaml.safe_load((REPO / "config" / "config.yaml").read_text()))


@pytest.mark.parametrize(
    ("target", "fig"),
    [
        ("results/fig4.pdf", "fig4"),
        ("results/fig1a.csv", "fig1a"),
        ("results/fig13.pdf", "fig13"),
        ("fig6b", "fig6b"),
        ("results/archive/fig3.tar.gz", "fig3"),
        ("results/steinke/fig1.pdf", "steinke/fig1"),
        ("results/table2.md", "table2"),
    ],
)
def test_figure_id(target, fig):
    assert P.figure_id(target) == fig


@pytest.mark.parametrize("target", ["results/data/housing.npz", "Snakefile", "", "results/fig4.png"])
def test_figure_id_rejects_non_figures(target):
    with pytest.raises(ValueError, match="not a figure target"):
        P.figure_id(target)


def test_unknown_figure_names_the_known_ones(config):
    with pytest.raises(ValueError, match=r"unknown figure 'fig99'.*fig13"):
        P.plan(["results/fig99.pdf"], config)


def test_housing_populations_match_the_training_rules_plan(config):
    """The plan reads the same `housing:` section as the training rules: same distinct audits, same R."""
    from hsaudit.experiments.cebere.plan import plan_dataset

    h = config["housing"]
    rules_plan = plan_dataset(h, seed=config["seed"], dataset="housing")
    ours = [a for a in P.all_populations(config, ["cebere"]) if a.section == "housing"]
    # One population per audit of the rules' plan (repetitions are separate audits there), keyed by its directory.
    assert len(ours) == len(rules_plan.audits)
    assert {a.key for a in ours} == {(f"results/housing/audits/{key}",) for key in rules_plan.audits}
    for a in ours:
        extra = h["simulations"] if a.adversary.startswith("gc_s_noisy") else 0
        assert a.models == h["runs"] + extra
        assert a.steps == h["steps"] and a.batch == h["batch_size"] and a.device == "cpu"
    by_adv = {a.adversary: a for a in ours if a.detail.endswith("rep=0")}
    assert set(by_adv["gc_r"].figures) == {"fig1c", "fig4", "fig7"}


def test_per_figure_override_splits_a_shared_population(config):
    cfg = json.loads(json.dumps(config))
    cfg["housing"]["figures"]["fig7"]["lr"] = 0.01
    gc_r = [a for a in P.all_populations(cfg, ["cebere"]) if a.adversary == "gc_r" and a.section == "housing"]
    reps = cfg["housing"]["repetitions"]
    assert sorted(a.figures for a in gc_r) == [("fig1c", "fig4")] * reps + [("fig7",)] * reps


def test_shared_populations_are_counted_once(config):
    both = P.plan(["results/fig1c.pdf", "results/fig7.pdf"], config)
    fig1c = P.plan(["results/fig1c.pdf"], config)
    fig7 = P.plan(["results/fig7.pdf"], config)
    assert both.models < fig1c.models + fig7.models
    assert both.models == sum(a.models for a in {a.key: a for a in fig1c.populations + fig7.populations}.values())


def test_hours_closed_form(config):
    audit = P.plan(["results/fig7.pdf"], config).populations[0]
    cal = P.calibration(audit.model, "cpu")
    expected = audit.models * audit.steps * cal.seconds_per_model_step * audit.batch / cal.batch / 3600
    assert math.isclose(audit.hours("cpu"), expected, rel_tol=1e-12)


def test_scale_presets_shrink_the_plan(config):
    raw = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    smoke = resolve_scale({**raw, "scale": "smoke"})
    assert P.plan(["results/fig4.pdf"], smoke).model_steps < P.plan(["results/fig4.pdf"], config).model_steps


def cifar(config, figure):
    return [a for a in P.all_populations(config, ["cebere"]) if a.section == "cifar10" and figure in a.figures]


def test_cifar_plan_follows_the_paper(config):
    """specs/cebere.md §3: fig1 (a) ConvNet, (b) ResNet18, C ∈ {1,2,4}, A_GC-R and A_L, R 5000, T 250 (k = 1)."""
    fig1 = cifar(config, "fig1")
    assert len(fig1) == 12 and {a.model for a in fig1} == {"convnet", "resnet18_gn"}
    assert {(a.models, a.steps, a.batch, a.device) for a in fig1} == {(5000, 250, 128, "gpu")}
    assert {a.steps for a in cifar(config, "fig2")} == {250 * 5, 250 * 25}
    assert {a.models for a in cifar(config, "fig8")} == {60}  # 30 canary runs
    # fig1 = panels (a, b) + the Housing panel (c): planning fig1 includes fig1c's populations
    assert {a.section for a in P.plan(["results/fig1.pdf"], config).populations} == {"cifar10", "housing"}


def test_gpu_hours_are_model_steps_times_the_measured_rows(config):
    """The paper-scale ConvNet/ResNet audits priced with the H100 rows: each population's model-steps times its row,
    in hours; below Cebere et al.'s own ~3500 GPU-hours (App. D), which the rows were derived from before."""
    audits = [a for a in P.all_populations(config, ["cebere"]) if a.model in ("convnet", "resnet18_gn")]
    total = sum(a.hours("gpu") for a in audits)
    want = sum(a.models * a.steps * P.calibration(a.model, "gpu", path="/nonexistent.json").seconds_per_model_step
               for a in audits) / 3600  # fmt: skip
    assert total == pytest.approx(want) and 0 < total < P.PAPER_GPU_HOURS


def test_every_calibration_row_says_where_it_comes_from():
    for row in P.CALIBRATION:
        assert row.seconds_per_model_step > 0 and row.batch > 0
        assert row.source.split(":")[0] in ("measured", "derived") or row.source.startswith("assumed")
    with pytest.raises(ValueError, match="no calibration"):
        P.calibration("vgg", "cpu")


def test_gpu_warning(config):
    msg = P.gpu_warning(["results/fig13.pdf"], config, has_gpu=False)
    assert msg is not None and "GPU-hours" in msg and "fig13" in msg and "--profile slurm" in msg
    assert P.gpu_warning(["results/fig13.pdf"], config, has_gpu=True) is None
    assert P.gpu_warning(["results/fig4.pdf", "all_rules"], config, has_gpu=False) is None
    assert P.gpu_warning(["results/fig13.pdf"], {**config, "scale": "laptop"}, has_gpu=False) is None


def test_cli_table_and_json(capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    assert main(["plan", "results/fig4.pdf", "results/fig3.pdf"]) == 0
    out = capsys.readouterr().out
    assert "gc_s_noisy_fm" in out and "fig3: simulation" in out
    assert main(["plan", "results/fig2.pdf", "--scale", "paper", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["scale"] == "paper" and data["total"]["gpu_hours"] > 0
    assert data["total"]["models"] == sum(a["models"] for a in data["audits"])


def test_cli_merges_overlays_as_the_workflow_does(tmp_path, capsys, monkeypatch):
    """``--configfile config/config.yaml my.yaml`` as snakemake takes it: the overlay's values, even the paper's
    own R, win over the laptop preset (hsaudit.pipeline.config.user_values)."""
    monkeypatch.chdir(REPO)
    mine = tmp_path / "my.yaml"
    mine.write_text("steinke:\n  fig2:\n    models_per_world: 1000\n")

    def models(*configfiles):
        extra = ["--configfile", *configfiles] if configfiles else []
        assert main(["plan", "results/steinke/fig2.pdf", "--scale", "laptop", "--json", *extra]) == 0
        return json.loads(capsys.readouterr().out)["total"]["models"]

    laptop = models()
    assert laptop < 2000
    assert models("config/config.yaml", str(mine)) == models(str(mine)) == 2000
    assert models("config/config.yaml") == laptop  # README's form keeps the preset


def test_cli_errors_are_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    assert main(["plan", "results/fig99.pdf"]) == 2
    err = capsys.readouterr().err
    assert "unknown figure 'fig99'" in err and len(err.strip().splitlines()) == 1
    monkeypatch.chdir(tmp_path)
    assert main(["plan", "results/fig4.pdf"]) == 2
    assert "config file" in capsys.readouterr().err


@pytest.mark.slow
def test_workflow_warns_before_a_gpu_sized_run(workflow_copy):
    """The onstart hook prints the plan's estimate once for a paper-scale GPU figure run without a GPU."""
    from conftest import run_snakemake

    if P.has_local_gpu():
        pytest.skip("this machine has a GPU")
    # The real fig13 target (registered kind "gpu"), produced here by a stand-in rule so that nothing trains.
    with open(workflow_copy / "Snakefile", "a") as fh:
        fh.write('\n\nrule fake_fig13:\n    output:\n        "results/fig13.pdf",\n'
                 '    shell:\n        "touch {output}"\n\n\nruleorder: fake_fig13 > plot_cebere_fig13\n')
    proc = run_snakemake(workflow_copy, "results/fig13.pdf", timeout=300)
    out = proc.stdout + proc.stderr
    assert out.count("hsaudit: GPU-sized at scale=paper (fig13): 10,000 models") == 1, out
    proc = run_snakemake(workflow_copy, "results/fig13.pdf", "--forceall", "--config", "scale=laptop")
    assert "GPU-sized" not in proc.stdout + proc.stderr


def test_calibration_rows_say_measured_or_estimate():
    assert {row.status for row in P.CALIBRATION} == {"measured", "estimate"}
    # every image model's GPU row was measured on the H100 (2026-11-26); the causal LM's is an estimate
    gpu = {row.model: row.status for row in P.CALIBRATION if row.device == "gpu"}
    assert gpu.pop("causal_lm") == "estimate" and set(gpu.values()) == {"measured"}
    assert all("H100" in row.source for row in P.CALIBRATION if row.device == "gpu" and row.status == "measured")


# ------------------------------------------------------------------------------------------------- Yoon et al.

YOON = tuple(f"yoon/{f}" for f in ("fig2", "fig3", "fig4", "fig5", "fig6", "fig7", "fig8", "table1"))


def yoon_rows(config, target):
    return P.plan([target], config).populations


def test_yoon_targets_are_known_figures(config):
    assert set(YOON) <= set(P.known_figures(config))
    assert P.figure_id("results/yoon/table1.md") == "yoon/table1"
    assert P.figure_id("results/archive/yoon/fig3.tar.gz") == "yoon/fig3"


def test_yoon_fig3_plan_follows_the_paper(config):
    """specs/yoon.md: 2N = 256 models per population, two populations per run (crafting and held-out audit) and
    the default recipe's validation population of 2 × 64, 10 runs, 4 ε per dataset; full batch (|D| = 30,000
    MNIST / 25,000 CIFAR-10, + the canary), T = 100 / 200."""
    rows = yoon_rows(config, "results/yoon/fig3.pdf")
    assert len(rows) == 8 and {a.section for a in rows} == {"yoon"} and {a.device for a in rows} == {"gpu"}
    assert {a.models for a in rows} == {(4 * 128 + 2 * 64) * 10}
    by_model = {(a.model, a.steps, a.batch) for a in rows}
    assert by_model == {("mnist_cnn", 100, 30_001), ("cifar_cnn", 200, 25_001)}
    p = P.plan(["results/yoon/fig3.pdf"], config)
    assert p.models == 8 * 6400 and p.model_steps == 4 * 6400 * 100 + 4 * 6400 * 200
    assert p.gpu_sized


def test_yoon_full_batch_cost_scales_with_the_training_set(config):
    """A full-batch step costs |D| + 1 per-sample gradients: the calibration's seconds × (|D| + 1) / its batch."""
    for a in yoon_rows(config, "results/yoon/fig3.pdf"):
        for device in P.DEVICES:
            cal = P.calibration(a.model, device)
            expected = a.models * a.steps * cal.seconds_per_model_step * (a.batch / cal.batch) / 3600
            assert math.isclose(a.hours(device), expected, rel_tol=1e-12)


def test_yoon_shared_populations_are_counted_once(config):
    """fig2 and fig4 train no populations of their own (fig3's MNIST ones); fig4 adds surrogate distillation."""
    fig3 = P.plan(["results/yoon/fig3.pdf"], config)
    fig2 = P.plan(["results/yoon/fig2.pdf"], config)
    (row,) = fig2.populations
    assert set(row.figures) >= {"yoon/fig2", "yoon/fig3", "yoon/fig4"} and row.key in {a.key for a in fig3.populations}
    together = P.plan(["results/yoon/fig2.pdf", "results/yoon/fig3.pdf", "results/yoon/fig4.pdf"], config)
    training = [a for a in together.populations if a.adversary == "full-batch DP-SGD"]
    assert {a.key for a in training} == {a.key for a in fig3.populations}
    surrogates = [a for a in together.populations if a.adversary == "surrogates"]
    assert len(surrogates) == 4 and {a.figures for a in surrogates} == {("yoon/fig4",)}
    assert {a.models for a in surrogates} == {2 * 128 * 10}
    # 20 epochs of ⌈30,001 / 128⌉ batches
    assert {(a.steps, a.batch) for a in surrogates} == {(20 * 235, 128)}
    everything = P.plan([f"results/{f}.pdf" for f in YOON], config)
    assert len([a for a in everything.populations if a.adversary == "full-batch DP-SGD"]) == 24


def test_yoon_gpu_warning(config):
    msg = P.gpu_warning(["results/yoon/fig3.pdf"], config, has_gpu=False)
    assert msg is not None and "yoon/fig3" in msg and "51,200 models" in msg
    assert P.gpu_warning(["results/yoon/table1.md"], config, has_gpu=False) is not None
    assert P.gpu_warning(["results/yoon/fig3.pdf"], config, has_gpu=True) is None
    raw = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    laptop = resolve_scale({**raw, "scale": "laptop"})
    assert P.gpu_warning(["results/yoon/fig3.pdf"], laptop, has_gpu=False) is None
    assert {a.device for a in yoon_rows(laptop, "results/yoon/fig3.pdf")} == {"cpu"}  # laptop: resources.gpu 0


def test_yoon_calibration_rows():
    for model in ("mnist_cnn", "cifar_cnn"):
        for device in P.DEVICES:
            row = P.calibration(model, device, path="/nonexistent.json")
            assert row.seconds_per_model_step > 0
        assert P.calibration(model, "gpu", path="/nonexistent.json").status == "measured"
    # the CIFAR ConvNet costs more per step than the MNIST one on both devices
    for device in P.DEVICES:
        assert (P.calibration("cifar_cnn", device, path="/nonexistent.json").seconds_per_model_step
                > P.calibration("mnist_cnn", device, path="/nonexistent.json").seconds_per_model_step)


def test_yoon_cli_table(capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    assert main(["plan", "results/yoon/fig3.pdf", "--scale", "laptop"]) == 0
    out = capsys.readouterr().out
    assert "yoon/fig3" in out and "mnist_cnn" in out and "cifar_cnn" in out and "scale=laptop" in out


def test_steinke_fig2_plan_follows_the_paper(config):
    """Steinke et al. App. D: 1,000 + 1,000 models; trained once to the largest T (2,468, De et al.'s batch 4,096)."""
    p = P.plan(["results/steinke/fig2.pdf"], config)
    (row,) = p.populations
    assert (row.model, row.models, row.steps, row.batch, row.device) == ("wrn16_4", 2000, 2468, 4096, "gpu")
    assert p.gpu_sized and "steinke/fig2" in P.known_figures(config)
    cal = P.calibration("wrn16_4", "gpu")
    assert row.hours("gpu") == pytest.approx(2000 * 2468 * cal.seconds_per_model_step * 4096 / cal.batch / 3600)
    raw = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    laptop = P.plan(["results/steinke/fig2.pdf"], resolve_scale({**raw, "scale": "laptop"}))
    assert laptop.populations[0].device == "cpu" and laptop.model_steps == 200 * 50


def test_one_run_figure_is_planned_and_shares_fig1c_population(config):
    """results/one_run/fig1.pdf: the one-run models, the noiseless score's one-model run and the reference score's K
    canary-free models (T steps of the same batches each) plus the A_GC-R population, which is fig1c's first gc_r
    repetition (the same key) and counted once."""
    plan = P.plan(["results/one_run/fig1.pdf"], config)
    one = [a for a in plan.populations if a.section == "one_run" and a.adversary.startswith("one run")]
    assert len(one) == 1 and one[0].models == max(config["one_run"]["housing"]["models"])
    (noiseless,) = [a for a in plan.populations if a.adversary == "noiseless run"]
    assert noiseless.models == 1 and noiseless.steps == one[0].steps and noiseless.batch == one[0].batch
    assert noiseless.hours("cpu") == pytest.approx(one[0].hours("cpu") / one[0].models)
    k = config["one_run"]["housing"]["reference_models"]
    for role in ("reference models", "reference models, own bits"):
        (reference,) = [a for a in plan.populations if a.adversary == role]
        assert reference.models == k and reference.steps == one[0].steps
        assert reference.hours("cpu") == pytest.approx(k * one[0].hours("cpu") / one[0].models)
    pop = [a for a in plan.populations if a.section == "housing"]
    assert len(pop) == 1 and pop[0].models == config["housing"]["runs"] and "fig1c" in pop[0].figures
    both = P.plan(["results/one_run/fig1.pdf", "results/fig1c.pdf"], config)
    assert both.models == P.plan(["results/fig1c.pdf"], config).models + one[0].models + 1 + 2 * k


def test_steinke_table1_plan_prices_the_assumed_lm(config):
    """Table 1: one GPU population of 2R = 256 fine-tunings per row, T = round(2·N/B) at the assumed N = 16,000;
    the causal-LM rows cost per example 2.0e12 FLOPs at 50 TFLOP/s for 2.6e9 parameters and 128-token blocks, so
    the three rows come to ≈ 274 GPU-h (docs/steinke.md's estimate), and twice the parameters cost twice as much."""
    p = P.plan(["results/steinke/table1.md"], config)
    assert [(r.batch, r.steps, r.models, r.device) for r in p.populations] == [
        (2048, 16, 256, "gpu"), (1024, 31, 256, "gpu"), (512, 62, 256, "gpu")]
    want = sum(256 * t * 0.04 * b for b, t in ((2048, 16), (1024, 31), (512, 62))) / 3600
    assert p.hours("gpu") == pytest.approx(want) and 270 < want < 280
    bigger = {**config, "steinke": {**config["steinke"], "table1": {
        **config["steinke"]["table1"], "plan": {"examples": 16000, "parameters": 5.2e9}}}}
    assert P.plan(["results/steinke/table1.md"], bigger).hours("gpu") == pytest.approx(2 * want)
    assert "steinke/table1" in P.known_figures(config)


def test_steinke_fig4_and_table2_plans(config):
    """fig4: one GPU population per background; table2: one per batch size (T = 2468·4096/B), the 4,096 row being
    fig2's population (listed once, with both figures)."""
    p = P.plan(["results/steinke/fig4.pdf", "results/steinke/table2.md", "results/steinke/fig2.pdf"], config)
    rows = {(r.figures, r.batch, r.steps) for r in p.populations}
    assert rows == {(("steinke/fig2", "steinke/table2"), 4096, 2468), (("steinke/fig4",), 4096, 2468),
                    (("steinke/table2",), 512, 19744), (("steinke/table2",), 256, 39488)} | {
        (("steinke/fig4",), 4096, 2468)}
    assert len(p.populations) == 5 and all(r.device == "gpu" and r.models == 2000 for r in p.populations)
    assert {"steinke/fig4", "steinke/table2"} <= set(P.known_figures(config))
    assert len(P.plan(["results/steinke/table2.md"], config).populations) == 3
