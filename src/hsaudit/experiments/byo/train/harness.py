"""The harness: load a user's training, build the two worlds, train a shard of models and score the canary.

The contract (docs/byo.md): an entry ``package.module:make`` or ``path/to/file.py:make`` names a function ``make()``
— or ``make(setting)``, which receives an :class:`~hsaudit.experiments.byo.values.AuditSetting` or None — returning
an object (or mapping) with

- ``claim``: the mapping :class:`~hsaudit.experiments.byo.values.Claim` reads;
- ``train(data, seed)``: the trained ``torch.nn.Module`` (or its flat parameter tensor), deterministic in ``seed``,
  where ``data`` is a :class:`UserData` ``(x, y)`` built here (a ``TensorDataset`` whose ``data.numpy`` gives the
  NumPy arrays); for a gradient canary a :class:`CanaryData` ``(x, y, w)`` whose per-example loss must add
  ``w * data.canary_term(model)`` (for M Dirac canaries ``(x, y, w, k)`` and ``w * data.canary_term(model, k)``). Framework-neutral: ``train`` may instead return NumPy arrays, a pytree of arrays
  or an object with ``get_weights()`` (flattened by :func:`~hsaudit.experiments.byo.train.pytree.flat_vector`); it
  then needs ``loss(params, x, y)`` on NumPy inputs (:func:`model_losses`), its θ0 is not observed, and its canary
  is an input canary;
- optionally ``dataset()`` (the user's data), ``loss(model, x, y)`` (per example; default cross-entropy for integer
  labels, squared error otherwise), ``predict(model, x)`` (outputs of a flat-parameter model, for the canary's
  label choice), ``classes``, and ``train_batch(data, seeds)`` (many models of one world at once: a list of modules
  or a ``[m, p]`` tensor) with ``models_per_call``;
- optionally a keyword parameter ``init_seed`` of ``train`` (and ``train_batch``): the harness then passes one fixed
  value for every model of an audit (``design.stream("init")``); the training draws its initialisation θ0 from it and
  everything else (sampling, noise) from ``seed``. A θ0 drawn from ``seed`` varies across the audit's models and
  drowns the canary's effect; DP holds for every fixed θ0, so the audit may fix it;
- white box: ``train(data, seed, record)`` (``train_batch(data, seeds, record)``) calls ``record(step, model)``
  (``record(step, models)``) after its steps; the harness then also scores every recorded iterate
  (:func:`iterates_statistic`), so that the all-iterates threat model is audited too.

Imports the engine (the canary registry), the util layer, this package's values and errors and, for the user's
module, importlib: a training job's code version covers exactly this.
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
import inspect
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import TensorDataset

from hsaudit.engine.architectures import flat_parameters
from hsaudit.engine.canaries import (
    CanarySource,
    GradientCanary,
    InputCanary,
    background,
    canary_type,
)
from hsaudit.experiments.byo.train.errors import UserCodeError, guarded
from hsaudit.experiments.byo.train.pytree import flat_vector
from hsaudit.experiments.byo.train.reads import Book, Reads, recorded
from hsaudit.experiments.byo.values import (AuditSetting, Claim, Design, check_setting, data_use_of, entry_file,
                                           split_entry)

MODELS_PER_CALL = 64
"""Models per ``train_batch`` call when the training does not say (``models_per_call``)."""


# ---- the user's entry ----------------------------------------------------------------------------------------------
_LOADED: dict[tuple[Path, int, str], Any] = {}


def load_make(entry: str, setting: AuditSetting | None = None) -> Callable[..., Any]:
    """The ``make`` function an entry names (a path module is loaded once per process, version of its file and
    ``setting`` asked for, with its folder on ``sys.path`` so that it imports its sibling modules): each configuration
    gets its own copy of the module, so that module globals one ``make(setting)`` sets (``global SIGMA``) do not
    change the training of another (the own configuration's, the σ/1.5 control's).

    Raises:
        ValueError: the module does not import (the message carries the import error) or has no such function.
    """
    target, attr = split_entry(entry)
    try:
        if target.endswith(".py"):
            path = entry_file(entry)
            key = (path, path.stat().st_mtime_ns, repr(setting))
            module = _LOADED.get(key)
            if module is None:
                _on_path(path.parent)
                name = f"hsaudit_byo_entry_{abs(hash(key))}"
                spec = importlib.util.spec_from_file_location(name, path)
                module = importlib.util.module_from_spec(spec)
                sys.modules[name] = module
                try:
                    spec.loader.exec_module(module)
                except BaseException:
                    del sys.modules[name]
                    raise
                _LOADED[key] = module
        else:
            module = importlib.import_module(target)
    except ValueError:
        raise
    except Exception as err:  # the user's module failed to import: say how
        raise ValueError(f"entry {entry!r} does not import: {type(err).__name__}: {err}") from None
    make = getattr(module, attr, None)
    if not callable(make):
        raise ValueError(f"entry {entry!r}: module {target} has no function {attr}")
    return make


def _on_path(folder: Path) -> None:
    """Put an entry file's folder first on ``sys.path`` (unless it is there), so that the file imports its sibling
    modules as it does when run as a script."""
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))


@dataclass(frozen=True, eq=False)
class Training:
    """A user's training, as ``make()`` returned it (see the module docstring).

    Attributes:
        entry: the entry it came from.
        claim: the claim (after the design's overrides).
        train: ``train(data, seed)``, or None when only ``train_batch`` is given.
        train_batch: ``train_batch(data, seeds)``, or None.
        models_per_call: models per ``train_batch`` call.
        dataset: ``dataset()``, or None.
        loss: the per-example ``loss(model, x, y)``, or None for the default.
        predict: ``predict(model, x)`` for flat-parameter models, or None.
        classes: the number of classes, or None to read it from the labels.
        records: whether the training calls ``record(step, model)`` (a third parameter of ``train``/``train_batch``).
        init_seed: whether the training takes the keyword ``init_seed`` (the seed of its initialisation θ0).
    """

    entry: str
    claim: Claim
    train: Callable[..., Any] | None
    train_batch: Callable[..., Any] | None
    models_per_call: int
    dataset: Callable[[], Any] | None
    loss: Callable[..., Any] | None
    predict: Callable[..., Any] | None
    classes: int | None
    records: bool = False
    init_seed: bool = False


def _takes_init_seed(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` has a parameter named ``init_seed`` that can be passed by keyword."""
    try:
        param = inspect.signature(fn).parameters.get("init_seed")
    except (TypeError, ValueError):
        return False
    return param is not None and param.kind in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY)


