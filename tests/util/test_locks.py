"""hsaudit.util.locks: the data-preparation lock serialises processes."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from hsaudit.util.locks import data_lock, file_lock

HOLD = """
import sys, time
from pathlib import Path
from hsaudit.util.locks import file_lock
lock, log = Path(sys.argv[1]), Path(sys.argv[2])
with file_lock(lock):
    log.write_text("held\\n")
    time.sleep(1.0)
    with open(log, "a") as fh:
        fh.write("released\\n")
"""


def test_a_second_process_waits_for_the_holder(tmp_path: Path):
    lock, log = tmp_path / "d" / ".prepare.lock", tmp_path / "log"
    child = subprocess.Popen([sys.executable, "-c", HOLD, str(lock), str(log)])
    try:
        deadline = time.monotonic() + 60
        while not (log.exists() and log.read_text().startswith("held")):
            assert time.monotonic() < deadline and child.poll() is None, "the child never took the lock"
            time.sleep(0.01)
        with file_lock(lock):
            # we only get the lock once the holder has written its last line and let go
            assert log.read_text() == "held\nreleased\n"
    finally:
        child.wait(timeout=60)
    assert child.returncode == 0


def test_the_lock_is_released_on_error(tmp_path: Path):
    lock = tmp_path / "x.lock"
    try:
        with file_lock(lock):
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    with file_lock(lock):  # would wait forever if the failed block still held it
        pass


def test_data_lock_is_in_the_sections_data_directory():
    assert data_lock({"data_dir": "elsewhere"}) == Path("elsewhere") / ".prepare.lock"
    assert data_lock({}) == Path("data") / ".prepare.lock"
