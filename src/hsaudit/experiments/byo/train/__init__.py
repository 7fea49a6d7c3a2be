"""The training side of the audit of a user's training (imports the engine and util layers only, and the
package's values, :mod:`~hsaudit.experiments.byo.values`: what a training claims, the audit setting, the population's
design, the entry's file; no torch, so that an audit job reading a claim runs none of the harness).

- :mod:`~hsaudit.experiments.byo.train.harness` — the harness: the user's entry, the two worlds, the check, the
  shards.
- :mod:`~hsaudit.experiments.byo.train.pytree` — a model that is not torch's (NumPy, a pytree, ``get_weights()``)
  as one flat vector; NumPy only.
- :mod:`~hsaudit.experiments.byo.train.parallel` — a block of models trained here or in a worker process (``--jobs``).
- :mod:`~hsaudit.experiments.byo.train.pool` — the worker processes: forks of a server that imported torch and the
  entry's fork-safe libraries once, one pool per audit; standard library only.
- :mod:`~hsaudit.experiments.byo.train.errors` — an exception of the user's code, with where it came from.

This file imports nothing: a job's code version covers the module it imports and this text, not the other module.
"""
