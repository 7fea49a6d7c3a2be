"""AlexNet feature extractor for Cebere et al. (2025), Fig. 13: ImageNet-pretrained AlexNet, new last layer only.

The paper fine-tunes only a new last layer Linear(4096 → 10) of torchvision's ImageNet-pretrained AlexNet on
CIFAR-10 (inputs resized to 224), so the frozen part is a fixed map: the 4096 penultimate features are computed
once (:func:`alexnet_features`) and the audits train a linear model on them.

:class:`AlexNet` reproduces torchvision's ``torchvision.models.alexnet.AlexNet`` (the "one weird trick" variant,
Krizhevsky 2014; source: https://github.com/pytorch/vision/blob/main/torchvision/models/alexnet.py) layer for
layer, so its state-dict keys and shapes are those of :data:`ALEXNET_STATE_SHAPES` and torchvision's
checkpoints load into it without torchvision installed.

Preprocessing (:func:`alexnet_features`, [inferred] where the paper is silent): images in [0, 1] (NCHW, 3
channels) are resized to 224 × 224 with bilinear interpolation (no crop: a 32 × 32 CIFAR image has no border to
spare), then normalised with the ImageNet mean (0.485, 0.456, 0.406) and std (0.229, 0.224, 0.225) of
torchvision's ``AlexNet_Weights.IMAGENET1K_V1`` transforms. The network runs in eval mode (dropout off); the
features are the output of ``classifier.5`` (the ReLU after the second 4096-unit layer).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import numpy.typing as npt
import torch
from torch import nn

# torchvision's AlexNet_Weights.IMAGENET1K_V1 (acc@1 56.522 on ImageNet-1k); the hash prefix 7be5be79 is checked.
ALEXNET_IMAGENET_URL = "https://download.pytorch.org/models/alexnet-owt-7be5be79.pth"
ALEXNET_FILE = "alexnet-owt-7be5be79.pth"
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
FEATURE_DIM = 4096
INPUT_SIZE = 224

# The state dict of torchvision.models.alexnet() (num_classes=1000), in order; hard-coded from torchvision's
# definition (features: Conv 3→64 k11 s4 p2, Conv 64→192 k5 p2, Conv 192→384 k3 p1, Conv 384→256 k3 p1,
# Conv 256→256 k3 p1; classifier: Linear 9216→4096, 4096→4096, 4096→1000).
ALEXNET_STATE_SHAPES: dict[str, tuple[int, ...]] = {
    "features.0.weight": (64, 3, 11, 11),
    "features.0.bias": (64,),
    "features.3.weight": (192, 64, 5, 5),
    "features.3.bias": (192,),
    "features.6.weight": (384, 192, 3, 3),
    "features.6.bias": (384,),
    "features.8.weight": (256, 384, 3, 3),
    "features.8.bias": (256,),
    "features.10.weight": (256, 256, 3, 3),
    "features.10.bias": (256,),
    "classifier.1.weight": (4096, 9216),
    "classifier.1.bias": (4096,),
    "classifier.4.weight": (4096, 4096),
    "classifier.4.bias": (4096,),
    "classifier.6.weight": (1000, 4096),
    "classifier.6.bias": (1000,),
}

_OFFLINE_HELP = (
    "ImageNet-pretrained AlexNet weights are not available ({why}). Provide torchvision's checkpoint "
    f"{ALEXNET_FILE} (a state dict, from {{url}} on a machine with internet) either as the `path` option "
    "(load_alexnet_weights(path=...)) or in data_dir ({data_dir!r}), where a download would have put it."
)


class AlexNet(nn.Module):
    """torchvision's AlexNet, same modules and state-dict keys (see the module docstring).

    Args:
        num_classes: outputs of the last layer ``classifier.6`` (1000 for the ImageNet checkpoint).
        dropout: dropout probability of ``classifier.0`` and ``classifier.3`` (training mode only).
    """

    def __init__(self, num_classes: int = 1000, dropout: float = 0.5) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, kernel_size=11, stride=4, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(64, 192, kernel_size=5, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(192, 384, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(384, 256, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(256, 256, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
        )
        self.avgpool = nn.AdaptiveAvgPool2d((6, 6))
        self.classifier = nn.Sequential(
            nn.Dropout(p=dropout),
            nn.Linear(256 * 6 * 6, 4096),
            nn.ReLU(inplace=True),
            nn.Dropout(p=dropout),
            nn.Linear(4096, 4096),
            nn.ReLU(inplace=True),
            nn.Linear(4096, num_classes),
        )

    def penultimate(self, x: torch.Tensor) -> torch.Tensor:
        """The 4096 features after ``classifier.5`` (input already resized and normalised)."""
        x = self.avgpool(self.features(x))
        return self.classifier[:6](torch.flatten(x, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits, as torchvision's ``AlexNet.forward``."""
        return self.classifier[6](self.penultimate(x))


def check_alexnet_state(state: Mapping[str, torch.Tensor]) -> None:
    """Check the keys and shapes of an AlexNet state dict against :data:`ALEXNET_STATE_SHAPES`.

    ``classifier.6`` may have any number of outputs (a fine-tuned head); every other shape must match.

    Raises:
        ValueError: a missing or unexpected key, or a wrong shape, naming them.
    """
    missing = [k for k in ALEXNET_STATE_SHAPES if k not in state]
    unexpected = [k for k in state if k not in ALEXNET_STATE_SHAPES]
    if missing or unexpected:
        raise ValueError(
            "not a torchvision AlexNet state dict: "
            + (f"missing {', '.join(missing)}" if missing else "")
            + ("; " if missing and unexpected else "")
            + (f"unexpected {', '.join(unexpected[:8])}" if unexpected else "")
        )
    for key, shape in ALEXNET_STATE_SHAPES.items():
        got = tuple(state[key].shape)
        ok = got == shape or (key.startswith("classifier.6.") and got[1:] == shape[1:] and len(got) == len(shape))
        if not ok:
            raise ValueError(f"AlexNet state dict: {key} has shape {got}, expected {shape}")
    if state["classifier.6.weight"].shape[0] != state["classifier.6.bias"].shape[0]:
        raise ValueError("AlexNet state dict: classifier.6.weight and classifier.6.bias disagree on the outputs")


