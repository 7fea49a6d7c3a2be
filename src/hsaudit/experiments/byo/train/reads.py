"""The data-use check's record of the rows a training reads, however it reads them.

While the check counts (:meth:`~hsaudit.experiments.byo.train.harness.UserData.counting`), the tensors of the data
handed to ``train`` are :class:`Rows`: ``torch.Tensor`` subclasses whose ``__torch_function__`` follows which rows
each tensor derived from them holds. A selection (``data[i]``, ``X[idx]``, ``X[mask]``, ``X[i:j]``, ``index_select``,
``split``, a DataLoader's fetch and collate) makes a *node*: the rows it holds. A node is a read of its rows once,
when first used by anything but a selection, a conversion or an elementwise step (the model's forward, a loss, NumPy),
or, never seen used (``torch.func.vmap`` takes its inputs out of sight), when the training ends (but for the parts of
a ``split``, of which a loop may use only some). A node whose
sub-selections are used (``Xs = X[perm]`` then ``Xs[i:i + B]``) is read through them, not itself. Only reads with
gradients enabled count (an evaluation pass under ``torch.no_grad()`` is not a training's).

Computations on all rows at once (``model(X)``, ``X.mean(0)``, ``X.numpy()``, with gradients enabled) cannot be
attributed to rows: they are named (:attr:`Reads.whole`), never counted, and a training that reads nothing else is
reported as not seen. A DataLoader's worker processes (``num_workers`` > 0) record nothing: each batch they send
carries its rows and is counted when it arrives in the process that counts, with that process's gradient mode.

Each selected tensor costs one Python call of a few microseconds; every other tensor of the training is untouched
(what a step computes from a batch is a plain tensor).
"""

from __future__ import annotations

import itertools
import os
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

QUIET = frozenset({
    "shape", "size", "dim", "ndim", "__len__", "numel", "nelement", "dtype", "device", "layout", "is_cuda",
    "is_floating_point", "is_complex", "is_contiguous", "is_sparse", "is_shared", "is_pinned", "stride",
    "storage_offset", "element_size", "requires_grad", "is_leaf", "grad", "grad_fn", "names", "data_ptr",
    "__setitem__", "__reduce_ex__", "__deepcopy__", "__hash__", "__format__", "new", "new_zeros", "new_ones",
    "new_empty", "new_full", "new_tensor", "_typed_storage", "untyped_storage", "is_inference", "__get__",
    "is_nested", "is_meta", "is_quantized", "is_mkldnn", "is_mps", "is_xpu", "itemsize", "nbytes", "get_device",
})  # fmt: skip
"""Operations that read no value of the data (its metadata, a write, pickling)."""

ROWWISE = frozenset({
    "float", "double", "half", "bfloat16", "long", "int", "short", "bool", "byte", "to", "cuda", "cpu", "type",
    "type_as", "clone", "detach", "detach_", "contiguous", "requires_grad_", "pin_memory", "view", "view_as",
    "reshape", "reshape_as", "flatten", "unflatten", "squeeze", "unsqueeze", "expand", "expand_as", "permute",
    "transpose", "movedim", "add", "sub", "mul", "div", "true_divide", "neg", "abs", "pow", "clamp", "clip",
    "round", "floor", "ceil", "nan_to_num", "one_hot", "eq", "ne", "lt", "le", "gt", "ge", "add_", "sub_", "mul_",
    "div_", "clamp_", "__add__", "__radd__", "__iadd__", "__sub__", "__rsub__", "__isub__", "__mul__", "__rmul__",
    "__imul__", "__truediv__", "__rtruediv__", "__itruediv__", "__floordiv__", "__pow__", "__rpow__", "__neg__",
    "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__and__", "__or__", "__invert__", "cat", "concat",
    "concatenate", "stack", "hstack", "column_stack",
})  # fmt: skip
"""Operations whose result's row j is a function of row j alone (a conversion, a view keeping the rows, an
elementwise step): the result holds the rows its input holds."""

SPLITS = frozenset({"split", "chunk", "unbind", "tensor_split", "split_with_sizes"})
MERGES = frozenset({"stack", "cat", "concat", "concatenate", "vstack", "row_stack"})

_BOOKS: weakref.WeakValueDictionary[tuple[int, int], Book] = weakref.WeakValueDictionary()
_IDS = itertools.count()
_ARRIVED = object()


@dataclass(frozen=True)
class Reads:
    """What a :class:`Book` recorded: ``uses[i]``, the reads of row i (the most over the data's tensors: ``x[idx]``
    and ``y[idx]`` read the rows once), and ``whole``, the computations on all rows at once with gradients enabled
    (their names, sorted), which no row count holds."""

    uses: np.ndarray
    whole: tuple[str, ...]


