"""``hsaudit bench <what>``: benchmark commands (speed and memory targets live here, not in timed tests).

The benchmarks are the package :mod:`hsaudit.bench`; each command is a module ``hsaudit.cli.bench_<what>`` that
parses its arguments (``register(subparsers)``) and prints. Only the one being run is imported (``bench train``
loads torch and Opacus, ``bench audit`` only numpy and scipy).
"""

from __future__ import annotations

from collections.abc import Sequence

from hsaudit.cli import register_modules

BENCHES: dict[str, tuple[str, str]] = {
    "audit": ("hsaudit.cli.bench_audit", "time the vectorised audit (R = 5e3, 2e6) and the reference loop"),
    "train": ("hsaudit.cli.bench_train", "time the vectorised DP-SGD population against the Opacus loop"),
    "section6": ("hsaudit.cli.bench_section6", "time one (σ, B) cell of fig3 and extrapolate to the figure"),
}


def register(sub, argv: Sequence[str] = ()) -> None:
    parser = sub.add_parser("bench", description="Run a benchmark and print its timings.")
    inner = parser.add_subparsers(dest="bench", metavar="WHAT")
    inner.required = True
    register_modules(inner, BENCHES, argv)