def load_alexnet_weights(
    path: str | os.PathLike | None = None,
    *,
    download: bool = True,
    data_dir: str | os.PathLike = "data",
) -> dict[str, torch.Tensor]:
    """torchvision's ImageNet-pretrained AlexNet state dict (``AlexNet_Weights.IMAGENET1K_V1``), on the CPU.

    Args:
        path: a local ``.pth`` file holding the state dict; ``None``: ``data_dir/alexnet-owt-7be5be79.pth`` if
            present, else a download of :data:`ALEXNET_IMAGENET_URL` into ``data_dir`` (hash-checked).
        download: allow the download.
        data_dir: where the checkpoint is cached.

    Returns:
        The state dict (keys :data:`ALEXNET_STATE_SHAPES`), float tensors on the CPU.

    Raises:
        FileNotFoundError: ``path`` missing, or no cached copy and no download (with instructions).
        ValueError: a file that is not an AlexNet state dict.
    """
    data_dir = Path(data_dir)
    if path is not None and str(path) != "":
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"AlexNet weights path {str(path)!r} does not exist (or is not a file)")
        state = _read_state(path)
    elif (data_dir / ALEXNET_FILE).is_file():
        state = _read_state(data_dir / ALEXNET_FILE)
    elif not download:
        why = f"download is off and {str(data_dir / ALEXNET_FILE)!r} does not exist"
        raise FileNotFoundError(_OFFLINE_HELP.format(why=why, url=ALEXNET_IMAGENET_URL, data_dir=str(data_dir)))
    else:
        try:
            state = torch.hub.load_state_dict_from_url(
                ALEXNET_IMAGENET_URL,
                model_dir=str(data_dir),
                map_location="cpu",
                progress=True,
                check_hash=True,
                file_name=ALEXNET_FILE,
                weights_only=True,
            )
        except (OSError, RuntimeError) as err:  # URLError/HTTPError are OSErrors; a bad hash is a RuntimeError
            why = f"the download failed: {type(err).__name__}: {err}"
            raise FileNotFoundError(
                _OFFLINE_HELP.format(why=why, url=ALEXNET_IMAGENET_URL, data_dir=str(data_dir))
            ) from None
    check_alexnet_state(state)
    return dict(state)


def alexnet_features(
    images: npt.ArrayLike | torch.Tensor,
    weights: Mapping[str, torch.Tensor],
    *,
    batch_size: int = 256,
    device: str | torch.device | None = None,
    progress: bool = True,
) -> np.ndarray:
    """Penultimate AlexNet features (output of ``classifier.5``) of images, in memory-bounded chunks.

    Args:
        images: [n, 3, H, W] pixel values in [0, 1] (NOT normalised: the ImageNet normalisation is applied here,
            after resizing to 224 × 224, see the module docstring).
        weights: an AlexNet state dict (:func:`load_alexnet_weights`).
        batch_size: images per forward pass (bounds the memory: 224 × 224 inputs and activations of one chunk).
        device: where to run; ``None``: CUDA when available, else CPU.
        progress: show a tqdm progress bar over the chunks.

    Returns:
        float32 [n, 4096].

    Raises:
        ValueError: images not [n, 3, H, W], or a bad ``batch_size`` or state dict.
    """
    from tqdm.auto import tqdm

    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    x = images if isinstance(images, torch.Tensor) else torch.from_numpy(np.asarray(images, dtype=np.float32))
    if x.ndim != 4 or x.shape[1] != 3:
        raise ValueError(f"images must be [n, 3, H, W], got shape {tuple(x.shape)}")
    check_alexnet_state(weights)
    device = torch.device(device if device is not None else ("cuda" if torch.cuda.is_available() else "cpu"))
    with torch.device("meta"):  # no time spent initialising 61M parameters that the weights replace
        model = AlexNet(num_classes=int(weights["classifier.6.weight"].shape[0]))
    model.load_state_dict({k: v.to(device=device, dtype=torch.float32) for k, v in weights.items()}, assign=True)
    model.eval()
    mean = torch.tensor(IMAGENET_MEAN, device=device).view(1, 3, 1, 1)
    std = torch.tensor(IMAGENET_STD, device=device).view(1, 3, 1, 1)
    out = np.empty((x.shape[0], FEATURE_DIM), dtype=np.float32)
    starts = range(0, x.shape[0], batch_size)
    with torch.inference_mode():
        for start in tqdm(starts, desc="AlexNet features", unit="batch", disable=not progress):
            chunk = x[start : start + batch_size].to(device=device, dtype=torch.float32)
            chunk = nn.functional.interpolate(
                chunk, size=(INPUT_SIZE, INPUT_SIZE), mode="bilinear", align_corners=False
            )
            out[start : start + chunk.shape[0]] = model.penultimate((chunk - mean) / std).float().cpu().numpy()
    return out


def _read_state(path: Path) -> dict[str, torch.Tensor]:
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # noqa: BLE001 — any failure to read means "not a state dict file"
        raise ValueError(
            f"AlexNet weights {str(path)!r}: not a torch state-dict file ({type(err).__name__}: {err})"
        ) from None
    if not isinstance(state, Mapping):
        raise ValueError(f"AlexNet weights {str(path)!r}: expected a state dict, got a {type(state).__name__}")
    return dict(state)
