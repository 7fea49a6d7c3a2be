"""`--profile slurm` against a real single-node SLURM cluster (scripts/slurm-local.sh), and the profile itself.

The cluster tests skip, with the reason, when SLURM is not installed or cannot be started (not root). CI installs
and starts it first (`bash scripts/slurm-local.sh start`). Every Snakemake run is wrapped in an outer
`timeout -s KILL`: a broken status check hangs rather than fails (docs/journal/cluster.md, "Status checks (the trap)").
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from conftest import REPO, snakemake_exe
from hsaudit.pipeline import provenance

# A figure of two jobs in a chain (compute, plot): every level costs a status-poll cycle (≈ 11 s and more, the jobs
# themselves take ≈ 7 s with Snakemake's start inside the job), so the 4-level smoke fig3 took 61-86 s idle
# (2026-11-26) against 28 s for this one; the DAG's other shapes are the local executor's tests.
TARGET = "results/steinke/fig1.pdf"
# Outer SIGKILL, a hang guard: the smoke fig3 took ~1 min on an idle 2-core node, 3.5-5 min under load 11.
RUN_LIMIT_S = 420

EXTRA_RULES = """

# Test-only rules (tests/workflow/test_slurm.py): one that succeeds, one that fails on the compute node.
rule ok_on_purpose:
    output:
        "results/ok.txt",
    log:
        "results/logs/ok.log",
    shell:
        "echo ok > {output}; echo job $SLURM_JOB_ID > {log}"


rule fail_on_purpose:
    output:
        "results/fail.txt",
    log:
        "results/logs/fail.log",
    shell:
        "echo failing on purpose in job $SLURM_JOB_ID > {log}; exit 3"
