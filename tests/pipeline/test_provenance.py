"""Code versions follow the code (hsaudit.pipeline.provenance): a job's version covers its script and exactly the
package modules the script imports, so an edit reruns the jobs that run it and never the others.

Each test works on a private copy of the package (``root=``), edits modules there and recomputes the versions of
the real workflow scripts (workflow/scripts/*.py) against it.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from conftest import REPO
from hsaudit.pipeline import provenance

SCRIPTS = sorted((REPO / "workflow" / "scripts").glob("*.py"))
NAMES = [s.stem for s in SCRIPTS]

# Rule families by script (workflow/rules/*.smk name each script once).
TRAINING = ["prepare_data", "extract_features", "make_setup", "craft_adversary", "craft_fixed_init", "train_shard", "prepare_yoon_data",
            "train_yoon_models", "prepare_steinke_data", "train_steinke_shard",
            "craft_one_run_canaries", "train_one_run_shard", "prepare_steinke_table1_data", "train_steinke_table1",
            "train_steinke_lr_candidate", "train_steinke_tuned_shard"]
AUDITS = ["extract_scores", "audit_epsilon", "audit_yoon_run", "audit_section6_process", "tabulate_section6_cp",
          "compute_section6_exact_law", "compute_section6_tradeoff_curves", "search_section6_threshold",
          "compute_steinke_fig1", "audit_steinke_fig3", "compute_steinke_fig5", "attack_steinke_fig6",
          "tabulate_annamalai_pld", "audit_annamalai", "simulate_annamalai_fig1", "audit_steinke_trained",
          "audit_one_run_canaries", "calibrate_steinke_table1"]
SECTION6 = ["audit_section6_process", "tabulate_section6_cp", "compute_section6_exact_law",
            "compute_section6_tradeoff_curves", "search_section6_threshold", "plot_section6"]


@pytest.fixture
def package_copy(tmp_path: Path) -> Path:
    dest = tmp_path / "src" / "hsaudit"
    shutil.copytree(provenance.package_dir(), dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def versions(root: Path) -> dict[str, str]:
    return {s.stem: provenance.script_version(s, root=root) for s in SCRIPTS}


def changed_by(root: Path, *edited: str) -> set[str]:
    """Scripts whose version changes when a statement is appended to each of ``edited`` (paths under root)."""
    before = versions(root)
    for rel in edited:
        with open(root / rel, "a") as fh:
            fh.write("\n_EDITED = True\n")
    after = versions(root)
    return {name for name in NAMES if before[name] != after[name]}


def test_docstring_and_comment_edits_rerun_nothing(package_copy):
    """Only code counts: a docstring, a comment or a reflow of the package root, an engine module and a training
    module changes no job's version (the root's text is in every job's)."""
    before = versions(package_copy)
    for rel in ("__init__.py", "engine/dpsgd.py", "experiments/cebere/train/shards.py"):
        path = package_copy / rel
        text = path.read_text()
        path.write_text('"""A new docstring."""\n' + text.replace('"""', '"""Reworded. ', 1) + "\n# a comment\n")
    assert versions(package_copy) == before


def test_every_family_is_named():
    """The families above name real scripts (a renamed script must be placed in its family here)."""
    assert set(TRAINING) | set(AUDITS) | set(SECTION6) <= set(NAMES)


def test_audit_and_accounting_edits_leave_training_alone(package_copy):
    edited = [p.relative_to(package_copy).as_posix() for d in ("audit", "accounting")
              for p in (package_copy / d).glob("*.py")]
    changed = changed_by(package_copy, *edited)
    assert not changed & set(TRAINING), sorted(changed & set(TRAINING))
    # ... and they do rerun the audits that use them.
    assert {"audit_epsilon", "audit_yoon_run", "audit_section6_process", "audit_steinke_fig3",
            "audit_one_run_canaries"} <= changed


