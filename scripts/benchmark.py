"""python scripts/benchmark.py ARGS = dpcov benchmark ARGS (dpcov/commands/benchmark.py)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # a checkout without the package installed

from dpcov.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["benchmark", *sys.argv[1:]]))
