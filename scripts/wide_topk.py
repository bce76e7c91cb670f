"""Wide data (issue 61): the top k of a noisy d x d matrix by LAPACK's syevr on an index range (what dpcov runs) against
ARPACK's eigsh, and the full eigh, on one thread; their eigenvalues and subspaces compared.

    python scripts/wide_topk.py            # d = 3000, k = 10: results/measurements/wide_topk.txt
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import scipy.linalg as sl
from scipy.sparse.linalg import eigsh
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, default=3000)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--write", default=str(ROOT / "results" / "measurements" / "wide_topk.txt"))
    args = parser.parse_args(argv)
    d, k = args.d, args.k
    rng = np.random.default_rng(0)
    noise = rng.standard_normal((d, d)) * 0.01
    X = rng.standard_normal((5000, d)) * np.arange(1, d + 1) ** -0.5
    S = X.T @ X / 5000 + (noise + noise.T) / 2  # a covariance plus symmetric noise: the top of its spectrum clustered
    with threadpool_limits(1):
        start = time.perf_counter()
        values, vectors = sl.eigh(S, subset_by_index=[d - k, d - 1], driver="evr")
        evr = time.perf_counter() - start
        start = time.perf_counter()
        values2, vectors2 = eigsh(S, k=k, which="LA", tol=0, v0=np.ones(d))
        arpack = time.perf_counter() - start
        start = time.perf_counter()
        np.linalg.eigh(S)
        full = time.perf_counter() - start
    gap = float(np.linalg.norm(vectors @ vectors.T - vectors2 @ vectors2.T, 2))
    lines = [f"# python scripts/wide_topk.py --d {d} --k {k} (one thread)",
             f"syevr, top {k}: {evr:.2f} s; eigsh (ARPACK, tol 0): {arpack:.2f} s; full eigh: {full:.2f} s",
             f"largest eigenvalue difference {np.abs(np.sort(values2) - values).max():.1e}, subspace distance {gap:.1e}, "
             f"top gaps {np.round(np.diff(values)[-5:], 5).tolist()}"]
    Path(args.write).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
