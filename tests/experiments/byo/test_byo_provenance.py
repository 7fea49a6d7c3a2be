"""Code versions of the byo jobs (hsaudit.pipeline.provenance): a training job's version covers exactly the modules it
runs — the harness, the values and the canary registry — so that an edit of an estimator, the accountant, the plan or
the figures reruns audits and figures, never the user's training."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import REPO
from hsaudit.pipeline import provenance

SCRIPTS = {s.stem: s for s in (REPO / "workflow" / "scripts").glob("*byo*.py")}
TRAINING = {"check_byo_entry", "train_byo_shard", "check_byo_few", "train_byo_training"}


@pytest.fixture
def package_copy(tmp_path: Path) -> Path:
    dest = tmp_path / "src" / "hsaudit"
    shutil.copytree(provenance.package_dir(), dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def changed_by(root: Path, *edited: str) -> set[str]:
    before = {name: provenance.script_version(path, root=root) for name, path in SCRIPTS.items()}
    for rel in edited:
        with open(root / rel, "a") as fh:
            fh.write("\n_EDITED = True\n")
    return {name for name, path in SCRIPTS.items() if provenance.script_version(path, root=root) != before[name]}


def test_the_scripts_are_the_rules():
    assert set(SCRIPTS) == {"assess_byo_claim", "check_byo_entry", "train_byo_shard", "audit_byo", "plot_byo",
                            "write_byo_report",  # the population audit; the few-runs audit:
                            "assess_byo_few", "check_byo_few", "plan_byo_few_control", "train_byo_training",
                            "audit_byo_few"}  # fmt: skip


def test_estimator_accountant_plan_and_figure_edits_leave_training_alone(package_copy):
    edited = ["experiments/byo/audit.py", "experiments/byo/plan.py", "experiments/byo/figures.py",
              "experiments/byo/api.py", "experiments/byo/advice.py", "experiments/byo/few_runs.py",
              "experiments/plotting.py",
              *(p.relative_to(package_copy).as_posix() for d in ("audit", "accounting")
                for p in (package_copy / d).glob("*.py"))]  # fmt: skip
    changed = changed_by(package_copy, *edited)
    assert not changed & TRAINING, sorted(changed & TRAINING)
    assert {"audit_byo", "assess_byo_claim", "plot_byo", "write_byo_report", "audit_byo_few", "assess_byo_few"} <= changed


@pytest.mark.parametrize("module", ["experiments/byo/train/harness.py", "experiments/byo/values.py", "engine/canaries.py"])
def test_harness_edits_retrain(package_copy, module):
    assert TRAINING <= changed_by(package_copy, module)


def test_the_harness_edit_reruns_no_audit_of_scores(package_copy):
    changed = changed_by(package_copy, "experiments/byo/train/harness.py")
    assert "audit_byo" not in changed and "plot_byo" not in changed
