"""The plan of the libraries table (hsaudit.experiments.libraries.plan): one row per Opacus configuration of the
config, each an audit-setting byo audit; the rows' code versions (the script folder's code, the library's version);
the jobs the workflow and hsaudit plan see."""

from __future__ import annotations

import shutil

import pytest
import yaml

from conftest import REPO
from hsaudit.experiments.libraries.plan import LibraryRow, folder_version, library_version, plan
from hsaudit.pipeline.config import resolve_scale
from hsaudit.pipeline.costs import all_populations

CONFIG = yaml.safe_load((REPO / "config/config.yaml").read_text())
OPACUS_SCRIPTS = sorted(p.name for p in (REPO / "examples/libraries/opacus").glob("*.py") if p.name != "opacus_common.py")


def test_every_opacus_script_is_a_row_in_the_audit_setting():
    libs = plan(CONFIG)
    assert sorted(r.design.entry.split("/")[-1].removesuffix(":make") for r in libs.rows.values()) == OPACUS_SCRIPTS
    assert all(r.design.setting is not None and r.control for r in libs.rows.values())
    assert {r.name for r in libs.rows.values() if r.planted} == {"opacus_control_optimizer", "opacus_control_noise"}
    assert [t.path for t in libs.targets] == ["results/libraries/report.md"]
    assert set(libs.not_run) == {"jax-privacy", "tensorflow-privacy"}
    # distinct streams per row; a row survives the job's params
    assert len({r.design.seed for r in libs.rows.values()}) == len(libs.rows)
    row = libs.rows["opacus_hooks"]
    assert LibraryRow.from_dict(row.to_dict()).to_dict() == row.to_dict()


def test_scales_set_the_runs_and_hsaudit_plan_lists_a_population_per_row():
    for scale, runs in (("smoke", 8), ("laptop", 500), ("paper", 1000)):
        libs = plan(resolve_scale({**CONFIG, "scale": scale}))
        assert {r.design.runs for r in libs.rows.values()} == {runs}
    pops = [p for p in all_populations(resolve_scale({**CONFIG, "scale": "smoke"})) if p.section == "libraries"]
    assert len(pops) == len(OPACUS_SCRIPTS) and all(p.models == 4 * 8 for p in pops)


def test_the_code_version_follows_the_folder_and_the_library(tmp_path, monkeypatch):
    folder = tmp_path / "opacus"
    shutil.copytree(REPO / "examples/libraries/opacus", folder)
    entry = f"{folder}/hooks.py:make"
    before = folder_version(entry)
    (folder / "opacus_common.py").write_text((folder / "opacus_common.py").read_text() + "\n# a comment\n")
    assert folder_version(entry) == before  # comments are not code
    (folder / "opacus_common.py").write_text((folder / "opacus_common.py").read_text() + "LR = 0.25\n")
    assert folder_version(entry) != before
    import opacus

    assert library_version("opacus") == opacus.__version__
    assert library_version("no-such-distribution-xyz") == "not installed"


def test_a_bad_row_is_named():
    with pytest.raises(ValueError, match="libraries.rows.x: unknown key"):
        plan({"libraries": {"rows": {"x": {"entry": "a.py:make", "library": "l", "configuration": "c", "y": 1}}}})
    with pytest.raises(ValueError, match="missing \\['library'\\]"):
        plan({"libraries": {"rows": {"x": {"entry": "a.py:make", "configuration": "c"}}}})
