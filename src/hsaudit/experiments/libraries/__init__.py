"""The DP libraries' configurations audited one by one (docs/libraries.md): each row is a short script of
``examples/libraries/<library>/`` audited through :mod:`hsaudit.experiments.byo` in the audit setting, and the table
``results/libraries/report.md`` (+ ``table.csv``, ``fig.pdf``) gathers their verdicts with their power.

Parts: :mod:`.plan` (the ``libraries:`` config section → rows, each a byo audit at ``results/libraries/<row>/``),
:mod:`.audit` (the table and its report from the rows' byo reports), :mod:`.figures` (ε̂ against the claim per row).
No training side: a row's trainings and its audit are byo's jobs (workflow/rules/byo.smk), so the study trains
nothing of its own and an edit here retrains nothing.
"""
