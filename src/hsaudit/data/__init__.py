"""The dataset registry (:mod:`~hsaudit.data.datasets`): California Housing, CIFAR-10/100 and MNIST from local
files, torchvision or synthetic copies (:mod:`~hsaudit.data.vision`), and AlexNet features
(:mod:`~hsaudit.data.alexnet`). docs/data.md describes the formats and offline use."""
