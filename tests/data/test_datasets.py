"""California Housing loader (hsaudit.data.datasets): file formats, standardisation, median binarisation, offline error."""

from __future__ import annotations

import urllib.error
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import REPO, synthetic_housing
from hsaudit.data import datasets as hdata
from hsaudit.data.datasets import (
    HOUSING_COLUMNS,
    HOUSING_FEATURES,
    load_dataset,
    load_housing,
    read_housing_table,
    save_dataset,
)



@pytest.fixture
def frame() -> pd.DataFrame:
    return synthetic_housing()


def test_csv_is_standardised_and_binarised_at_the_median(tmp_path, frame):
    path = tmp_path / "housing.csv"
    frame.to_csv(path, index=False)
    data = load_housing(path=path)
    assert data.X.dtype == np.float32 and data.X.shape == (len(frame), 8)
    assert data.y.dtype == np.int64 and set(np.unique(data.y)) == {0, 1}
    np.testing.assert_allclose(data.X.mean(axis=0), 0.0, atol=1e-6)
    np.testing.assert_allclose(data.X.std(axis=0), 1.0, rtol=1e-5)
    raw = frame[list(HOUSING_FEATURES)].to_numpy()
    np.testing.assert_allclose(data.X, (raw - raw.mean(0)) / raw.std(0), rtol=1e-5, atol=1e-6)
    median = float(np.median(frame["MedHouseVal"]))
    assert data.threshold == median
    np.testing.assert_array_equal(data.y, (frame["MedHouseVal"].to_numpy() > median).astype(int))
    # n odd and continuous values: exactly (n - 1) / 2 rows lie strictly above the median.
    assert int(data.y.sum()) == (len(frame) - 1) // 2
    assert data.feature_names == HOUSING_FEATURES


@pytest.mark.parametrize("name", ["housing.parquet", "housing.parquet.brotli"])
def test_parquet_gives_the_same_arrays_as_csv(tmp_path, frame, name):
    frame.to_csv(tmp_path / "h.csv", index=False)
    # Extra columns and another column order are accepted (only the Housing columns are read).
    shuffled = frame.assign(extra=1.0)[["extra", *reversed(HOUSING_COLUMNS)]]
    shuffled.to_parquet(tmp_path / name, compression="brotli" if "brotli" in name else "snappy")
    a, b = load_housing(path=tmp_path / "h.csv"), load_housing(path=tmp_path / name)
    np.testing.assert_allclose(a.X, b.X, rtol=1e-6)
    np.testing.assert_array_equal(a.y, b.y)


def test_numeric_threshold_and_no_standardisation(tmp_path, frame):
    path = tmp_path / "h.csv"
    frame.to_csv(path, index=False)
    data = load_housing(path=path, threshold=2.5, standardize=False)
    np.testing.assert_array_equal(data.y, (frame["MedHouseVal"] > 2.5).astype(int))
    np.testing.assert_allclose(data.X, frame[list(HOUSING_FEATURES)].to_numpy(np.float32))


def test_constant_feature_is_only_centred(tmp_path, frame):
    path = tmp_path / "h.csv"
    frame.assign(HouseAge=7.0).to_csv(path, index=False)
    data = load_housing(path=path)
    np.testing.assert_array_equal(data.X[:, HOUSING_FEATURES.index("HouseAge")], 0.0)


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda f: f.drop(columns=["AveOccup"]), "AveOccup"),
        (lambda f: f.assign(MedInc=np.nan), "MedInc"),
        (lambda f: f.assign(Latitude="north"), "numeric"),
    ],
)
def test_bad_tables_are_rejected_naming_the_problem(tmp_path, frame, mutate, needle):
    path = tmp_path / "h.csv"
    mutate(frame).to_csv(path, index=False)
    with pytest.raises(ValueError, match=needle):
        load_housing(path=path)


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [({"threshold": 99.0}, "threshold"), ({"threshold": "mean"}, "threshold"), ({"threshold": float("nan")}, "finite")],
)
def test_bad_thresholds_are_rejected(tmp_path, frame, kwargs, needle):
    path = tmp_path / "h.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(ValueError, match=needle):
        load_housing(path=path, **kwargs)


def test_unknown_format_and_missing_file(tmp_path, frame):
    frame.to_json(tmp_path / "h.json")
    with pytest.raises(ValueError, match="unknown format"):
        read_housing_table(tmp_path / "h.json")
    with pytest.raises(FileNotFoundError, match="housing.data.path"):
        read_housing_table(tmp_path / "nope.csv")


def test_offline_without_local_copy_says_how_to_provide_it(tmp_path, monkeypatch):
    import sklearn.datasets

    def offline(**kwargs):
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr(sklearn.datasets, "fetch_california_housing", offline)
    with pytest.raises(FileNotFoundError) as info:
        load_housing(data_dir=tmp_path)
    message = str(info.value)
    assert "housing.data.path" in message and "MedHouseVal" in message and "URLError" in message
    assert "http" not in message.lower()  # the instructions are URL-free


def test_empty_cache_with_download_disabled_is_the_same_clear_error(tmp_path):
    # The real scikit-learn fetcher, which never touches the network with download_if_missing=False.
    with pytest.raises(FileNotFoundError, match="housing.data.path"):
        load_housing(data_dir=tmp_path / "empty", download=False)


