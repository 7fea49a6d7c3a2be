"""Utilities every layer may use: atomic writes (:mod:`~hsaudit.util.io`), seeds (:mod:`~hsaudit.util.seeding`),
value keys (:mod:`~hsaudit.util.mapping`), fast float32 normals (:mod:`~hsaudit.util.normals`), what a code
version hashes of a Python file (:mod:`~hsaudit.util.source`) and step counts (:mod:`~hsaudit.util.schedule`). Nothing here imports another part of the package."""
