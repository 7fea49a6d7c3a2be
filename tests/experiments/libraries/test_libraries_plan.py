"""The plan of the libraries table (hsaudit.experiments.libraries.plan): one row per Opacus configuration of the
config, each an audit-setting byo audit at results/libraries/<row>/; its trainings' code version (the script
folder's code, the library's installed version); the jobs the workflow and hsaudit plan see."""

from __future__ import annotations

import importlib
import shutil

import pytest
import yaml

from conftest import REPO
from hsaudit.experiments.byo.plan import entry_version, folder_version, installed_version, training_version
from hsaudit.experiments.libraries.plan import plan
from hsaudit.pipeline.config import resolve_scale
from hsaudit.pipeline.costs import all_populations

CONFIG = yaml.safe_load((REPO / "config/config.yaml").read_text())
byo_plan = importlib.import_module("hsaudit.experiments.byo.plan")  # the module (the package exports its plan())
libraries_plan = importlib.import_module("hsaudit.experiments.libraries.plan")
OPACUS_SCRIPTS = sorted(p.name for p in (REPO / "examples/libraries/opacus").glob("*.py") if p.name != "opacus_common.py")


def test_every_opacus_script_is_a_row_in_the_audit_setting():
    libs = plan(CONFIG)
    opacus = [r for r in libs.rows.values() if r.library == "opacus"]
    assert sorted({r.audit.design.entry.split("/")[-1].removesuffix(":make") for r in opacus}) == OPACUS_SCRIPTS
    own = {n for n, v in CONFIG["libraries"]["rows"].items() if "audit_setting" in (v.get("audit") or {})}
    assert all(r.audit.design.setting is not None and r.audit.control for r in libs.rows.values() if r.name not in own)
    assert {r.name for r in opacus if r.planted} == {"opacus_control_optimizer", "opacus_control_noise"}
    assert [t.path for t in libs.targets] == ["results/libraries/report.md"]
    listed = set(CONFIG["libraries"]["rows"])  # every row runs here or is listed not run (jax, tf: their extras)
    assert set(libs.rows) | set(libs.not_run) == listed and not set(libs.rows) & set(libs.not_run)
    # distinct streams per row; each row is a byo audit at its own root, its folder and its library in its version
    assert len({r.audit.design.seed for r in libs.rows.values()}) == len(libs.rows)
    row = libs.rows["opacus_hooks"]
    assert (row.root, row.report, row.audit.key) == ("results/libraries/opacus_hooks",
                                                      "results/libraries/opacus_hooks/report.json",
                                                      "libraries/opacus_hooks")  # fmt: skip
    assert (row.audit.entry_code, row.audit.packages) == ("folder", ("opacus",))
    assert row.describe()["version"] == installed_version("opacus")
    assert libs.facts["runs"] == CONFIG["libraries"]["audit"]["runs"] and libs.facts["canary"] == "out_of_support"


def test_scales_set_the_runs_and_hsaudit_plan_lists_a_population_per_row():
    for scale in ("smoke", "laptop", "paper"):
        resolved = resolve_scale({**CONFIG, "scale": scale})
        section = resolved["libraries"]
        for name, row in plan(resolved).rows.items():
            values = section["rows"][name]
            own = section["planted_runs"] if values.get("planted") else section["library_runs"].get(row.library)
            assert row.audit.design.runs == (values.get("runs") or own or section["audit"]["runs"]), (scale, name)
    smoke = resolve_scale({**CONFIG, "scale": "smoke"})
    runs = smoke["libraries"]["audit"]["runs"]
    pops = [p for p in all_populations(smoke) if p.section == "libraries"]
    assert len(pops) == len(plan(smoke).rows) >= len(OPACUS_SCRIPTS) and all(p.models == 4 * runs for p in pops)


def test_the_trainings_code_version_follows_the_folder_and_the_library(tmp_path, monkeypatch):
    folder = tmp_path / "opacus"
    shutil.copytree(REPO / "examples/libraries/opacus", folder)
    rows = {"r": {"entry": f"{folder}/hooks.py:make", "library": "opacus", "configuration": "c"}}
    audit = plan({"libraries": {"rows": rows}}).rows["r"].audit
    before = training_version(audit)
    assert before == f"{folder_version(audit.design.entry)} opacus=={installed_version('opacus')}"
    (folder / "opacus_common.py").write_text((folder / "opacus_common.py").read_text() + "\n# a comment\n")
    assert training_version(audit) == before  # comments are not code
    (folder / "opacus_common.py").write_text((folder / "opacus_common.py").read_text() + "LR = 0.25\n")
    edited = training_version(audit)
    assert edited != before
    monkeypatch.setattr(byo_plan, "installed_version", lambda dist: "9.9" if dist == "opacus" else "1.0")
    assert training_version(audit) == edited.replace(f"opacus=={installed_version('opacus')}", "opacus==9.9") != edited
    assert installed_version("no-such-distribution-xyz") == "not installed"


