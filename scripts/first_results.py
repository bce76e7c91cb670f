"""Time the README's first command as a new user sees it: seconds from the start until the first
progress line with finished runs, and until the end, with numba's on-disk cache empty (a fresh
install: NUMBA_CACHE_DIR points at a new empty directory) and warm (the same directory again).

    python scripts/first_results.py [--repeats 3] [ARGS...]   (default ARGS: experiment=synthetic_trace)
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FINISHED = re.compile(r"\] ([1-9]\d*)/\d+ mechanism runs")


def timed_run(args: list[str], cache: Path, out: Path) -> tuple[float, float]:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "DPCOV_PROGRESS_SECONDS": "0.2"}
    start = time.perf_counter()
    first = None
    with subprocess.Popen([sys.executable, "-m", "dpcov.cli", "run", *args, f"output_dir={out}"], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        for line in proc.stdout:
            if first is None and FINISHED.search(line):
                first = time.perf_counter() - start
    if proc.returncode:
        sys.exit(f"first_results: the run failed (exit {proc.returncode})")
    return first, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    known, rest = parser.parse_known_args()
    args = rest or ["experiment=synthetic_trace"]
    times = {"cold": [], "warm": []}
    for _ in range(known.repeats):
        with tempfile.TemporaryDirectory() as work:
            cache = Path(work) / "numba"
            for state in ("cold", "warm"):
                times[state].append(timed_run(args, cache, Path(work) / state))
    print(f"dpcov run {' '.join(args)}: seconds (min / median / max of {known.repeats})")
    for state, pairs in times.items():
        for what, values in (("first finished runs", [p[0] for p in pairs]), ("whole run", [p[1] for p in pairs])):
            print(f"  {state} numba cache, {what:19s}: {min(values):5.1f} / {statistics.median(values):5.1f} / "
                  f"{max(values):5.1f}")


if __name__ == "__main__":
    main()