def test_figure_edits_leave_audits_and_training_alone(package_copy):
    edited = ["experiments/plotting.py", "experiments/steinke/figures.py", "experiments/annamalai/figures.py",
              "experiments/yoon/figures.py", "experiments/one_run/figures.py", *(p.relative_to(package_copy).as_posix()
                                         for p in (package_copy / "experiments/cebere/figures").glob("*.py"))]
    changed = changed_by(package_copy, *edited)
    assert not changed & (set(AUDITS) | set(TRAINING)), sorted(changed & (set(AUDITS) | set(TRAINING)))
    assert {"plot_cebere_housing", "plot_cebere_cifar", "plot_section6", "plot_steinke", "plot_annamalai",
            "plot_yoon", "plot_one_run_fig1"} <= changed


def test_yoon_adversary_and_plan_edits_leave_its_training_alone(package_copy):
    """The Yoon recipe, crafting and audit modules are the audit job's, which the training job does not import: a
    change there reruns the audits, not the populations (only a change of what is trained re-keys those); no job
    imports the plan (its values are the jobs' parameters); the training module reruns the training jobs only."""
    assert changed_by(package_copy, "experiments/yoon/plan.py", "experiments/plans.py") == set()
    changed = changed_by(package_copy, "experiments/yoon/recipe.py", "experiments/yoon/crafting.py",
                         "experiments/yoon/audit.py")
    assert changed == {"audit_yoon_run"}, sorted(changed)
    assert changed_by(package_copy, "experiments/yoon/train.py") == {"train_yoon_models", "audit_yoon_run"}


def test_annamalai_edits_stay_on_their_side(package_copy):
    """No job imports the Annamalai plan; an edit of the audits reruns the jobs that audit, not the PLD tables."""
    assert changed_by(package_copy, "experiments/annamalai/plan.py") == set()
    assert changed_by(package_copy, "experiments/annamalai/construction.py") == {"audit_annamalai",
                                                                                 "simulate_annamalai_fig1",
                                                                                 "tabulate_annamalai_pld"}
    assert changed_by(package_copy, "experiments/annamalai/audit.py") == {"audit_annamalai", "simulate_annamalai_fig1"}


def test_table2_edit_reruns_only_table2(package_copy):
    """Cebere's Table 2 is a module of its figures, which no training job imports: editing it retrains nothing."""
    assert changed_by(package_copy, "experiments/cebere/figures/table2.py") == {"write_cebere_table2"}


def test_cebere_and_one_run_sides_are_apart(package_copy):
    """No job imports a plan: editing one reruns nothing (a changed value reruns the jobs it reaches through their
    params). A training module reruns its training jobs only (the one-run crafting ranks coordinates with Cebere's
    adversaries; the noiseless run of the one-run scores is the one-run trainer); an audit module its audit jobs
    only."""
    assert changed_by(package_copy, "experiments/plans.py", "experiments/cebere/plan.py",
                      "experiments/one_run/plan.py") == set()
    # fixed-init crafting takes the per-run θ0 scheme from the shards (per_run_scheme): it is re-crafted with them,
    # seconds beside the shards that retrain anyway
    assert changed_by(package_copy, "experiments/cebere/train/shards.py") == {"train_shard", "craft_fixed_init"}
    # fig12's plot reads the crafted coordinate without the training module (no torch in a plot job)
    assert changed_by(package_copy, "experiments/cebere/train/adversaries.py") == {
        "craft_adversary", "craft_fixed_init", "train_shard", "craft_one_run_canaries"}
    # the worker pool of the CPU populations: the jobs that train through the two shard trainers
    assert changed_by(package_copy, "engine/workers.py") == {
        "train_shard", "craft_fixed_init", "train_one_run_shard", "train_one_run_reference", "craft_one_run_canaries"}
    # fig12's fixed-initialisation crafting is a module of its own: editing it re-crafts only those audits
    assert changed_by(package_copy, "experiments/cebere/train/fixed_init.py") == {"craft_fixed_init"}
    # The other runs of the one-run scores (noiseless, reference sets) are the one-run trainer: they rerun with it.
    assert changed_by(package_copy, "experiments/one_run/train.py") == {"craft_one_run_canaries",
                                                                       "train_one_run_shard",
                                                                       "train_one_run_reference"}
    # the scores tables live apart from the audit: an estimator edit never reruns the score extraction
    assert changed_by(package_copy, "experiments/cebere/audit.py") == {"audit_epsilon"}
    assert changed_by(package_copy, "experiments/cebere/scores.py") == {"extract_scores", "plot_cebere_cifar"}
    assert changed_by(package_copy, "experiments/one_run/audit.py") == {"audit_one_run_canaries",
                                                                       "plot_one_run_fig1"}


