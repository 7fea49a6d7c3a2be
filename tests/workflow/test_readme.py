"""Every command that README.md shows in a ```bash block runs as written, so that a README edit that breaks one
fails the suite.

How a command runs depends on its first word (:func:`how`); a command this file does not know fails:
- ``snakemake``: in a copy of the session's smoke build of fig3 (conftest.fig3_built: the copy's config says
  ``scale: smoke``, so the README's own words run). fig3 and the report run for real; every other target is a dry
  run (``-n``), its real run being the business of the other workflow tests.
- ``hsaudit``: in-process (``hsaudit.cli.main``) in that copy, on small CSVs made here; ``bench`` lines are parsed
  only (they are benchmarks of minutes); ``audit-training`` runs every option as written but ``--runs``, which it
  caps at :data:`AUDIT_RUNS` (the README's R is its timing, 15-20 s each, not this test's), and the pilot of a chosen
  design at :data:`PILOT_RUNS`, trained in this process (``--jobs 1``: a worker would import torch and Opacus again);
  ``plan --few`` prices one training at :data:`FEW_SECONDS` instead of timing one (the example's laptop training,
  8 s of CPU, is its own test's at a tiny size: tests/experiments/byo/test_byo_cifar_example.py). ``a|b|c`` in a
  word stands for each of a, b, c.
- ``bash scripts/setup``: its syntax, and the extras it is given exist in pyproject.toml.
- ``.venv/bin/python -m pytest``: the command ``.ci/run`` runs, word for word.
"""

from __future__ import annotations

import itertools
import re
import shlex
import subprocess
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import REPO, copy_built, job_counts, package_env, run_snakemake

README = REPO / "README.md"


def readme_commands(text: str) -> list[str]:
    """The commands of ``text``'s ```bash blocks, each once (``.venv/bin/x`` is ``x``): one per line or per ``&&``, comments (`` # ...``, and
    lines that only continue a comment) left out, ``a|b`` words expanded into one command each."""
    commands = []
    for block in re.findall(r"^```bash\n(.*?)^```", text, flags=re.S | re.M):
        for line in block.splitlines():
            code = re.sub(r"(^|\s)#.*$", "", line).strip()
            for part in filter(None, (p.strip() for p in code.split("&&"))):
                words = [word.split("|") if "|" in word else [word] for word in shlex.split(part)]
                commands += [shlex.join(choice) for choice in itertools.product(*words)]
    once = {re.sub(r"^\.venv/bin/", "", command): command for command in reversed(commands)}
    return list(dict.fromkeys(once[re.sub(r"^\.venv/bin/", "", command)] for command in commands))


COMMANDS = readme_commands(README.read_text())


AUDIT_RUNS = 30
"""The runs per world of the README's ``hsaudit audit-training`` commands here (their flags run as written; the
report, its verdict's kind and its power line are those of R = 60)."""
PILOT_RUNS = 10
"""The runs per world of the pilot of a README command that leaves the design to it (no ``--canary``)."""
FEW_SECONDS = 1.0
"""The seconds of one training that a README ``hsaudit plan --few`` command prices with here."""


def how(command: str) -> str:
    """How the test runs ``command``: "setup", "pytest", "snakemake", "snakemake -n", "hsaudit", "parse"."""
    env, argv = _split_env(shlex.split(command))
    program = argv[0].removeprefix(".venv/bin/")
    if argv[:2] == ["bash", "scripts/setup"]:
        return "setup"
    if program == "python" and argv[1:3] == ["-m", "pytest"]:
        return "pytest"
    if program == "snakemake":
        real = argv[1:] == ["results/fig3.pdf"] or "--report" in argv
        return "snakemake" if real else "snakemake -n"
    if program == "hsaudit":
        return "parse" if argv[1] == "bench" else "hsaudit"
    raise AssertionError(f"README.md shows `{command}`, which this test does not know how to run: add it to how()")


def _split_env(words: list[str]) -> tuple[dict[str, str], list[str]]:
    """``["EXTRAS=dev", "bash", ...]`` → ({"EXTRAS": "dev"}, ["bash", ...])."""
    env = {}
    while words and re.match(r"^[A-Z_]+=", words[0]):
        key, _, value = words.pop(0).partition("=")
        env[key] = value
    return env, words


def test_the_readme_shows_the_commands_a_user_needs():
    """The parse finds the commands (it cannot pass on an empty list), each of every kind."""
    assert len(COMMANDS) >= 25, COMMANDS
    assert {how(c) for c in COMMANDS} == {"setup", "pytest", "snakemake", "snakemake -n", "hsaudit", "parse"}
    assert "snakemake --report results/report.html" in COMMANDS
    assert {"hsaudit bench audit --json", "hsaudit bench section6 --json"} <= set(COMMANDS)


