"""A warm job runner for local runs of many small jobs: Snakemake's Python ``script:`` jobs are forked from one process
that has the heavy third-party libraries (torch, numpy, scipy, pandas, matplotlib, seaborn, Snakemake's script
support) imported already, instead of each job paying ≈ 1–2 s to import them (docs/journal/benchmarks.md).

How it fits together:

- ``python -m hsaudit.pipeline.warm serve SOCKET`` starts the server (:func:`serve`). It imports the libraries, never
  ``hsaudit`` itself: each job imports the package afresh from its own ``PYTHONPATH``, so a job's code is exactly what a
  cold job would run (the code-version rule, docs/architecture.md).
- With ``HSAUDIT_WARM_SOCKET=SOCKET`` in its environment, the Snakefile points ``sys.executable`` at
  ``workflow/warm-python`` (:func:`enable`): Snakemake runs a script job as ``<sys.executable> <script>``, and that
  wrapper hands a single Snakemake script to the server (:func:`client`); any other command, or a server that does
  not answer, runs the real interpreter unchanged.
- The client sends its working directory, environment, arguments and its stdin/stdout/stderr; the server forks, the
  child takes them over and runs the script as ``__main__``, and the client exits with the child's status. A client
  that dies (Snakemake cancelling the job) takes its job with it.

Snakemake's ``benchmark:`` files of a warm job keep its wall time, but their CPU and memory columns measure the client
(the job is not its child): use cold runs to measure a job's resources.

This module imports only the standard library at the top: the client runs it with ``python -I -S`` (≈ 30 ms to
start and load this module, measured idle).
"""

from __future__ import annotations

import importlib
import json
import os
import selectors
import signal
import socket
import struct
import sys
from pathlib import Path

PRELOAD = (
    "numpy",
    "scipy.special",
    "scipy.stats",
    "scipy.optimize",
    "scipy.signal",
    "pandas",
    "yaml",
    "torch",
    "torch.nn.functional",
    "torch.func",
    "torch.optim",
    "torch._dynamo",  # an optimiser's constructor imports it (≈ 2 s): every crafting and Yoon job
    "dp_accounting",
    "dp_accounting.pld",
    "dp_accounting.rdp",
    "matplotlib",
    "matplotlib.pyplot",
    "matplotlib.backends.backend_pdf",
    "fontTools.subset",  # the PDF backend's font subsetting, imported at the first savefig
    "seaborn",
    "tqdm",
    "snakemake.script",
    "snakemake.iocontainers",
    "snakemake.cli",
    "snakemake.api",
)
"""Imported once by the server (each one that is installed). Never ``hsaudit``: jobs import it afresh."""

SOCKET_ENV = "HSAUDIT_WARM_SOCKET"
REAL_PYTHON_ENV = "HSAUDIT_REAL_PYTHON"
CLIENT_ENV = "HSAUDIT_WARM_CLIENT"
WRAPPER = "warm-python"
"""The wrapper's file name beside the rules (``workflow/warm-python``)."""

_STATUS = struct.Struct("!i")


def enable(workflow_dir: str | os.PathLike, environ=os.environ) -> bool:
    """In the Snakemake process: when ``HSAUDIT_WARM_SOCKET`` is set, route Python script jobs through the server
    (``sys.executable`` becomes ``workflow_dir/warm-python``; the real interpreter is kept in the environment the
    jobs inherit). Returns whether it did. Idempotent."""
    if not environ.get(SOCKET_ENV):
        return False
    wrapper = Path(workflow_dir) / WRAPPER
    if not os.access(wrapper, os.X_OK):
        raise FileNotFoundError(f"{SOCKET_ENV} is set but {wrapper} is not an executable file")
    if Path(sys.executable) != wrapper:
        environ.setdefault(REAL_PYTHON_ENV, sys.executable)
        environ[CLIENT_ENV] = str(Path(__file__).resolve())
        sys.executable = str(wrapper)
    return True


# ---------------------------------------------------------------------------------------------------------- client


