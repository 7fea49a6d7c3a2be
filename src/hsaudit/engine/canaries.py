"""The canary registry: every kind of canary an audit inserts, and the backgrounds it is inserted into.

A canary is the one example (or one per-example gradient) whose presence an audit tests. A registry entry is a
frozen :class:`CanaryType` value — its name, its kind, a builder, a line of description and the options it reads —
and the builder turns a :class:`CanarySource` (the data, a pool of candidate examples, a fixed row or label, the
inputs' normalisation, the model's parameter count, a reference model, a seed, the entry's options) into a canary
*value*:

- :class:`InputCanary` (kind ``"input"``): an example (x*, y*), with where it came from; inserted as one more row of
  the training set, scored by its loss;
- :class:`GradientCanary` (kind ``"gradient"``): a direction of the flat parameters (``torch.cat`` of
  ``model.parameters()`` flattened, in order) and the norm of the per-example gradient it stands for; inserted as a
  row whose per-example loss carries the extra linear term ``norm · ⟨direction, θ⟩`` (the Dirac canary of Nasr et
  al. 2023 / Steinke et al. 2023 when the direction is a coordinate), scored by ``−⟨direction, θ⟩``;
- ``"token"``: reserved for language-model canaries (unused-token sequences); no entry of this kind yet.

Entries (:data:`CANARIES`):

- ``mislabelled``: an example with a wrong label — drawn from the seed, or the row ``index`` with ``label``
  (Steinke et al. 2023's label-flipped input, Figure 4: :func:`hsaudit.experiments.steinke.train.images.fig4_canary`
  builds it from the test split as the pool; Cebere et al. 2025's A_L, a row of the data with label (y + 1) mod K:
  :func:`hsaudit.experiments.cebere.train.adversaries.craft`);
- ``out_of_support``: an input outside the data's support, along its direction of least variance (a large gradient
  that no other example shares, after Jagielski et al. 2020's ClipBKD);
- ``dirac``: a gradient canary on one coordinate d (not a bias, where the caller knows which coordinates are biases:
  :attr:`CanarySource.biases`). Its inserted gradient C·e_d is :func:`dirac_gradient`, the one every paper uses:
  Cebere et al.'s A_GC-R and A_GC-S (their coordinate chosen by their adversary: uniform, or ranked by simulated
  trainings), the one-run study's m coordinates (the family form, with bits), Steinke et al.'s Dirac canary added
  unclipped to the noisy sum (:func:`hsaudit.engine.dpsgd.train_population`'s ``gradient=``; its coordinate
  :func:`dirac_coordinate`) and this entry's carrier row (a loss term whose clipped gradient is C·e_d);
- ``opposing``: the worst-case canary of Nasr et al. (2021): x0 = a·e_f with label 1, inserted into the ``copies``
  background (every row x0 with label 0), so that for a 2-class softmax or logistic model its gradient is exactly
  opposite to every other row's;
- ``blank``, ``in_distribution``, ``ood_mislabelled`` and ``clipbkd``: Yoon, Jeung & No (2025)'s four canaries (an
  all-zero input; an example of the pool with its label; an example of the pool made out of distribution, with a
  wrong label; the data's least-variance direction at its mean norm, labelled by the reference model), which
  :func:`hsaudit.experiments.yoon.train.make_canary` builds from the auxiliary half as the pool and θ0 as the
  reference (their config names map to these in :data:`hsaudit.experiments.yoon.train.REGISTRY_NAMES`).

Adding a canary type is one entry of :data:`CANARIES`; an entry says whether it has a family form
(:attr:`CanaryType.family`: M distinct canaries in one training). A paper's own constants (which canaries and
backgrounds its config may name) live in its package, not here. Two canaries stay outside the registry, because their
value depends on the training itself rather than on the data, a reference model and a seed:

- Cebere et al. (2025)'s A_CotS direction C·g/‖g‖ (g Gaussian, drawn by their adversary) and A_GC-S's ranking of
  the coordinates by simulated trainings from the setup's θ0 and batch schedule
  (:func:`hsaudit.experiments.cebere.train.adversaries.craft`; its object, a ``Crafted`` value, has its own file
  format);
- Steinke et al.'s unused-token language-model canary,
  :func:`hsaudit.experiments.steinke.train.language.build_canary`: token ids that occur nowhere in the tokenised
  data, so it needs the tokenizer and the tokenised corpus (the ``"token"`` kind is reserved for it).

How a canary is scored (higher ⇒ member) is the score registry's (:mod:`hsaudit.util.scores`).

Backgrounds (:data:`BACKGROUNDS`): the rest of the training set a canary is inserted into — the data as it is, a
blank background (every input zero, labels kept: a first linear layer's weights get no gradient from it, its bias
still does), a small random subset (fewer examples whose gradients could mask the canary's) or ``copies``: Nasr et
al. (2021)'s worst-case dataset, every row the same input x0 = a·e_f with label 0, the data's size kept (so the
sampling rate q = B/N is the user's).

This module is numpy only: the builders see arrays, the caller keeps its tensors (``engine`` layer, no torch here);
a builder that needs a model's outputs gets them through :attr:`CanarySource.reference`, a function of arrays.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Union

import numpy as np
import numpy.typing as npt

KINDS = ("input", "gradient", "token")
"""The kinds of canary value: an input example, a direction of the flat parameters, a token sequence."""

OUT_OF_SUPPORT_AMPLITUDE = 2.0
"""``out_of_support``: the canary's distance from the data's mean, in multiples of the largest such distance in the
data [inferred: far enough that its gradient is clipped, near enough that the loss stays finite]."""

DIRAC_NORM = 100.0
"""``dirac``: the norm of the canary's per-example gradient in multiples of the clipping norm C, so that after
clipping the canary's contribution is C along its coordinate, whatever the carrier row's own gradient."""

WORST_CASE_AMPLITUDE = 10.0
"""``opposing``/``copies``: a, the norm of the worst-case input x0 = a·e_f (Nasr et al. 2021's dataset [inferred: the
paper fixes no value]: large enough that every row's gradient is clipped at the initial model)."""

