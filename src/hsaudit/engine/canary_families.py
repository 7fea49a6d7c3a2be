"""Canary families: M distinct canaries of one type, for audits that insert many canaries in one training (each by
its own coin: Steinke et al. 2023; Mahloujifar et al. 2024; ``hsaudit audit-training --canaries M``).

A family is one :class:`CanaryFamily` value: M inputs with their labels, where they came from, and the data rows they
were taken from (the background leaves those rows out). :data:`FAMILIES` maps a canary type of the registry
(:data:`hsaudit.engine.canaries.CANARIES`, whose :attr:`~hsaudit.engine.canaries.CanaryType.family` says whether the
type has a family form at all) to the builder of its M canaries as rows of a user's data; :data:`NO_BUILDER` says why
a type with a family form has no such builder. :func:`canary_family` is the one lookup.

- ``out_of_support``: M inputs outside the data's support — its mean plus
  :data:`~hsaudit.engine.canaries.OUT_OF_SUPPORT_AMPLITUDE` × its largest distance from the mean, each along its own
  random unit direction (the single canary's rule, one direction per canary) — each labelled as the single canary is
  (the reference model's least likely class there; without a reference a class drawn uniformly, so that the
  canaries' pulls do not add up to one shared direction).
- ``mislabelled``: M distinct rows of the data (drawn from the seed), each with a wrong label (the reference model's
  least likely class for it, or (y + 1) mod K).
- ``dirac``: M distinct coordinates of the flat parameters (drawn from the seed among those that are not biases,
  where the layout is known: :attr:`~hsaudit.engine.canaries.CanarySource.biases`), each carried by its own all-zero
  row whose loss term has the gradient :data:`~hsaudit.engine.canaries.DIRAC_NORM` · C · e_k — clipped, C · e_k:
  the family form of :func:`~hsaudit.engine.canaries.dirac_gradient`. A gradient family: the training's per-example
  loss must take each row's own coordinate (``w * data.canary_term(model, k)``, docs/byo.md).

Numpy only, as the registry (engine layer).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from hsaudit.engine.canaries import (
    DIRAC_NORM,
    OUT_OF_SUPPORT_AMPLITUDE,
    CanarySource,
    canary_type,
    draw_distinct,
)


@dataclass(frozen=True, eq=False)
class CanaryFamily:
    """M canaries of one type: input canaries, or gradient canaries (Dirac coordinates) carried by M rows.

    Attributes:
        x: the inputs ``[M, ...]``, float32 (a gradient family's carrier rows: all zero).
        y: their labels ``[M]`` (int64) or regression targets (float32).
        origin: where they came from, in words.
        source_rows: the data rows they were taken from (the background leaves them out), or None.
        coordinates: a gradient family's M distinct Dirac coordinates of the flat parameters (row j's term is
            ``norm · θ[coordinates[j]]``), or None for an input family.
        norm: the norm of a gradient family's per-row term gradient (None for an input family).
    """

    x: np.ndarray
    y: np.ndarray
    origin: str
    source_rows: np.ndarray | None = None
    coordinates: np.ndarray | None = None
    norm: float | None = None

    @property
    def gradient(self) -> bool:
        """Whether the family is one of gradient canaries (its rows carry Dirac coordinates)."""
        return self.coordinates is not None

    def __len__(self) -> int:
        return int(self.y.shape[0])


def family_arrays(family: CanaryFamily) -> dict[str, np.ndarray]:
    """A family as named arrays (``np.savez``: a few-runs audit's check job writes it once for every training job),
    :func:`family_from_arrays`' inverse."""
    rows = np.array([], dtype=np.int64) if family.source_rows is None else np.asarray(family.source_rows)
    out = {"x": family.x, "y": family.y, "origin": np.array(family.origin), "source_rows": rows,
           "has_source_rows": np.array(family.source_rows is not None)}  # fmt: skip
    if family.gradient:
        out.update(coordinates=np.asarray(family.coordinates, dtype=np.int64), norm=np.array(float(family.norm)))
    return out


def family_from_arrays(arrays: Mapping[str, np.ndarray]) -> CanaryFamily:
    """The family :func:`family_arrays` wrote."""
    rows = np.asarray(arrays["source_rows"]) if bool(arrays["has_source_rows"]) else None
    gradient = "coordinates" in arrays
    return CanaryFamily(np.asarray(arrays["x"]), np.asarray(arrays["y"]), str(arrays["origin"]), rows,
                        coordinates=np.asarray(arrays["coordinates"]) if gradient else None,
                        norm=float(arrays["norm"]) if gradient else None)  # fmt: skip


def _least_likely(source: CanarySource, xs: np.ndarray, exclude: np.ndarray | None) -> np.ndarray | None:
    """Per input, the class of the reference model's smallest output (other than ``exclude``), or None without one."""
    if source.reference is None:
        return None
    out = np.array(source.reference(xs), dtype=np.float64).reshape(xs.shape[0], -1)
    if out.shape[1] != source.classes:
        raise ValueError(f"the reference model gives {out.shape[1]} outputs for {source.classes} classes")
    if exclude is not None:
        out[np.arange(xs.shape[0]), exclude] = np.inf
    return np.argmin(out, axis=1).astype(np.int64)


def _check_count(m: int) -> int:
    if int(m) != m or m < 1:
        raise ValueError(f"a family needs at least one canary, got {m!r}")
    return int(m)


def out_of_support_family(source: CanarySource, m: int) -> CanaryFamily:
    """M distinct inputs outside the data's support (module docstring), from ``source.seed``."""
    m = _check_count(m)
    x = np.asarray(source.x, dtype=np.float32)
    flat = x.reshape(x.shape[0], -1).astype(np.float64)
    mean = flat.mean(axis=0)
    radius = max(float(np.max(np.linalg.norm(flat - mean, axis=1))), 1.0)
    rng = np.random.default_rng(source.seed)
    u = rng.standard_normal((m, flat.shape[1]))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    xs = (mean + OUT_OF_SUPPORT_AMPLITUDE * radius * u).reshape(m, *x.shape[1:]).astype(np.float32)
    where = (f"{m} random directions from the data's mean at {OUT_OF_SUPPORT_AMPLITUDE:g}x its largest distance from "
             "the mean")  # fmt: skip
    if source.classes is None:
        y = np.asarray(source.y, dtype=np.float64)
        base = np.full(m, y.mean()) if source.reference is None else np.ravel(source.reference(xs))[:m]
        return CanaryFamily(xs, (base + 4.0 * float(y.std() or 1.0)).astype(np.float32), f"{where}, targets +4 sd")
    labels = _least_likely(source, xs, exclude=None)
    if labels is None:
        labels = rng.integers(int(source.classes), size=m).astype(np.int64)
        return CanaryFamily(xs, labels, f"{where}, labels drawn uniformly")
    return CanaryFamily(xs, labels, f"{where}, each labelled by the reference model's least likely class")


def mislabelled_family(source: CanarySource, m: int) -> CanaryFamily:
    """M distinct rows of the data, each with a wrong label (module docstring), from ``source.seed``.

    Raises:
        ValueError: a regression target, or M not below the data's rows (the background needs one at least).
    """
    m = _check_count(m)
    if source.classes is None:
        raise ValueError("the mislabelled family needs class labels; the data has a regression target")
    x, y = np.asarray(source.x, dtype=np.float32), np.asarray(source.y, dtype=np.int64)
    if m >= x.shape[0]:
        raise ValueError(f"{m} mislabelled canaries need more than {m} rows of data, got {x.shape[0]}")
    rows = np.sort(draw_distinct(x.shape[0], m, source.seed))
    labels = _least_likely(source, x[rows], exclude=y[rows])
    if labels is None:
        labels = (y[rows] + 1) % int(source.classes)
    return CanaryFamily(x[rows].copy(), labels.astype(np.int64),
                        f"{m} rows of the data, each with a wrong label", source_rows=rows)  # fmt: skip


def dirac_family(source: CanarySource, m: int) -> CanaryFamily:
    """M distinct Dirac coordinates (module docstring), from ``source.seed``, each carried by an all-zero row.

    Raises:
        ValueError: no parameter count, or fewer coordinates than M once the biases are left out.
    """
    m = _check_count(m)
    if source.parameters is None:
        raise ValueError("the dirac family needs the model's parameter count (CanarySource.parameters)")
    p = int(source.parameters)
    allowed = np.setdiff1d(np.arange(p), np.asarray(source.biases or (), dtype=np.int64))
    known = "" if source.biases is None else f", biases ({p - allowed.size}) avoided"
    if m > allowed.size:
        raise ValueError(f"{m} Dirac canaries need {m} distinct coordinates; the model has {allowed.size} "
                         f"({p} parameters{known})")  # fmt: skip
    coordinates = allowed[draw_distinct(allowed.size, m, source.seed)].astype(np.int64)
    x = np.zeros((m, *np.asarray(source.x).shape[1:]), dtype=np.float32)
    y = np.zeros(m, dtype=np.int64 if source.classes is not None else np.float32)
    norm = DIRAC_NORM * float(source.clip_norm or 1.0)
    return CanaryFamily(x, y, f"{m} distinct coordinates of {p} parameters{known}, per-row gradient norm {norm:g}",
                        coordinates=coordinates, norm=norm)  # fmt: skip


FAMILIES: Mapping[str, Callable[[CanarySource, int], CanaryFamily]] = {
    "out_of_support": out_of_support_family,
    "mislabelled": mislabelled_family,
    "dirac": dirac_family,
}
"""The canary types of the registry that have a family form, and their builders ``(source, M) -> CanaryFamily``."""

NO_BUILDER: Mapping[str, str] = {}
"""Why a canary type with a family form in the registry has no builder here."""


def canary_family(name: str) -> Callable[[CanarySource, int], CanaryFamily]:
    """The family builder of canary type ``name``.

    Raises:
        ValueError: an unknown type, or one without a family form here, saying why and which types have one.
    """
    if name in FAMILIES:
        return FAMILIES[name]
    if not canary_type(name).family:
        why = "the registry gives it one value per data set (CanaryType.family is False)"
    else:
        why = NO_BUILDER.get(name, "no builder of its M canaries as rows of a user's data is written yet")
    raise ValueError(f"the canary type {name!r} has no family form for a many-canary audit: {why}; use one of "
                     f"{', '.join(FAMILIES)}")  # fmt: skip
