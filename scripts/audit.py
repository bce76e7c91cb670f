"""Audit one mechanism black-box (and white-box when its noise formula is known) from the command line.

    python scripts/audit.py NAME [--options JSON] [--budget rho=0.5 | eps=1 | eps=1,delta=1e-5]
                                 [--profile gaussian|dp] [--pair swap_values [--n 1000]] [-T 2000]
                                 [--factors 1,0.67,0.5]

NAME is anything ``mechanisms.registry.get_mechanism`` accepts (a registered name, or a plug-in); the
mechanism is only ever run through ``mechanisms.registry.release``. Prints, per noise factor c (the
copy run at the budget of its notion whose canonical mechanism has noise x c; c = 1 is the mechanism
itself), the audited lower bound against the claim and whether the claim is exceeded. The exit status
is 1 when the mechanism itself (c = 1) exceeds its claim. Method: tests/privacy/audit.py.

``--profile gaussian`` audits against the exact Gaussian profile (mu-GDP), valid only for a
post-processed Gaussian mechanism; ``dp`` (the default for unknown mechanisms) audits (eps, delta).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "privacy"))

import audit  # noqa: E402
from mechanisms.registry import get_mechanism  # noqa: E402
from experiments.config import budget_from_params  # noqa: E402


def parse_budget(text: str):
    """rho=0.5 | eps=1 | eps=1,delta=1e-5 -> a budget (the experiments' rule: experiments.config)."""
    point = {}
    for part in filter(None, text.split(",")):
        key, _, value = part.partition("=")
        if not value:
            raise SystemExit(f"--budget: expected key=value, got {part!r}")
        point[key.strip()] = float(value)
    return budget_from_params(point)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name")
    parser.add_argument("--options", default="{}", help="mechanism options as JSON")
    parser.add_argument("--budget", default=None, help="claimed budget (default: rho=0.5, eps=1 or eps=1,delta=1e-5)")
    parser.add_argument("--profile", choices=["gaussian", "dp"], default=None)
    parser.add_argument("--pair", default=None, help="neighbour pair (default: the mechanism's audit pairs)")
    parser.add_argument("--n", type=int, default=1000, help="rows of the neighbour pair given by --pair")
    parser.add_argument("-T", type=int, default=2000, help="runs per dataset")
    parser.add_argument("--calibration-T", type=int, default=300, help="runs of the white-box fit")
    parser.add_argument("--factors", default="1,0.67,0.5", help="noise factors c to audit")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    mechanism = get_mechanism(args.name)
    options = json.loads(args.options)
    budget = parse_budget(args.budget) if args.budget else audit.DEFAULT_BUDGETS[mechanism.notion]
    line = audit.line_for(args.name, args.name, options, budget, "command line")
    if args.profile:
        line = dataclasses.replace(line, profile=args.profile)
    pairs = [(args.pair, args.n)] if args.pair else list(line.pairs)
    factors = [float(c) for c in args.factors.split(",")]
    print(f"{args.name} ({mechanism.label}), options {options}, claim {budget}, profile {line.profile}")
    failed = False
    for pair in pairs:
        for c in factors:
            result = audit.black_box(line, args.T, c, pair=pair, seed=args.seed)
            failed |= c == 1 and result.exceeded
            print(("EXCEEDS " if result.exceeded else "ok      ") + result.describe(), flush=True)
    if line.calibration is not None:
        for c in factors:
            for result in audit.calibrate(line, args.calibration_T, c, seed=args.seed):
                print(("LOW     " if result.caught else "ok      ") + result.describe(), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
