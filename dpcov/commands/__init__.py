"""The ``dpcov`` command's subcommands (dpcov/cli.py). ``python run.py`` and ``python scripts/X.py`` in a
checkout are thin wrappers around these modules."""
from __future__ import annotations

import os
import sys
from pathlib import Path

BROKEN_PIPE_STATUS = 141  # 128 + SIGPIPE: what a command killed by its closed pipe exits with

CHECKOUT = Path(__file__).resolve().parents[2]


def project_root() -> Path:
    """Where committed results are read and outputs go by default: the checkout this code runs from
    (editable install: it holds REPRODUCTION.md), else the current directory (an installed wheel)."""
    return CHECKOUT if (CHECKOUT / "REPRODUCTION.md").is_file() else Path.cwd()


def closed_pipe_exit() -> None:
    """The reader of stdout went away (``dpcov run ... | head -1``): end quietly, as a Unix tool killed by SIGPIPE
    would. stdout is pointed at /dev/null first, so the interpreter's last flush cannot raise again (Python's docs,
    "Note on SIGPIPE"); every finished run is already kept."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real stdout (a test's capture): nothing to redirect
        pass
    raise SystemExit(BROKEN_PIPE_STATUS)
