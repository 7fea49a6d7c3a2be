"""AlexNet feature extractor (hsaudit.data.alexnet): torchvision's architecture and keys, weights loading, features.

No pretrained weights are reachable here: a state dict of the right shapes with random values stands in for
torchvision's ``alexnet-owt-7be5be79.pth``.
"""

from __future__ import annotations

import urllib.error

import numpy as np
import pytest
import torch

from hsaudit.data import alexnet as ax
from hsaudit.data.alexnet import (
    ALEXNET_FILE,
    ALEXNET_STATE_SHAPES,
    AlexNet,
    alexnet_features,
    load_alexnet_weights,
)

pytestmark = pytest.mark.usefixtures("torch_one_thread")

# torchvision.models.alexnet (https://github.com/pytorch/vision/blob/main/torchvision/models/alexnet.py):
# AlexNet().state_dict() keys and shapes, in order, and AlexNet_Weights.IMAGENET1K_V1.meta["num_params"].
TORCHVISION_KEYS = [
    ("features.0.weight", (64, 3, 11, 11)),
    ("features.0.bias", (64,)),
    ("features.3.weight", (192, 64, 5, 5)),
    ("features.3.bias", (192,)),
    ("features.6.weight", (384, 192, 3, 3)),
    ("features.6.bias", (384,)),
    ("features.8.weight", (256, 384, 3, 3)),
    ("features.8.bias", (256,)),
    ("features.10.weight", (256, 256, 3, 3)),
    ("features.10.bias", (256,)),
    ("classifier.1.weight", (4096, 9216)),
    ("classifier.1.bias", (4096,)),
    ("classifier.4.weight", (4096, 4096)),
    ("classifier.4.bias", (4096,)),
    ("classifier.6.weight", (1000, 4096)),
    ("classifier.6.bias", (1000,)),
]
TORCHVISION_NUM_PARAMS = 61_100_840


def random_state(num_classes: int = 1000, seed: int = 0) -> dict[str, torch.Tensor]:
    """Random values of the right shapes (He-uniform weights, small biases), so that activations stay O(1)."""
    gen = torch.Generator().manual_seed(seed)
    state = {}
    for key, shape in TORCHVISION_KEYS:
        shape = (num_classes, *shape[1:]) if key.startswith("classifier.6.") else shape
        if key.endswith(".weight"):
            bound = (6.0 / np.prod(shape[1:])) ** 0.5  # He-uniform: variance 2 / fan_in
            state[key] = torch.rand(shape, generator=gen).mul_(2 * bound).sub_(bound)
        else:
            state[key] = torch.rand(shape, generator=gen).sub_(0.5).mul_(0.02)
    return state


def cheap_state(**shapes: tuple[int, ...]) -> dict[str, torch.Tensor]:
    """Zeros of torchvision's shapes (expanded views: saved as one element each), some shapes overridden."""
    return {k: torch.zeros(()).expand(shapes.get(k.replace(".", "_"), s)) for k, s in TORCHVISION_KEYS}


@pytest.fixture(scope="module")
def weights_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("alexnet") / "weights.pth"
    torch.save(random_state(), path)
    return path


def test_module_has_torchvision_keys_and_shapes():
    with torch.device("meta"):
        state = AlexNet().state_dict()
    assert [(k, tuple(v.shape)) for k, v in state.items()] == TORCHVISION_KEYS
    assert list(ALEXNET_STATE_SHAPES.items()) == TORCHVISION_KEYS
    assert sum(v.numel() for v in state.values()) == TORCHVISION_NUM_PARAMS