def test_a_byo_audit_keeps_its_code_version_and_root():
    """byo's own audits: their trainings' code version is still the entry file's (their jobs' params unchanged)."""
    audit = byo_plan.plan(CONFIG).audits["example"]
    assert audit.root == "results/byo/example" and audit.key == "byo/example"
    assert training_version(audit) == entry_version(audit.design.entry)
    with pytest.raises(ValueError, match="not under results/"):
        byo_plan.ByoAudit(name="x", design=audit.design, options=audit.options, root="elsewhere/x")


def test_a_rows_audit_setting_keys_override_the_shared_ones():
    rows = {"r": {"entry": "a.py:make", "library": "opacus", "configuration": "c", "audit_setting": {"neighbouring": "replace-one"}},
            "s": {"entry": "a.py:make", "library": "opacus", "configuration": "c"}}  # fmt: skip
    audit = {"audit_setting": {"steps": 3, "epsilon": 4.0}}
    libs = plan({"libraries": {"rows": rows, "audit": audit}})
    r, s = (libs.rows[k].audit.design.setting for k in ("r", "s"))
    assert (r.neighbouring, s.neighbouring, r.steps) == ("replace-one", "add-remove", 3)
    assert r.noise_multiplier > s.noise_multiplier


def test_a_bad_row_is_named():
    with pytest.raises(ValueError, match="libraries.rows.x: unknown key"):
        plan({"libraries": {"rows": {"x": {"entry": "a.py:make", "library": "l", "configuration": "c", "y": 1}}}})
    with pytest.raises(ValueError, match="missing \\['library'\\]"):
        plan({"libraries": {"rows": {"x": {"entry": "a.py:make", "configuration": "c"}}}})


def test_a_row_whose_library_is_not_installed_is_listed_not_run_with_its_reason(monkeypatch):
    """JAX Privacy's rows run where the [jax] extra is installed; elsewhere the report lists each, never drops it."""
    jax_rows = {n for n, v in CONFIG["libraries"]["rows"].items() if v["library"] == "jax-privacy"}
    scripts = {v["entry"].split("/")[-1].removesuffix(":make") for n, v in CONFIG["libraries"]["rows"].items()
               if n in jax_rows}  # fmt: skip
    folder = REPO / "examples/libraries/jax_privacy"  # every script but the shared module and the reproductions
    assert scripts == {p.name for p in folder.glob("*.py") if not p.name.startswith("finding_")} - {"jax_common.py"}
    for here in ("2.0.0", "not installed"):
        monkeypatch.setattr(libraries_plan, "installed_version",
                            lambda dist, here=here: here if dist == "jax-privacy" else "1.0")  # fmt: skip
        libs = plan(CONFIG)
        ran, listed = jax_rows & set(libs.rows), jax_rows & set(libs.not_run)
        assert (ran, listed) == ((jax_rows, set()) if here == "2.0.0" else (set(), jax_rows))
        assert {r.name for r in libs.rows.values()} | set(libs.not_run) >= set(CONFIG["libraries"]["rows"])
    why = libs.not_run["jax_privacy_dpsgd"]
    assert why.startswith("not run: jax-privacy is not installed here") and "hsaudit[jax]" in why
    monkeypatch.setattr(libraries_plan, "installed_version",  # a row's `requires` (keras) decides as its library does
                        lambda dist: "not installed" if dist == "keras" else "1.0")  # fmt: skip
    libs = plan(CONFIG)
    keras_rows = {n for n, v in CONFIG["libraries"]["rows"].items() if "keras" in v.get("requires", ())}
    assert keras_rows and keras_rows <= set(libs.not_run) and not keras_rows & set(libs.rows)
    assert all(libs.not_run[n].startswith("not run: keras is not installed here") for n in keras_rows)
    assert all(libs.rows[n].audit.packages == ("jax-privacy",) for n in jax_rows - keras_rows)
    with pytest.raises(ValueError, match="libraries.rows.x: unknown key"):  # checked before it is set aside
        plan({"libraries": {"rows": {"x": {"entry": "a.py:make", "library": "jax-privacy", "configuration": "c",
                                          "y": 1}}}})  # fmt: skip


def test_a_rows_runs_come_from_the_row_then_the_planted_controls_then_its_library_then_the_audit():
    opacus = {"entry": f"{REPO}/examples/libraries/opacus/hooks.py:make", "library": "opacus", "configuration": "c"}
    rows = {"own": {**opacus, "runs": 30, "planted": True}, "planted": {**opacus, "planted": True},
            "library": opacus, "other": {**opacus, "library": "torch"}}  # fmt: skip
    section = {"audit": {"runs": 50}, "planted_runs": 10, "library_runs": {"opacus": 20}, "rows": rows}
    assert {n: r.audit.design.runs for n, r in plan({"libraries": section}).rows.items()} == \
        {"own": 30, "planted": 10, "library": 20, "other": 50}  # fmt: skip
    section = {**section, "planted_runs": None, "library_runs": {"opacus": None}}
    assert {r.audit.design.runs for r in plan({"libraries": section}).rows.values()} == {30, 50}