def test_steinke_training_audit_and_plan_are_apart(package_copy):
    """Steinke et al.: each training module reruns its own data and training jobs only (the image trainer never the
    language model's, nor the reverse; Table 2's η selection only its tuned rows, its candidates only themselves);
    the audit module (the tables, Table 1's σ calibration) retrains nothing; the
    plan is read by the workflow only and reruns no job by itself."""
    assert changed_by(package_copy, "experiments/steinke/train/language.py") == {"prepare_steinke_table1_data",
                                                                             "train_steinke_table1"}
    # Table 2's tuned rows train through the image trainer; their η candidates do not
    assert changed_by(package_copy, "experiments/steinke/train/images.py") == {"train_steinke_shard",
                                                                           "train_steinke_tuned_shard"}
    assert changed_by(package_copy, "experiments/steinke/train/tuning.py") == {"train_steinke_tuned_shard"}
    assert changed_by(package_copy, "experiments/steinke/train/candidates.py") == {"train_steinke_lr_candidate"}
    # the θ0 and DP-SGD setting the rows' populations share with their candidates
    assert changed_by(package_copy, "experiments/steinke/train/rows.py") == {
        "train_steinke_shard", "train_steinke_tuned_shard", "train_steinke_lr_candidate"}
    assert changed_by(package_copy, "experiments/steinke/audit.py") == {
        "audit_steinke_trained", "tabulate_steinke_table2", "calibrate_steinke_table1", "tabulate_steinke_table1"}
    assert changed_by(package_copy, "experiments/steinke/plan.py") == set()


def test_section6_edit_stays_in_section6(package_copy):
    changed = changed_by(package_copy, "experiments/section6/exact.py")
    # The Clopper–Pearson table is the audit layer's (hsaudit.audit.two_sample): no edit of the process reruns it.
    assert changed == set(SECTION6) - {"tabulate_section6_cp"}


def test_engine_edits_retrain(package_copy):
    for module in ("engine/dpsgd.py", "engine/psg.py", "engine/noise.py", "engine/evaluate.py"):
        changed = changed_by(package_copy, module)
        retrained = {"train_steinke_shard"}
        if module != "engine/evaluate.py":  # only the Steinke et al. jobs evaluate their models' test accuracy
            retrained |= {"train_shard", "train_yoon_models", "craft_adversary", "train_one_run_shard"}
        if module in ("engine/dpsgd.py", "engine/noise.py"):  # Table 1's fine-tuning has its own gradient backend
            retrained |= {"train_steinke_table1"}
        assert retrained <= changed, (module, changed)
        assert not changed & {"audit_epsilon", "extract_scores", "plot_yoon", "prepare_data"}, (module, changed)


def test_reexports_are_not_followed(package_copy):
    """A parent package's __init__ is hashed (it runs) but what it only re-exports is not followed."""
    files = provenance.module_files("hsaudit.audit.gdp", root=package_copy)
    names = {p.relative_to(package_copy).as_posix() for p in files}
    assert {"__init__.py", "audit/__init__.py", "audit/gdp.py"} <= names
    assert "audit/pld.py" not in names and "audit/two_sample.py" not in names
    # Importing the package itself follows what it imports.
    whole = {p.relative_to(package_copy).as_posix() for p in provenance.module_files("hsaudit.audit", root=package_copy)}
    assert {"audit/pld.py", "audit/two_sample.py"} <= whole


