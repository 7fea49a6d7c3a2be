"""Logging of the workflow's scripts: one set-up for every ``workflow/scripts/*.py`` adapter.

:func:`script_logging` sends the package's messages (INFO) and other libraries' warnings to the rule's ``log:``
file, captures ``warnings``, and writes an uncaught exception's traceback to that log as well as to stderr, so a
failed job never leaves an empty log behind.
"""

from __future__ import annotations

import logging
import sys

FORMAT = "%(asctime)s %(name)s %(message)s"


def script_logging(snakemake) -> logging.Logger:
    """Configure logging for a Snakemake ``script:`` job and return the ``hsaudit.workflow`` logger.

    Our messages at INFO; other libraries (e.g. fontTools while writing PDFs) only from WARNING.
    """
    logging.basicConfig(filename=snakemake.log[0], filemode="w", level=logging.WARNING, format=FORMAT, force=True)
    log = logging.getLogger("hsaudit.workflow")
    log.setLevel(logging.INFO)
    logging.captureWarnings(True)
    previous = sys.excepthook

    def log_then_raise(kind, value, tb):
        log.error("job failed", exc_info=(kind, value, tb))
        previous(kind, value, tb)

    sys.excepthook = log_then_raise
    return log