class Book:
    """The reads of each row of one dataset's tensors, kept in the process that made it (its home)."""

    def __init__(self, n: int, columns: int) -> None:
        self.key = (os.getpid(), next(_IDS))
        self.uses = np.zeros((columns, n), dtype=np.int64)
        self.whole: set[str] = set()
        self.pending: dict[int, Node] = {}  # nodes neither used nor read through sub-selections yet
        _BOOKS[self.key] = self

    @property
    def home(self) -> bool:
        return self.key[0] == os.getpid()

    def close(self) -> Reads:
        """The reads, the nodes never seen used counted (as of their selection's gradient mode)."""
        for node in list(self.pending.values()):
            if not node.part:
                node.use(node.grad)
        _BOOKS.pop(self.key, None)
        return Reads(self.uses.max(axis=0), tuple(sorted(self.whole)))


class Node:
    """The rows a selection holds (``rows`` None: the tensor itself, all rows in order); ``lead``: whether the
    tensor's first dimension runs over them (False for a single row ``x[i]``, whose dimensions are its own)."""

    __slots__ = ("key", "book", "column", "rows", "lead", "grad", "done", "part", "__weakref__")

    def __init__(
        self, key: tuple[int, int], column: int, rows: np.ndarray | None, lead: bool = True, book: Any = _ARRIVED
    ) -> None:
        """``book``: the parent's (default: looked up by ``key``, for a batch arriving from a worker process)."""
        book = _BOOKS.get(key) if book is _ARRIVED else book
        self.key, self.book, self.column, self.rows, self.lead = key, book, column, rows, lead
        self.part = False  # one part of a split: never counted unseen (the loop may use only some)
        self.grad, self.done = torch.is_grad_enabled(), rows is None
        if not self.done and book is not None and book.home:
            book.pending[id(self)] = self
        else:
            self.done = True

    def use(self, grad: bool | None = None) -> None:
        """Used by a computation: a read of its rows, once, when gradients are enabled (``grad``: as given)."""
        if self.done or self.book is None or not self.book.home:
            return
        self.settle()
        if torch.is_grad_enabled() if grad is None else grad:
            row = self.book.uses[self.column]
            if self.rows.size == 1:
                row[self.rows[0]] += 1
            else:
                np.add.at(row, self.rows, 1)

    def settle(self) -> None:
        """Read through sub-selections (or merged into a batch): not a read of its own."""
        if not self.done:
            self.done = True
            if self.book is not None:
                self.book.pending.pop(id(self), None)

    def __reduce__(self) -> tuple[Any, ...]:  # a DataLoader worker's batch: counted where it arrives
        return (Node, (self.key, self.column, self.rows, self.lead))

    def __deepcopy__(self, memo: dict[int, Any]) -> Node:
        return self


def _name(func: Any) -> str:
    name = getattr(func, "__name__", "")
    if name == "__get__":  # a property (shape, dtype, …)
        return getattr(getattr(func, "__self__", None), "__name__", name)
    return name


def _flat(args: Any, kwargs: dict[str, Any]) -> list[Rows]:
    found = []
    for a in (*args, *kwargs.values()):
        if isinstance(a, Rows):
            found.append(a)
        elif isinstance(a, (list, tuple)):
            found.extend(b for b in a if isinstance(b, Rows))
    return found


def _dim(args: Any, kwargs: dict[str, Any], at: int) -> int:
    dim = kwargs.get("dim", args[at] if len(args) > at else 0)
    return dim if isinstance(dim, int) else -999


def _positions(index: Any, length: int, ndim: int) -> tuple[np.ndarray | None, bool]:
    """The positions along the first dimension that ``tensor[index]`` selects (None: all, in order) and whether
    the result's first dimension still runs over them; raises LookupError where it cannot tell."""
    parts = index if isinstance(index, tuple) else (index,)
    if not parts:
        return None, True
    first = parts[0]
    if first is Ellipsis:
        if sum(p is not None for p in parts[1:]) < ndim:
            return None, True
        raise LookupError(index)
    if isinstance(first, slice):
        picked = np.arange(length)[first]
        return (None if picked.size == length and (first.step or 1) == 1 else picked), True
    if isinstance(first, (int, np.integer)):
        return np.array([int(first) % length]), False
    if isinstance(first, (torch.Tensor, np.ndarray, list)):
        arr = np.asarray(first.detach().cpu() if isinstance(first, torch.Tensor) else first)
        if arr.dtype == bool and arr.ndim == 1:
            return np.flatnonzero(arr), True
        if np.issubdtype(arr.dtype, np.integer):
            return arr.astype(np.int64).ravel() % max(length, 1), arr.ndim == 1
    raise LookupError(index)


