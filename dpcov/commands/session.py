"""Show a privacy session's file: its total, what was spent and is left, the whole session as (eps, delta)
(converted once, beside basic composition) and the ledger of every release and sub-step.

    dpcov session census.dpsession [--delta 1e-6]

Exit status 2, with the reason, for a missing file or one that is not a session file (it is left as it is).
Sessions are made and spent from Python: dpcov.Session(budget, privacy_unit=..., path=...).
"""
from __future__ import annotations

import argparse
import sys

from dpcov.session import Session


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", help="the session file (written by dpcov.Session(..., path=PATH))")
    parser.add_argument("--delta", type=float, default=1e-6,
                        help="the delta at which the session is stated as (eps, delta)-DP (default 1e-6)")
    args = parser.parse_args(argv)
    if not 0 < args.delta < 1:
        parser.error(f"--delta must lie in (0, 1), got {args.delta!r}")
    try:
        session = Session.open(args.path)
    except (FileNotFoundError, ValueError) as err:
        print(f"dpcov session: error: {err}", file=sys.stderr)
        return 2
    print(session.report(args.delta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
