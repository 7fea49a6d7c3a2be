"""What a code version hashes of a file (hsaudit.util.source.code_text) and its cache between processes."""

from __future__ import annotations

import pytest

from hsaudit.util import source

CODE = b"def f(x):\n    'Doc.'\n    return x + 1  # a comment\n"


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    monkeypatch.setenv("HSAUDIT_CODE_CACHE", str(tmp_path / "cache"))
    source.code_text.cache_clear()
    yield tmp_path / "cache"
    source.code_text.cache_clear()


def test_code_without_docstrings_comments_or_layout():
    assert source.code_text(CODE) == source.code_text(b"def f(x):\n\n    return x+1\n") == b"def f(x):\n    return x + 1"
    assert source.code_text(b"def f(x):\n    return x + 2\n") != source.code_text(CODE)
    assert source.code_text(b"not python (") == b"not python ("  # raw bytes when it does not parse


def test_disk_cache_is_keyed_by_content_and_reused_by_a_fresh_process(fresh):
    first = source.code_text(CODE)
    files = [p for p in fresh.rglob("*") if p.is_file()]
    assert len(files) == 1 and files[0].read_bytes() == first
    # A new process (the in-process memo cleared) reads the file; it never parses again for the same bytes.
    source.code_text.cache_clear()
    files[0].write_bytes(b"marker")  # what it returns comes from the cache file
    assert source.code_text(CODE) == b"marker"
    # Other bytes, another key.
    source.code_text(CODE + b"\n\ny = 2\n")
    assert len([p for p in fresh.rglob("*") if p.is_file()]) == 2


def test_no_disk_cache_when_disabled_or_unwritable(monkeypatch, tmp_path):
    monkeypatch.setenv("HSAUDIT_CODE_CACHE", "")
    source.code_text.cache_clear()
    assert source.cache_dir() is None and source.code_text(CODE) == b"def f(x):\n    return x + 1"
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("HSAUDIT_CODE_CACHE", str(blocker / "cache"))
    source.code_text.cache_clear()
    assert source.code_text(CODE) == b"def f(x):\n    return x + 1"  # the cache is skipped, not an error
    source.code_text.cache_clear()
