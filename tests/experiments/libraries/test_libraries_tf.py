"""TensorFlow Privacy's rows of the libraries table (examples/libraries/tf_privacy/): where its modules are not
importable (hsaudit.experiments.libraries.plan.MODULES; the [tf] extra lives in an environment of its own) they are
no jobs and the report lists them "not run" with the reason; where they are, the rows' code version carries
``tensorflow-privacy==<version>`` and a Keras-only training (no torch in the user's files) audits through byo: the
planted σ/10 control flagged, the correct per-example configuration not (slow; skipped without TF Privacy)."""

from __future__ import annotations

import warnings

import pytest

from conftest import REPO
from hsaudit.experiments.byo.plan import installed_version, training_version
from hsaudit.experiments.libraries import plan as plan_module
from hsaudit.experiments.libraries.audit import markdown, table
from hsaudit.experiments.libraries.plan import missing_modules, plan
from libraries_rows import AUDIT  # the design pinned: a pilot would train 10x the audit's TF models first

FOLDER = "examples/libraries/tf_privacy"
ROWS = {
    "tf_per_example": {"library": "tensorflow-privacy", "configuration": "per example",
                       "entry": f"{FOLDER}/per_example.py:make"},
    "tf_control_noise": {"library": "tensorflow-privacy", "configuration": "σ/10", "planted": True,
                         "entry": f"{FOLDER}/control_noise_tenth.py:make"},
}  # fmt: skip


def test_rows_of_a_library_not_importable_here_are_listed_not_run_with_the_reason(monkeypatch):
    monkeypatch.setitem(plan_module.MODULES, "tensorflow-privacy", ("hsaudit_no_such_module", "json"))
    libs = plan({"libraries": {"audit": AUDIT, "rows": ROWS, "not_run": {"jax-privacy": "why"}}})
    assert libs.rows == {} and libs.targets == () and set(libs.not_run) == {"jax-privacy", *ROWS}
    assert libs.not_run["tf_per_example"].startswith("not run: hsaudit_no_such_module not importable here")
    text = markdown(table([]), not_run=libs.not_run, facts={}, figure="fig.pdf")
    assert all(f"- {name}: not run: hsaudit_no_such_module" in text for name in ROWS)


def test_rows_of_an_importable_library_run_with_its_version_in_their_code_version(monkeypatch):
    monkeypatch.setitem(plan_module.MODULES, "tensorflow-privacy", ("json",))
    libs = plan({"libraries": {"audit": AUDIT, "rows": ROWS}})
    assert set(libs.rows) == set(ROWS) and libs.not_run == {}
    row = libs.rows["tf_per_example"]
    assert row.audit.packages == ("tensorflow-privacy",) and row.audit.design.setting is not None
    assert training_version(row.audit).endswith(f" tensorflow-privacy=={installed_version('tensorflow-privacy')}")


def test_the_configs_tf_rows_follow_the_environment():
    import yaml

    libs = plan(yaml.safe_load((REPO / "config/config.yaml").read_text()))
    tf_rows = {n for n in (*libs.rows, *libs.not_run) if n.startswith("tf_")}
    scripts = {p.stem for p in (REPO / FOLDER).glob("*.py") if p.stem != "tf_common"}
    missing = bool(missing_modules("tensorflow-privacy"))
    assert len(tf_rows) == len(scripts) and (tf_rows <= set(libs.not_run)) == missing


@pytest.mark.slow
def test_a_keras_only_training_audits_through_byo(monkeypatch):
    if missing_modules("tensorflow-privacy"):
        pytest.skip("TensorFlow Privacy is not importable here (the [tf] extra, docs/libraries.md)")
    from hsaudit.experiments.byo.api import audit_training

    monkeypatch.chdir(REPO)
    libs = plan({"seed": 3, "libraries": {"audit": AUDIT, "rows": ROWS}})
    verdicts = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, row in libs.rows.items():
            result = audit_training(row.audit.design, row.audit.options, control=row.audit.control)
            verdicts[name] = result.report.verdict
    assert verdicts["tf_control_noise"] == "violation" and verdicts["tf_per_example"] != "violation"
