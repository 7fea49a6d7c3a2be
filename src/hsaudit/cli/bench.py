"""``hsaudit bench <what>``: benchmark commands (speed and memory targets live here, not in timed tests).

Each benchmark lives in a module ``hsaudit.cli.bench_<what>`` exposing ``register(subparsers)``.
"""

from __future__ import annotations

from hsaudit.cli import register_modules

_BENCHES = ("audit", "train", "section6")


def register(sub) -> None:
    parser = sub.add_parser("bench", help="run a benchmark and print its timings")
    inner = parser.add_subparsers(dest="bench", metavar="WHAT")
    inner.required = True
    register_modules(inner, "hsaudit.cli.bench_", _BENCHES)
