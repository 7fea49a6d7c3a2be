"""What the workflow needs around the science: config checks and scale presets (:mod:`~hsaudit.pipeline.config`),
code versions and environments (:mod:`~hsaudit.pipeline.provenance`), archives (:mod:`~hsaudit.pipeline.archive`),
cost plans (:mod:`~hsaudit.pipeline.costs`) and script logging (:mod:`~hsaudit.pipeline.logs`)."""
