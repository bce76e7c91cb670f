"""The ``dpcov`` command's subcommands (dpcov/cli.py). ``python run.py`` and ``python scripts/X.py`` in a
checkout are thin wrappers around these modules."""
from __future__ import annotations

from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]


def project_root() -> Path:
    """Where committed results are read and outputs go by default: the checkout this code runs from
    (editable install: it holds REPRODUCTION.md), else the current directory (an installed wheel)."""
    return CHECKOUT if (CHECKOUT / "REPRODUCTION.md").is_file() else Path.cwd()
