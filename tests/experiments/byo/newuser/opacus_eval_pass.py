"""The correct new-user Opacus script (``opacus_correct``) with what tutorials add: after each epoch, the accuracy on
the training rows through a DataLoader of their own. ``make``: the evaluation under ``torch.no_grad()`` (the idiom);
``make_grad``: a pass over the same rows with gradients enabled (the labels only), whose reads count as a
training's."""

import torch
from opacus_correct import BATCH, CLIP, EPOCHS, LR, SIGMA, claim, dataset
from opacus import PrivacyEngine
from torch import nn
from torch.utils.data import DataLoader


def train(data, seed, no_grad=True):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    loader = DataLoader(data, batch_size=BATCH, shuffle=True)
    model, optimizer, loader = PrivacyEngine().make_private(
        module=model, optimizer=optimizer, data_loader=loader, noise_multiplier=SIGMA, max_grad_norm=CLIP
    )
    for _ in range(EPOCHS):
        for x, y in loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
        if no_grad:
            with torch.no_grad():
                correct = sum(int((model(x).argmax(1) == y).sum()) for x, y in DataLoader(data, batch_size=256))
        else:  # a pass with gradients enabled (Opacus' hooks refuse a forward there: only the labels are read)
            correct = sum(int((y == 1).sum()) for _, y in DataLoader(data, batch_size=256))
        print(f"train accuracy {correct / len(data):.3f}") if seed == 0 else None
    return model


def make():
    return dict(claim=claim(), train=train, dataset=dataset)


def make_grad():
    return dict(claim=claim(), train=lambda data, seed: train(data, seed, no_grad=False), dataset=dataset)
