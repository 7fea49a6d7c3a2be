"""Partial reruns: what Snakemake redoes after a parameter change, a package-code change, or an interruption.

Code versions themselves are tested in tests/pipeline/test_provenance.py; the workflow tests here run
the Section 6 fig3 target at smoke scale in a private copy of the workflow and assert on `snakemake -n` output.
The package-code test imports the package from a private copy (PYTHONPATH) so it can edit a module safely.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from conftest import FIG3, copy_built, job_counts, package_env, run_snakemake, snakemake_exe

# fig3 is built at smoke scale by its copy's config (conftest.fig3_built): the commands below run as written.
TARGET = FIG3


# ------------------------------------------------------------------------------------------------ workflow


def dry(work: Path, *args: str) -> str:
    """Output (stdout and stderr) of `snakemake -n ARGS`."""
    proc = run_snakemake(work, "-n", *args)
    return proc.stdout + proc.stderr


def planned_reasons(output: str) -> dict[str, str]:
    """{output file: reason} of every job block (`rule X:` ... `output:` ... `reason:`) of a dry run."""
    reasons = {}
    for block in re.split(r"^(?:local)?rule \w+:$", output, flags=re.M)[1:]:
        outs = re.search(r"^\s+output: (.+)$", block, re.M)
        why = re.search(r"^\s+reason: (.+)$", block, re.M)
        if outs:
            for path in outs.group(1).split(","):
                reasons[path.strip()] = why.group(1) if why else ""
    return reasons


def _set_smoke(work: Path, **section6) -> None:
    path = work / "config" / "config.yaml"
    config = yaml.safe_load(path.read_text())
    for key, value in section6.items():
        config["scales"]["smoke"]["section6"][key] = value
    path.write_text(yaml.safe_dump(config, sort_keys=False))


@pytest.fixture
def built_copy(fig3_built: Path, tmp_path: Path, monkeypatch) -> Path:
    """A copy of the session's fig3 build (conftest.fig3_built) using its own package copy."""
    work = copy_built(fig3_built, tmp_path / "work")
    monkeypatch.setenv("PYTHONPATH", package_env(work)["PYTHONPATH"])
    return work


@pytest.mark.slow
@pytest.mark.xdist_group("fig3")
def test_parameter_change_reruns_only_its_jobs(built_copy):
    work = built_copy
    assert job_counts(dry(work, TARGET)) == {}
    # The exact law's grid is a parameter of compute_exact_law only.
    _set_smoke(work, exact={"cells_per_clip": 21, "cells_per_sd": 10})
    out = dry(work, TARGET)
    assert job_counts(out) == {"compute_section6_exact_law": 2, "plot_section6_fig3": 1}, out
    assert "Params have changed" in out
    # The literal rule's R is a parameter of the literal audits only (plus their Clopper–Pearson table).
    _set_smoke(work, exact={"cells_per_clip": 20, "cells_per_sd": 10}, literal_runs_per_world=1000)
    counts = job_counts(dry(work, TARGET))
    assert counts == {"audit_section6_process": 2, "tabulate_section6_cp": 1, "plot_section6_fig3": 1}, counts


@pytest.mark.slow
@pytest.mark.xdist_group("fig3")
def test_package_code_change_reruns_dependent_jobs(built_copy):
    work = built_copy
    # A copy of the package elsewhere has the same code version: nothing to do.
    assert job_counts(dry(work, TARGET)) == {}
    with open(work / "_pkg" / "hsaudit" / "experiments" / "section6" / "process.py", "a") as fh:
        fh.write("\n_EDITED = True  # an edit that changes the source hash\n")
    out = dry(work, TARGET)
    counts = job_counts(out)
    assert counts.get("audit_section6_process") == 4 and counts.get("plot_section6_fig3") == 1, out
    assert "Params have changed" in out, out


@pytest.mark.slow
@pytest.mark.xdist_group("fig3")
def test_script_files_rerun_by_their_code_not_their_mtime(built_copy):
    """A checkout, a pull or a comment edit rewrites a script's mtime: nothing reruns (Snakemake's `code` trigger,
    which reruns a script rule whose file is newer than its outputs, is left out of the profile; the rules'
    ``code_version`` covers the script's code). An edit to the script's code reruns its jobs."""
    work = built_copy
    later = time.time() + 60
    for script in (work / "workflow" / "scripts").glob("*.py"):
        os.utime(script, (later, later))
    assert job_counts(dry(work, TARGET)) == {}
    script = work / "workflow" / "scripts" / "audit_section6_process.py"
    script.write_text(script.read_text() + "\n# a comment: no code changes\n")
    assert job_counts(dry(work, TARGET)) == {}
    script.write_text(script.read_text() + "\n_EDITED = True\n")
    counts = job_counts(dry(work, TARGET))
    assert counts.get("audit_section6_process") == 4 and counts.get("plot_section6_fig3") == 1, counts


