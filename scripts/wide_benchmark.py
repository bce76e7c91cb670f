"""Wide data (issue 61): seconds and peak memory of dpcov's estimators at d in the thousands, against the floor of
computing X^T X and one eigendecomposition, and scikit-learn's PCA (full and randomized), on one BLAS thread, each
fit in a fresh process (its peak resident memory is the process's, the rows included). Rows: an embedding-like set
(a decaying spectrum, column i scaled by i^-1/2), in the unit ball. Every result is kept in a CSV as it lands: an
interrupted run resumes where it stopped (--fresh starts over).

    python scripts/wide_benchmark.py                                  # the issue's grid: results/measurements/wide.*
    python scripts/wide_benchmark.py --d 500 --n 2000 --out /tmp/w    # a quick run
    python scripts/wide_benchmark.py --dask                           # n = 10^6, d = 1000 on a local cluster
"""
from __future__ import annotations

import argparse
import csv
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import dpcov  # noqa: E402  (every child imports it: the same baseline memory for every method)
from dpcov.data.chunks import local_cluster  # noqa: E402
from dpcov.mechanisms import noise  # noqa: E402

METHODS = ("XtX + eigh", "XtX alone", "sklearn PCA (full)", "sklearn PCA (randomized)",
           "PrivateCovariance default", "PrivateCovariance gauss", "PrivatePCA default", "PrivatePCA gauss")
DASK_METHODS = ("XtX + eigh (Dask)", "PrivateCovariance default (Dask)", "PrivatePCA default (Dask)")
K = 10  # components
FULL_SVD_LIMIT = 4e11  # n d min(n, d) above which scikit-learn's full SVD is not run (~20 min on one core)
FIELDS = ("method", "n", "d", "seconds", "peak_mb", "fit_mb", "data_mb", "chosen", "note")


def _rows(n: int, d: int, block: int = 4096):
    """The rows, drawn and normed a block at a time (the draws of one call: the same stream), so the process's peak
    before the clock is the rows' own size and the fit's memory shows above it."""
    import numpy as np
    rng = np.random.default_rng(0)
    X = np.empty((n, d))
    scales = np.arange(1, d + 1) ** -0.5
    largest = 0.0
    for start in range(0, n, block):
        part = X[start:start + block]
        part[...] = rng.standard_normal(part.shape)
        part *= scales
        largest = max(largest, float(np.linalg.norm(part, axis=1).max()))
    X /= largest
    return X


def one(method: str, n: int, d: int) -> dict:
    """Runs in a fresh process: the rows, then one fit of ``method`` timed; the process's peak memory (MB)."""
    import resource
    import warnings

    import numpy as np
    from threadpoolctl import threadpool_limits
    warnings.simplefilter("ignore")
    dask_run = method.endswith("(Dask)")
    X = _dask_rows(n, d) if dask_run else _rows(n, d)
    common = dict(budget=dpcov.ZCDP(0.5), radius=1.0, centering="private", random_state=0,
                  mechanism="gauss" if method.endswith("gauss") else "auto", clip=dask_run)
    model = None
    if method.startswith("Private"):  # imports and compiled kernels loaded before the clock starts
        small = _rows(500, 12) / 2
        (dpcov.PrivatePCA(1, **common) if "PCA" in method else dpcov.PrivateCovariance(**common)).fit(small)
    cluster = client = None
    if dask_run:
        from distributed import Client, wait
        cluster = local_cluster(2)
        client = Client(cluster)
        X = client.persist(X)  # the rows held by the workers before the clock: each pass reads memory, not a draw
        wait(X)
    from sklearn.decomposition import PCA
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux: the rows, imports, warm-up
    with threadpool_limits(limits=1):
        start = time.perf_counter()
        if method.startswith("XtX"):
            gram = (X.T @ X).compute() if dask_run else X.T @ X
            if "eigh" in method:
                np.linalg.eigh(gram)
        elif method.startswith("sklearn"):
            PCA(K, svd_solver="full" if "full" in method else "randomized", random_state=0).fit(X)
        else:
            model = dpcov.PrivatePCA(K, **common) if "PCA" in method else dpcov.PrivateCovariance(**common)
            model.fit(X)
        seconds = time.perf_counter() - start
    if client is not None:
        client.close()
        cluster.close()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux
    return {"method": method, "n": n, "d": d, "seconds": round(seconds, 3), "peak_mb": round(peak),
            "fit_mb": round(max(peak - before, 0)),
            "data_mb": 0 if dask_run else round(X.nbytes / 2**20), "chosen": getattr(model, "mechanism_", ""),
            "note": "2 single-threaded workers, the rows in their memory" if dask_run else ""}