def test_the_parse_reads_comments_chains_and_alternatives():
    text = "```bash\nA=1 bash scripts/setup && x --y  # a comment\n    # its continuation\nhsaudit b|c --d\n```\n"
    assert readme_commands(text) == ["A=1 bash scripts/setup", "x --y", "hsaudit b --d", "hsaudit c --d"]
    assert readme_commands("```bash\n.venv/bin/x --y\nx --y\n```\n```python\nz\n```\n") == [".venv/bin/x --y"]


@pytest.fixture(scope="module")
def readme_copy(fig3_built: Path, tmp_path_factory) -> Path:
    """A copy of the session's fig3 build with the files the README's commands name: scores.csv and
    canaries.csv (columns score, member), my.yaml and my-mnist.yaml (overlays as README.md and docs/yoon.md
    describe them), and the `slurm` link to the profile."""
    work = copy_built(fig3_built, tmp_path_factory.mktemp("readme") / "work")
    rng = np.random.default_rng(0)
    for name, n in (("scores.csv", 400), ("canaries.csv", 1000)):
        member = rng.integers(0, 2, n)
        pd.DataFrame({"score": rng.standard_normal(n) + 2.0 * member, "member": member}).to_csv(work / name, index=False)
    (work / "my.yaml").write_text("steinke:\n  fig2:\n    models_per_world: 1000\n")
    (work / "mnist").mkdir()
    (work / "my-mnist.yaml").write_text(
        f"yoon:\n  data:\n    mnist: {{source: local, path: {work / 'mnist'}}}\n"
        "    cifar10: {source: synthetic}\n    cifar100: {source: synthetic}\n"
    )
    (work / "slurm").symlink_to("profiles/slurm")
    return work


@pytest.mark.slow
@pytest.mark.xdist_group("fig3")
@pytest.mark.parametrize("command", [c for c in COMMANDS if how(c).startswith("snakemake")], ids=str)
def test_snakemake_command(readme_copy, command):
    argv = shlex.split(command)[1:]
    dry = how(command) == "snakemake -n"
    proc = run_snakemake(readme_copy, *argv, *(["-n"] if dry else []), env=package_env(readme_copy))
    if "--report" in argv:
        report = readme_copy / argv[argv.index("--report") + 1]
        assert report.stat().st_size > 100_000 and "fig3.pdf" in report.read_text(errors="replace")
    elif not dry:
        assert job_counts(proc.stdout) == {}, proc.stdout  # the session's build is this command's
    else:  # a dry run plans the jobs, or finds fig3's done
        assert re.search(r"This was a dry-run|Nothing to be done", proc.stdout), proc.stdout


_JOB_START: list[float] = []


@pytest.mark.xdist_group("fig3")
@pytest.mark.parametrize("command", [c for c in COMMANDS if how(c) in ("hsaudit", "parse")], ids=str)
def test_hsaudit_command(readme_copy, command, monkeypatch, capsys):
    from hsaudit.cli import build_parser, main

    argv = shlex.split(command)[1:]
    if argv[0] == "audit-training" and "--runs" in argv:
        at = argv.index("--runs") + 1
        argv[at] = str(min(int(argv[at]), AUDIT_RUNS))
        if not {"--canary", "--background", "--pilot-runs"} & set(argv):
            argv += ["--pilot-runs", str(PILOT_RUNS)]
        if "--jobs" not in argv:
            argv += ["--jobs", "1"]
    if argv[0] == "plan" and "--few" in argv and "--seconds-per-training" not in argv:
        argv += ["--seconds-per-training", str(FEW_SECONDS)]
    if argv[0] == "plan":  # a job's start (a fresh interpreter importing torch: ~2 s of CPU) is timed once per module
        from hsaudit.experiments.byo import api, price

        real = api.job_start_seconds
        once = lambda: _JOB_START[0] if _JOB_START else _JOB_START.append(real()) or _JOB_START[0]  # noqa: E731
        monkeypatch.setattr(api, "job_start_seconds", once)
        monkeypatch.setattr(price, "job_start_seconds", once)
    monkeypatch.chdir(readme_copy)
    if how(command) == "parse":
        args = build_parser(argv).parse_args(argv)
        assert callable(args.func)
        return
    assert main(argv) == 0, capsys.readouterr().err
    assert capsys.readouterr().out.strip()


@pytest.mark.parametrize("command", [c for c in COMMANDS if how(c) == "setup"])
def test_setup_command(command):
    env, argv = _split_env(shlex.split(command))
    assert subprocess.run(["bash", "-n", argv[1]], cwd=REPO).returncode == 0
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert set(env.get("EXTRAS", "dev").split(",")) <= set(extras), env


@pytest.mark.parametrize("command", [c for c in COMMANDS if how(c) == "pytest"])
def test_test_command_is_what_ci_runs(command):
    """CI's first pytest line is README's command; any after it run the optional extras' tests in their own
    environment (.venv-libs), never the main suite again."""
    ci = [line.strip() for line in (REPO / ".ci" / "run").read_text().splitlines() if " -m pytest" in line]
    assert ci[0] == command, ci
    assert all(line.startswith(".venv-libs/bin/python -m pytest -n 0 tests/") for line in ci[1:]), ci
