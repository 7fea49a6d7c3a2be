"""What the training jobs of Cebere et al.'s trained-model experiments run (imports the engine and data layers only).

- :mod:`~hsaudit.experiments.cebere.train.adversaries`: the gradient-crafting adversaries and the canary A_L, their
  crafted objects and scorers.
- :mod:`~hsaudit.experiments.cebere.train.shards`: one shard of an audit's population (bits, noise streams, the
  recorded scores).
"""
