"""The power table of the privacy audits (docs/privacy.md): for every audit line (registered mechanism
or configured variant), the claim, what the black-box search alone finds at x1 and which under-noised
copies it catches, the white-box noise ratio and the copies it catches.

    python scripts/audit_power.py [--seconds 30] [--factors 0.67] [--calibration-T 1000] [--output FILE]
                                  [--lines gauss,separate]

Black-box: audits.lines.search (pair search, learned attack, confirmation; audits/blackbox.py) with
``--seconds`` per line and copy, against the line's own claim. White-box: audits.lines.calibrate.
About 45 minutes with the defaults on the 2-core machine.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dpcov.audits import lines as audit  # noqa: E402

# Lines whose privacy analysis is known to be loose (docs/privacy.md, "What each guarantee covers"): Amin et al.'s
# steps are charged eps_i and spend eps_i / 2, so the whole release is (3/4) eps-DP; audited against that too.
TIGHT = {"ad": 0.75, "itu": 0.75, "kt": 0.75, "emcov_pure": 0.75}
WHITE_FACTORS = (0.8, 0.67, 0.5)


def _factors(caught: dict, factors) -> str:
    hits = [f"×{c:g}" for c in factors if caught.get(c)]
    return ", ".join(hits) if hits else "none"


def _bound_text(reports) -> str:
    report = max(reports, key=lambda r: (r.exceeded, r.worst.bound.value / r.claim.value if r.worst else 0))
    worst = report.worst
    if worst is None:
        return "—"
    return (f"{worst.claim.symbol} ≥ {worst.bound.value:.3g} (claim {worst.claim.value:.3g}; "
            f"{worst.pair.split(':')[0]}; {report.releases} releases)")


def power_row(line: audit.AuditLine, seconds: float, black_factors, T_cal: int) -> tuple[str, dict]:
    boxes = {c: audit.search(line, c, seconds=seconds) for c in (1.0, *black_factors)}
    box_caught = {c: any(r.exceeded for r in boxes[c]) for c in boxes}
    calibrations = {c: audit.calibrate(line, T_cal, c) for c in (1.0, *WHITE_FACTORS)}
    cal_caught = {c: any(r.caught for r in calibrations[c]) for c in calibrations}
    if calibrations[1.0]:
        ratio = "; ".join(f"{r.part}: {r.ratio:.2f} ({r.low:.2f}–{r.high:.2f})" for r in calibrations[1.0])
    else:
        ratio = "— (no noise)" if line.mechanism == "zero" else "—"
    tight = TIGHT.get(line.mechanism)
    first = boxes[1.0]
    bound = _bound_text(first)
    if tight is not None and first and first[0].worst is not None:
        over = first[0].worst.bound.value > tight * first[0].claim.value
        bound += f"; tight claim {tight * first[0].claim.value:.3g}: {'exceeded' if over else 'not exceeded'}"
    options = f" {line.options}" if line.options else ""
    name = f"{line.line} ({line.label})" if line.label else line.line
    flagged = box_caught[1.0] or cal_caught[1.0]
    row = (f"| {name} | `{line.mechanism}`{options} | {line.budget} | {bound} | "
           f"{'**flagged**' if box_caught[1.0] else 'within'} | {_factors(box_caught, black_factors)} | "
           f"{ratio} (T={T_cal}) | {_factors(cal_caught, WHITE_FACTORS)} |{' ⚠ flagged at ×1' if flagged else ''}")
    return row, {"box": box_caught, "white": cal_caught}


HEADER = ("| line | mechanism (options) | claimed | black-box search at ×1: worst lower bound | black-box at ×1 | "
          "black-box catches | white-box noise ratio at ×1 (95 % CI) | white-box catches | |\n"
          "|---|---|---|---|---|---|---|---|---|")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="black-box search time per line and copy")
    parser.add_argument("--factors", default="0.67", help="under-noised copies for the black-box search")
    parser.add_argument("--calibration-T", type=int, default=1000)
    parser.add_argument("--lines", default=None, help="comma-separated audit line names (default: all)")
    parser.add_argument("--output", default=None, help="write the markdown table here (default: stdout)")
    args = parser.parse_args(argv)
    black_factors = tuple(float(c) for c in args.factors.split(",") if c)
    lines = audit.audit_lines()
    if args.lines:
        lines = [audit.audit_line(name) for name in args.lines.split(",")]
    rows, missed, unflagged = [], [], []
    for line in lines:
        start = time.perf_counter()
        row, caught = power_row(line, args.seconds, black_factors, args.calibration_T)
        rows.append(row)
        if line.as_published and not caught["box"][1.0]:
            unflagged.append(line.line)
        if not line.as_published and line.mechanism != "zero" and black_factors and not caught["box"][black_factors[0]]:
            missed.append(line.line)
        print(f"{line.line}: {time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)
    text = "\n".join([HEADER, *rows])
    text += (f"\n\nConfidence 95 % for every bound (the black-box search: over its whole search). Noise × c: the line "
             f"run at the budget of its notion whose canonical mechanism has noise × c (ρ/c², ε/c, or δ' of the "
             f"analytic Gaussian with μ/c; stable_gsampling: the δ' at which it draws ⌊m/c²⌋ samples). "
             f"Black-box search: {args.seconds:g} s per line and copy. "
             f"As-published lines the black-box search does not flag at ×1: {', '.join(unflagged) or 'none'}. "
             f"Lines whose ×{black_factors[0] if black_factors else '—'} copy it does not catch: "
             f"{', '.join(missed) or 'none'}.\n")
    if args.output:
        Path(args.output).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
