"""Steinke, Nasr et al., what the training jobs run (imports the engine, data and util layers only): the image
classifiers of fig2, fig4 and table2 (:mod:`~hsaudit.experiments.steinke.train.images`) and the causal language model
of table1 (:mod:`~hsaudit.experiments.steinke.train.language`), apart so that editing one retrains only its own
populations."""
