"""The warm job runner (hsaudit.pipeline.warm): a script run through ``workflow/warm-python`` behaves as the real
interpreter would run it (streams, exit status, working directory, environment, the package from its own path),
only with the heavy libraries already imported; anything else, or a missing server, runs the real interpreter."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import pytest

from conftest import REPO, warm_server
from hsaudit.pipeline import warm

WRAPPER = REPO / "workflow" / warm.WRAPPER

SCRIPT = """\
import os, sys
warm = "torch" in sys.modules  # before this script imports anything heavy
import hsaudit
print("out", os.getcwd(), os.environ.get("JOB_VALUE"), hsaudit.MARK, warm, sys.argv[0].endswith("job.py"))
print("err line", file=sys.stderr)
sys.exit(int(os.environ.get("JOB_STATUS", "0")))
"""


@pytest.fixture(scope="module")
def server() -> str:
    sock = warm_server() or pytest.skip("HSAUDIT_TEST_WARM=0: no warm server")
    return sock


@pytest.fixture
def job(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A script and an environment whose PYTHONPATH holds a stand-in ``hsaudit`` package (MARK = 'copy')."""
    (tmp_path / "pkg" / "hsaudit").mkdir(parents=True)
    (tmp_path / "pkg" / "hsaudit" / "__init__.py").write_text("MARK = 'copy'\n")
    (tmp_path / "cwd").mkdir()
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(tmp_path / "pkg"), "JOB_VALUE": "v1"}
    return script, env


def run(script: Path, env: dict[str, str], cwd: Path, *, sock: str | None, **extra) -> subprocess.CompletedProcess:
    env = {**env, **extra, warm.REAL_PYTHON_ENV: sys.executable, warm.CLIENT_ENV: warm.__file__}
    if sock:
        env[warm.SOCKET_ENV] = sock
    return subprocess.run([str(WRAPPER), str(script)], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)


def test_a_script_runs_as_the_real_interpreter_would_with_the_libraries_loaded(server, job, tmp_path):
    script, env = job
    cold = subprocess.run([sys.executable, str(script)], cwd=tmp_path / "cwd", env=env, capture_output=True, text=True)
    hot = run(script, env, tmp_path / "cwd", sock=server)
    assert cold.returncode == hot.returncode == 0, (cold.stderr, hot.stderr)
    assert cold.stdout == f"out {tmp_path / 'cwd'} v1 copy False True\n"  # the stand-in package, not the server's
    assert hot.stdout == cold.stdout.replace("False", "True")  # the same, with torch already imported
    assert hot.stderr == cold.stderr == "err line\n"


def test_exit_status_and_errors_come_back(server, job, tmp_path):
    script, env = job
    assert run(script, env, tmp_path, sock=server, JOB_STATUS="3").returncode == 3
    script.write_text("raise ValueError('boom')\n")
    failed = run(script, env, tmp_path, sock=server)
    assert failed.returncode == 1 and "ValueError: boom" in failed.stderr


def test_without_a_server_or_for_other_commands_the_real_interpreter_runs(job, tmp_path):
    script, env = job
    missing = run(script, env, tmp_path / "cwd", sock=str(tmp_path / "no-such-socket"))
    assert missing.returncode == 0 and missing.stdout.startswith("out ") and " False " in missing.stdout
    other = subprocess.run([str(WRAPPER), "-c", "import sys; print(sys.argv[1:])", "a"], capture_output=True,
                           text=True, env={**env, warm.REAL_PYTHON_ENV: sys.executable})  # fmt: skip
    assert other.stdout == "['a']\n", other.stderr


def _started(script: Path, body: str, env: dict[str, str], server: str, tmp_path: Path, *, body_after_pid=False):
    """Start ``body`` as a job through the wrapper (before it writes its pid, or after); (client process, the job's
    pid) once it runs."""
    pidfile = tmp_path / "pid"
    mark = f"open({str(pidfile)!r}, 'w').write(str(os.getpid()))"
    lines = [mark, body] if body_after_pid else [body, mark, "time.sleep(60)"]
    script.write_text("\n".join(["import os, signal, sys, time", *lines]) + "\n")
    env = {**env, warm.REAL_PYTHON_ENV: sys.executable, warm.CLIENT_ENV: warm.__file__, warm.SOCKET_ENV: server}
    client = subprocess.Popen([str(WRAPPER), str(script)], cwd=tmp_path, env=env)
    deadline = time.monotonic() + 30
    while not (pidfile.exists() and pidfile.read_text()):
        assert time.monotonic() < deadline and client.poll() is None
        time.sleep(0.05)
    pid = int(pidfile.read_text())
    assert pid != client.pid  # the job is the server's fork, not the client
    return client, pid


def test_signals_reach_the_job_and_a_killed_client_takes_its_job_along(server, job, tmp_path):
    script, env = job
    handler = "signal.signal(signal.SIGTERM, lambda *_: sys.exit(7))"
    client, _ = _started(script, handler, env, server, tmp_path)
    client.send_signal(signal.SIGTERM)  # passed on: the job's own handler decides the status
    assert client.wait(10) == 7
    client, pid = _started(script, "", env, server, tmp_path)
    client.kill()  # SIGKILL cannot be passed on: the server kills the job
    client.wait(10)
    deadline = time.monotonic() + 10
    while _alive(pid):
        assert time.monotonic() < deadline, "the job outlived its client"
        time.sleep(0.05)