"""


def test_profile_link_and_settings():
    """`--profile slurm` resolves from the repository root through the committed link ./slurm -> profiles/slurm."""
    link = REPO / "slurm"
    assert link.is_symlink() and os.readlink(link) == "profiles/slurm"
    profile = yaml.safe_load((REPO / "profiles" / "slurm" / "config.yaml").read_text())
    assert profile["executor"] == "slurm"
    assert profile["slurm-status-command"] == "squeue"  # works without slurmdbd (see the profile's comments)
    assert profile["default-resources"]["slurm_partition"]
    assert "gpu" not in profile["default-resources"]  # CPU rules never ask for a GPU


def test_profile_resolves_in_a_dry_run(workflow_copy):
    work = workflow_copy
    (work / "slurm").symlink_to("profiles/slurm")
    proc = subprocess.run([snakemake_exe(), "-n", TARGET, "--profile", "slurm", "--config", "scale=smoke"],
                          cwd=work, capture_output=True, text=True, timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert re.search(r"Using profiles? slurm and workflow specific profile profiles/default", out), out
    assert "slurm_partition=debug" in out


# ------------------------------------------------------------------------------------------- real cluster


def _start_cluster() -> None:
    if shutil.which("sinfo") is None or shutil.which("slurmctld") is None:
        pytest.skip("SLURM is not installed (no sinfo/slurmctld); CI installs it: bash scripts/slurm-local.sh start")
    proc = subprocess.run(["bash", str(REPO / "scripts" / "slurm-local.sh"), "status"], capture_output=True)
    if proc.returncode != 0:
        if os.geteuid() != 0:
            pytest.skip("no SLURM node answers and starting one needs root (bash scripts/slurm-local.sh start)")
        proc = subprocess.run(["bash", str(REPO / "scripts" / "slurm-local.sh"), "start"], capture_output=True,
                              text=True, timeout=300)
        if proc.returncode != 0:
            pytest.skip(f"scripts/slurm-local.sh start failed: {proc.stderr.strip()[-500:]}")
    parts = subprocess.run(["sinfo", "-h", "-o", "%R"], capture_output=True, text=True).stdout.split()
    if "debug" not in parts:
        pytest.skip(f"the profile's partition 'debug' is not on this cluster (partitions: {parts})")


@pytest.fixture(scope="module")
def cluster() -> None:
    _start_cluster()


@pytest.fixture
def slurm_copy(workflow_copy: Path, cluster, monkeypatch) -> Path:
    work = workflow_copy
    # Import the package from a private copy (jobs inherit the environment: sbatch --export=ALL), so that edits
    # to the checkout during the test cannot change the code version and rerun jobs.
    shutil.copytree(provenance.package_dir(), work / "_pkg" / "hsaudit")  # byte-code too, as copy_workflow
    monkeypatch.setenv("PYTHONPATH", str(work / "_pkg"))
    (work / "slurm").symlink_to("profiles/slurm")
    with open(work / "Snakefile", "a") as fh:
        fh.write(EXTRA_RULES)
    return work


# The plugin checks job states first after the profile's delay (10 s), then backs off by 10 s after every check that
# finds nothing finished; the local cluster's jobs take seconds, so the tests poll from 1 s (the profile's value is
# checked in test_profile_link_and_settings; a real cluster keeps it).
STATUS_FAST = ("--slurm-init-seconds-before-status-checks", "1")


def run_slurm(work: Path, *args: str, limit: float = RUN_LIMIT_S) -> tuple[int, str, float]:
    """`snakemake --profile slurm ARGS` under `timeout -s KILL`; returns (exit status, output, seconds)."""
    start = time.monotonic()
    proc = subprocess.run(
        ["timeout", "-s", "KILL", str(int(limit)), snakemake_exe(), "--profile", "slurm", *STATUS_FAST, *args],
        cwd=work, capture_output=True, text=True, env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )
    return proc.returncode, proc.stdout + proc.stderr, time.monotonic() - start


def job_ids(output: str) -> list[str]:
    return re.findall(r"submitted with SLURM jobid (\d+)", output)


def slurm_states(ids: list[str]) -> dict[str, str]:
    """Job states as SLURM records them (squeue keeps finished jobs for MinJobAge; sacct where it works)."""
    proc = subprocess.run(["squeue", "-h", "-t", "all", "-o", "%i %T", "-j", ",".join(ids)], capture_output=True,
                          text=True, timeout=30)
    states = dict(line.split() for line in proc.stdout.splitlines() if line.strip())
    missing = [i for i in ids if i not in states]
    if missing:
        proc = subprocess.run(["sacct", "-n", "-X", "-P", "-o", "JobIDRaw,State", "-j", ",".join(missing)],
                              capture_output=True, text=True, timeout=30)
        if proc.returncode == 0:
            states.update(line.split("|")[:2] for line in proc.stdout.splitlines() if "|" in line)
    return states


@pytest.mark.slurm
@pytest.mark.slow
def test_smoke_figure_through_slurm_beside_a_failing_job(slurm_copy):
    """A smoke figure and a job that fails on its compute node, in one `--keep-going` run: the figure's jobs all go
    through sbatch and complete, the failure is reported with its SLURM state and log, and the run fails cleanly.
    One run, not two: after a failed job the plugin's status interval has grown (+10 s per check that saw no job
    complete) and Snakemake's shutdown waits it out (≈ 21 s of a 34 s run with the failing job alone)."""
    work = slurm_copy
    rc, out, seconds = run_slurm(work, "--keep-going", TARGET, "results/fail.txt", "--config", "scale=smoke")
    assert rc not in (0, 124, 137), f"exit {rc} after {seconds:.0f} s (137: the outer timeout):\n{out[-4000:]}"
    # The failing job: its SLURM state, its own log written on the compute node, no output.
    assert "Error in rule fail_on_purpose" in out, out[-4000:]
    failed = re.search(r"SLURM-job '(\d+)' failed", out).group(1)
    assert slurm_states([failed]).get(failed) == "FAILED"
    assert "failing on purpose in job " + failed in (work / "results/logs/fail.log").read_text()
    assert not (work / "results/fail.txt").exists()
    # The figure, built beside it: every job through sbatch, each COMPLETED.
    assert (work / TARGET).stat().st_size > 0 and (work / "results/steinke/fig1.csv").stat().st_size > 0
    ids = [i for i in job_ids(out) if i != failed]
    dry = subprocess.run([snakemake_exe(), "-n", TARGET, "--config", "scale=smoke", "--forceall"], cwd=work,
                         capture_output=True, text=True, timeout=120)
    total = int(re.search(r"^total\s+(\d+)", dry.stdout + dry.stderr, re.M).group(1))
    assert len(ids) == total, out  # every job went through sbatch
    states = slurm_states(ids)
    assert states and set(states.values()) == {"COMPLETED"}, states
    # SLURM's own log of each job is kept (profile: slurm-keep-successful-logs), named by its job id.
    logs = {p.stem for p in (work / ".snakemake" / "slurm_logs").rglob("*.log")}
    assert set(ids) | {failed} <= logs
    # Nothing is left to submit for the figure.
    rc, out, _ = run_slurm(work, "-n", TARGET, "--config", "scale=smoke", limit=120)
    assert rc == 0 and "Nothing to be done" in out, out[-3000:]


@pytest.mark.slurm
@pytest.mark.slow
@pytest.mark.parametrize(
    ("resource", "message"),
    [
        ("slurm_partition=nosuchpartition", "invalid partition specified: nosuchpartition"),
        ("gpu=1", "Invalid generic resource (gres) specification"),
    ],
    ids=["unknown-partition", "gpu-on-cpu-cluster"],
)
def test_bad_resources_give_sbatchs_message(slurm_copy, resource, message):
    """Documented plugin behaviour: sbatch's refusal is reported (`SLURM sbatch failed ...`) and the run ends."""
    if resource.startswith("gpu") and "gpu" in subprocess.run(["sinfo", "-h", "-o", "%G"], capture_output=True,
                                                               text=True).stdout:
        pytest.skip("this cluster has GPUs")
    rc, out, seconds = run_slurm(work := slurm_copy, "results/ok.txt", "--set-resources", f"ok_on_purpose:{resource}",
                                 limit=120)
    assert rc not in (0, 124, 137), f"exit {rc} after {seconds:.0f} s:\n{out[-3000:]}"
    assert "SLURM sbatch failed" in out and message in out, out[-3000:]
    assert not (work / "results/ok.txt").exists()
