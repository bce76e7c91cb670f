"""python run.py ARGS = dpcov run ARGS (dpcov/commands/run.py): one experiment, e.g.
    python run.py experiment=synthetic_trace [scale=paper|small|smoke] [overrides...]"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # a checkout without the package installed

from dpcov.commands.run import cli  # noqa: E402

if __name__ == "__main__":
    cli()