def test_module_files_follow_imports_transitively(package_copy):
    (package_copy / "zz_a.py").write_text("from hsaudit import zz_b\nimport numpy\n")
    (package_copy / "zz_b.py").write_text("def f():\n    from .zz_c import g\n    return g\n")
    (package_copy / "zz_c.py").write_text("from hsaudit.util import seeding\n")
    files = set(provenance.module_files("hsaudit.zz_a", root=package_copy))
    expected = {package_copy / n for n in ("__init__.py", "zz_a.py", "zz_b.py", "zz_c.py", "util/__init__.py",
                                           "util/seeding.py")}
    assert files == expected
    # The prefix may be left out; a module that does not exist is an error naming it.
    assert provenance.module_files("zz_a", root=package_copy) == sorted(files)
    with pytest.raises(ValueError, match="'nosuch'"):
        provenance.module_files("nosuch", root=package_copy)


def test_script_version_covers_the_script_text(tmp_path, package_copy):
    script = tmp_path / "s.py"
    script.write_text("from hsaudit.util.seeding import derive_seed\n")
    v0 = provenance.script_version(script, root=package_copy)
    assert re.fullmatch(r"[0-9a-f]{12}", v0) and provenance.script_version(script, root=package_copy) == v0
    script.write_text("from hsaudit.util.seeding import derive_seed  # edited\n")
    assert provenance.script_version(script, root=package_copy) == v0, "a comment is not code"
    script.write_text("from hsaudit.util.seeding import derive_seed\n_EDITED = True\n")
    assert provenance.script_version(script, root=package_copy) != v0
    assert [p.name for p in provenance.script_files(script, root=package_copy)] == [
        "__init__.py", "__init__.py", "seeding.py"]


def test_the_package_version_does_not_decide(package_copy, monkeypatch):
    """The source alone decides: another version number (a release that edits no module) changes no version."""
    import hsaudit

    before = versions(package_copy)
    monkeypatch.setattr(hsaudit, "__version__", "99.0")
    provenance.code_version.cache_clear()
    assert versions(package_copy) == before
    # The number itself lives in pyproject.toml; the package only reads it from the installed metadata.
    assert not re.search(r"__version__\s*=\s*[\"'][0-9]+\.[0-9]", (package_copy / "__init__.py").read_text())


def test_git_state_outside_a_repository(tmp_path):
    assert provenance.git_state(tmp_path) == {"commit": None, "dirty": None, "describe": None}
    if shutil.which("git") and (REPO / ".git").exists():
        state = provenance.git_state(REPO)
        assert re.fullmatch(r"[0-9a-f]{40}", state["commit"]) and isinstance(state["dirty"], bool)


def test_model_registry_edits_retrain_and_the_reference_and_benchmarks_do_not(package_copy):
    """The registry (engine/models.py) and its torch modules (engine/architectures.py) are what every training job
    builds: editing them retrains; the Opacus reference (engine/reference.py, the tests' oracle) and the benchmarks
    (bench/) are imported by no job."""
    training = {"train_shard", "train_yoon_models", "craft_adversary", "train_one_run_shard", "train_steinke_shard",
                "make_setup"}
    for module in ("engine/models.py", "engine/architectures.py"):
        changed = changed_by(package_copy, module)
        assert training <= changed, (module, sorted(training - changed))
        assert not changed & {"audit_epsilon", "extract_scores", "prepare_data"}, (module, changed)
    edited = ["engine/reference.py", "experiments/cebere/reference.py",
              *(p.relative_to(package_copy).as_posix() for p in (package_copy / "bench").glob("*.py"))]
    assert changed_by(package_copy, *edited) == set()
