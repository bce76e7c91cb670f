"""The two verdicts of one audit, measured (issue 55): every plain-numpy plug-in of ``dpcov.audits.float_cases``
audited as ``dpcov audit NAME`` does with its defaults (the budget sweep, --seconds 240), once as executed (two
verdicts: the low bits, then the calibration on paper, the time split between them) and once on paper only (what
declaring ``idealized=True`` gave before: the whole time budget for the calibration). The calibration mistakes
flagged by each say what the split costs in power.

    python scripts/audit_two_verdicts.py [--seconds 240] [--modes two,paper] [--cases gauss,forgot_sqrt2]
                                         [--output results/measurements/audit_two_verdicts.txt]

One line per case and mode (appended to --output as it goes): the exit status, each verdict with its worst
bound and budget, the seconds, and the releases. About 40 minutes with the defaults on the 2-core machine.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # a checkout without the package installed

from dpcov.audits import float_cases, lines  # noqa: E402
from dpcov.audits.blackbox import SWEEP_BUDGETS, verdicts  # noqa: E402
from dpcov.mechanisms.registry import get_mechanism  # noqa: E402

MODULE = "dpcov.audits.float_cases"


def _bound(report, stage: str) -> str:
    found = [f for f in report.findings if (f.stage == "low bits") == (stage == "low bits")]
    if not found:
        return "-"
    worst = max(found, key=lambda f: f.bound.value)
    return f"{worst.claim.symbol} >= {worst.bound.value:.3g} vs {worst.claim.value:.3g} ({worst.pair.split(':')[0]})"


def audit_case(case: str, mode: str, seconds: float, seed: int = 0) -> str:
    name = f"{MODULE}:{case}"
    mechanism = get_mechanism(name)
    line = lines.line_for(name, name, {}, lines.DEFAULT_BUDGETS[mechanism.notion], "command line")
    start = time.perf_counter()
    reports = lines.search(line, 1.0, seconds=seconds, seed=seed, budgets=list(SWEEP_BUDGETS[mechanism.notion]),
                           numerics="as executed" if mode == "two" else "idealized")
    took = time.perf_counter() - start
    found = verdicts(reports)
    paper, low = found["paper"], found["low bits"]
    on_paper = (f"EXCEEDS at {paper.claim.budget}: {_bound(paper, 'paper')}" if paper is not None else
                "holds (worst " + "; ".join(_bound(r, "paper") for r in reports) + ")")
    text = f"{case:20s} {mode:5s} exit {found['exit_status']}  {took:5.0f} s  on paper: {on_paper}"
    if mode == "two":
        text += ("  | low bits: " + (f"LEAK at {low.claim.budget}: {_bound(low, 'low bits')}" if low is not None
                                      else "hold"))
    low_seconds = sum(r.low_bits_seconds for r in reports)  # the precision stage's share of the time
    return text + (f"  [{sum(r.releases for r in reports)} releases, {len(reports)} claim(s)"
                   + (f", low bits {low_seconds:.1f} s" if mode == "two" else "") + "]")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=240.0, help="time budget per audit (dpcov audit's default)")
    parser.add_argument("--modes", default="two,paper", help="two: as executed, two verdicts; paper: idealized")
    parser.add_argument("--cases", default=None, help="comma-separated cases (default: every one)")
    parser.add_argument("--output", default=None, help="append the lines to this file")
    args = parser.parse_args(argv)
    cases = args.cases.split(",") if args.cases else list(float_cases.CORRECT + float_cases.MISTAKES)
    modes = args.modes.split(",")
    header = (f"# python scripts/audit_two_verdicts.py --seconds {args.seconds:g} --modes {args.modes}; "
              f"{time.strftime('%Y-%m-%d %H:%M:%S')}, {os.cpu_count()} cores")
    out = open(args.output, "a") if args.output else None
    print(header, flush=True)
    if out:
        out.write(header + "\n")
        out.flush()
    for mode in modes:
        for case in cases:
            if mode == "paper" and case in float_cases.CORRECT:
                continue  # on paper they hold: the question is the power on the mistakes
            text = audit_case(case, mode, args.seconds)
            print(text, flush=True)
            if out:
                out.write(text + "\n")
                out.flush()


if __name__ == "__main__":
    main()