def test_features_of_loaded_weights_equal_a_direct_forward(weights_file):
    weights = load_alexnet_weights(weights_file)
    assert list(weights) == [k for k, _ in TORCHVISION_KEYS]
    images = np.random.default_rng(0).uniform(size=(3, 3, 32, 32)).astype(np.float32)
    feats = alexnet_features(images, weights, batch_size=2, device="cpu", progress=False)
    assert feats.shape == (3, 4096) and feats.dtype == np.float32
    # Direct forward: resize to 224, ImageNet normalisation, torchvision's layers up to classifier.5, eval mode.
    with torch.device("meta"):
        model = AlexNet()
    model.load_state_dict(weights, assign=True)
    model.eval()
    x = torch.nn.functional.interpolate(torch.from_numpy(images), size=(224, 224), mode="bilinear")
    x = (x - torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)) / torch.tensor([0.229, 0.224, 0.225]).view(
        1, 3, 1, 1
    )
    with torch.no_grad():
        h = torch.flatten(model.avgpool(model.features(x)), 1)
        for i in range(6):
            h = model.classifier[i](h)
        logits = model(x)
    np.testing.assert_allclose(feats, h.numpy(), rtol=1e-4, atol=1e-5)
    assert (feats >= 0).all() and (feats > 0).any()  # after the ReLU classifier.5
    # The head on top of the features gives the module's logits.
    head = model.classifier[6]
    with torch.no_grad():
        np.testing.assert_allclose(head(torch.from_numpy(feats)).numpy(), logits.numpy(), rtol=1e-4, atol=1e-4)
    # Chunking does not change the result.
    one = alexnet_features(images, weights, batch_size=3, device="cpu", progress=False)
    np.testing.assert_allclose(one, feats, rtol=1e-4, atol=1e-4)  # float32 kernels differ with the batch size


def test_cached_checkpoint_in_data_dir_is_used_without_download(tmp_path, weights_file, monkeypatch):
    (tmp_path / ALEXNET_FILE).symlink_to(weights_file)

    def no_network(*args, **kwargs):
        raise AssertionError("must not download")

    monkeypatch.setattr(torch.hub, "load_state_dict_from_url", no_network)
    weights = load_alexnet_weights(data_dir=tmp_path, download=False)
    assert tuple(weights["classifier.6.weight"].shape) == (1000, 4096)


def test_download_goes_to_data_dir_with_the_hash_checked(tmp_path, monkeypatch):
    seen = {}

    def fake(url, **kwargs):
        seen.update(url=url, **kwargs)
        return cheap_state()

    monkeypatch.setattr(torch.hub, "load_state_dict_from_url", fake)
    load_alexnet_weights(data_dir=tmp_path)
    assert seen["url"] == ax.ALEXNET_IMAGENET_URL and seen["url"].endswith(ALEXNET_FILE)
    assert seen["model_dir"] == str(tmp_path) and seen["check_hash"] and seen["weights_only"]


def test_offline_is_one_clear_error(tmp_path, monkeypatch):
    def offline(*args, **kwargs):
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr(torch.hub, "load_state_dict_from_url", offline)
    with pytest.raises(FileNotFoundError, match=rf"URLError.*{ALEXNET_FILE}.*path"):
        load_alexnet_weights(data_dir=tmp_path)
    with pytest.raises(FileNotFoundError, match="download is off"):
        load_alexnet_weights(data_dir=tmp_path, download=False)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_alexnet_weights(tmp_path / "missing.pth")


def test_bad_state_dicts_are_rejected_naming_the_key(tmp_path):
    state = cheap_state()
    del state["features.3.bias"]
    torch.save(state, tmp_path / "a.pth")
    with pytest.raises(ValueError, match="missing features.3.bias"):
        load_alexnet_weights(tmp_path / "a.pth")
    torch.save(cheap_state(classifier_4_weight=(4096, 4095)), tmp_path / "b.pth")
    with pytest.raises(ValueError, match=r"classifier.4.weight has shape \(4096, 4095\)"):
        load_alexnet_weights(tmp_path / "b.pth")
    (tmp_path / "c.pth").write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="not a torch state-dict file"):
        load_alexnet_weights(tmp_path / "c.pth")


def test_a_ten_class_head_is_accepted_and_images_are_checked():
    weights = cheap_state(classifier_6_weight=(10, 4096), classifier_6_bias=(10,))
    ax.check_alexnet_state(weights)
    with pytest.raises(ValueError, match="disagree"):
        ax.check_alexnet_state(cheap_state(classifier_6_weight=(10, 4096)))
    with pytest.raises(ValueError, match=r"\[n, 3, H, W\]"):
        alexnet_features(np.zeros((2, 1, 28, 28), np.float32), weights, progress=False)
    with pytest.raises(ValueError, match="batch_size"):
        alexnet_features(np.zeros((2, 3, 32, 32), np.float32), weights, batch_size=0, progress=False)
