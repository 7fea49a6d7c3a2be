"""JAX Privacy's rows (examples/libraries/jax_privacy/), where the [jax] extra is installed (skipped elsewhere): the
scripts are JAX only (no torch), each loads in the audit setting with the claim of JAX Privacy's own accountant, and
the table's smoke audit at tiny R passes the correct DP-SGD and flags the planted σ/10 control."""

from __future__ import annotations

import ast
import math

import pytest

from conftest import REPO
from hsaudit.experiments.byo.plan import audit_setting
from hsaudit.experiments.byo.train.harness import load, prepare
from hsaudit.experiments.byo.values import Design
from hsaudit.experiments.libraries.plan import plan
from libraries_rows import AUDIT, audit_rows

jax_privacy = pytest.importorskip("jax_privacy")

FOLDER = REPO / "examples/libraries/jax_privacy"
SCRIPTS = sorted(p.name for p in FOLDER.glob("*.py")  # the Keras API's row and finding: test_libraries_keras.py
                 if p.name != "jax_common.py" and not p.name.startswith(("keras_", "finding_")))
ROWS = {
    "dpsgd": {"library": "jax-privacy", "configuration": "DP-SGD", "entry": f"{FOLDER}/dpsgd.py:make"},
    "noise": {"library": "jax-privacy", "configuration": "σ/10", "planted": True,
              "entry": f"{FOLDER}/control_noise_tenth.py:make"},
}  # fmt: skip


def test_the_scripts_import_no_torch():
    for path in FOLDER.glob("*.py"):
        tree = ast.parse(path.read_text())
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert not {m for m in names if m.split(".")[0] == "torch"}, path.name


@pytest.mark.parametrize("script", SCRIPTS)
def test_the_script_loads_in_the_audit_setting_with_jax_privacys_claim(script):
    from jax_privacy import accounting

    setting = audit_setting()
    design = Design(entry=f"{FOLDER}/{script}:make", canary="out_of_support", runs=2, setting=setting)
    loaded = load(design)
    claim = loaded.training.claim
    assert claim.steps == setting.steps and claim.sample_rate == 1.0
    assert math.isclose(claim.noise_multiplier, setting.noise_multiplier, rel_tol=1e-6)
    n = len(loaded.training.dataset()[0])  # q = 1: the expected batch is the whole dataset
    acc = accounting.DpsgdTrainingAccountant(dp_accountant_config=accounting.PldAccountantConfig())
    params = accounting.DpParams(noise_multipliers=claim.noise_multiplier, num_samples=n, delta=claim.delta,
                                 batch_size=n)  # fmt: skip
    assert claim.epsilon == pytest.approx(acc.compute_epsilon(claim.steps, params), rel=1e-9)
    probe = prepare(design, loaded).probe  # deterministic in the seed, finite loss, θ0 from init_seed
    assert probe.theta0 != "varies with the seed" and probe.seed_sensitive


def test_the_smoke_audit_passes_dpsgd_and_flags_its_control(monkeypatch):
    monkeypatch.chdir(REPO)
    libs = plan({"seed": 3, "libraries": {"audit": AUDIT, "rows": ROWS}})
    frame = audit_rows(libs).set_index("row")
    assert frame.loc["noise", "verdict"] == "violation" and frame.loc["noise", "expected"] == "control flagged"
    assert frame.loc["dpsgd", "verdict"] in ("consistent", "inconclusive")
    assert frame.loc["dpsgd", "power_probability"] is not None
    assert (frame["version"] == jax_privacy.__version__).all() and (frame["seconds"] > 0).all()
