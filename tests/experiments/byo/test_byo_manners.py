"""``hsaudit audit-training``'s manners: models trained in parallel processes give the rows of one process, an entry
file imports its sibling modules, an exception of the user's code says where it came from and shows that code's
traceback, and the outputs are those docs/byo.md lists."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
from dataclasses import replace

import pandas as pd
import pytest

from byo_testing import zoo_entry
from hsaudit.cli import main
from hsaudit.experiments.byo.api import PARALLEL_MIN_SECONDS, audit_training, default_jobs, train_all
from hsaudit.experiments.byo.train.errors import UserCodeError
from hsaudit.experiments.byo.train.harness import load_training, prepare
from hsaudit.experiments.byo.values import Design

pytestmark = pytest.mark.usefixtures("torch_one_thread")

ROWS = ["model", "member", "seed", "score"]

USER = """
import torch

def dataset():
    g = torch.Generator().manual_seed(0)
    return torch.randn(40, 3, generator=g), torch.randint(0, 2, (40,), generator=g)

CLAIM = dict(epsilon=3.0, delta=1e-5, noise_multiplier=3.0, max_grad_norm=1.0, sampling="poisson",
             sample_rate=0.5, steps=2, neighbouring="add-remove")

def train(data, seed):
    torch.manual_seed(seed)
    if seed == BAD:
        raise RuntimeError("Per sample gradient is not initialized")
    model = torch.nn.Linear(3, 2)
    with torch.no_grad():
        model.weight += 0.01 * torch.randn(2, 3) + 0.001 * data.tensors[0].mean()
    return model

def make():
    return dict(claim=CLAIM, train=train, dataset=dataset)
"""


def _entry(tmp_path, bad: int = -1) -> str:
    path = tmp_path / "user.py"
    path.write_text(textwrap.dedent(USER).replace("BAD", str(bad)))
    return f"{path}:make"


def test_parallel_jobs_give_the_rows_of_one(tmp_path):
    """Two workers (forked from the server), each preparing the training once and training several blocks of a finer split (8 blocks
    of a per-seed ``train``), give exactly one process's rows, in order."""
    prepared = prepare(Design(entry=_entry(tmp_path), canary="mislabelled", runs=6, seed=3))
    one = train_all(prepared, jobs=1)
    two = train_all(prepared, jobs=2)
    assert len(one) == prepared.design.models
    pd.testing.assert_frame_equal(one[ROWS], two[ROWS], check_exact=True)


def test_the_workers_server_preloads_the_fork_safe_libraries_the_entry_imports(tmp_path):
    """The server that forks the workers imports the harness and, of the entry's top-level imports (read, not run),
    the fork-safe libraries that are installed: not the user's own modules, not a library outside FORK_SAFE, not
    a relative import; an entry that cannot be read preloads the harness alone."""
    from hsaudit.experiments.byo.train.pool import FORK_SAFE, WORKER_MODULE, entry_imports, preload

    path = tmp_path / "user.py"
    path.write_text("import os, json\nimport scipy.stats\nfrom opacus import PrivacyEngine\nimport mine\n"
                    "from . import sibling\n\ndef make():\n    import sklearn\n")  # fmt: skip
    assert entry_imports(f"{path}:make") == ["json", "mine", "opacus", "os", "scipy"]
    assert {"opacus", "scipy"} <= set(FORK_SAFE) and "mine" not in FORK_SAFE
    assert preload(f"{path}:make") == [WORKER_MODULE, "opacus", "scipy"]
    assert preload(f"{tmp_path / 'absent.py'}:make") == preload(None) == [WORKER_MODULE]


def test_blocks_of_any_split_give_the_same_rows():
    """In-process, the finer splits the workers train (one block per shard of a design with more shards) add up to
    the whole, bit for bit."""
    prepared = prepare(Design(entry=zoo_entry("correct"), canary="dirac", background="blank", runs=7, seed=5))
    whole = train_all(prepared, jobs=1)
    for shards in ([0, 1, 2], [2, 0]):
        split = prepare(Design(**{**prepared.design.to_dict(), "shards": 3}), found=prepared.probe,
                        canary=prepared.canary)  # fmt: skip
        parts = train_all(split, jobs=1, shards=shards).set_index("model")
        pd.testing.assert_frame_equal(parts[ROWS[1:]], whole.set_index("model").loc[parts.index, ROWS[1:]],
                                      check_exact=True)  # fmt: skip
    with pytest.raises(ValueError, match="jobs must be a positive integer, got 0"):
        train_all(prepared, jobs=0)


def test_the_default_jobs_are_the_cores_unless_the_training_is_short():
    prepared = prepare(Design(entry=zoo_entry("correct"), canary="out_of_support", runs=5))
    short = PARALLEL_MIN_SECONDS / prepared.design.models / 2
    assert default_jobs(replace(prepared, probe=replace(prepared.probe, seconds=short))) == 1
    assert default_jobs(replace(prepared, probe=replace(prepared.probe, seconds=4 * short))) == os.cpu_count()