def test_every_script_rule_carries_a_code_version():
    """The profile leaves Snakemake's `code` trigger out, so each rule that runs a script must rerun through its
    ``params: code_version=script_version(...)`` (of that very script)."""
    rules = Path(__file__).resolve().parents[2] / "workflow" / "rules"
    for path in rules.glob("*.smk"):
        for block in re.split(r"^(?=(?:rule|checkpoint) \w+:)", path.read_text(), flags=re.M)[1:]:
            name = block.split(":", 1)[0]
            script = re.search(r"^    script:\n\s+\"\.\./scripts/(\w+)\.py\"", block, re.M)
            if script is None:
                continue
            assert re.search(rf"code_version=script_version\(\s*\"{script.group(1)}\"", block), (path.name, name)
    profile = yaml.safe_load((rules.parents[1] / "profiles" / "default" / "config.yaml").read_text())
    assert "code" not in profile["rerun-triggers"] and "params" in profile["rerun-triggers"]


@pytest.mark.slow
@pytest.mark.xdist_group("fig3")
def test_interrupted_run_redoes_only_unfinished_jobs(built_copy):
    """Kill Snakemake (SIGKILL, the whole process group) mid-run; then only the unfinished jobs are planned."""
    work = built_copy
    # A new R reruns the 4 audits; larger, so that the kill lands between jobs.
    _set_smoke(work, runs_per_world=20000)
    for path in (work / "results/section6/audit").rglob("*.csv"):
        path.unlink()
    outputs = [work / "results/section6/audit" / r / f"sigma{s}.csv" for r in ("divergent", "literal")
               for s in ("1", "8")]
    log = open(work / "killed-run.log", "w")
    proc = subprocess.Popen([snakemake_exe(), "--cores", "1", TARGET], cwd=work, start_new_session=True,
                            stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 240
    try:
        while sum(p.exists() for p in outputs) < 2 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    log.close()
    assert proc.returncode in (0, -signal.SIGKILL), (work / "killed-run.log").read_text()[-3000:]
    done = {str(p.relative_to(work)) for p in outputs if p.exists()}
    if not done or len(done) == len(outputs):
        pytest.skip(f"the kill did not land mid-run ({len(done)} of {len(outputs)} audits done)")
    run_snakemake(work, "--unlock")
    out = dry(work, TARGET)  # profiles/default sets rerun-incomplete
    reasons = planned_reasons(out)
    missing = {str(p.relative_to(work)) for p in outputs if not p.exists()}
    assert missing <= set(reasons), out
    # Finished jobs are not redone, unless Snakemake had not yet recorded them as finished when it was killed:
    # those are incomplete and `--rerun-incomplete` redoes them ("Forced execution").
    incomplete = {o for o in done if re.match(r"Incomplete|Forced", reasons.get(o, ""))}
    redone = (done & set(reasons)) - incomplete
    # With --cores 1 at most one job was running when the kill came.
    assert len(incomplete) <= 1 and len(done - incomplete) >= 1, reasons
    assert not redone, out
    run_snakemake(work, TARGET, timeout=300)
    assert job_counts(dry(work, TARGET)) == {}


@pytest.mark.slow
@pytest.mark.xdist_group("housing")
def test_an_estimator_edit_never_retrains(housing_built, tmp_path, monkeypatch):
    """A trained-model figure built (Housing fig1c, smoke: a copy of conftest.housing_built), append a comment to
    audit/gdp.py: audits and plots rerun, nothing that prepares data or trains; an edit to the DP-SGD engine then
    retrains (the reverse)."""
    work = copy_built(housing_built, tmp_path / "work")
    pkg = work / "_pkg" / "hsaudit"
    monkeypatch.setenv("PYTHONPATH", package_env(work)["PYTHONPATH"])
    target = "results/fig1c.pdf"
    assert job_counts(dry(work, target)) == {}

    with open(pkg / "audit" / "gdp.py", "a") as fh:
        fh.write("\n_EDITED = True  # an estimator edit\n")
    out = dry(work, target)
    counts = job_counts(out)
    assert counts.get("audit_epsilon") and counts.get("plot_cebere_fig1c") == 1, out
    trains = [rule for rule in counts if rule.startswith(("train_", "prepare_", "craft_", "make_"))]
    assert trains == [], out

    with open(pkg / "engine" / "dpsgd.py", "a") as fh:
        fh.write("\n_EDITED = True  # an engine edit\n")
    counts = job_counts(dry(work, target))
    assert counts.get("train_shard") == 3 and counts.get("plot_cebere_fig1c") == 1, counts