WORST_CASE_FEATURE = 0
"""``opposing``/``copies``: f, the flat input coordinate of x0 = a·e_f (a plain input feature, so that a first linear
layer's weights carry the rows' gradients; the same rule for the canary and the background, which must agree on x0)."""

OOD_TRANSFORMS = ("invert", "noise")
"""``ood_mislabelled``'s ``transform`` option: how an example is made out of distribution — its pixels inverted
(p ↦ 1 − p) or replaced by uniform noise in [0, 1] (pixel space: :attr:`CanarySource.normalisation`)."""


@dataclass(frozen=True, eq=False)
class InputCanary:
    """An input canary (x*, y*).

    Attributes:
        x: one input, without the batch axis, float32.
        y: its label (int64 scalar array) or regression target (float32 scalar array).
        origin: where it came from, in words.
        source_index: the row of the data whose input it is (the background then leaves that row out), or None (an
            input of the pool, a transformed or a synthetic one).
    """

    x: np.ndarray
    y: np.ndarray
    origin: str
    source_index: int | None = None
    kind: str = field(default="input", init=False)


@dataclass(frozen=True, eq=False)
class GradientCanary:
    """A gradient canary: the per-example loss term ``norm · ⟨direction, θ⟩`` of one carrier row.

    Attributes:
        direction: unit vector of the flat parameters, float32 ``[p]``.
        norm: the norm of the term's gradient (``norm · direction``).
        x, y: the carrier row's input and label (all-zero input), the row that holds the term in the data.
        origin: where it came from, in words.
        coordinate: the coordinate of a Dirac direction, or None.
    """

    direction: np.ndarray
    norm: float
    x: np.ndarray
    y: np.ndarray
    origin: str
    coordinate: int | None = None
    kind: str = field(default="gradient", init=False)


Canary = Union[InputCanary, GradientCanary]