def client(argv: list[str], environ=os.environ, *, mode: str = "script") -> int:
    """Run ``argv`` in a fork of the server at ``$HSAUDIT_WARM_SOCKET`` with this process's working directory,
    environment and standard streams; its exit status. ``mode``: ``script`` (``argv`` is one Python script) or
    ``snakemake`` (``argv`` are Snakemake's arguments). SIGINT, SIGTERM and SIGHUP are passed on to the job; if
    this process dies otherwise, the server kills the job (SIGKILL). Without a server, the real interpreter runs it
    (``exec``)."""
    real = environ.get(REAL_PYTHON_ENV) or sys.executable
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(environ.get(SOCKET_ENV, ""))
    except OSError:
        sock.close()
        os.execv(real, [real, *(["-m", "snakemake"] if mode == "snakemake" else []), *argv])
    request = json.dumps({"mode": mode, "argv": list(argv), "cwd": os.getcwd(), "env": dict(environ)}).encode()
    socket.send_fds(sock, [_STATUS.pack(len(request))], [0, 1, 2])
    sock.sendall(request)
    for sig in FORWARDED:
        signal.signal(sig, lambda number, _frame: sock.send(bytes([number])))
    reply = _recv_exactly(sock, _STATUS.size)
    return 1 if reply is None else _STATUS.unpack(reply)[0]


FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""Signals a client passes on to its job."""


def _recv_exactly(sock: socket.socket, n: int) -> bytes | None:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


# ---------------------------------------------------------------------------------------------------------- server


def preload(modules=PRELOAD) -> list[str]:
    """Import ``modules`` (those installed; never ``hsaudit``); the names imported."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    done = []
    for name in modules:
        if name.split(".")[0] == "hsaudit":
            raise ValueError("the warm server must not import hsaudit: jobs import it afresh")
        try:
            importlib.import_module(name)
        except ImportError:
            continue
        done.append(name)
    if "matplotlib.pyplot" in done:
        _draw_once()
    return done


def _draw_once() -> None:
    """Save one small figure with text to memory, so that the fonts every figure uses are loaded and cached before
    the fork (no state that changes a figure: the figure is closed, rcParams untouched)."""
    import io

    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(2, 2))
    ax.plot([0, 1], [0, 1], label="ε̂ μ σ")
    ax.set_title("warm-up")
    ax.legend()
    for fmt in ("pdf", "png"):
        fig.savefig(io.BytesIO(), format=fmt)
    plt.close(fig)


def serve(path: str | os.PathLike, *, modules=PRELOAD, ready: str | None = None) -> None:
    """Serve script jobs on the Unix socket ``path`` until SIGTERM/SIGINT. One thread: it accepts, forks and reaps;
    a job whose client goes away is killed with its process group. ``ready``: a file written once listening."""
    preload(modules)
    base_path = [p for p in sys.path[1:] if p not in _env_paths(os.environ)]
    path = str(path)
    if os.path.exists(path):
        os.unlink(path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda *_: _poke(wake_w))
    stopping = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: (stopping.append(True), _poke(wake_w)))
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "accept")
    selector.register(wake_r, selectors.EVENT_READ, "wake")
    jobs: dict[int, socket.socket] = {}  # child pid → its client's connection
    if ready:
        Path(ready).write_text(str(os.getpid()))
    try:
        while not stopping:
            for key, _ in selector.select():
                if key.data == "accept":
                    conn, _ = listener.accept()
                    pid = _start(conn, listener, selector, wake_r, wake_w, base_path)
                    if pid is None:
                        conn.close()
                        continue
                    jobs[pid] = conn
                    selector.register(conn, selectors.EVENT_READ, pid)
                elif key.data == "wake":
                    os.read(wake_r, 4096)
                    _reap(jobs, selector)
                elif jobs.get(key.data) is not key.fileobj:
                    continue  # its job was reaped earlier in this round: the connection is closed, its fd maybe reused
                else:  # a client passes on a signal, or went away: then its job goes too
                    try:
                        data = key.fileobj.recv(16)
                    except OSError:
                        data = b""
                    if not data:
                        selector.unregister(key.fileobj)
                    if key.data in jobs:
                        for number in data or [signal.SIGKILL]:
                            _kill(key.data, number)
    finally:
        for pid in list(jobs):
            _kill(pid)
        listener.close()
        if os.path.exists(path):
            os.unlink(path)