class Rows(torch.Tensor):
    """A tensor of the data, or a selection of its rows, whose reads a :class:`Book` records (module docstring)."""

    node: Node

    def __deepcopy__(self, memo: dict[int, Any]) -> Rows:  # a copy holds the same rows (Opacus copies batches)
        with torch._C.DisableTorchFunctionSubclass():
            plain = self.as_subclass(torch.Tensor)
            copied = torch.Tensor.__deepcopy__(plain, memo)
        memo[id(self)] = out = _wrap(copied, self.node)
        return out

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if any(not issubclass(t, (Rows, torch.nn.Parameter)) and t is not torch.Tensor for t in types):
            # Another tensor subclass takes part (Opacus' ExpandedWeights: grad_sample_mode="ew"): it must see the op,
            # so the data go in as plain tensors, its own __torch_function__ runs, and the op is a use of their rows.
            for r in _flat(args, kwargs):
                _use(r.node, _name(func))
            return func(*_unwrapped(args), **dict(zip(kwargs, _unwrapped(tuple(kwargs.values())))))
        with torch._C.DisableTorchFunctionSubclass():
            out = func(*args, **kwargs)
            name = _name(func)
            if name in QUIET:
                return out
            node = args[0].node if name == "__getitem__" and isinstance(args[0], Rows) else None
            if node is not None and node.rows is None and type(args[1]) is int:  # data[i]: a DataLoader's fetch
                row = np.array([args[1] % args[0].shape[0]])
                return _wrap(out, Node(node.key, node.column, row, False, node.book))
            try:
                return _follow(name, args, kwargs, out)
            except Exception:  # never the user's training's failure: the reads of this step go unattributed
                for r in _flat(args, kwargs):
                    _use(r.node, name)
                return _plain(out)


def _unwrapped(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """``values`` with every :class:`Rows` (also inside a list or tuple) as a plain tensor."""
    with torch._C.DisableTorchFunctionSubclass():
        return tuple(
            v.as_subclass(torch.Tensor) if isinstance(v, Rows)
            else type(v)(_unwrapped(tuple(v))) if type(v) in (list, tuple) else v
            for v in values
        )  # fmt: skip


def _plain(out: Any) -> Any:
    return out.as_subclass(torch.Tensor) if isinstance(out, Rows) else out


def _wrap(out: Any, node: Node) -> Any:
    if not isinstance(out, torch.Tensor):
        return out
    r = out if isinstance(out, Rows) else out.as_subclass(Rows)
    r.node = node
    return r


def _use(node: Node, name: str) -> None:
    if node.rows is None:
        if node.book is not None and node.book.home and torch.is_grad_enabled():
            node.book.whole.add(name)
    else:
        node.use()


def _child(parent: Node, picked: np.ndarray, lead: bool) -> Node:
    parent.settle()
    rows = picked if parent.rows is None else parent.rows[picked]
    return Node(parent.key, parent.column, rows, lead, parent.book)


def _follow(name: str, args: Any, kwargs: dict[str, Any], out: Any) -> Any:
    found = _flat(args, kwargs)
    src = args[0] if args and isinstance(args[0], Rows) else found[0]
    node = src.node
    if name in ("__getitem__", "index_select", "narrow", "select") and src is args[0]:
        if not node.lead:  # within a single row: its columns
            return _wrap(out, node)
        length = src.shape[0]
        if name == "__getitem__":
            for r in found[1:]:  # an index derived from the data (a mask of y) is used by it
                _use(r.node, "index")
            picked, lead = _positions(args[1], length, src.dim())
        elif _dim(args, kwargs, 1) not in (0, -src.dim()):
            return _wrap(out, node)
        elif name == "index_select":
            picked, lead = _positions(args[2] if len(args) > 2 else kwargs["index"], length, 1)
        elif name == "narrow":
            start = int(args[2]) % length
            picked, lead = np.arange(start, start + int(args[3])), True
        else:
            picked, lead = np.array([int(args[2]) % length]), False
        return _wrap(out, node if picked is None else _child(node, picked, lead))
    if name in SPLITS and isinstance(out, (tuple, list)) and src is args[0]:
        if not node.lead or _dim(args, kwargs, 1 if name == "unbind" else 2) not in (0, -src.dim()):
            return type(out)(_wrap(o, node) for o in out)
        parts, start = [], 0
        for o in out:
            size = 1 if name == "unbind" else o.shape[0]
            child = _child(node, np.arange(start, start + size), name != "unbind")
            child.part = True
            parts.append(_wrap(o, child))
            start += size
        return type(out)(parts)
    if name in MERGES and _dim(args, kwargs, 1) == 0 and isinstance(args[0], (list, tuple)):
        items = list(args[0])
        books = {r.node.key for r in found}
        singles = all(isinstance(r, Rows) and not r.node.lead for r in items)
        stacked = name == "stack" and singles
        joined = name != "stack" and all(isinstance(r, Rows) and r.node.lead for r in items)
        if items and len(books) == 1 and (stacked or joined) and len({r.node.column for r in found}) == 1:
            full = [np.arange(r.shape[0]) if r.node.rows is None else r.node.rows for r in items]
            for r in items:
                r.node.settle()
            return _wrap(out, Node(node.key, node.column, np.concatenate(full), True, node.book))
    if name in ROWWISE and isinstance(out, torch.Tensor):
        if not node.lead or (out.dim() >= 1 and src.dim() >= 1 and out.shape[0] == src.shape[0]):
            for r in found:
                if r.node is not node:
                    _use(r.node, name)
            return _wrap(out, node)
    for r in found:
        _use(r.node, name)
    return _plain(out)


def recorded(tensor: torch.Tensor, book: Book, column: int) -> Rows:
    """``tensor`` (sharing its storage) as column ``column`` of ``book``'s data."""
    with torch._C.DisableTorchFunctionSubclass():
        r = tensor.as_subclass(Rows)
    r.node = Node(book.key, column, None, True, book)
    return r
