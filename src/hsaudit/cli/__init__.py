"""Command-line interface: ``hsaudit <command> ...``.

Each sub-command lives in its own module of this package and exposes ``register(subparsers)``, which
adds its parser and sets ``func`` (a callable taking the parsed namespace and returning an exit code).
Errors that come from bad input (``ValueError``, ``FileNotFoundError``, ``KeyError``) are printed as one
line on stderr with exit status 2, never as a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# Sub-command modules, in the order `hsaudit --help` lists them. A module that is missing (a part of the
# project not written yet) is skipped rather than breaking the others.
_COMMANDS = ("audit", "bound", "heuristic", "validate", "bench", "plan", "archive")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hsaudit",
        description="Audit DP-SGD in the hidden-state threat model (see README.md).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    register_modules(sub, "hsaudit.cli.", _COMMANDS)
    return parser


def register_modules(subparsers, prefix: str, names: Sequence[str]) -> None:
    """Call ``register(subparsers)`` of each module ``prefix + name``; a module that does not exist is skipped
    (an import error inside an existing module is raised)."""
    for name in names:
        try:
            module = importlib.import_module(prefix + name)
        except ModuleNotFoundError as err:
            if err.name == prefix + name:
                continue
            raise
        module.register(subparsers)


def _version() -> str:
    from hsaudit import __version__

    return __version__


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, FileNotFoundError, KeyError, OSError) as err:
        msg = err.args[0] if isinstance(err, KeyError) and err.args else err
        print(f"hsaudit {args.command}: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