@dataclass(frozen=True, eq=False)
class CanarySource:
    """What a canary builder may use.

    Attributes:
        x: the data's inputs ``[n, ...]``, float32.
        y: the data's labels ``[n]`` (integers) or targets (floats).
        classes: the number of classes, or None for a regression target.
        parameters: the length p of the model's flat parameter vector (gradient canaries need it), or None.
        clip_norm: the clipping norm C of the training, or None.
        seed: the builder's random stream.
        reference: a model trained without the canary (or the initial model), as a function
            ``inputs [k, ...] -> outputs [k, o]`` (logits or predictions), or None; builders use it to pick the label
            that the canary's loss is largest for.
        pool: ``(x, y)``, the candidate examples an input canary is taken from when they are not the data itself
            (examples the models never see otherwise: Yoon et al.'s auxiliary half, Steinke et al.'s test split), or
            None (the data). Same example shape as ``x``; it may be empty for an entry that draws nothing from it.
        index: the row of the candidates (the pool, else the data) to take instead of one drawn from the seed, or
            None.
        label: the canary's label where its entry takes one (``mislabelled``: a wrong class; ``blank``: its
            class), or None (the entry's own rule).
        normalisation: ``(mean, std)`` with which the inputs were standardised, ``x = (pixels − mean) / std``, per
            channel (the first axis of one example) or per feature; None: the inputs are pixels (mean 0, std 1).
            Entries that transform pixels (``ood_mislabelled``) work in pixel space through it.
        options: the entry's own knobs by name (those its :attr:`CanaryType.options` lists; e.g.
            ``{"transform": "noise"}`` for ``ood_mislabelled``).
        biases: the coordinates of the flat parameters that are biases, where the caller knows the layout (a
            module's parameters named ``*.bias``), or None (unknown: a training that returns flat tensors names no
            parameter). A ``dirac`` canary avoids them.
    """

    x: np.ndarray
    y: np.ndarray
    classes: int | None
    parameters: int | None = None
    clip_norm: float | None = None
    seed: int = 0
    reference: Callable[[np.ndarray], np.ndarray] | None = None
    pool: tuple[np.ndarray, np.ndarray] | None = None
    index: int | None = None
    label: int | None = None
    normalisation: tuple[np.ndarray, np.ndarray] | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    biases: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        x, y = np.asarray(self.x), np.asarray(self.y)
        if x.ndim < 2 or x.shape[0] < 2:
            raise ValueError(f"a canary source needs at least 2 examples with a feature axis, got x of shape {x.shape}")
        if y.shape != (x.shape[0],):
            raise ValueError(f"y must have shape [{x.shape[0]}], got {y.shape}")
        if self.classes is not None and int(self.classes) < 2:
            raise ValueError(f"classes must be >= 2 or None (a regression target), got {self.classes}")
        if self.parameters is not None and int(self.parameters) < 1:
            raise ValueError(f"parameters must be >= 1, got {self.parameters}")
        if self.pool is not None:
            px, py = (np.asarray(a) for a in self.pool)
            if px.shape[1:] != x.shape[1:] or py.shape != (px.shape[0],):
                raise ValueError(f"the pool must be (x [k, {', '.join(map(str, x.shape[1:]))}], y [k]), "
                                 f"got x of shape {px.shape} and y of shape {py.shape}")  # fmt: skip
        if self.index is not None:
            n = self.candidates()[1].shape[0]
            if not 0 <= int(self.index) < n:
                raise ValueError(f"canary index must be in [0, {n}), got {self.index}")
        if self.label is not None:
            if self.classes is None:
                raise ValueError(f"a canary label needs class labels, not a regression target; got {self.label}")
            if not 0 <= int(self.label) < int(self.classes):
                raise ValueError(f"canary label must be in [0, {self.classes}), got {self.label}")
        if self.normalisation is not None:
            mean, std = (np.asarray(a, dtype=np.float64) for a in self.normalisation)
            if mean.shape != std.shape or not np.all(std > 0):
                raise ValueError(f"normalisation must be (mean, std) of one shape, std > 0, got {self.normalisation}")

    def candidates(self) -> tuple[np.ndarray, np.ndarray]:
        """The examples an input canary is taken from: the pool, else the data."""
        return (self.x, self.y) if self.pool is None else (self.pool[0], self.pool[1])

    def draw(self, rng: np.random.Generator) -> int:
        """The candidate row to take: :attr:`index`, else one drawn uniformly with ``rng``.

        Raises:
            ValueError: no candidates (an empty pool).
        """
        if self.index is not None:
            return int(self.index)
        n = np.asarray(self.candidates()[1]).shape[0]
        if n == 0:
            raise ValueError("the canary needs candidate examples, and the pool is empty")
        return int(rng.integers(n))

    def data_row(self, row: int) -> int | None:
        """``row`` of the candidates as a row of the data (:attr:`InputCanary.source_index`), None for the pool's."""
        return row if self.pool is None else None


@dataclass(frozen=True)
class CanaryType:
    """A registry entry: a canary type as a value.

    Attributes:
        name: the name configs and the CLI use.
        kind: one of :data:`KINDS`; the builder's value has this kind.
        build: ``CanarySource -> canary value``.
        description: one line for docs and ``--help``.
        options: the names of :attr:`CanarySource.options` the builder reads (any other is an error).
        family: whether the type has a family form: M distinct canaries of it fit one training (M rows drawn
            distinct, M coordinates: :func:`draw_distinct`, :func:`dirac_gradient`'s bits), as an audit with few
            runs and many canaries needs; False for a type with one value per data set (``blank``, ``opposing``,
            ``clipbkd``).
    """

    name: str
    kind: str
    build: Callable[[CanarySource], object]
    description: str
    options: tuple[str, ...] = ()
    family: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"canary {self.name!r}: kind must be one of {KINDS}, got {self.kind!r}")

    def __call__(self, source: CanarySource):
        """Build the canary; its options must be the entry's, its kind must be the entry's."""
        unknown = sorted(set(source.options) - set(self.options))
        if unknown:
            raise ValueError(f"canary {self.name!r} takes the options {list(self.options)}, got {unknown}")
        value = self.build(source)
        if getattr(value, "kind", None) != self.kind:
            raise ValueError(f"canary {self.name!r} is of kind {self.kind!r}, its builder returned {value!r}")
        return value