def test_snakemake_runs_through_the_server(server, tmp_path):
    """``warm.py snakemake ARGS`` (the suite's ``snakemake``) is Snakemake, forked: the same dry run as a cold one."""
    (tmp_path / "Snakefile").write_text('rule all:\n    output: "x.txt"\n    shell: "touch {output}"\n')
    env = {**os.environ, warm.SOCKET_ENV: server}
    cold = subprocess.run([str(Path(sys.executable).with_name("snakemake")), "-n", "--cores", "1"], cwd=tmp_path,
                          env=env, capture_output=True, text=True)  # fmt: skip
    hot = subprocess.run([sys.executable, "-I", "-S", warm.__file__, "snakemake", "-n", "--cores", "1"], cwd=tmp_path,
                         env=env, capture_output=True, text=True)  # fmt: skip
    assert cold.returncode == hot.returncode == 0, (cold.stderr, hot.stderr)
    assert "rule all:" in hot.stdout + hot.stderr and "This was a dry-run" in hot.stdout + hot.stderr
    bad = subprocess.run([sys.executable, "-I", "-S", warm.__file__, "snakemake", "--no-such-flag"], cwd=tmp_path,
                         env=env, capture_output=True, text=True)  # fmt: skip
    assert bad.returncode != 0 and "no-such-flag" in bad.stderr


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat")
    return not (status.exists() and status.read_text().split()[2] == "Z")


def test_enable_points_snakemake_at_the_wrapper_only_when_asked(monkeypatch):
    monkeypatch.setattr(sys, "executable", sys.executable)
    environ: dict[str, str] = {}
    assert not warm.enable(REPO / "workflow", environ) and environ == {}
    real = sys.executable
    environ[warm.SOCKET_ENV] = "/tmp/s"
    assert warm.enable(REPO / "workflow", environ)
    assert sys.executable == str(WRAPPER) and environ[warm.REAL_PYTHON_ENV] == real
    assert warm.enable(REPO / "workflow", environ) and environ[warm.REAL_PYTHON_ENV] == real  # idempotent


def test_the_server_never_imports_the_package():
    with pytest.raises(ValueError, match="must not import hsaudit"):
        warm.preload(("numpy", "hsaudit.audit"))


def test_the_client_needs_only_the_standard_library():
    code = textwrap.dedent(f"""
        import runpy, sys
        runpy.run_path({warm.__file__!r}, run_name="not_main")
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("numpy", "torch", "hsaudit", "pandas")))
    """)
    out = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout == "[]\n"


_WAKE_FIRST = """\
import selectors, sys
from hsaudit.pipeline import warm

class WakeFirst(selectors.DefaultSelector):
    # a legal order of one round's events that puts the SIGCHLD wake-up before the clients' events
    def select(self, timeout=None):
        return sorted(super().select(timeout), key=lambda event: event[0].data != "wake")

selectors.DefaultSelector = WakeFirst
warm.serve(sys.argv[1], modules=(), ready=sys.argv[2])
"""


def test_a_job_that_ends_as_its_client_dies_leaves_the_server_serving(job, tmp_path):
    """One round of the server's loop may report a job's exit (the SIGCHLD wake-up) before its client's hang-up: the
    job is reaped and its connection closed first, and the stale event must be skipped, not crash the server (CI
    once lost the suite's server this way, and every later job ran cold)."""
    _, env = job
    sock, ready, go = tmp_path / "s", tmp_path / "ready", tmp_path / "go"
    server = subprocess.Popen([sys.executable, "-c", _WAKE_FIRST, str(sock), str(ready)], stderr=subprocess.PIPE,
                              text=True, start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not ready.exists():
            assert server.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        body = f"while not os.path.exists({str(go)!r}):\n    time.sleep(0.01)\nsys.exit(0)"
        client, pid = _started(tmp_path / "job.py", body, env, str(sock), tmp_path, body_after_pid=True)
        os.kill(server.pid, signal.SIGSTOP)  # the job's end and its client's hang-up wait for the same round
        try:
            go.touch()
            deadline = time.monotonic() + 10
            while Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z":  # ended, not yet reaped
                assert time.monotonic() < deadline
                time.sleep(0.01)
            client.kill()
            client.wait(10)
        finally:
            os.kill(server.pid, signal.SIGCONT)
        while Path(f"/proc/{pid}").exists():  # the round that reaps it (and meets the hang-up) is done
            assert time.monotonic() < deadline
            time.sleep(0.01)
        go.unlink()
        (tmp_path / "pid").unlink()
        client, pid = _started(tmp_path / "job.py", body, env, str(sock), tmp_path, body_after_pid=True)
        go.touch()  # the server still serves: this job is its fork (checked by _started) and its status comes back
        assert client.wait(10) == 0 and server.poll() is None
    finally:
        go.touch()  # a job left waiting (a failed run of this test) ends
        server.terminate()
        assert server.wait(10) == 0, server.stderr.read()


def test_the_suites_server_found_dead_is_started_again_with_a_warning(server, job, tmp_path):
    """conftest.warm_server: a dead server is not left behind silently (every later job would run cold)."""
    pid = int(Path(server).with_name("ready").read_text())
    os.kill(pid, signal.SIGKILL)
    # Until its last thread is gone (torch's among them), the server is not yet reported dead: ask until it is.
    deadline = time.monotonic() + 10
    caught: list = []
    while not caught:
        assert time.monotonic() < deadline, "the killed server was never found dead"
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert warm_server() == server
        time.sleep(0.01)
    assert "the warm job server died (exit -9); started again" in str(caught[0].message)
    assert int(Path(server).with_name("ready").read_text()) != pid
    script, env = job
    hot = run(script, env, tmp_path / "cwd", sock=server)
    assert hot.returncode == 0 and hot.stdout.endswith(" copy True True\n"), hot.stderr