def _poke(fd: int) -> None:
    try:
        os.write(fd, b"x")
    except BlockingIOError:
        pass


def _kill(pid: int, number: int = signal.SIGKILL) -> None:
    for target in (lambda: os.killpg(pid, number), lambda: os.kill(pid, number)):
        try:
            target()
            return
        except (ProcessLookupError, PermissionError):
            continue


def _reap(jobs: dict[int, socket.socket], selector: selectors.BaseSelector) -> None:
    while jobs:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = jobs.pop(pid, None)
        if conn is None:
            continue
        code = os.waitstatus_to_exitcode(status)
        try:
            conn.sendall(_STATUS.pack(code if code >= 0 else 128 - code))
        except OSError:
            pass
        if _registered(selector, conn):
            selector.unregister(conn)
        conn.close()


def _registered(selector: selectors.BaseSelector, conn: socket.socket) -> bool:
    try:
        selector.get_key(conn)
    except KeyError:
        return False
    return True


def _env_paths(env) -> list[str]:
    return [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]


def _start(conn, listener, selector, wake_r, wake_w, base_path) -> int | None:
    """Read one request and fork its job; the child's pid (None for a malformed request)."""
    try:
        header, fds, _, _ = socket.recv_fds(conn, _STATUS.size, 3)
        if len(header) != _STATUS.size or len(fds) != 3:
            return None
        body = _recv_exactly(conn, _STATUS.unpack(header)[0])
        request = json.loads(body) if body else None
    except (OSError, ValueError):
        return None
    if not request:
        for fd in fds:
            os.close(fd)
        return None
    pid = os.fork()
    if pid:
        for fd in fds:
            os.close(fd)
        return pid
    # the child: become the job, never return to the server's loop
    code = 1
    try:
        selector.close()
        listener.close()
        conn.close()
        os.close(wake_r)
        os.close(wake_w)
        os.setpgid(0, 0)
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        for target, fd in zip((0, 1, 2), fds):
            os.dup2(fd, target)
            os.close(fd)
        code = _run_job(request, base_path)
    except BaseException:  # noqa: BLE001 - the job's own error is reported by _run_job
        import traceback

        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        os._exit(code)


def _run_job(request: dict, base_path: list[str]) -> int:
    """Run the request in this (forked) process: its script as ``__main__``, or Snakemake's command line; its exit
    status. The server's exit handlers are dropped and the job's own run at the end, as in a process of its own."""
    import atexit
    import runpy

    atexit._clear()  # noqa: SLF001 - the server's handlers are not the job's
    try:
        return _run(request, base_path, runpy)
    finally:
        atexit._run_exitfuncs()  # noqa: SLF001


def _run(request: dict, base_path: list[str], runpy) -> int:
    snakemake = request.get("mode") == "snakemake"
    script = request["argv"][0]
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    for name in [m for m in sys.modules if m == "hsaudit" or m.startswith("hsaudit.")]:
        del sys.modules[name]  # the package is imported afresh from the job's own path
    first = os.path.dirname(sys.executable) if snakemake else os.path.dirname(os.path.abspath(script))
    sys.path[:] = [first, *_env_paths(request["env"]), *base_path]
    sys.argv = ["snakemake", *request["argv"]] if snakemake else list(request["argv"])
    importlib.invalidate_caches()
    sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
    sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)
    sys.stdin = os.fdopen(0, "r", closefd=False)
    try:
        if snakemake:
            from snakemake.cli import main as snakemake_main

            snakemake_main()
        else:
            runpy.run_path(script, run_name="__main__")
    except SystemExit as stop:
        code = stop.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    except BaseException:  # noqa: BLE001 - as Python would: the traceback on stderr, status 1
        import traceback

        traceback.print_exc()
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) >= 2 and argv[0] == "client":
        return client(argv[1:2])
    if argv and argv[0] == "snakemake":
        return client(argv[1:], mode="snakemake")
    if len(argv) >= 2 and argv[0] == "serve":
        serve(argv[1], ready=argv[2] if len(argv) > 2 else None)
        return 0
    print("usage: python -m hsaudit.pipeline.warm serve SOCKET [READY_FILE] | client SCRIPT | snakemake ARGS...",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