def _worst_label(source: CanarySource, x: np.ndarray, exclude: int | None) -> int | None:
    """The class of the smallest reference output at ``x`` (other than ``exclude``), or None without a reference."""
    if source.reference is None:
        return None
    out = np.array(source.reference(x[None]), dtype=np.float64).reshape(-1)
    if out.size != source.classes:
        raise ValueError(f"the reference model gives {out.size} outputs for {source.classes} classes")
    if exclude is not None:
        out[exclude] = np.inf
    return int(np.argmin(out))


def _needs_classes(source: CanarySource, name: str) -> int:
    if source.classes is None:
        raise ValueError(f"the {name} canary needs class labels; the data has a regression target")
    return int(source.classes)


def mislabelled(source: CanarySource) -> InputCanary:
    """An example of the candidates (the pool, else the data) with a wrong label.

    The example is row :attr:`~CanarySource.index`, or one drawn from the seed; its label
    :attr:`~CanarySource.label`, or the class the reference model finds least likely for it, or (y + 1) mod K
    without a reference (Steinke et al. 2023's label-flipped input, Figure 4; the row and label the paper leaves
    open [inferred]).

    Raises:
        ValueError: a regression target, or a given label that is the example's own.
    """
    k = _needs_classes(source, "mislabelled")
    cx, cy = source.candidates()
    index = source.draw(np.random.default_rng(source.seed))
    true = int(cy[index])
    if source.label is not None:
        label = int(source.label)
        if label == true:
            raise ValueError(f"canary label must be a class in [0, {k}) other than the example's {true}, got {label}")
    else:
        label = _worst_label(source, np.asarray(cx[index], dtype=np.float32), exclude=true)
        label = (true + 1) % k if label is None else label
    where = "the data" if source.pool is None else "the pool"
    return InputCanary(
        x=np.asarray(cx[index], dtype=np.float32).copy(),
        y=np.array(label, dtype=np.int64),
        origin=f"example {index} of {where} with label {label} instead of {true}",
        source_index=source.data_row(index),
    )


def least_variance_direction(x: np.ndarray, seed: int = 0) -> np.ndarray:
    """A unit direction of the flattened inputs along which the data varies least: the last principal axis, or,
    when there are more features than examples, a random direction orthogonal to every centred example (the data
    does not vary along it at all)."""
    flat = np.asarray(x, dtype=np.float64).reshape(x.shape[0], -1)
    centred = flat - flat.mean(axis=0)
    _, s, vt = np.linalg.svd(centred, full_matrices=False)
    rank = int(np.sum(s > s.max() * 1e-10)) if s.size else 0
    if rank < flat.shape[1]:
        r = np.random.default_rng(seed).standard_normal(flat.shape[1])
        v = r - vt[:rank].T @ (vt[:rank] @ r)
    else:
        v = vt[-1]
    return v / np.linalg.norm(v)


def out_of_support(source: CanarySource) -> InputCanary:
    """An input outside the data's support: its mean plus :data:`OUT_OF_SUPPORT_AMPLITUDE` × the data's largest
    distance from its mean, along the direction of least variance (after Jagielski et al. 2020's ClipBKD): its
    gradient is large and no other example shares it. Label: the class of the reference model's smallest output
    there (the least frequent class without a reference); a regression target 4 standard deviations above the
    reference's prediction (above the mean without one)."""
    x, y = np.asarray(source.x, dtype=np.float32), np.asarray(source.y)
    flat = x.reshape(x.shape[0], -1).astype(np.float64)
    mean = flat.mean(axis=0)
    radius = float(np.max(np.linalg.norm(flat - mean, axis=1)))
    v = least_variance_direction(x, seed=source.seed)
    xs = (mean + OUT_OF_SUPPORT_AMPLITUDE * max(radius, 1.0) * v).reshape(x.shape[1:]).astype(np.float32)
    where = f"the data's direction of least variance at {OUT_OF_SUPPORT_AMPLITUDE:g}x its largest distance from the mean"
    if source.classes is None:
        base = float(np.mean(y)) if source.reference is None else float(np.ravel(source.reference(xs[None]))[0])
        target = base + 4.0 * float(np.std(y) or 1.0)
        return InputCanary(x=xs, y=np.array(target, dtype=np.float32), origin=f"{where}, target {target:.4g}")
    label = _worst_label(source, xs, exclude=None)
    if label is None:
        counts = np.bincount(y.astype(np.int64), minlength=int(source.classes))
        label = int(np.argmin(counts))
    return InputCanary(x=xs, y=np.array(label, dtype=np.int64), origin=f"{where}, label {label}")


