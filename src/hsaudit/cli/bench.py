"""``hsaudit bench <what>``: benchmark commands (speed and memory targets live here, not in timed tests).

Each benchmark lives in a module ``hsaudit.cli.bench_<what>`` exposing ``register(subparsers)``.
"""

from __future__ import annotations

import importlib

_BENCHES = ("audit", "train", "section6")


def register(sub) -> None:
    parser = sub.add_parser("bench", help="run a benchmark and print its timings")
    inner = parser.add_subparsers(dest="bench", metavar="WHAT")
    inner.required = True
    for name in _BENCHES:
        try:
            module = importlib.import_module(f"hsaudit.cli.bench_{name}")
        except ModuleNotFoundError as err:
            if err.name == f"hsaudit.cli.bench_{name}":
                continue
            raise
        module.register(inner)
