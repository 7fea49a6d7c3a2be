"""The DP-SGD engine, which knows nothing of papers (docs/trainer.md).

- :mod:`~hsaudit.engine.dpsgd` — vectorised DP-SGD over a population of models (clipping, insertion, noise, update,
  observations), its config and setup values;
- :mod:`~hsaudit.engine.psg` — per-sample gradients (hand-derived for MLPs, torch.func otherwise);
- :mod:`~hsaudit.engine.noise` — counter-based Gaussian noise (and Bernoulli draws) keyed by (audit, model, step);
- :mod:`~hsaudit.engine.sampling` — Poisson subsampling of populations (Steinke et al. Alg. 1), keyed likewise;
- :mod:`~hsaudit.engine.workers` — a CPU population split into groups of models, one worker thread each;
- :mod:`~hsaudit.engine.evaluate` — test-set accuracy of a trained population (batched, any device);
- :mod:`~hsaudit.engine.models` — the model registry: one :class:`~hsaudit.engine.models.ModelSpec` per architecture
  (ConvNet, ResNet18-GN, MLPs, the MNIST/CIFAR CNNs, the WideResNet), resolved once by ``model_spec(name, **options)``
  and handed to everything below; torch-free (the modules are :mod:`~hsaudit.engine.architectures`);
- :mod:`~hsaudit.engine.reference` — the Opacus one-model reference trainer the population engine is tested against.
"""
