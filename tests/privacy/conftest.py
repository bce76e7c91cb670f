import importlib
import importlib.util
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


@pytest.fixture
def script():
    """script("audit") -> the module of ``dpcov audit`` (dpcov/commands/audit.py); a maintainer's script
    that is no subcommand (audit_power) from scripts/, loaded from its file."""
    def load(name: str):
        if importlib.util.find_spec(f"dpcov.commands.{name}") is not None:
            return importlib.import_module(f"dpcov.commands.{name}")
        spec = importlib.util.spec_from_file_location(f"_script_{name}", SCRIPTS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    return load