def _takes_record(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` takes a third positional parameter (``record``; ``init_seed`` is not one)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != "init_seed" for p in params) >= 3


def _field(made: Any, name: str) -> Any:
    return made.get(name) if isinstance(made, Mapping) else getattr(made, name, None)


def load_training(
    entry: str, *, setting: AuditSetting | None = None, claim: Mapping[str, Any] | None = None
) -> Training:
    """Call the entry's ``make`` (with ``setting`` when one is asked for) and check what it returns.

    Args:
        entry: ``package.module:make`` or ``path/to/file.py:make``.
        setting: the cheap configuration to ask for, or None.
        claim: claim values that replace those ``make()`` states.

    Raises:
        ValueError: the entry does not import; ``make`` takes no setting when one is asked for; no ``claim`` or a
            bad one; no ``train``/``train_batch``; a claim that ignores the setting.
        UserCodeError: ``make`` raised. The training's functions are wrapped alike: an exception of the user's
            ``train``, ``train_batch``, ``dataset``, ``loss`` or ``predict`` is raised as a
            :class:`~hsaudit.experiments.byo.train.errors.UserCodeError` naming the function, the entry and the seed.
    """
    make = load_make(entry, setting)
    params = inspect.signature(make).parameters
    if setting is not None and not params:
        raise ValueError(f"entry {entry!r}: an audit setting was asked for, but make() takes no argument (docs/byo.md)")
    made = guarded("make", entry, make)(*((setting,) if params else ()))
    stated = _field(made, "claim")
    if stated is None and not claim:
        raise ValueError(f"entry {entry!r}: make() returned no claim")
    merged = {**(dict(stated) if stated is not None else {}), **dict(claim or {})}
    parsed = Claim.from_mapping(merged)
    check_setting(parsed, setting)
    train, train_batch = _field(made, "train"), _field(made, "train_batch")
    if not callable(train) and not callable(train_batch):
        raise ValueError(f"entry {entry!r}: make() returned neither train(data, seed) nor train_batch(data, seeds)")
    per_call = _field(made, "models_per_call") or MODELS_PER_CALL
    classes = _field(made, "classes")
    used = train_batch if callable(train_batch) else train
    return Training(
        entry=entry,
        claim=parsed,
        train=guarded("train", entry, train) if callable(train) else None,
        train_batch=guarded("train_batch", entry, train_batch) if callable(train_batch) else None,
        models_per_call=int(per_call),
        dataset=guarded("dataset", entry, _field(made, "dataset")),
        loss=guarded("loss", entry, _field(made, "loss")),
        predict=guarded("predict", entry, _field(made, "predict")),
        classes=None if classes is None else int(classes),
        records=_takes_record(used),
        init_seed=_takes_init_seed(used),
    )


# ---- data and worlds ------------------------------------------------------------------------------------------------
def _arrays(data: Any, where: str) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(data, TensorDataset):
        data = data.tensors[:2]
    elif isinstance(data, Mapping):
        data = (data.get("x"), data.get("y"))
    if not isinstance(data, (tuple, list)) or len(data) < 2:
        raise ValueError(f"{where} must give (x, y): a TensorDataset, a pair or a mapping with x and y")
    x, y = (t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else np.asarray(t) for t in data[:2])
    if x.ndim < 2 or y.shape != (x.shape[0],):
        raise ValueError(f"{where}: x must be [n, ...] and y [n], got {x.shape} and {y.shape}")
    y = y.astype(np.int64) if np.issubdtype(y.dtype, np.integer) or y.dtype == bool else y.astype(np.float32)
    return x.astype(np.float32), y


def user_data(training: Training, data: str | None = None) -> tuple[np.ndarray, np.ndarray, int | None]:
    """The data the canary is inserted into: ``x`` float32, ``y`` (int64 labels or float32 targets), the classes.

    Args:
        training: the user's training (its ``dataset()``).
        data: a ``.npz`` file with arrays ``x`` and ``y`` that replaces ``dataset()``, or None.

    Raises:
        ValueError: no data given, or data of the wrong shape.
    """
    if data is not None:
        with np.load(data) as f:
            if "x" not in f or "y" not in f:
                raise ValueError(f"{data} must hold arrays x and y, found {', '.join(f.files)}")
            x, y = _arrays((f["x"], f["y"]), str(data))
    elif training.dataset is not None:
        x, y = _arrays(training.dataset(), f"{training.entry}: dataset()")
    else:
        raise ValueError(f"entry {training.entry!r} has no dataset(): give one, or a data file (x, y arrays)")
    if y.dtype != np.int64:
        return x, y, None
    classes = training.classes if training.classes is not None else max(2, int(y.max()) + 1)
    if y.min() < 0 or y.max() >= classes:
        raise ValueError(f"labels must lie in [0, {classes}), got [{y.min()}, {y.max()}]")
    return x, y, classes


class UserData(TensorDataset):
    """The data handed to ``train``: a ``TensorDataset`` ``(x, y)`` whose :attr:`numpy` gives the same as NumPy arrays,
    so that a JAX or Keras training never touches torch. Between :meth:`counting` and :meth:`counted` its tensors
    record the rows the training reads, through ``data[i]`` or ``data.tensors`` alike, in this process or a
    DataLoader's workers (:mod:`~hsaudit.experiments.byo.train.reads`), which the check compares with the claim's
    sampling: a read under ``torch.no_grad()`` or ``torch.inference_mode()`` (an evaluation pass, the idiom of every
    framework's tutorials) is not a training's and is not counted."""

    _untracked: tuple[torch.Tensor, ...] | None = None
    _book: Book | None = None

    def counting(self) -> UserData:
        """Start recording the reads of each row (:meth:`counted` gives them); returns itself."""
        self._book = Book(len(self), len(self.tensors))
        self._untracked = self.tensors
        self.tensors = tuple(recorded(t, self._book, c) for c, t in enumerate(self.tensors))
        return self

    def counted(self) -> Reads:
        """Stop recording: the reads since :meth:`counting`."""
        book, self._book = self._book, None
        if book is None or self._untracked is None:
            raise ValueError("counted() without counting()")
        self.tensors, self._untracked = self._untracked, None
        return book.close()

    def plain(self, i: int) -> torch.Tensor:
        """Tensor ``i`` as the harness reads it: never recorded as the training's read."""
        return (self.tensors if self._untracked is None else self._untracked)[i]

    @property
    def numpy(self) -> tuple[np.ndarray, ...]:
        """``(x, y)`` (``(x, y, w)`` for :class:`CanaryData`) as read-only NumPy views of the tensors."""
        views = []
        for t in self.tensors:
            view = t.detach().cpu().numpy()
            view.flags.writeable = False
            views.append(view)
        return tuple(views)


class CanaryData(UserData):
    """The training set of a gradient canary: ``(x, y, w)``, where ``w`` is 0 for every row but the canary's carrier;
    for a family of M Dirac canaries (``--canaries M``) ``(x, y, w, k)``, ``k`` each row's coordinate (−1 but on the
    canaries' rows).

    The training's per-example loss adds ``w * data.canary_term(model)`` — its gradient is ``w · direction`` (the
    canary's gradient, of norm ``w``, on the carrier row) and nothing elsewhere — or, for any number of canaries,
    ``w * data.canary_term(model, k)`` with each row's ``k`` (:attr:`k`; a scalar per row under ``torch.func.vmap``,
    a ``[B]`` tensor in a batched loss): its gradient is ``w · e_k`` on a canary's row.
    """

    def __init__(self, x: torch.Tensor, y: torch.Tensor, w: torch.Tensor, direction: torch.Tensor | None,
                 coordinates: torch.Tensor | None = None) -> None:  # fmt: skip
        """``coordinates``: a family's per-row ``k`` (then ``direction`` is None and ``k`` is the fourth tensor)."""
        if coordinates is not None:
            super().__init__(x, y, w, torch.as_tensor(coordinates, dtype=torch.long))
        else:
            super().__init__(x, y, w)
        self.direction = direction

    @property
    def family(self) -> bool:
        """Whether the rows carry one Dirac coordinate each (``(x, y, w, k)``): ``canary_term`` then needs ``k``."""
        return len(self.tensors) > 3

    @property
    def k(self) -> torch.Tensor:
        """Each row's Dirac coordinate, −1 where the row carries none: the fourth tensor of a family; of a single
        Dirac canary, its coordinate on the rows where ``w`` ≠ 0.

        Raises:
            ValueError: a single canary whose direction is not a Dirac (use ``canary_term(model)``).
        """
        if self.family:
            return self.tensors[3]
        w = self.plain(2)
        if self.direction is None:
            return torch.full(w.shape, -1, dtype=torch.long)
        nonzero = torch.nonzero(torch.as_tensor(self.direction).reshape(-1)).reshape(-1)
        if nonzero.numel() != 1:
            raise ValueError("the canary's direction is not one coordinate: its loss term is w * data.canary_term(model)")
        return torch.where(w != 0, nonzero[0], torch.full(w.shape, -1, dtype=torch.long))

    def canary_term(self, model: torch.nn.Module | torch.Tensor, k: torch.Tensor | None = None) -> torch.Tensor:
        """⟨direction, θ⟩ of a module's flat parameters, of a flat ``[p]`` tensor or of each row of ``[m, p]`` (0
        before the canary is built); with ``k``, each row's own ⟨e_k, θ⟩ (0 where k < 0, :func:`dirac_term`).

        Raises:
            ValueError: no ``k`` for a family's rows (one coordinate each: the term needs to know the row's).
        """
        theta = flat_parameters(model, detach=False)
        if k is not None:
            return dirac_term(theta, k)
        if self.family:
            raise ValueError("this training set holds many Dirac canaries, one coordinate per row: the per-example "
                             "loss adds w * data.canary_term(model, k), k the row's entry of data.k (docs/byo.md)")  # fmt: skip
        if self.direction is None:
            return theta.sum(-1) * 0.0
        return theta @ self.direction.to(theta.dtype)


def dirac_term(theta: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """θ[..., k] where k ≥ 0, 0 where k < 0: ``[*theta.shape[:-1], *k.shape]``. Written with ``index_select`` (not
    ``theta[k]``), so that a scalar ``k`` per example works under ``torch.func.vmap``."""
    k = torch.as_tensor(k)
    at = theta.index_select(-1, k.clamp(min=0).reshape(-1).long()).reshape(theta.shape[:-1] + k.shape)
    return at * (k >= 0).to(theta.dtype)


def is_torch(model: Any) -> bool:
    """Whether ``train`` returned a torch module or tensor (else: NumPy arrays, a pytree, ``get_weights()``)."""
    return isinstance(model, (torch.nn.Module, torch.Tensor))


def model_parameters(model: Any) -> torch.Tensor:
    """Any trained model's flat parameter vector, detached: a torch module's or flat tensor's
    (:func:`hsaudit.engine.architectures.flat_parameters`), any other model's leaves as
    :func:`~hsaudit.experiments.byo.train.pytree.flat_vector` orders them (float64)."""
    return flat_parameters(model) if is_torch(model) else torch.from_numpy(flat_vector(model))


@dataclass(frozen=True, eq=False)
class Worlds:
    """The two training sets of an audit: the background without (bit 0) and with (bit 1) the canary.

    Add-remove: world 1 is the background plus the canary's row. Replace-one: world 1 is the background with row
    ``replaced`` changed into the canary's row, so both have the same size. A positive control (``copies`` = k > 1)
    puts k copies of the canary's row in world 1 (replacing rows ``replaced`` … under replace-one).
    """

    x: torch.Tensor
    y: torch.Tensor
    canary: InputCanary | GradientCanary | None
    neighbouring: str
    replaced: int | tuple[int, ...] | None = None
    copies: int = 1

    def dataset(self, member: bool) -> TensorDataset:
        x, y = self.x, self.y
        gradient = isinstance(self.canary, GradientCanary)
        w = torch.zeros(x.shape[0], dtype=torch.float32)
        if member and self.canary is not None:
            k = int(self.copies)
            cx = torch.as_tensor(self.canary.x, dtype=x.dtype)[None].repeat(k, *[1] * (x.dim() - 1))
            cy = torch.as_tensor(self.canary.y, dtype=y.dtype).reshape(1).repeat(k)
            cw = torch.full((k,), float(self.canary.norm) if gradient else 0.0)
            if self.neighbouring == "replace-one":
                rows = list(np.atleast_1d(self.replaced))[:k]
                x, y, w = x.clone(), y.clone(), w.clone()
                x[rows], y[rows], w[rows] = cx, cy, cw
            else:
                x, y, w = torch.cat([x, cx]), torch.cat([y, cy]), torch.cat([w, cw])
        if gradient:
            return CanaryData(x, y, w, torch.as_tensor(self.canary.direction))
        return UserData(x, y)

    def probe_dataset(self, gradient: bool, family: bool = False) -> TensorDataset:
        """The background alone, in the form the canary's worlds will have (``(x, y, w)`` for a gradient canary,
        ``(x, y, w, k)`` for a gradient ``family``)."""
        if gradient:
            n = self.x.shape[0]
            return CanaryData(self.x, self.y, torch.zeros(n), None, torch.full((n,), -1) if family else None)
        return UserData(self.x, self.y)


def make_worlds(
    x: np.ndarray, y: np.ndarray, canary: InputCanary | GradientCanary, design: Design, neighbouring: str,
    classes: int | None = None,
) -> Worlds:
    """The worlds of ``design``: its background of the data (without the canary's source row, if any). With the
    canary option ``replaced=opposite`` (:data:`REPLACED`), world 0 holds the canary's opposite in the replaced rows
    (:func:`opposite_rows`)."""
    keep = np.ones(x.shape[0], dtype=bool)
    if isinstance(canary, InputCanary) and canary.source_index is not None:
        keep[canary.source_index] = False
    bx, by = background(design.background)(
        x[keep], y[keep], size=design.background_size, seed=design.stream("background"),
        options=design_options(design)[1],
    )
    replaced: int | tuple[int, ...] | None = None
    if neighbouring == "replace-one":
        rng = np.random.default_rng(design.stream("replaced"))
        if design.copies == 1:  # the audit's draw, as before controls existed
            replaced = int(rng.integers(bx.shape[0]))
        else:
            if design.copies > bx.shape[0]:
                raise ValueError(f"a control of {design.copies} copies replaces more rows than the background's "
                                 f"{bx.shape[0]}")  # fmt: skip
            first = int(rng.integers(bx.shape[0]))
            others = [int(j) for j in rng.permutation(bx.shape[0]) if j != first][: design.copies - 1]
            replaced = (first, *others)
    if replaced_option(design) == "opposite":
        bx, by = opposite_rows(bx, by, canary, neighbouring, replaced, classes)
    return Worlds(torch.as_tensor(bx), torch.as_tensor(by), canary, neighbouring, replaced, design.copies)


def opposite_rows(bx: np.ndarray, by: np.ndarray, canary: InputCanary | GradientCanary, neighbouring: str,
                  replaced: int | tuple[int, ...] | None, classes: int | None) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """The background with the canary's opposite in the ``replaced`` rows: its input with the label (y* + 1) mod K.
    For K = 2 classes its per-example gradient is exactly minus the canary's times p_{y*}/p_{1-y*} at every θ (the
    loss's gradient is J(x*)ᵀ(p − e_y), and p − e_0 = −p_1(1, −1), p − e_1 = p_0(1, −1)), so replace-one's two
    worlds differ by a row that pushes one way and a row that pushes the other: the microbatch (or example) that
    holds it moves by 2C where the rest of its rows give no gradient (a ``blank`` background), the replace-one
    sensitivity that the declared mechanism's bound assumes.

    Raises:
        ValueError: add-remove (no replaced row), a gradient canary or a regression target.
    """
    if neighbouring != "replace-one":
        raise ValueError("the canary option replaced=opposite needs replace-one (the row world 1 replaces)")
    if not isinstance(canary, InputCanary) or not np.issubdtype(np.asarray(canary.y).dtype, np.integer):
        raise ValueError("the canary option replaced=opposite needs an input canary with a class label")
    k = classes if classes is not None else max(2, int(np.max(by)) + 1, int(canary.y) + 1)
    rows = list(np.atleast_1d(replaced))
    bx, by = np.array(bx, copy=True), np.array(by, copy=True)
    bx[rows] = np.asarray(canary.x, dtype=bx.dtype)
    by[rows] = (int(canary.y) + 1) % int(k)
    return bx, by


# ---- training and scores --------------------------------------------------------------------------------------------
def default_loss(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Per-example cross-entropy for integer labels (binary cross-entropy on a single output), squared error for
    float targets."""
    out = model(x)
    if y.dtype in (torch.int64, torch.int32, torch.bool):
        if out.shape[-1] == 1:
            return torch.nn.functional.binary_cross_entropy_with_logits(
                out.reshape(-1), y.to(out.dtype), reduction="none"
            )
        return torch.nn.functional.cross_entropy(out, y.long(), reduction="none")
    return ((out.reshape(y.shape[0], -1).mean(-1) - y) ** 2).reshape(-1)


def _as_models(out: Any, count: int, where: str) -> list[Any]:
    if isinstance(out, torch.Tensor):
        if out.dim() != 2 or out.shape[0] != count:
            raise ValueError(f"{where} must return {count} models ([{count}, p] tensor or a list), got {tuple(out.shape)}")
        return list(out)
    out = list(out)
    if len(out) != count:
        raise ValueError(f"{where} returned {len(out)} models for {count} seeds")
    return out


def _ignore(*args: Any) -> None:
    return None


def init_seed_for(design: Design, training: Training) -> int | None:
    """The ``init_seed`` every model of ``design`` gets (None when the training takes none)."""
    return design.stream("init") if training.init_seed else None


class _FirstForward:
    """A global forward pre-hook (``torch.nn.modules.module.register_module_forward_pre_hook``) that keeps the flat
    parameters of the first module with parameters forwarded while it is active: the outermost module (a forward
    pre-hook fires before the forwards inside it; for Opacus the ``GradSampleModule``, whose parameters are those of
    the module it wraps). For a training whose first forward precedes its first step, that is θ0."""

    def __init__(self) -> None:
        self.theta: torch.Tensor | None = None

    def __call__(self, module: torch.nn.Module, args: Any) -> None:
        if self.theta is None:
            params = [p.detach().reshape(-1).clone() for p in module.parameters()]
            if params:
                self.theta = torch.cat(params)

    def around(self, call: Callable[[], Any]) -> tuple[Any, torch.Tensor | None]:
        """``call()`` with the hook active (removed after it, whatever happens) and the θ0 it saw."""
        self.theta = None
        handle = torch.nn.modules.module.register_module_forward_pre_hook(self)
        try:
            out = call()
        finally:
            handle.remove()
        return out, self.theta


def train_models(
    training: Training, data: TensorDataset, seeds: Sequence[int],
    record: Callable[[int, int, Any], None] | None = None, *, init_seed: int | None = None,
) -> list[Any]:  # fmt: skip
    """Models of one world, one per seed: ``train_batch`` in calls of ``models_per_call`` when there is one, else
    ``train`` per seed. A recording training's ``record(step, model)`` reaches ``record(i, step, model)``, ``i`` the
    model's position in ``seeds`` (ignored when ``record`` is None); a training that takes ``init_seed`` gets
    ``init_seed`` (:func:`init_seed_for`) at every call."""
    return train_observed(training, data, seeds, record, init_seed=init_seed, observe=False)[0]


def train_observed(
    training: Training, data: TensorDataset, seeds: Sequence[int],
    record: Callable[[int, int, Any], None] | None = None, *, init_seed: int | None = None, observe: bool = True,
) -> tuple[list[Any], list[torch.Tensor | None]]:  # fmt: skip
    """:func:`train_models`, and each model's initialisation θ0 as observed during its ``train`` call (``observe``):
    the flat parameters of the first module forwarded (:class:`_FirstForward`). None where not observed: a
    ``train_batch`` call (many models), a training that forwards no module, ``observe`` False."""
    kwargs = {"init_seed": int(init_seed)} if training.init_seed and init_seed is not None else {}
    models: list[Any] = []
    thetas: list[torch.Tensor | None] = []
    if training.train_batch is not None:
        where = f"{training.entry}: train_batch"
        for i in range(0, len(seeds), training.models_per_call):
            chunk = [int(s) for s in seeds[i : i + training.models_per_call]]
            if not training.records:
                out = training.train_batch(data, chunk, **kwargs)
            elif record is None:
                out = training.train_batch(data, chunk, _ignore, **kwargs)
            else:
                def each(step: int, batch: Any, first: int = i, size: int = len(chunk)) -> None:
                    for j, model in enumerate(_as_models(batch, size, f"{where}'s record")):
                        record(first + j, int(step), model)

                out = training.train_batch(data, chunk, each, **kwargs)
            models += _as_models(out, len(chunk), where)
        return models, [None] * len(models)
    first = _FirstForward()
    for i, s in enumerate(seeds):
        if not training.records:
            call = lambda s=s: training.train(data, int(s), **kwargs)  # noqa: E731
        else:
            hook = _ignore if record is None else (lambda step, model, i=i: record(i, int(step), model))
            call = lambda s=s, hook=hook: training.train(data, int(s), hook, **kwargs)  # noqa: E731
        model, theta = first.around(call) if observe else (call(), None)
        if theta is not None and (not is_torch(model) or theta.numel() != flat_parameters(model).numel()):
            theta = None  # another module than the returned one: not this model's θ0
        models.append(model)
        thetas.append(theta)
    return models, thetas


def iterates_statistic(scores: Sequence[float]) -> float:
    """The white-box score of one model from its canary scores at the recorded iterates, higher ⇒ canary present:
    the largest increment between consecutive iterates above their median increment. A step that held the canary
    raises its increment above the others (Poisson or shuffled sampling); with noise reused across steps, the
    increments of a run without the canary are all equal (the statistic is 0) and the canary's steps stand out.

    Raises:
        ValueError: fewer than three recorded iterates.
    """
    increments = np.diff(np.asarray(scores, dtype=float))
    if increments.size < 2:
        raise ValueError(f"record(step, model) must be called at three steps or more, got {len(scores)}")
    return float(increments.max() - np.median(increments))


def canary_scores(
    training: Training, canary: InputCanary | GradientCanary, models: Sequence[Any],
    theta0: Sequence[torch.Tensor] | None = None,
) -> np.ndarray:  # fmt: skip
    """The score of every model, higher ⇒ canary present: −loss on (x*, y*) for an input canary, −⟨direction, θ⟩
    for a gradient canary (gradient descent on the canary's term lowers it).

    With ``theta0`` (each model's initialisation, :func:`train_observed`) the score is relative to it: −⟨d, θ_T − θ0⟩
    for a gradient canary, −(loss(θ_T) − loss(θ0)) for an input canary (the loss at θ0 evaluated on a deep copy of the
    returned model holding θ0). Valid: θ0 is drawn independently of the data, so releasing it beside the final model
    adds no privacy loss — the training is DP for every fixed θ0, hence (θ_T, θ0) is as private as θ_T under the claim
    — and a lower bound on ε from the pair is a lower bound for the claim. It removes θ0's variance across seeds from
    the score (a θ0 drawn from ``seed`` otherwise drowns the canary's effect).
    """
    if theta0 is not None:
        final = canary_scores(training, canary, models)
        start = canary_scores(training, canary, [_at(model, t) for model, t in zip(models, theta0, strict=True)])
        return final - start
    if isinstance(canary, GradientCanary):
        d = torch.as_tensor(canary.direction)
        return np.array([-float(model_parameters(m).to(d.dtype) @ d) for m in models])
    x, y = np.asarray(canary.x)[None], np.asarray(canary.y).reshape(1)
    return np.array([-model_losses(training, model, x, y)[0] for model in models])


def model_losses(training: Training, model: Any, x: Any, y: Any) -> np.ndarray:
    """The per-example loss of ``model`` on ``(x, y)`` (arrays or tensors), float64: a module's ``loss`` (default
    :func:`default_loss`) in eval mode, a flat tensor's ``loss`` on tensors, any other model's ``loss(params, x, y)``
    on NumPy ``x``, ``y`` (the framework-neutral contract; its result goes through ``np.asarray``).

    Raises:
        ValueError: a flat tensor or a non-torch model without ``loss``.
    """
    if training.loss is None and not isinstance(model, torch.nn.Module):
        if isinstance(model, torch.Tensor):
            raise ValueError(f"{training.entry}: train returns a parameter tensor; give loss(theta, x, y)")
        raise ValueError(f"{training.entry}: train returns a {type(model).__name__}, not a torch module: give "
                         "loss(params, x, y), the per-example loss on NumPy x, y (docs/byo.md)")  # fmt: skip
    if not is_torch(model):
        xs, ys = (v.detach().cpu().numpy() if isinstance(v, torch.Tensor) else np.asarray(v) for v in (x, y))
        return np.asarray(training.loss(model, xs, ys), dtype=np.float64).reshape(-1)
    if isinstance(model, torch.nn.Module):
        model.eval()
    with torch.no_grad():
        value = (training.loss or default_loss)(model, torch.as_tensor(x), torch.as_tensor(y))
    return torch.as_tensor(value).reshape(-1).detach().to(torch.float64).cpu().numpy()


def _at(model: Any, theta: torch.Tensor) -> Any:
    """``model`` with its parameters replaced by the flat ``theta`` (a deep copy; a flat tensor model is ``theta``)."""
    if isinstance(model, torch.Tensor):
        return theta.to(model.dtype).reshape(model.shape)
    start = copy.deepcopy(model)
    with torch.no_grad():
        torch.nn.utils.vector_to_parameters(theta.to(next(start.parameters()).dtype), start.parameters())
    return start


def reference_function(training: Training, model: Any) -> Callable[[np.ndarray], np.ndarray] | None:
    """``inputs -> outputs`` of a trained model, for the canary builders (None when it cannot be evaluated)."""
    if not is_torch(model):
        if training.predict is None:
            return None
        return lambda xs: np.asarray(training.predict(model, np.asarray(xs)))
    if isinstance(model, torch.Tensor):
        if training.predict is None:
            return None
        return lambda xs: training.predict(model, torch.as_tensor(xs)).detach().numpy()
    model.eval()

    def outputs(xs: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return (training.predict(model, torch.as_tensor(xs)) if training.predict else model(torch.as_tensor(xs))).numpy()

    return outputs


# ---- the check and the canary ----------------------------------------------------------------------------------------
USE_TRAININGS = 2
"""Trainings (seeds) whose reads of the data the check counts (:attr:`Probe.uses`)."""


@dataclass(frozen=True)
class Probe:
    """What the determinism check found: the model's size, and whether the seed matters.

    Attributes:
        parameters: p, the length of the model's flat parameter vector.
        seed_sensitive: whether two seeds give different models (False: the training ignores its seed — its noise
            is drawn from a fixed key, every run is the same model: a reused key that the audit will show).
        seconds: the user's training time per model in the check.
        n: examples of the data.
        classes: classes of the labels, or None for a regression target.
        theta0: the initialisation θ0 across seeds, one of :data:`THETA0`: ``fixed`` (observed, the same for both
            seeds), ``fixed (init_seed)`` (the training takes ``init_seed``, which the harness holds fixed), ``varies
            with the seed`` (observed, different: its variance across the audit's models drowns the canary's effect)
            or ``not observed`` (no module forwarded, or ``train_batch``).
        uses: the reads of each row (:meth:`UserData.counting`) in ``use_trainings`` trainings of the check (two
            seeds), or None where none was attributed to a row.
        whole: the computations of those trainings on all rows at once, with gradients enabled (``model(X)``,
            ``X.mean(0)``, ``data.numpy``), which no row's count holds (:class:`~.reads.Reads`).
        own_uses, own_whole, own_claim: in the audit setting, the same of the user's own configuration (``make()``
            without the setting) and its claim: the sampling the setting's full batch replaces (None outside the
            setting, or not seen).
    """

    parameters: int
    seed_sensitive: bool
    seconds: float
    n: int
    classes: int | None
    theta0: str = "not observed"
    uses: tuple[int, ...] | None = None
    own_uses: tuple[int, ...] | None = None
    own_claim: dict[str, Any] | None = None
    use_trainings: int = USE_TRAININGS
    whole: tuple[str, ...] = ()
    own_whole: tuple[str, ...] = ()


THETA0 = ("fixed", "fixed (init_seed)", "varies with the seed", "not observed")
"""What :func:`probe` can find of θ0 across seeds."""


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and bool(torch.allclose(a, b, rtol=1e-5, atol=1e-6 * (1.0 + float(a.abs().max()))))


def _reads(training: Training, data: UserData, seeds: Sequence[int], design: Design) -> tuple[Any, Any, Any]:
    """The models and θ0s of ``seeds`` trained on ``data`` with its reads recorded, and the reads: the counts (None:
    no read attributed to a row) and the computations on all rows at once."""
    data.counting()
    try:
        models, thetas = train_observed(training, data, seeds, init_seed=init_seed_for(design, training))
    finally:
        reads = data.counted()
    uses = tuple(int(u) for u in reads.uses) if reads.uses.any() else None
    return models, thetas, (uses, reads.whole)


def own_reads(
    own: Training, x: np.ndarray, y: np.ndarray, design: Design
) -> tuple[tuple[int, ...] | None, tuple[str, ...]]:
    """The reads of each row by the user's own configuration ``own`` (``make()`` without the setting) in
    :data:`USE_TRAININGS` trainings of the check's seeds, in the data form of ``design``'s canary (None: no read
    seen), and its computations on all rows at once."""
    gradient = not design.chosen and canary_type(design.canary).kind == "gradient"
    worlds = Worlds(torch.as_tensor(x), torch.as_tensor(y), None, own.claim.neighbouring)
    seeds = [design.stream("check", i) for i in range(USE_TRAININGS)]
    return _reads(own, worlds.probe_dataset(gradient), seeds, design)[2]


def probe(
    training: Training, x: np.ndarray, y: np.ndarray, classes: int | None, design: Design, gradient: bool,
    family: bool = False,
) -> tuple[Probe, Any]:
    """Train the data without a canary with two seeds, twice each, counting the reads of its rows in the first two
    (:attr:`Probe.uses`); return the probe and one of the models (the reference the canary builders may use).
    ``gradient``/``family``: the data has the form of a gradient canary's (of a gradient family's,
    :meth:`Worlds.probe_dataset`).

    Raises:
        ValueError: ``train`` not deterministic in ``seed`` (the message gives the seeds and the largest difference),
            or a model whose parameters or loss are NaN.
    """
    worlds = Worlds(torch.as_tensor(x), torch.as_tensor(y), None, training.claim.neighbouring)
    data = worlds.probe_dataset(gradient, family)
    seeds = [design.stream("check", 0), design.stream("check", 1)]
    start = time.perf_counter()
    first, first_thetas, (uses, whole) = _reads(training, data, seeds, design)
    again, again_thetas = train_observed(training, data, seeds, init_seed=init_seed_for(design, training))
    seconds = (time.perf_counter() - start) / 4
    models = [first[0], again[0], first[1], again[1]]
    thetas = [first_thetas[0], again_thetas[0], first_thetas[1], again_thetas[1]]
    flats = [model_parameters(m).to(torch.float64) for m in models]
    if not bool(torch.isfinite(flats[0]).all()):
        raise ValueError(f"{training.entry}: the trained model has NaN or infinite parameters (seed {seeds[0]}): "
                         "its loss is NaN, the training diverged")  # fmt: skip
    for i, pair in enumerate(((0, 1), (2, 3))):
        a, b = flats[pair[0]], flats[pair[1]]
        if not _same(a, b):
            diff = float((a - b).abs().max()) if a.shape == b.shape else math.inf
            raise ValueError(
                f"{training.entry}: train(data, seed) is not deterministic in seed: two runs with seed {seeds[i]} "
                f"differ (max |Δθ| = {diff:.3g}); draw every random number from seed"
            )
    model = models[0]
    if not is_torch(model):
        if training.loss is None:
            model_losses(training, model, x[:1], y[:1])  # raises: say that loss is needed
        if gradient:
            raise ValueError(f"{training.entry}: a gradient canary (--canary {design.canary}) needs a torch model (its "
                             f"term enters the loss); train returns a {type(model).__name__}: use an input canary")  # fmt: skip
    if isinstance(model, torch.nn.Module) or training.loss is not None:
        n_check = min(64, x.shape[0])
        value = model_losses(training, model, x[:n_check], y[:n_check])
        if not bool(np.isfinite(value).all()):
            raise ValueError(f"{training.entry}: the trained model's loss is NaN or infinite (seed {seeds[0]})")
    found = Probe(
        parameters=int(flats[0].numel()),
        seed_sensitive=not _same(flats[0], flats[2]),
        seconds=seconds,
        n=int(x.shape[0]),
        classes=classes,
        theta0=_theta0_finding(training, thetas),
        uses=uses,
        whole=whole,
    )
    return found, models[0]


def canary_changes_model(prepared: Prepared) -> bool:
    """Whether the canary changes the model of one seed (model 0's): for a training that gives the same model for
    every seed, a change is a deterministic leak (noise absent or reused across runs)."""
    seed, init = prepared.design.model_seed(0), init_seed_for(prepared.design, prepared.training)
    models = [train_models(prepared.training, prepared.worlds.dataset(b), [seed], init_seed=init)[0]
              for b in (False, True)]  # fmt: skip
    a, b = (model_parameters(m).to(torch.float64) for m in models)
    return not _same(a, b)


def _theta0_finding(training: Training, thetas: Sequence[torch.Tensor | None]) -> str:
    """:attr:`Probe.theta0` from the θ0 observed for seeds a, a, b, b."""
    if all(t is not None for t in thetas):
        if not _same(thetas[0].to(torch.float64), thetas[2].to(torch.float64)):
            return "varies with the seed"
        return "fixed (init_seed)" if training.init_seed else "fixed"
    return "fixed (init_seed)" if training.init_seed else "not observed"


def score_mode(design: Design, found: Probe) -> str:
    """``final`` or ``relative`` (:func:`canary_scores`): the design's choice, or for ``auto`` relative exactly when
    θ0 was observed and varies with the seed."""
    if design.score != "auto":
        return design.score
    return "relative" if found.theta0 == "varies with the seed" else "final"


def build_canary(
    design: Design, training: Training, x: np.ndarray, y: np.ndarray, found: Probe, reference: Any
) -> InputCanary | GradientCanary:
    """The design's canary for this data and model (its builder's stream derives from the design's seed)."""
    source = CanarySource(
        x=x,
        y=y,
        classes=found.classes,
        parameters=found.parameters,
        clip_norm=training.claim.max_grad_norm,
        seed=design.stream("canary", design.canary),
        reference=reference_function(training, reference),
        biases=bias_coordinates(reference),
        options=design_options(design)[0],
    )
    return canary_type(design.canary)(source)


REPLACED = ("background", "opposite")
"""The canary option ``replaced`` (the harness's own, any canary and background): what world 0 holds in the row
that world 1's canary takes under replace-one — ``background``, the background's own row drawn from the design's
seed (the default), or ``opposite``, the canary's input with another label (:func:`opposite_rows`): replace-one's
worst case, a matched pair whose gradients oppose."""


def replaced_option(design: Design) -> str:
    """The design's ``replaced`` canary option (:data:`REPLACED`; ``background`` when not given).

    Raises:
        ValueError: a value not in :data:`REPLACED`.
    """
    value = (design.canary_options or {}).get("replaced", REPLACED[0])
    if value not in REPLACED:
        raise ValueError(f"the canary option replaced must be one of {', '.join(REPLACED)}, got {value!r}")
    return str(value)


def design_options(design: Design) -> tuple[dict[str, Any], dict[str, Any]]:
    """The design's :attr:`~Design.canary_options` split into the canary's and the background's: each gets the keys
    its registry entry takes (a key both take goes to both, as ``opposing``'s and ``copies``' ``amplitude``); the
    harness's own ``replaced`` (:func:`replaced_option`) goes to neither.

    Raises:
        ValueError: a key that neither takes.
    """
    options = {k: v for k, v in (design.canary_options or {}).items() if k != "replaced"}
    own = canary_type(design.canary).options
    rows = background(design.background).options
    unknown = sorted(set(options) - set(own) - set(rows))
    if unknown:
        raise ValueError(f"canary options {unknown}: the canary {design.canary!r} takes {list(own)}, the background "
                         f"{design.background!r} takes {list(rows)} (and any design the harness's replaced)")  # fmt: skip
    return {k: v for k, v in options.items() if k in own}, {k: v for k, v in options.items() if k in rows}


def bias_coordinates(model: Any) -> tuple[int, ...] | None:
    """The coordinates of a module's flat parameters (``model.parameters()`` order) that belong to parameters named
    ``bias`` (the last part of their name), or None for a flat tensor, whose layout the harness cannot know."""
    if not isinstance(model, torch.nn.Module):
        return None
    out, at = [], 0
    for name, p in model.named_parameters():
        if name.rsplit(".", 1)[-1] == "bias":
            out.extend(range(at, at + p.numel()))
        at += p.numel()
    return tuple(out)


@dataclass(frozen=True, eq=False)
class Prepared:
    """Everything a shard needs: the training, its data, the check's findings, the canary and the worlds."""

    design: Design
    training: Training
    probe: Probe
    canary: InputCanary | GradientCanary
    worlds: Worlds


@dataclass(frozen=True, eq=False)
class Loaded:
    """A user's training and its data, loaded once: ``x`` float32, ``y`` labels or targets, ``classes``; in the audit
    setting, when asked for (:func:`load`), ``own``: the user's own configuration (``make()`` without the setting)
    and ``own_uses``, ``own_whole``: its reads of each row and on all rows at once (:func:`own_reads`)."""

    training: Training
    x: np.ndarray
    y: np.ndarray
    classes: int | None
    own: Training | None = None
    own_uses: tuple[int, ...] | None = None
    own_whole: tuple[str, ...] = ()

    @property
    def n(self) -> int:
        return int(self.x.shape[0])


def load(design: Design, *, own: bool = False) -> Loaded:
    """Call the entry's ``make`` and read its data; a claim inconsistent with the data fails here, before any training.

    ``own`` (the check's load, in the audit setting): first load the user's own configuration (``make()``) and count
    its reads of the data (:func:`own_reads`: the sampling the setting's full batch replaces), before ``make(setting)``
    runs — a ``make`` that sets module globals for the setting would otherwise change the own training too.

    Raises:
        ValueError: as :func:`load_training`, :func:`user_data` and :meth:`Claim.sampling_rate`.
        UserCodeError: the user's own configuration raised while training.
    """
    mine, uses, whole = None, None, ()
    if own and design.setting is not None:
        try:
            mine = load_training(design.entry)
            mx, my, _ = user_data(mine, design.data)
        except (ValueError, UserCodeError):
            mine = None  # make() without the setting fails: the setting's audit goes on without that check
        if mine is not None:
            uses, whole = own_reads(mine, mx, my, design)
    training = load_training(design.entry, setting=design.setting, claim=design.claim)
    x, y, classes = user_data(training, design.data)
    training.claim.sampling_rate(x.shape[0])
    return Loaded(training, x, y, classes, mine, uses, whole)


def prepare(
    design: Design,
    loaded: Loaded | None = None,
    *,
    found: Probe | None = None,
    canary: InputCanary | GradientCanary | None = None,
) -> Prepared:
    """Check the training and build the canary and the worlds — unless ``found`` and ``canary`` are given (a shard
    job reads those from the check job's files, so that every shard inserts the very same canary).

    Raises:
        ValueError: as :func:`load` and :func:`probe`.
    """
    checking = found is None or canary is None
    loaded = loaded if loaded is not None else load(design, own=checking)
    training, x, y = loaded.training, loaded.x, loaded.y
    if checking:
        gradient = canary_type(design.canary).kind == "gradient"
        found, reference = probe(training, x, y, loaded.classes, design, gradient)
        if loaded.own is not None:
            found = replace(found, own_uses=loaded.own_uses, own_whole=loaded.own_whole,
                            own_claim=loaded.own.claim.to_dict())  # fmt: skip
        canary = build_canary(design, training, x, y, found, reference)
    return Prepared(design, training, found, canary, make_worlds(x, y, canary, design, training.claim.neighbouring,
                                                                   found.classes))


def checked(design: Design, loaded: Loaded) -> Prepared:
    """The check (:func:`prepare`) of ``design``, or for a chosen design of its
    input-canary candidate (out_of_support / data: every training takes it), before any audit model: its reads of the
    data decide a sampling violation (:func:`data_use`) whatever the design."""
    return prepare(replace(design, canary="out_of_support", background="data") if design.chosen else design, loaded)


def data_use(prepared: Prepared | None) -> str | None:
    """Why the check's reads of the data contradict the claim's sampling (the setting's training, and in the audit
    setting the user's own configuration, whose sampling the full batch replaces), or None
    (:func:`~hsaudit.experiments.byo.values.data_use_finding`)."""
    if prepared is None:
        return None
    found = prepared.probe
    own = None if found.own_claim is None else Claim.from_mapping(found.own_claim)
    return data_use_of(prepared.training.claim, found.uses, found.use_trainings, own, found.own_uses)


def train_shard(prepared: Prepared, shard: int, *, progress: bool = False) -> dict[str, np.ndarray]:
    """Train and score the models of one shard.

    Returns:
        Columns ``model`` (global index), ``member`` (its bit), ``seed``, ``score`` (higher ⇒ canary present; relative
        to θ0 when :func:`score_mode` says so, and then the final model's score is ``score_final``), ``train_seconds``
        (the user's training, per model) and ``harness_seconds`` (this harness's work around it: data, scoring); for a
        recording training also ``score_iterates`` (:func:`iterates_statistic`; scoring the iterates happens inside
        the user's training time).

    Raises:
        ValueError: a model whose score is NaN or infinite (its training diverged), or a relative score asked for
            where a model's θ0 was not observed.
    """
    design, training = prepared.design, prepared.training
    relative = score_mode(design, prepared.probe) == "relative"
    init_seed = init_seed_for(design, training)
    models = design.shard_models(shard)
    finals = np.empty(len(models))
    bits = design.bits(models)
    seeds = np.array([design.model_seed(i) for i in models], dtype=np.int64)
    scores = np.empty(len(models))
    train_s = np.zeros(len(models))
    harness_s = np.zeros(len(models))
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(models), desc=f"shard {shard + 1}/{design.shards}", unit="model")
    step = training.models_per_call if training.train_batch is not None else 1
    recorded: list[list[float]] = [[] for _ in models]
    for member in (False, True):
        rows = np.flatnonzero(bits == member)
        t0 = time.perf_counter()
        data = prepared.worlds.dataset(member)
        setup = time.perf_counter() - t0
        for start in range(0, rows.size, step):
            chunk = rows[start : start + step]
            t1 = time.perf_counter()

            def record(i: int, _step: int, model: Any, chunk: np.ndarray = chunk) -> None:
                recorded[chunk[i]].append(float(canary_scores(training, prepared.canary, [model])[0]))

            trained, thetas = train_observed(training, data, seeds[chunk].tolist(),
                                             record if training.records else None, init_seed=init_seed,
                                             observe=relative)  # fmt: skip
            t2 = time.perf_counter()
            finals[chunk] = canary_scores(training, prepared.canary, trained)
            scores[chunk] = finals[chunk]
            if relative:
                missing = [int(s) for s, t in zip(seeds[chunk], thetas) if t is None]
                if missing:
                    raise ValueError(f"{training.entry}: score 'relative' needs each model's θ0, not observed for seed "
                                     f"{missing[0]} (train_batch, or no module forwarded before the first step)")  # fmt: skip
                scores[chunk] = canary_scores(training, prepared.canary, trained, theta0=thetas)
            t3 = time.perf_counter()
            train_s[chunk] = (t2 - t1) / chunk.size
            harness_s[chunk] = (t3 - t2) / chunk.size + setup / max(rows.size, 1)
            if bar is not None:
                bar.update(chunk.size)
    if bar is not None:
        bar.close()
    bad = np.flatnonzero(~np.isfinite(scores))
    if bad.size:
        i = bad[0]
        raise ValueError(
            f"{training.entry}: model {models[i]} (seed {seeds[i]}, canary {'in' if bits[i] else 'out'}) has a NaN or "
            f"infinite canary loss: its training diverged"
        )
    columns = {
        "model": np.asarray(models, dtype=np.int64),
        "member": bits.astype(np.int8),
        "seed": seeds,
        "score": scores,
        "train_seconds": train_s,
        "harness_seconds": harness_s,
    }
    if relative:
        columns["score_final"] = finals
    if training.records:
        columns["score_iterates"] = np.array([iterates_statistic(r) for r in recorded])
    return columns