def dirac_coordinate(parameters: int, seed: int, *, avoid: tuple[int, ...] | None = None) -> int:
    """The coordinate d of a Dirac canary: uniform over the ``parameters`` coordinates of the flat parameters other
    than ``avoid``, from ``seed`` (the :func:`dirac` entry's and Steinke et al.'s Figure 2 and Table 2 choice
    [inferred: the papers name no coordinate]).

    The draw is ``rng.integers(parameters)`` repeated until it is not in ``avoid``: uniform over the others, and the
    same coordinate as without ``avoid`` whenever the first draw is allowed. The Dirac canary avoids biases because
    every example moves a bias, even a blank background's (its inputs are zero, its bias gradients are not), which
    masks the canary.

    >>> dirac_coordinate(68, 0) == dirac_coordinate(68, 0) and 0 <= dirac_coordinate(68, 0) < 68
    True
    >>> dirac_coordinate(3, 0, avoid=(0, 1))
    2

    Raises:
        ValueError: every coordinate avoided.
    """
    p = int(parameters)
    banned = set() if avoid is None else {int(c) for c in avoid}
    if len(banned & set(range(p))) >= p:
        raise ValueError(f"a Dirac canary needs a coordinate of the {p} parameters that is not avoided")
    rng = np.random.default_rng(seed)
    while True:
        d = int(rng.integers(p))
        if d not in banned:
            return d


def dirac_gradient(parameters: int, coordinates: npt.ArrayLike, *, norm: float,
                   bits: npt.ArrayLike | None = None) -> np.ndarray:  # fmt: skip
    """The Dirac gradient canary as the DP-SGD step inserts it: ``norm · e_d`` of the flat parameters, float32
    ``[p]`` for one coordinate d; with ``bits [models, m]`` and ``m`` distinct ``coordinates``, the family form
    Σ_j b_ij · norm · e_{d_j}, float32 ``[models, p]``.

    The one C·e_d of the project (``norm`` = C, the clipping norm): Cebere et al.'s A_GC-R and A_GC-S gradient
    (:func:`hsaudit.experiments.cebere.train.adversaries.craft`), the one-run study's m canaries
    (:meth:`hsaudit.experiments.one_run.train.Canaries.gradients`), Steinke et al.'s unclipped Dirac canary
    (:func:`hsaudit.experiments.steinke.train.images.train_dirac_shard`) and the direction of the :func:`dirac`
    entry (``norm`` 1).

    >>> dirac_gradient(3, 1, norm=2.0).tolist()
    [0.0, 2.0, 0.0]
    >>> dirac_gradient(3, [0, 2], norm=1.0, bits=[[1, 0], [1, 1]]).tolist()
    [[1.0, 0.0, 0.0], [1.0, 0.0, 1.0]]

    Raises:
        ValueError: a coordinate outside the ``parameters``, repeated coordinates, or bits that are not a
            ``[models, m]`` array of 0/1.
    """
    p = int(parameters)
    d = np.asarray(coordinates, dtype=np.int64)
    if d.size and (d.min() < 0 or d.max() >= p):
        raise ValueError(f"coordinate {int(d.max()) if d.max() >= p else int(d.min())} is outside a model with {p} "
                         "parameters")  # fmt: skip
    if bits is None:
        if d.ndim != 0:
            raise ValueError(f"one coordinate without bits, got {d.tolist()}")
        out = np.zeros(p, dtype=np.float32)
        out[int(d)] = norm
        return out
    b = np.asarray(bits)
    if d.ndim != 1 or np.unique(d).size != d.size:
        raise ValueError(f"coordinates must be a 1-D array of distinct indices, got {d.tolist()}")
    if b.ndim != 2 or b.shape[1] != d.size or not np.all((b == 0) | (b == 1)):
        raise ValueError(f"bits must be a [models, {d.size}] array of 0/1, got shape {b.shape}")
    out = np.zeros((b.shape[0], p), dtype=np.float32)
    out[:, d] = np.float32(norm) * b.astype(np.float32)
    return out


def dirac(source: CanarySource) -> GradientCanary:
    """A Dirac gradient canary: coordinate d (drawn from the seed, never one of :attr:`CanarySource.biases`) of the
    flat parameters, with a per-example gradient of norm :data:`DIRAC_NORM` × C carried by an all-zero input (Nasr et
    al. 2023; Steinke et al. 2023)."""
    if source.parameters is None:
        raise ValueError("the dirac canary needs the model's parameter count (CanarySource.parameters)")
    p = int(source.parameters)
    d = dirac_coordinate(p, source.seed, avoid=source.biases)
    direction = dirac_gradient(p, d, norm=1.0)
    y = np.asarray(source.y)
    carrier_y = np.array(0, dtype=np.int64) if source.classes is not None else np.array(0.0, dtype=y.dtype)
    norm = DIRAC_NORM * float(source.clip_norm or 1.0)
    known = "" if source.biases is None else f", biases ({len(source.biases)}) avoided"
    return GradientCanary(
        direction=direction,
        norm=norm,
        x=np.zeros(np.asarray(source.x).shape[1:], dtype=np.float32),
        y=carrier_y,
        origin=f"coordinate {d} of {p} parameters{known}, per-example gradient norm {norm:g}",
        coordinate=d,
    )


