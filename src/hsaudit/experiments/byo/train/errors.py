"""An exception raised inside a user's code (``make``, ``dataset``, ``train``, ``train_batch``, ``loss``,
``predict``), kept apart from hsaudit's own validation errors (``ValueError``, one line): it names the function, the
entry and, where there is one, the seed, the model and its world, and carries the traceback of the user's code.

No torch, no numpy: the CLI imports it to print the error, and it crosses process boundaries (it pickles).
"""

from __future__ import annotations

import functools
import traceback
from collections.abc import Callable, Sequence
from typing import Any


class UserCodeError(Exception):
    """An exception the user's code raised, with where it came from.

    Attributes:
        function: the user's function (``make``, ``dataset``, ``train``, ``train_batch``, ``loss``, ``predict``).
        entry: the entry (``path/to/file.py:make`` or ``package.module:make``).
        error: the exception as ``Type: message``.
        user_traceback: the traceback below hsaudit's call of the user's function (the user's frames and those of
            the libraries it called; hsaudit's own frames above are trimmed), ending in ``error``.
        seeds: the seeds of the call (``train``: one; ``train_batch``: its chunk), empty when it has none.
        where: what the caller knows beside them (the model index and world, the determinism check), or "".
    """

    def __init__(
        self,
        function: str,
        entry: str,
        error: str,
        user_traceback: str = "",
        seeds: Sequence[int] = (),
        where: str = "",
    ) -> None:
        self.function, self.entry, self.error = function, entry, error
        self.user_traceback, self.seeds, self.where = user_traceback, tuple(int(s) for s in seeds), where
        super().__init__(function, entry, error, user_traceback, self.seeds, where)

    def __str__(self) -> str:
        context = [f"entry {self.entry}"]
        if len(self.seeds) == 1:
            context.append(f"seed {self.seeds[0]}")
        elif self.seeds:
            more = ", ..." if len(self.seeds) > 8 else ""
            context.append(f"one of seeds {', '.join(map(str, self.seeds[:8]))}{more}")
        if self.where:
            context.append(self.where)
        return f"your {self.function}() raised {self.error} ({'; '.join(context)})"

    def located(self, where: str) -> UserCodeError:
        """The same error with ``where`` (e.g. ``model 17 of 200, world with the canary``) added."""
        joined = f"{self.where}; {where}" if self.where else where
        return UserCodeError(self.function, self.entry, self.error, self.user_traceback, self.seeds, joined)

    def full(self) -> str:
        """The message and the user's traceback, as the CLI prints them."""
        head = "Traceback of your code (most recent call last; hsaudit's frames left out):"
        return f"{self}\n\n{head}\n{self.user_traceback}"


def _below_caller(err: BaseException) -> str:
    """The formatted traceback of ``err`` without its first frame (the guard's own)."""
    frames = traceback.extract_tb(err.__traceback__)[1:]
    text = "".join(traceback.format_list(frames))
    return text + "".join(traceback.format_exception_only(type(err), err))


def guarded(function: str, entry: str, fn: Callable[..., Any] | None) -> Callable[..., Any] | None:
    """``fn`` (None stays None) whose exceptions are raised as :class:`UserCodeError`; for ``train`` and
    ``train_batch`` the error carries the seed(s) of the call (its second argument)."""
    if fn is None or not callable(fn):
        return fn

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        seeds: Sequence[int] = ()
        if function in ("train", "train_batch") and len(args) > 1:
            seeds = [args[1]] if function == "train" else list(args[1])
        try:
            return fn(*args, **kwargs)
        except UserCodeError:
            raise
        except Exception as err:
            raise UserCodeError(function, entry, f"{type(err).__name__}: {err}", _below_caller(err), seeds) from err

    return wrapper
