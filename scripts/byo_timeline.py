"""A timeline of ``hsaudit audit-training``'s own process: when each of its serial parts ran and for how long.

    python scripts/byo_timeline.py audit-training --entry examples/byo/opacus_dpsgd.py:make --runs 200 \
        --audit-setting --no-progress --jobs 2 --out j2

Runs the command as ``hsaudit`` would (``--jobs N > 1``: the workers' server started first, as the CLI starts it)
with the api's steps wrapped in wall-clock timers, then prints one line per call (start, end, seconds since this
process began; nested calls indented by start) and this process's CPU seconds beside its children's (the workers,
counted once they have ended). A ``…()wait`` line is the time spent waiting for a part's models (in workers, or
trained here when called). docs/journal/byo.md, "where the serial wall of `--jobs 2` goes".
"""

from __future__ import annotations

import functools
import os
import sys
import time

START = time.perf_counter()
CALLS: list[tuple[str, float, float]] = []

WRAPPED = {
    "hsaudit.experiments.byo.api": ("load", "early_report", "checked", "choose_design", "prepare", "report",
                                    "control_design", "start_all"),
    "hsaudit.experiments.byo.audit": ("power", "estimates"),
    "hsaudit.cli.audit_training": ("_figure",),
    "hsaudit.util.io": ("write_csv_atomic", "write_text_atomic"),
}  # fmt: skip
"""The functions timed, by module (``start_all``'s returned wait too)."""


def _timed(module: object, name: str) -> None:
    """``module.name`` replaced by itself timed into :data:`CALLS` (and the function it returns, for ``start_all``)."""
    fn = getattr(module, name)
    label = f"{module.__name__.rsplit('.', 1)[-1]}.{name}"

    def record(what: str, started: float) -> None:
        CALLS.append((what, started - START, time.perf_counter() - START))

    @functools.wraps(fn)
    def timed(*args, **kwargs):
        started = time.perf_counter()
        try:
            result = fn(*args, **kwargs)
        finally:
            record(label, started)
        if name != "start_all":
            return result

        def wait():
            begun = time.perf_counter()
            try:
                return result()
            finally:
                record(f"{label}()wait", begun)

        return wait

    setattr(module, name, timed)


def main(argv: list[str]) -> int:
    import importlib

    if "--jobs" in argv and int(argv[argv.index("--jobs") + 1]) > 1:
        from hsaudit.experiments.byo.train.pool import warm

        warm(argv[argv.index("--entry") + 1])
    started = time.perf_counter()
    for module, names in WRAPPED.items():
        loaded = importlib.import_module(module)
        for name in names:
            _timed(loaded, name)
    from hsaudit.cli import main as cli

    CALLS.append(("imports (torch, pandas, the api)", started - START, time.perf_counter() - START))
    started = time.perf_counter()
    try:
        return cli(argv)
    finally:
        CALLS.append(("the command", started - START, time.perf_counter() - START))
        from hsaudit.experiments.byo.train.pool import reap

        reap()
        cpu = os.times()
        print(f"\nthis process: {cpu.user + cpu.system:.2f} s CPU; its children: "
              f"{cpu.children_user + cpu.children_system:.2f} s; load {os.getloadavg()[0]:.2f}", file=sys.stderr)  # fmt: skip
        for what, a, b in sorted(CALLS, key=lambda c: c[1]):
            print(f"{a:8.2f} {b:8.2f} {b - a:7.2f}  {what}", file=sys.stderr)


if __name__ == "__main__":  # the workers' server imports this file as their __main__: nothing runs then
    sys.exit(main(sys.argv[1:]))