def worst_case_input(shape: tuple[int, ...], *, amplitude: float = WORST_CASE_AMPLITUDE,
                     feature: int = WORST_CASE_FEATURE) -> np.ndarray:  # fmt: skip
    """x0 = a·e_f of one example's ``shape`` (f a flat index): the one input of Nasr et al. (2021)'s worst-case
    dataset, which the ``opposing`` canary and the ``copies`` background both derive from this rule.

    >>> worst_case_input((2, 2), amplitude=3.0, feature=1).tolist()
    [[0.0, 3.0], [0.0, 0.0]]

    Raises:
        ValueError: a feature outside the input or an amplitude that is not positive and finite.
    """
    size = int(np.prod(shape))
    if not 0 <= int(feature) < size:
        raise ValueError(f"the worst-case input's feature must be in [0, {size}), got {feature}")
    if not (np.isfinite(amplitude) and amplitude > 0):
        raise ValueError(f"the worst-case input's amplitude must be positive and finite, got {amplitude}")
    x = np.zeros(size, dtype=np.float32)
    x[int(feature)] = float(amplitude)
    return x.reshape(shape)


def _worst_case_options(options: Mapping[str, Any]) -> dict[str, Any]:
    return {"amplitude": float(options.get("amplitude", WORST_CASE_AMPLITUDE)),
            "feature": int(options.get("feature", WORST_CASE_FEATURE))}  # fmt: skip


def opposing(source: CanarySource) -> InputCanary:
    """Nasr et al. (2021)'s worst-case canary: x0 = a·e_f (:func:`worst_case_input`; options ``amplitude`` a, default
    :data:`WORST_CASE_AMPLITUDE`, and ``feature`` f, default :data:`WORST_CASE_FEATURE`) with label 1, for the
    ``copies`` background (x0 with label 0): for a 2-class softmax or logistic model the canary's gradient
    (p − e_1) ⊗ (x0, 1) = (p_0, −p_0) ⊗ (x0, 1) points exactly opposite to every background row's
    (−p_1, p_1) ⊗ (x0, 1): clipped (both norms above C), it is minus theirs, the largest effect one row can have (more classes: a wrong label, no longer
    exactly opposite).

    Raises:
        ValueError: a regression target.
    """
    _needs_classes(source, "opposing")
    opts = _worst_case_options(source.options)
    x0 = worst_case_input(np.asarray(source.x).shape[1:], **opts)
    return InputCanary(x=x0, y=np.array(1, dtype=np.int64),
                       origin=f"x0 = {opts['amplitude']:g}·e_{opts['feature']}, label 1 (the copies background's 0)")  # fmt: skip


def blank(source: CanarySource) -> InputCanary:
    """The all-zero input (in the inputs' own, normalised space) with label :attr:`~CanarySource.label`, or the last
    class without one (Yoon, Jeung & No 2025's canary: label 9 of 10 [ref])."""
    k = _needs_classes(source, "blank")
    label = k - 1 if source.label is None else int(source.label)
    return InputCanary(x=np.zeros(np.asarray(source.x).shape[1:], np.float32), y=np.array(label, dtype=np.int64),
                       origin=f"all-zero input, label {label}")  # fmt: skip


def in_distribution(source: CanarySource) -> InputCanary:
    """An example of the candidates (the pool, else the data) with its own label: row
    :attr:`~CanarySource.index` or one drawn from the seed (Yoon et al.'s in-distribution canary, a random example
    of the auxiliary half [inferred])."""
    cx, cy = source.candidates()
    row = source.draw(np.random.default_rng(source.seed))
    x = np.asarray(cx[row], dtype=np.float32).copy()
    dtype = np.int64 if source.classes is not None else np.float32
    where = "data" if source.pool is None else "pool"
    return InputCanary(x=x, y=np.array(cy[row], dtype=dtype), origin=f"{where} row {row}",
                       source_index=source.data_row(row))  # fmt: skip


