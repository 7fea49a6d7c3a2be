"""Command-line interface: ``hsaudit <command> ...``.

Each sub-command lives in its own module of this package and exposes ``register(subparsers)``, which
adds its parser and sets ``func`` (a callable taking the parsed namespace and returning an exit code).
Errors that come from bad input (``ValueError``, ``FileNotFoundError``, ``KeyError``) are printed as one
line on stderr with exit status 2, never as a traceback. An exception raised in a user's own code (``hsaudit
audit-training``'s entry: :class:`~hsaudit.experiments.byo.train.errors.UserCodeError`) is printed with where it came
from and the traceback of that code, exit status 1.

Start-up is lazy: only the module of the command being run is imported (``hsaudit audit`` never loads torch,
which ``hsaudit bench train`` needs); the others appear in ``--help`` as one-line stubs from :data:`COMMANDS`.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import sys
from collections.abc import Mapping, Sequence

# command -> (module, the one line `hsaudit --help` shows), in the order it lists them.
COMMANDS: dict[str, tuple[str, str]] = {
    "audit": ("hsaudit.cli.audit", "GDP audit (ε lower bound) of membership scores in a CSV"),
    "one-run": (
        "hsaudit.cli.one_run",
        "one-training-run audit of canary scores (Steinke et al. 2023; --method fdp: Mahloujifar et al. 2024)",
    ),
    "audit-training": ("hsaudit.cli.audit_training", "audit your own DP training: ε̂ against its claim, with a verdict"),
    "bound": ("hsaudit.cli.bound", "upper bound ε of DP-SGD (PLD accountant; μ-GDP closed form when q = 1)"),
    "heuristic": (
        "hsaudit.cli.heuristic",
        "last-iterate heuristic epsilon (Steinke et al. Thm 1) vs standard and full-batch accounting",
    ),
    "validate-audit": (
        "hsaudit.cli.validate",
        "coverage study: how often each audit mode's ε̂ exceeds the true ε, and how tight it is",
    ),
    "bench": ("hsaudit.cli.bench", "run a benchmark and print its timings"),
    "plan": ("hsaudit.cli.plan", "estimate models, steps and CPU/GPU-hours of targets before launching"),
    "archive": ("hsaudit.cli.archive", "check a figure archive (results/archive/*.tar.gz)"),
}


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser for ``argv`` (``sys.argv[1:]`` if None): the named command in full, the others as stubs."""
    parser = argparse.ArgumentParser(
        prog="hsaudit",
        description="Audit DP-SGD in the hidden-state threat model (see README.md).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    register_modules(sub, COMMANDS, sys.argv[1:] if argv is None else argv)
    return parser


def register_modules(subparsers, commands: Mapping[str, tuple[str, str]], argv: Sequence[str]) -> None:
    """Register ``commands`` on ``subparsers`` for the command line ``argv``.

    The command that ``argv`` names (its first word that is not an option) is registered in full by its module's
    ``register(subparsers)`` (or ``register(subparsers, rest_of_argv)`` for a module with commands of its own);
    every other command is a stub carrying only its help line, so that its module is never imported.
    """
    chosen = next((i for i, word in enumerate(argv) if not word.startswith("-")), None)
    name = argv[chosen] if chosen is not None else None
    for command, (module_name, line) in commands.items():
        if command != name:
            subparsers.add_parser(command, help=line, add_help=False)
            continue
        # (The listing of commands is shown only when none is named, so the module's parser needs no help line.)
        module = importlib.import_module(module_name)
        if len(inspect.signature(module.register).parameters) > 1:
            module.register(subparsers, argv[chosen + 1 :])
        else:
            module.register(subparsers)


def _version() -> str:
    from hsaudit import __version__

    return __version__


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command of ``argv`` (``sys.argv[1:]`` if None) and return its exit status. As the program (``argv``
    None), a command that asks for it (``exit_at_once``: ``hsaudit audit-training``) ends the process here, past
    Python's finalisation of torch's modules (≈ 1 s of a short audit): streams flushed, ``atexit`` handlers run."""
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    code = _status(args)
    if argv is None and getattr(args, "exit_at_once", False):
        import atexit
        import os

        sys.stdout.flush()
        sys.stderr.flush()
        atexit._run_exitfuncs()
        os._exit(code)
    return code


def _status(args: argparse.Namespace) -> int:
    """The exit status of ``args``'s command: its own, 2 after a bad input, 1 after an error in a user's code."""
    try:
        return int(args.func(args) or 0)
    except (ValueError, FileNotFoundError, KeyError, OSError) as err:
        msg = err.args[0] if isinstance(err, KeyError) and err.args else err
        print(f"hsaudit {args.command}: error: {msg}", file=sys.stderr)
        return 2
    except Exception as err:
        from hsaudit.experiments.byo.train.errors import UserCodeError

        if not isinstance(err, UserCodeError):
            raise
        print(f"hsaudit {args.command}: error in your code: {err.full()}", file=sys.stderr, end="")
        return 1

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
