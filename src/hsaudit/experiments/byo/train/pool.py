"""The worker processes of ``hsaudit audit-training --jobs``: forked from a warm server, one pool per audit.

A worker is forked from a ``forkserver`` process (:mod:`multiprocessing`) that imported the harness (torch) and the
fork-safe libraries the entry imports (:data:`FORK_SAFE`: Opacus' import alone is 1.6 s of CPU) once, and never runs
a torch operation — forking a process whose torch thread pool has run can deadlock, which is why a worker is not a
fork of the audit's own process. :func:`warm` starts that server at the audit's start, so that its imports run on
another core while the audit loads the entry, checks the training and builds the canary; each worker is then a cheap
fork that calls the user's ``make()`` and ``dataset()`` itself. Standard library only, so that the CLI can start the
server before it imports torch.
"""

from __future__ import annotations

import ast
import atexit
import contextlib
import importlib.util
import multiprocessing
import multiprocessing.forkserver
import multiprocessing.resource_tracker
import os
import signal
from pathlib import Path
from typing import Any

WORKER_MODULE = "hsaudit.experiments.byo.train.parallel"
"""What a worker runs (:func:`~hsaudit.experiments.byo.train.parallel.worker_block`): the harness, torch, NumPy."""

FORK_SAFE = ("opacus", "scipy", "sklearn", "torchvision")
"""Libraries an entry may import that the server preloads: their import starts no thread that a fork would break
(OpenBLAS' idle threads have fork handlers) and runs no torch operation. Any other library (JAX, TensorFlow, the
user's own modules) is imported by each worker, as in a fresh interpreter."""


def entry_imports(entry: str) -> list[str]:
    """The top-level packages an entry's file imports at its top level (read, not run; [] if it cannot be read)."""
    target = entry.rsplit(":", 1)[0]
    try:
        if target.endswith(".py"):
            source = Path(target).read_text()
        else:
            spec = importlib.util.find_spec(target)
            source = Path(spec.origin).read_text() if spec is not None and spec.origin else ""
        tree = ast.parse(source)
    except (OSError, ValueError, SyntaxError, ImportError):
        return []
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            names += [a.name.split(".")[0] for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module.split(".")[0])
    return sorted(set(names))


def preload(entry: str | None) -> list[str]:
    """The modules the server imports: :data:`WORKER_MODULE` and the :data:`FORK_SAFE` libraries ``entry`` imports
    that are installed."""
    found = [m for m in entry_imports(entry) if m in FORK_SAFE] if entry else []
    return [WORKER_MODULE, *(m for m in found if importlib.util.find_spec(m) is not None)]


def context(entry: str | None = None) -> Any:
    """The workers' start method (``forkserver``), its server to preload ``entry``'s libraries when it starts (a server
    that runs already keeps what it imported: one per process)."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(preload(entry))
    return ctx


def warm(entry: str) -> None:
    """Start the server now (it imports while the caller goes on; the first worker waits for it)."""
    context(entry)
    multiprocessing.forkserver.ensure_running()


def _stop_server() -> None:
    """Stop the server and wait for it (after the pools' workers exited and the server reaped them), so that its CPU
    time and its workers' count as this process's children (``time``, ``getrusage``); a server still importing (an
    audit that trained in this process after all) is killed, not waited for."""
    server = getattr(multiprocessing.forkserver, "_forkserver", None)
    pid = getattr(server, "_forkserver_pid", None)
    if pid is None or not hasattr(server, "_stop"):
        return
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGTERM)
    server._stop()


_EXITING: list[tuple[Any, list[Any]]] = []
"""The pools shut down without waiting (:meth:`Workers.close`): each one's manager thread, which joins its workers
once they exit, and its worker processes."""


def reap(*, kill: bool = False) -> None:
    """Wait until every process this one started for its workers has ended: the workers of the pools closed so far
    (``kill``: ended at once, as after an interrupt, not after their current block), the server that forked them and
    multiprocessing's resource tracker, which the server started. ``hsaudit audit-training`` calls it before it
    returns, so that no process of the audit outlives it; a later pool starts them afresh."""
    while _EXITING:
        _join(*_EXITING.pop(), kill=kill)
    _stop_server()
    tracker = getattr(multiprocessing.resource_tracker, "_resource_tracker", None)
    if getattr(tracker, "_pid", None) is not None and hasattr(tracker, "_stop"):
        tracker._stop()


def _join(thread: Any, processes: list[Any], *, kill: bool) -> None:
    """Wait for a closed pool's workers (``kill``: ended first); its queues, and their semaphores, which the resource
    tracker would otherwise report leaked, go with the last reference to its manager thread, this call's."""
    if kill:
        for process in processes:
            with contextlib.suppress(OSError, ValueError, AttributeError):
                process.kill()
    thread.join()


atexit.register(reap)


class Workers:
    """Worker processes that live for a whole audit (its pilot, the audit, its control), forked from the server of
    :func:`context`, so that a worker's start is paid once per audit, not once per part. A context manager;
    :func:`~hsaudit.experiments.byo.api.train_all` takes one (``workers``)."""

    def __init__(self, entry: str | None = None) -> None:
        self.pool: Any = None
        self.size = 0
        self.entry = entry

    def get(self, jobs: int) -> Any:
        """The pool of ``jobs`` workers (started at the first call, restarted for another size)."""
        from concurrent.futures import ProcessPoolExecutor

        if self.pool is None or self.size != jobs:
            self.close()
            self.pool = ProcessPoolExecutor(max_workers=jobs, mp_context=context(self.entry))
            self.size = jobs
        return self.pool

    def close(self, *, now: bool = False) -> None:
        """Stop the workers: they exit while the caller goes on (blocks not started are cancelled, a block started is
        finished; ``now``: killed, its block too), and :func:`reap` waits for them."""
        if self.pool is not None:
            thread = getattr(self.pool, "_executor_manager_thread", None)
            processes = list((getattr(self.pool, "_processes", None) or {}).values())
            if now:
                for process in processes:
                    with contextlib.suppress(OSError, ValueError, AttributeError):
                        process.kill()
            self.pool.shutdown(wait=False, cancel_futures=True)
            if thread is not None:
                _EXITING.append((thread, processes))
            self.pool = None

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
