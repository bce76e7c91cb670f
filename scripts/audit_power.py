"""The power table of the privacy audits (README "Privacy"): for every audit line (registered mechanism
or configured variant), the claim, the black-box lower bound, the white-box noise ratio, and which
under-noised copies (noise x 0.8, x 0.67, x 0.5) each audit catches.

    python scripts/audit_power.py [--T 4000] [--T-heavy 1000] [--calibration-T 1000] [--output FILE]
                                  [--lines gauss,separate]

Method and registry: tests/privacy/audit.py. Runs on one core; about 15 minutes with the defaults on a busy 2-core machine.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "privacy"))

import audit  # noqa: E402

HEAVY = {"emcov", "emcov_pure", "itu", "ad", "kt"}  # ~1 ms per release (exponential-mechanism steps)
STABLE_T = 200  # stable_gsampling: black-box catches nothing even at T = 4000 (its Δ is a worst case)


def _factors(caught: dict) -> str:
    hits = [f"×{c:g}" for c in audit.FACTORS if caught.get(c)]
    return ", ".join(hits) if hits else "none"


def power_row(line: audit.AuditLine, T: int, T_cal: int) -> tuple[str, dict]:
    factors = (1.0, *audit.FACTORS)
    boxes = {c: audit.black_box(line, T, c) for c in factors}
    calibrations = {c: audit.calibrate(line, T_cal, c) for c in factors}
    box_caught = {c: boxes[c].exceeded for c in factors}
    cal_caught = {c: any(r.caught for r in calibrations[c]) for c in factors}
    either = {c: box_caught[c] or cal_caught[c] for c in factors}
    first = boxes[1.0]
    what = "μ" if line.profile == "gaussian" else f"ε (δ={first.delta:.2g})"
    pair = line.pairs[0][0] + (f", n={line.pairs[0][1]}")
    if calibrations[1.0]:
        ratio = "; ".join(f"{r.part}: {r.ratio:.2f} ({r.low:.2f}–{r.high:.2f})" for r in calibrations[1.0])
    else:
        ratio = "— (no noise)" if line.mechanism == "zero" else "—"
    options = f" {line.options}" if line.options else ""
    flagged_true = box_caught[1.0] or cal_caught[1.0]
    name = f"{line.line} ({line.label})" if line.label else line.line
    row = (f"| {name} | `{line.mechanism}`{options} | {line.budget} | {what} ≥ {first.bound.value:.3f} "
           f"(claim {first.claim:.3f}; {pair}; T={T}) | {_factors(box_caught)} | {ratio} (T={T_cal}) | "
           f"{_factors(cal_caught)} | **{_factors(either)}**{' ⚠ flagged at ×1' if flagged_true else ''} |")
    return row, either


HEADER = ("| line | mechanism (options) | claimed | black-box lower bound at ×1 | black-box catches | "
          "white-box noise ratio at ×1 (95 % CI) | white-box catches | caught by the audits |\n"
          "|---|---|---|---|---|---|---|---|")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--T", type=int, default=4000, help="black-box runs per dataset")
    parser.add_argument("--T-heavy", type=int, default=1000, help="black-box runs for the ~1 ms mechanisms")
    parser.add_argument("--calibration-T", type=int, default=1000)
    parser.add_argument("--lines", default=None, help="comma-separated audit line names (default: all)")
    parser.add_argument("--output", default=None, help="write the markdown table here (default: stdout)")
    args = parser.parse_args(argv)
    lines = audit.audit_lines()
    if args.lines:
        lines = [audit.audit_line(name) for name in args.lines.split(",")]
    rows, missed = [], []
    for line in lines:
        start = time.perf_counter()
        T = STABLE_T if line.mechanism == "stable_gsampling" else args.T_heavy if line.mechanism in HEAVY else args.T
        row, caught = power_row(line, T, args.calibration_T)
        rows.append(row)
        if line.mechanism != "zero" and not caught[0.67]:
            missed.append(line.line)
        print(f"{line.line}: {time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)
    text = "\n".join([HEADER, *rows])
    text += (f"\n\nConfidence 95 % for every bound. Noise × c: the line run at the budget of its notion whose "
             f"canonical mechanism has noise × c (ρ/c², ε/c, or δ' of the analytic Gaussian with μ/c; "
             f"stable_gsampling: the δ' at which it draws ⌊m/c²⌋ samples). "
             f"Lines not caught at ×0.67: {', '.join(missed) if missed else 'none'}.\n")
    if args.output:
        Path(args.output).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
