"""python scripts/reproduce.py ARGS = dpcov reproduce ARGS (dpcov/commands/reproduce.py)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # a checkout without the package installed

from dpcov.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["reproduce", *sys.argv[1:]]))