def ood_mislabelled(source: CanarySource) -> InputCanary:
    """An out-of-distribution input with a wrong label (Yoon et al.'s "mislabeled" canary, "an OOD sample
    intentionally assigned the wrong label" [inferred: the construction]): an example of the candidates (row
    :attr:`~CanarySource.index` or one drawn from the seed) whose pixels are inverted, p ↦ 1 − p (option
    ``transform="invert"``, the default), or replaced by uniform noise in [0, 1] drawn next from the same stream
    (``"noise"``), in pixel space (:attr:`~CanarySource.normalisation`), with label (y + 1) mod K.

    Raises:
        ValueError: a regression target, or a transform not in :data:`OOD_TRANSFORMS`.
    """
    k = _needs_classes(source, "ood_mislabelled")
    transform = source.options.get("transform", "invert")
    if transform not in OOD_TRANSFORMS:
        raise ValueError(f"the ood_mislabelled canary's transform must be one of {OOD_TRANSFORMS}, got {transform!r}")
    cx, cy = source.candidates()
    rng = np.random.default_rng(source.seed)
    row = source.draw(rng)
    x, label = np.asarray(cx[row], dtype=np.float32), int(cy[row])
    shape = (-1,) + (1,) * (x.ndim - 1)
    mean, std = source.normalisation if source.normalisation is not None else (np.zeros(1), np.ones(1))
    m, s = np.asarray(mean, np.float32).reshape(shape), np.asarray(std, np.float32).reshape(shape)
    pixels = 1.0 - (x * s + m) if transform == "invert" else rng.uniform(0.0, 1.0, x.shape)
    ood_x = ((pixels - m) / s).astype(np.float32)
    where = "data" if source.pool is None else "pool"
    return InputCanary(x=ood_x, y=np.array((label + 1) % k, dtype=np.int64), origin=f"{where} row {row}, {transform}")


def clipbkd(source: CanarySource) -> InputCanary:
    """Jagielski et al. 2020's ClipBKD input as Yoon et al. build it: the data's direction of least variance (the
    eigenvector of the smallest eigenvalue of the flattened inputs' covariance, its largest entry positive), scaled to
    the mean norm of the data's inputs; label: the class of the reference model's smallest output there (Yoon et
    al.: the initial model θ0's smallest logit), or the least frequent class without a reference.

    Unlike :func:`out_of_support` it stays at the data's norm, not beyond its support.
    """
    k = _needs_classes(source, "clipbkd")
    x = np.asarray(source.x, dtype=np.float32)
    flat = x.reshape(x.shape[0], -1).astype(np.float64)
    centred = flat - flat.mean(axis=0)
    cov = centred.T @ centred / max(1, flat.shape[0] - 1)
    _, vecs = np.linalg.eigh(cov)
    direction = vecs[:, 0]
    direction = direction * np.sign(direction[np.argmax(np.abs(direction))])  # a deterministic sign
    xs = (direction * np.linalg.norm(flat, axis=1).mean()).reshape(x.shape[1:]).astype(np.float32)
    label = _worst_label(source, xs, exclude=None)
    if label is None:
        label = int(np.argmin(np.bincount(np.asarray(source.y).astype(np.int64), minlength=k)))
    return InputCanary(x=xs, y=np.array(label, dtype=np.int64),
                       origin=f"the data's direction of least variance at its mean norm, label {label}")  # fmt: skip


CANARIES: dict[str, CanaryType] = {
    entry.name: entry
    for entry in (
        CanaryType("mislabelled", "input", mislabelled, "an example of the data with a wrong label", family=True),
        CanaryType(
            "out_of_support",
            "input",
            out_of_support,
            "an input outside the data's support (its direction of least variance): a large, rare gradient",
            family=True,
        ),
        CanaryType(
            "dirac",
            "gradient",
            dirac,
            "a gradient on one parameter coordinate, carried by an extra per-example loss term",
            family=True,
        ),
        CanaryType("blank", "input", blank, "the all-zero input with a fixed label (Yoon et al.)"),
        CanaryType(
            "opposing",
            "input",
            opposing,
            "x0 = a·e_f with label 1, against the copies background's x0 with label 0 (Nasr et al. 2021's worst case)",
            options=("amplitude", "feature"),
        ),
        CanaryType("in_distribution", "input", in_distribution, "an example of the pool with its own label", family=True),
        CanaryType(
            "ood_mislabelled",
            "input",
            ood_mislabelled,
            "an example of the pool made out of distribution (inverted or noise), with a wrong label",
            options=("transform",),
            family=True,
        ),
        CanaryType(
            "clipbkd",
            "input",
            clipbkd,
            "the data's direction of least variance at its mean norm, labelled by the reference (ClipBKD)",
        ),
    )
}
"""The canary types by name. A new type is one more entry here."""


def canary_type(name: str) -> CanaryType:
    """The registry entry called ``name``.

    Raises:
        ValueError: an unknown name (the message lists the known ones).
    """
    if name not in CANARIES:
        raise ValueError(f"unknown canary {name!r}; choose from {', '.join(CANARIES)}")
    return CANARIES[name]


def canary_arrays(canary: Canary) -> dict[str, np.ndarray]:
    """A canary value as named arrays (``np.savez``), :func:`canary_from_arrays`' inverse."""
    out = {"kind": np.array(canary.kind), "origin": np.array(canary.origin), "x": canary.x, "y": canary.y}
    if isinstance(canary, InputCanary):
        out["source_index"] = np.array(-1 if canary.source_index is None else canary.source_index)
    else:
        out.update(
            direction=canary.direction,
            norm=np.array(canary.norm),
            coordinate=np.array(-1 if canary.coordinate is None else canary.coordinate),
        )
    return out


