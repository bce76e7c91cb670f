"""python scripts/audit.py ARGS = dpcov audit ARGS (dpcov/commands/audit.py)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # a checkout without the package installed

from dpcov.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["audit", *sys.argv[1:]]))