def test_an_entry_file_imports_its_sibling_modules(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "path", list(sys.path))
    (tmp_path / "mine_for_hsaudit.py").write_text("EPSILON = 3.0\n")
    user = textwrap.dedent(USER).replace("BAD", "-1").replace("epsilon=3.0", "epsilon=mine_for_hsaudit.EPSILON")
    (tmp_path / "entry.py").write_text("import mine_for_hsaudit\n" + user)
    assert load_training(f"{tmp_path / 'entry.py'}:make").claim.epsilon == 3.0
    assert sys.path[0] == str(tmp_path) and sys.path.count(str(tmp_path)) == 1


def test_a_users_exception_names_its_function_seed_model_and_line(tmp_path):
    bad = Design(entry="user.py:make", canary="mislabelled", runs=6, seed=1).model_seed(5)
    design = Design(entry=_entry(tmp_path, bad=bad), canary="mislabelled", runs=6, seed=1)
    with pytest.raises(UserCodeError) as caught:
        audit_training(design, jobs=1)
    err = caught.value
    world = "with the canary" if design.bits([5])[0] else "without the canary"
    message = str(err)
    assert message.startswith("your train() raised RuntimeError: Per sample gradient is not initialized")
    assert f"seed {bad}" in message and f"model 5 of 12, world {world}" in message and design.entry in message
    text = err.full()
    assert str(tmp_path / "user.py") in text and 'raise RuntimeError("Per sample gradient' in text
    assert "harness.py" not in text and "api.py" not in text  # hsaudit's own frames are left out


def test_the_cli_prints_a_users_traceback_and_keeps_one_line_errors(tmp_path, capsys):
    entry = _entry(tmp_path, bad=Design(entry="user.py:make", canary="out_of_support", runs=6).model_seed(0))
    assert main(["audit-training", "--entry", entry, "--runs", "6", "--out", str(tmp_path / "o"), "--jobs", "1",
                 "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("hsaudit audit-training: error in your code: your train() raised RuntimeError")
    assert "model 0 of 12" in err and "Traceback of your code" in err and "raise RuntimeError(" in err
    assert main(["audit-training", "--entry", entry, "--runs", "6", "--jobs", "0"]) == 2  # hsaudit's own: one line
    assert capsys.readouterr().err == "hsaudit audit-training: error: --jobs must be >= 1, got 0\n"


def test_the_cli_writes_what_the_docs_list(tmp_path, capsys):
    out = tmp_path / "o"
    assert main(["audit-training", "--entry", _entry(tmp_path), "--runs", "6", "--canary", "mislabelled", "--out",
                 str(out), "--no-progress"]) == 0  # fmt: skip
    assert {p.name for p in out.iterdir()} == {"scores.csv", "control.csv", "report.json", "report.md", "fig.pdf", "fig.csv"}
    report = (out / "report.md").read_text()
    assert "one direction |" in report and "direction(s)" not in report


WATCH = """
import ctypes, json, os, subprocess, sys
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans become this process's
child = subprocess.run(sys.argv[1:], capture_output=True, text=True)
left = []  # processes of the command alive when it ended: reparented here (alive, or exited since: zombies)
for stat in os.listdir("/proc"):
    try:
        with open(f"/proc/{stat}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, ValueError):
        continue
    if stat.isdigit() and int(fields[1]) == os.getpid():
        left.append(int(stat))
print(json.dumps({"code": child.returncode, "out": child.stdout, "err": child.stderr, "left": left}))
"""
"""Runs a command as its child and lists the processes of that command still alive when the command ended: a
subreaper inherits every orphan, so what outlived the command is its child after the command's end."""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a child subreaper is Linux's (prctl)")
def test_no_process_of_a_parallel_audit_outlives_the_cli(tmp_path):
    """``--jobs 2`` starts a server that forks the workers, its workers and multiprocessing's resource tracker: all of
    them have ended when the command's process ends, which it ends itself (past Python's finalisation) with its
    output flushed into the pipe."""
    import json

    argv = [sys.executable, "-m", "hsaudit", "audit-training", "--entry", _entry(tmp_path), "--runs", "6",
            "--canary", "mislabelled", "--jobs", "2", "--no-control", "--no-progress", "--out", str(tmp_path / "o")]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # its output buffered, as in a pipe
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    watch = subprocess.run([sys.executable, "-c", WATCH, *argv], env=env, capture_output=True, text=True, timeout=120)
    found = json.loads(watch.stdout)
    for pid in found["left"]:  # not to disturb the tests that follow
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    assert found["code"] == 0, found["err"]
    assert (tmp_path / "o" / "scores.csv").exists() and found["out"].startswith("verdict: ")  # it trained, printed
    assert found["left"] == [] and "leaked" not in found["err"] and "Exception ignored" not in found["err"]
