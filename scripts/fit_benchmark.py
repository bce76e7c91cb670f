"""The estimators on a table file (issue 39): dpcov.PrivatePCA(2).fit(path) over a Parquet file of --rows x 20
columns (generated as scripts/stream_benchmark.py does), next to dataset=table's one pass over it:

  stream       data/table.py table_data (scripts/stream_benchmark.py's task);
  fit_public   PrivatePCA(2, radius=1.0, clip=True, centering="assume_centered"): a check for rows outside the
               radius, then the covariance pass;
  fit_private  PrivatePCA(2, radius="private", centering="private"): the norms' histogram, the clipped sum, the
               covariance pass;

each in a fresh process, its clock after the process's imports (scikit-learn's among them), in --repeat rounds
of alternating order.

    python scripts/fit_benchmark.py --rows 10000000 --file /tmp/ten.parquet --repeat 3
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pyarrow.parquet as pq  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

import dpcov  # noqa: E402
from scripts.stream_benchmark import peak_mb, prepared, rounds, start_up  # noqa: E402

DECLARED = {"fit_public": dict(radius=1.0, clip=True, centering="assume_centered"),
            "fit_private": dict(radius="private", centering="private")}


def child(task: str, path: str) -> dict:
    """One fit, in this (fresh) process."""
    begin = time.perf_counter()
    start_up(task)  # numba's start-up and the compiled pass's loading, as for the streamed statistics
    start = time.perf_counter()
    with threadpool_limits(limits=1):
        pca = dpcov.PrivatePCA(2, budget=dpcov.ZCDP(0.5), random_state=0, **DECLARED[task]).fit(path)
    seconds = time.perf_counter() - start
    return {"start_up": start - begin, "seconds": seconds, "rows": pq.ParquetFile(path).metadata.num_rows,
            "trace": float(pca.explained_variance_.sum()), "peak_mb": peak_mb()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--file", type=Path, default=Path("ten.parquet"))
    parser.add_argument("--tasks", default="stream,fit_public,fit_private")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    size = prepared(args.file, args.rows)
    rounds(args.tasks.split(","), args.file, size, args.repeat, scripts={task: __file__ for task in DECLARED})


if __name__ == "__main__":
    main()
