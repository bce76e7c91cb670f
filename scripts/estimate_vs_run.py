"""Check reproduce.py's time estimate target by target: estimate a target from nothing, then run it
from nothing, then the next one -- so both see the machine at the same speed (a shared machine's
speed drifts: Fig. 4 ran in 253 s and, 50 minutes later, in 318 s; results/measurements/
from_scratch.txt). Runs into a
scratch directory; results/ is only read (the figures' drawing time, as --status does).

    python scripts/estimate_vs_run.py [TARGET ...]   # default: every target, in --all's order

Each target: reproduce.progress (what --status --from-scratch prints for it); then numba's on-disk
cache of the kernels the estimate compiled is removed and complete_target runs it. The first
target's estimate includes the workers' start-up, as --status's does, and its run starts them
afresh (the estimate's executor measurement had started them); later targets re-use them, as --all
does. Prints a line per target and a table at the end (estimate / run, and whether within 15 %).
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from joblib.externals.loky import get_reusable_executor

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from dpcov.commands import reproduce  # noqa: E402

NUMBA_CACHE = ("*.nbi", "*.nbc")


def forget_compiled(root: Path = reproduce.ROOT) -> None:
    """Remove numba's cache files under the project (the run's workers compile from nothing)."""
    for pattern in NUMBA_CACHE:
        for path in root.glob(f"**/__pycache__/{pattern}"):
            if ".venv" not in path.parts:
                path.unlink()


def main() -> None:
    wanted = sys.argv[1:]
    targets = [t for t in reproduce.TARGETS if not wanted or t.name in wanted or t.out in wanted]
    scratch = Path(tempfile.mkdtemp(prefix="dpcov-estimate-vs-run-"))
    rows, started = [], False
    for target in targets:
        done, total, estimate = reproduce.progress(target, scratch, scratch)
        if done < total and not started:
            plan = reproduce.plan_target(target, -1, scratch, scratch)
            estimate += reproduce.executor_seconds(reproduce.missing_experiment(target, plan))["startup"]
            started = True
        if not rows:  # the run's workers start from nothing (later targets re-use them, as in --all)
            get_reusable_executor().shutdown(wait=True)
        forget_compiled()  # what the estimate compiled, the workers compile again (as in --all)
        began = time.perf_counter()
        reproduce.complete_target(target, -1, scratch, scratch)
        took = time.perf_counter() - began
        rows.append((target.out, estimate, took))
        print(f"=== {target.out}: estimated {estimate:.1f} s, ran {took:.1f} s ({estimate / took:.2f})", flush=True)
    print(f"\n{'target':30s} {'run (s)':>8s} {'estimate':>9s} {'est/run':>8s}")
    for out, estimate, took in rows:
        mark = "" if abs(estimate / took - 1) <= 0.15 else "outside 15 %"
        print(f"{out:30s} {took:8.1f} {estimate:9.1f} {estimate / took:8.2f}  {mark}")
    ran, estimated = sum(r[2] for r in rows), sum(r[1] for r in rows)
    within = sum(abs(e / t - 1) <= 0.15 for _, e, t in rows)
    print(f"{'sum of targets':30s} {ran:8.1f} {estimated:9.1f} {estimated / ran:8.2f}  "
          f"({ran / 60:.1f} and {estimated / 60:.1f} min); within 15 %: {within} of {len(rows)}")


if __name__ == "__main__":
    main()
