"""Yoon, Jeung & No (2025): adversarial-sample audits of the final model of full-batch DP-SGD.

The auditor trains N models on D (the world b = 0, models M_i) and N on D′ = D ∪ {c} (b = 1, models M′_i) with
full-batch DP-SGD, then looks only at the final models through the loss of one input, the *audit sample* a:

- ``a_c``: the canary c itself (the usual input-space audit);
- ``a_ude``: x_a minimising the Uniform Distance Expansion (1/N) Σ_i [ℓ(M′_i(x_a), y) − ℓ(M_i(x_a), y)];
- ``a_ade``: x_a minimising the Adaptive Distance Expansion
  (1/N) Σ_i ReLU(ℓ(M′_i(x_a), y) − (1/N) Σ_j ℓ(M_j(x_a), y) + α).

Both start from x_c, keep the label y_c and leave every pixel free (no projection). The score of a model is
−ℓ(model(x_a), y_c) (higher ⇒ trained on D′), audited with the project's GDP audit (:mod:`hsaudit.audit`).

**Validity.** The paper crafts x_a on the same 2N models that it then audits, so x_a can fit their particular
noise. Every run therefore trains two independent populations (:func:`hsaudit.experiments.yoon.train.train_run`):
x_a is crafted on the first and scored on the first (``split="same"``, the paper's reading) and on the second
(``split="held-out"``, fresh noise: a valid audit). Both rows are reported.

**Black-box** (§5.3): the auditor sees only each target model's output probabilities. It distils one surrogate
per target (same architecture [inferred], fresh Xavier initialisation, KL divergence to the target's softmax on
D′'s inputs, Adam; :func:`hsaudit.experiments.yoon.crafting.distill_surrogates`), crafts x_a on the surrogates
and scores the targets' outputs.

**Worst-case initialisation** θ_worst (Annamalai & De Cristofaro 2024): non-private pre-training on the other
half of the training set (MNIST), or on CIFAR-100 then, with a new last layer, on the other half (CIFAR-10)
(:func:`hsaudit.experiments.yoon.train.pretrain`). θ_avg is one Xavier-normal initialisation (bias 0.01) shared
by every model of a run.

DP-SGD is the project's engine (:func:`hsaudit.engine.dpsgd.train_population`) with the full-batch schedule
(:func:`hsaudit.experiments.yoon.train.full_batch_schedule`: every step uses all of D, normaliser |D| in both
worlds, the canary appended to the batch of the D′ models). Experiment notes, choices and results:
``docs/yoon.md``.

The package has the shape of every experiment package (:mod:`hsaudit.experiments.plans`):
:mod:`~hsaudit.experiments.yoon.plan` (config → data, populations, audits, figures),
:mod:`~hsaudit.experiments.yoon.train` (σ-calibrated full-batch DP-SGD of one run, canaries, θ_avg / θ_worst; the
engine only), :mod:`~hsaudit.experiments.yoon.crafting` (a_c / a_ude / a_ade, surrogates, the models' scores),
:mod:`~hsaudit.experiments.yoon.recipe` (the crafting recipe, a value the plan keys and the crafting follows),
:mod:`~hsaudit.experiments.yoon.audit` (scores → audit rows; the audit layer only) and
:mod:`~hsaudit.experiments.yoon.figures` (``FIGURES``). A training job runs ``train`` alone, so a change to the
adversary's side never retrains a population. This package file imports none of them:
``from hsaudit.experiments.yoon import train, crafting``.
"""
