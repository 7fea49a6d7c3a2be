"""The DP libraries' configurations audited one by one (docs/libraries.md): each row is a short script of
``examples/libraries/<library>/`` audited through :mod:`hsaudit.experiments.byo` in the audit setting, and the table
``results/libraries/report.md`` (+ ``table.csv``, ``fig.pdf``) gathers their verdicts with their power.

Parts: :mod:`.plan` (the ``libraries:`` config section → rows, their code versions), :mod:`.train` (one row's
audit), :mod:`.audit` (the table and its report), :mod:`.figures` (ε̂ against the claim per row).
"""