def canary_from_arrays(arrays: Mapping[str, np.ndarray]) -> Canary:
    """The canary value that :func:`canary_arrays` wrote.

    Raises:
        ValueError: arrays of another kind or missing fields.
    """
    try:
        kind, origin = str(arrays["kind"]), str(arrays["origin"])
        x, y = np.asarray(arrays["x"]), np.asarray(arrays["y"])
        if kind == "input":
            index = int(arrays["source_index"])
            return InputCanary(x=x, y=y, origin=origin, source_index=None if index < 0 else index)
        if kind == "gradient":
            coordinate = int(arrays["coordinate"])
            return GradientCanary(
                direction=np.asarray(arrays["direction"]),
                norm=float(arrays["norm"]),
                x=x,
                y=y,
                origin=origin,
                coordinate=None if coordinate < 0 else coordinate,
            )
    except KeyError as err:
        raise ValueError(f"canary arrays lack {err.args[0]!r}") from None
    raise ValueError(f"canary arrays of kind {kind!r}: expected input or gradient")


# ---- families -------------------------------------------------------------------------------------------------
def draw_distinct(n: int, count: int, seed: int) -> np.ndarray:
    """``count`` distinct values of range(n), uniformly from ``seed`` (the first ``count`` of one permutation, so a
    larger ``count`` keeps the earlier draws): a family of canaries of one type, M Dirac coordinates or M rows
    (Steinke et al.'s spread of canaries, several Dirac coordinates or label-flipped images [inferred: the paper
    audits one of each]).

    >>> draw_distinct(10, 3, 0).tolist() == draw_distinct(10, 5, 0)[:3].tolist()
    True

    Raises:
        ValueError: ``count`` outside [1, n].
    """
    if not 1 <= int(count) <= int(n):
        raise ValueError(f"cannot draw {count} distinct values of range({n})")
    return np.random.default_rng(seed).permutation(int(n))[: int(count)]


# ---- backgrounds ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Background:
    """A background as a value: ``build(x, y, *, size, seed, **options) -> (x, y)``, the rows a canary is inserted
    into; ``options`` names the knobs the builder reads (any other is an error)."""

    name: str
    build: Callable[..., tuple[np.ndarray, np.ndarray]]
    description: str
    options: tuple[str, ...] = ()

    def __call__(self, x: np.ndarray, y: np.ndarray, *, size: int, seed: int,
                 options: Mapping[str, Any] | None = None) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
        options = dict(options or {})
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            raise ValueError(f"background {self.name!r} takes the options {list(self.options)}, got {unknown}")
        return self.build(np.asarray(x), np.asarray(y), size=int(size), seed=int(seed), **options)


def _data(x: np.ndarray, y: np.ndarray, *, size: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    return x, y


def _blank(x: np.ndarray, y: np.ndarray, *, size: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    return np.zeros_like(x), y


def _subset(x: np.ndarray, y: np.ndarray, *, size: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    if not 1 <= size <= x.shape[0]:
        raise ValueError(f"the subset background needs 1 <= size <= {x.shape[0]} examples, got {size}")
    rows = np.sort(np.random.default_rng(seed).choice(x.shape[0], size=size, replace=False))
    return x[rows], y[rows]


def _copies(x: np.ndarray, y: np.ndarray, *, size: int, seed: int, amplitude: float = WORST_CASE_AMPLITUDE,
            feature: int = WORST_CASE_FEATURE) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    if not (np.issubdtype(y.dtype, np.integer) or y.dtype == np.bool_):
        raise ValueError(f"the copies background needs class labels, not a regression target (y of dtype {y.dtype})")
    x0 = worst_case_input(x.shape[1:], amplitude=amplitude, feature=feature).astype(x.dtype)
    return np.broadcast_to(x0, x.shape).copy(), np.zeros_like(y)


BACKGROUNDS: Mapping[str, Background] = {
    b.name: b
    for b in (
        Background("data", _data, "the training data as it is"),
        Background("blank", _blank, "every input zero, labels kept (a first linear layer's weights get no gradient)"),
        Background("subset", _subset, "a small random subset of the data (background_size examples)"),
        Background("copies", _copies, "every row x0 = a·e_f with label 0, the data's size kept (Nasr et al. 2021's "
                   "worst-case dataset; the opposing canary's background)", options=("amplitude", "feature")),  # fmt: skip
    )
}


def background(name: str) -> Background:
    """The background called ``name``.

    Raises:
        ValueError: an unknown name.
    """
    if name not in BACKGROUNDS:
        raise ValueError(f"unknown background {name!r}; choose from {', '.join(BACKGROUNDS)}")
    return BACKGROUNDS[name]