def test_sklearn_frame_is_used_when_no_path(tmp_path, monkeypatch, frame):
    import sklearn.datasets
    from sklearn.utils import Bunch

    seen = {}

    def fake(*, data_home, download_if_missing, as_frame):
        seen.update(data_home=data_home, download=download_if_missing, as_frame=as_frame)
        return Bunch(frame=frame)

    monkeypatch.setattr(sklearn.datasets, "fetch_california_housing", fake)
    data = load_housing(data_dir=tmp_path)
    assert seen == {"data_home": str(tmp_path), "download": True, "as_frame": True}
    assert data.source == "sklearn" and data.n == len(frame)


def test_npz_round_trip(tmp_path, frame):
    path = tmp_path / "h.csv"
    frame.to_csv(path, index=False)
    data = load_housing(path=path)
    save_dataset(data, tmp_path / "out" / "housing.npz")
    back = load_dataset(tmp_path / "out" / "housing.npz")
    np.testing.assert_array_equal(back.X, data.X)
    np.testing.assert_array_equal(back.y, data.y)
    assert (back.threshold, back.feature_names, back.source) == (data.threshold, data.feature_names, data.source)
    assert not list((tmp_path / "out").glob(".*tmp*")), "no temporary file left behind"


def test_standardize_stats_rejects_non_matrix():
    with pytest.raises(ValueError, match="2-D"):
        hdata.standardize_stats([1.0, 2.0])


@pytest.mark.skipif(
    not (REPO / "data" / "california_housing.parquet.brotli").exists(),
    reason="the real Housing copy (docs/housing.md) is not under data/",
)
def test_real_copy_has_the_published_shape():
    # Pace & Barry (1997) / scikit-learn: 20,640 block groups, 8 features.
    data = load_housing(path=REPO / "data" / "california_housing.parquet.brotli")
    assert data.X.shape == (20640, 8)
    assert abs(float(data.y.mean()) - 0.5) < 0.001


# ------------------------------------------------------------------ the synthetic copy, written atomically


@pytest.mark.parametrize("name", ["cifar10", "mnist"])
def test_two_concurrent_writers_end_with_one_complete_copy(tmp_path, monkeypatch, name):
    """Two jobs find the synthetic copy missing at once (``--cores 2`` without the lock). Job A's writer has begun
    (its copy's folder exists, no file yet) and waits until job B has written and read its own copy; then A
    finishes. B must never see A's half-written copy (in place, it did: B found the folder and read a copy without
    its files), A's rename loses to B's copy and A reads it: one complete copy, equal to a copy written alone, and
    no staging directory left behind."""
    import threading

    folder, write = hdata._SYNTHETIC_WRITERS[name]  # noqa: SLF001 (the registry's writer, wrapped)
    a_started, b_done = threading.Event(), threading.Event()

    def racing_write(directory, **kw):
        if threading.current_thread().name == "job-a":
            (Path(directory) / folder).mkdir(parents=True, exist_ok=True)  # the writer has begun: folder, no files
            a_started.set()
            assert b_done.wait(timeout=60)
        return write(directory, **kw)

    monkeypatch.setitem(hdata._SYNTHETIC_WRITERS, name, (folder, racing_write))
    section = {"source": "synthetic", "synthetic_train": 20, "synthetic_test": 10, "data_dir": str(tmp_path / "data")}
    results, errors = {}, []

    def job(tag):
        try:
            if tag == "job-b":
                assert a_started.wait(timeout=60)
            results[tag] = hdata.configured_dataset(name, section)
        except BaseException as err:  # reported below
            errors.append(err)
        finally:
            if tag == "job-b":
                b_done.set()

    threads = [threading.Thread(target=job, args=(tag,), name=tag) for tag in ("job-a", "job-b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == [f"synthetic-{name}-20-10"]  # no staging left
    monkeypatch.setitem(hdata._SYNTHETIC_WRITERS, name, (folder, write))
    alone = hdata.configured_dataset(name, {**section, "data_dir": str(tmp_path / "alone")})
    assert set(results) == {"job-a", "job-b"}
    for got in results.values():
        assert got.X.shape == (20, *alone.X.shape[1:])
        np.testing.assert_array_equal(got.X, alone.X)
        np.testing.assert_array_equal(got.y, alone.y)
    files = {root: sorted(p.relative_to(tmp_path / root) for p in (tmp_path / root).rglob("*") if p.is_file())
             for root in ("data", "alone")}
    assert files["data"] == files["alone"]


def test_a_leftover_directory_without_a_copy_is_a_clear_error(tmp_path):
    section = {"source": "synthetic", "synthetic_train": 20, "synthetic_test": 10, "data_dir": str(tmp_path)}
    (tmp_path / "synthetic-cifar10-20-10" / "partial").mkdir(parents=True)  # an interrupted older writer's
    with pytest.raises(ValueError, match="holds no synthetic cifar10 copy"):
        hdata.configured_dataset("cifar10", section)
    assert [p.name for p in tmp_path.iterdir()] == ["synthetic-cifar10-20-10"]  # the staging copy is removed
