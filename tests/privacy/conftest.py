import importlib

import pytest


@pytest.fixture
def script():
    """script("audit") -> the module of ``dpcov audit`` (dpcov/commands/audit.py)."""
    return lambda name: importlib.import_module(f"dpcov.commands.{name}")
