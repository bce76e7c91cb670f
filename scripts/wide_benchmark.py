"""Wide data (issue 61, a first measurement): seconds and peak memory of dpcov's estimators at d in the thousands,
against the floor of computing X^T X and one eigendecomposition, and scikit-learn's PCA (full and randomized), on one
BLAS thread, each fit in a fresh process (its peak resident memory is the process's). Rows: an embedding-like set
(a decaying spectrum, i^-1), in the unit ball.

    python scripts/wide_benchmark.py                       # d in {500, 1000, 2000}, n = 10^4: results/measurements/wide.txt
    python scripts/wide_benchmark.py --d 500 --n 2000      # a quick run
"""
from __future__ import annotations

import argparse
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

METHODS = ("XtX + eigh", "XtX alone", "sklearn PCA (full)", "sklearn PCA (randomized)",
           "PrivateCovariance default", "PrivateCovariance gauss", "PrivatePCA default", "PrivatePCA gauss")
K = 10  # components


def one(method: str, n: int, d: int) -> dict:
    """Runs in a fresh process: the rows, then one fit of ``method`` timed; the process's peak memory (MB)."""
    import resource
    import warnings

    import numpy as np
    from threadpoolctl import threadpool_limits
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, d)) * (np.arange(1, d + 1) ** -0.5)
    X /= np.linalg.norm(X, axis=1).max()
    from sklearn.decomposition import PCA

    common = dict(budget=dpcov.ZCDP(0.5), radius=1.0, centering="private", random_state=0,
                  mechanism="gauss" if method.endswith("gauss") else "auto")
    model = None
    if method.startswith("Private"):  # imports and compiled kernels loaded before the clock starts
        small = X[:500, :3] / 2
        (dpcov.PrivatePCA(1, **common) if "PCA" in method else dpcov.PrivateCovariance(**common)).fit(small)
    with threadpool_limits(limits=1):
        start = time.perf_counter()
        if method in ("XtX + eigh", "XtX alone"):
            gram = X.T @ X
            if method == "XtX + eigh":
                np.linalg.eigh(gram)
        elif method.startswith("sklearn"):
            PCA(K, svd_solver="full" if "full" in method else "randomized", random_state=0).fit(X)
        else:
            model = dpcov.PrivatePCA(K, **common) if "PCA" in method else dpcov.PrivateCovariance(**common)
            model.fit(X)
        seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux
    return {"method": method, "n": n, "d": d, "seconds": seconds, "peak_mb": peak,
            "chosen": getattr(model, "mechanism_", "")}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", default="500,1000,2000")
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--write", default=str(ROOT / "results" / "measurements" / "wide.txt"))
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a child's job (JSON)
    args = parser.parse_args(argv)
    if args.one:
        job = json.loads(args.one)
        print(json.dumps(one(job["method"], job["n"], job["d"])))
        return
    rows = []
    for d in [int(v) for v in args.d.split(",")]:
        for method in METHODS:
            done = subprocess.run([sys.executable, __file__, "--one", json.dumps({"method": method, "n": args.n,
                                                                                 "d": d})],
                                  capture_output=True, text=True, check=True)
            rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(rows[-1], flush=True)
    floor = {r["d"]: r["seconds"] for r in rows if r["method"] == "XtX + eigh"}
    lines = ["# Wide data, a first measurement (issue 61): python scripts/wide_benchmark.py --d " + args.d
             + f" --n {args.n}",
             f"# one BLAS thread, each fit in a fresh process; {platform.machine()}, python {platform.python_version()}; "
             "budget 0.5-zCDP, radius 1, centering='private', k = 10; the estimators at their defaults "
             "(add/remove, hardened)", "",
             f"{'d':>6} {'method':<28} {'seconds':>9} {'x (XtX + eigh)':>15} {'peak MB':>9}  chosen"]
    for r in rows:
        lines.append(f"{r['d']:>6} {r['method']:<28} {r['seconds']:>9.2f} {r['seconds'] / floor[r['d']]:>15.2f} "
                     f"{r['peak_mb']:>9.0f}  {r['chosen']}")
    Path(args.write).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
