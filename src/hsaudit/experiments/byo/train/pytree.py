"""A trained model that is not torch's, as one flat vector θ (the framework-neutral contract, docs/byo.md).

``train(data, seed)`` may return a NumPy array, a nested dict / list / tuple of arrays (a "pytree": NumPy or JAX
arrays, the list ``keras_model.get_weights()`` returns) or an object with ``get_weights()`` (a Keras model, whose list
is used). :func:`flat_vector` flattens its leaves depth first — dicts by sorted key, lists and tuples in order, the
order of ``jax.tree_util.tree_leaves`` for these containers; None has no leaves — each leaf ``np.asarray(leaf).ravel()``,
into one float64 vector.

NumPy only: no torch, and never jax or tensorflow (a JAX or Keras array converts through ``np.asarray``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np


def leaves(tree: Any) -> Iterator[np.ndarray]:
    """The leaves of ``tree`` as flat NumPy arrays, in :func:`flat_vector`'s order.

    Raises:
        ValueError: a leaf that is not numeric (a string, an object array).
    """
    if tree is None:
        return
    if hasattr(tree, "get_weights") and callable(tree.get_weights):
        yield from leaves(list(tree.get_weights()))
    elif isinstance(tree, Mapping):
        for key in sorted(tree):
            yield from leaves(tree[key])
    elif isinstance(tree, (list, tuple)):
        for item in tree:
            yield from leaves(item)
    else:
        leaf = np.asarray(tree)
        if not (np.issubdtype(leaf.dtype, np.number) or leaf.dtype == bool):
            raise ValueError(f"a leaf of the trained model is not numeric: {type(tree).__name__} of dtype {leaf.dtype}")
        yield leaf.ravel()


def flat_vector(tree: Any) -> np.ndarray:
    """The leaves of ``tree`` (a pytree, or an object with ``get_weights()``) concatenated into one float64 vector.

    Raises:
        ValueError: no leaves, or a leaf that is not numeric.
    """
    parts = [leaf.astype(np.float64) for leaf in leaves(tree)]
    if not parts:
        raise ValueError(f"the trained model ({type(tree).__name__}) has no parameters: train must return a torch "
                         "module or tensor, NumPy arrays, a pytree of arrays or an object with get_weights()")  # fmt: skip
    return np.concatenate(parts)