def _dask_rows(n: int, d: int):
    """n x d rows as a Dask array of 10 partitions, drawn on the workers (the spectrum of ``_rows``), scaled so nearly
    every row lies in the unit ball (the estimators clip the few that do not: clip=True)."""
    import dask.array as da
    import numpy as np
    X = da.random.RandomState(0).standard_normal((n, d), chunks=(max(1, n // 10), d))
    scales = np.arange(1, d + 1) ** -0.5
    return X * (scales / (1.5 * np.sqrt(np.sum(scales**2))))


def _noise_rates() -> str:
    """The exact samplers' rate on one core, over the upper triangle at d = 4000 (d (d + 1) / 2 = 8.0e6 draws)."""
    import numpy as np
    from threadpoolctl import threadpool_limits
    rng, size, lines = np.random.default_rng(0), 4000 * 4001 // 2, ["", "# the exact samplers, one core, d (d + 1) / 2 "
                                                                       "draws at d = 4000 (the upper triangle)"]
    noise.discrete_gaussian(10.0, 1000, rng), noise.discrete_laplace(10, 1000, rng)  # compiled before the clock
    with threadpool_limits(limits=1):
        for name, draw in (("discrete Gaussian, sigma 1e3 steps", lambda: noise.discrete_gaussian(1e3, size, rng)),
                           ("discrete Laplace, scale 1e3 steps", lambda: noise.discrete_laplace(1000, size, rng))):
            start = time.perf_counter()
            draw()
            seconds = time.perf_counter() - start
            lines.append(f"#   {name}: {seconds:.2f} s, {size / seconds / 1e6:.1f} M draws/s")
    return "\n".join(lines) + "\n"


def _load(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with path.open() as handle:
        return list(csv.DictReader(handle))


def _table(rows: list[dict], header: str) -> str:
    floor = {(r["n"], r["d"]): float(r["seconds"]) for r in rows if r["method"].startswith("XtX + eigh")}
    lines = [header, "", f"{'n':>8} {'d':>6} {'method':<34} {'seconds':>9} {'x (XtX + eigh)':>15} {'peak MB':>9} "
                         f"{'fit MB':>8} {'rows MB':>8}  chosen / note"]
    for r in rows:
        if r["seconds"] in ("", None):
            lines.append(f"{r['n']:>8} {r['d']:>6} {r['method']:<34} {'-':>9} {'-':>15} {'-':>9} {'-':>8} {'-':>8}  "
                         f"{r['note']}")
            continue
        ratio = float(r["seconds"]) / floor[(r["n"], r["d"])] if (r["n"], r["d"]) in floor else float("nan")
        lines.append(f"{r['n']:>8} {r['d']:>6} {r['method']:<34} {float(r['seconds']):>9.2f} {ratio:>15.2f} "
                     f"{r['peak_mb']:>9} {r['fit_mb']:>8} {r['data_mb']:>8}  "
                     f"{' '.join(v for v in (r['chosen'], r['note']) if v)}")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", default="500,1000,2000,4000,10000")
    parser.add_argument("--n", default="10000,100000")
    parser.add_argument("--max-rows-mb", type=float, default=4000, help="skip (n, d) whose rows exceed this (MB)")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--dask", action="store_true", help="the Dask run instead: n = 10^6, d = 1000")
    parser.add_argument("--out", default=str(ROOT / "results" / "measurements" / "wide"))
    parser.add_argument("--fresh", action="store_true", help="start over (else finished results are kept)")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a child's job (JSON)
    args = parser.parse_args(argv)
    if args.one:
        job = json.loads(args.one)
        print(json.dumps(one(job["method"], job["n"], job["d"])))
        return
    csv_path, txt_path = Path(args.out + ".csv"), Path(args.out + ".txt")
    rows = [] if args.fresh else _load(csv_path)
    done = {(r["method"], r["n"], r["d"]) for r in rows}
    if args.dask:
        grid = [(m, 1_000_000, 1000) for m in DASK_METHODS]
    else:
        grid = [(m, int(n), int(d)) for n in args.n.split(",") for d in args.d.split(",")
                for m in args.methods.split(",") if int(n) * int(d) * 8 / 2**20 <= args.max_rows_mb]
    csv_path.parent.mkdir(parents=True, exist_ok=True)
    for method, n, d in grid:
        if (method, str(n), str(d)) in done:
            continue
        if method == "sklearn PCA (full)" and n * d * min(n, d) > FULL_SVD_LIMIT:
            row = {"method": method, "n": n, "d": d, "seconds": "", "peak_mb": "", "fit_mb": "", "data_mb": "",
                   "chosen": "",
                   "note": f"not run: a full SVD of n d min(n, d) = {n * d * min(n, d):.1e} > {FULL_SVD_LIMIT:.0e}"}
        else:
            print(f"[wide] {method} at n = {n}, d = {d} ...", flush=True)
            child = subprocess.run([sys.executable, __file__, "--one", json.dumps({"method": method, "n": n, "d": d})],
                                   capture_output=True, text=True)
            if child.returncode != 0:
                raise SystemExit(f"{method} at n = {n}, d = {d} failed:\n{child.stderr[-3000:]}")
            row = json.loads(child.stdout.strip().splitlines()[-1])
        print(f"[wide] {row}", flush=True)
        rows.append({k: str(row[k]) for k in FIELDS})
        with csv_path.open("w", newline="") as handle:  # every result kept as it lands
            writer = csv.DictWriter(handle, FIELDS)
            writer.writeheader()
            writer.writerows(rows)
    header = (f"# Wide data (issue 61): python scripts/wide_benchmark.py (results/measurements/wide.csv)\n"
              f"# one BLAS thread per process, each fit in a fresh process; {platform.machine()}, python "
              f"{platform.python_version()}; budget 0.5-zCDP, radius 1, centering='private', k = {K}; the estimators "
              f"at their defaults (add/remove, hardened); peak MB: the process's resident peak, the rows included; fit MB: that "
              f"peak less the peak before the clock started (the rows, imports and a warm-up fit)")
    txt_path.write_text(_table(sorted(rows, key=lambda r: (int(r["n"]), int(r["d"]))), header) + _noise_rates())
    print(txt_path.read_text())


if __name__ == "__main__":
    main()
