"""Utilities every layer may use: atomic writes (:mod:`~hsaudit.util.io`), seeds (:mod:`~hsaudit.util.seeding`)
and value keys (:mod:`~hsaudit.util.mapping`). Nothing here imports another part of the package."""
