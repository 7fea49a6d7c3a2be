"""Benchmarks: speed and memory of the engine, the audit and the Section 6 simulation (docs/benchmarks.md).

Speed targets are measured here, not in timed tests; ``hsaudit bench <what>`` (:mod:`hsaudit.cli.bench`) parses the
command line and prints what these modules return.

- :mod:`~hsaudit.bench.train` — the DP-SGD population engine against the Opacus one-model loop and the non-private
  floor, per registry model (fixed batches, full batch, Poisson sampling), the Housing benchmark, and the
  calibration of the cost planner (seconds per model-step, stored for :func:`hsaudit.pipeline.costs.calibration`);
- :mod:`~hsaudit.bench.audit` — the vectorised audit against the reference loop;
- :mod:`~hsaudit.bench.section6` — one cell of Cebere et al.'s fig3, extrapolated to the figure.

The layer sits above ``pipeline`` (it stores calibration rows for the planner) and below ``cli``.
"""
