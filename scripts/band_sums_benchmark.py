"""The estimators' band sums of an array: the one-call pass every input kind now takes (estimators._band_sums) against
the path arrays took before issue 58 (clip_rows, then BandSums.add's BLAS products per band), on the same rows,
clipped at r = 1; best of 3 after a warm-up, BLAS at one thread.

    python scripts/band_sums_benchmark.py
"""
from __future__ import annotations

import time

import numpy as np
from threadpoolctl import threadpool_limits

from dpcov.estimators import _band_sums
from dpcov.mechanisms.problem import BandSums, clip_rows

SIZES = ((200_000, 200), (1_000_000, 20), (20_000, 50))


def add_path(X: np.ndarray, clip: float, radius: float) -> BandSums:
    return BandSums(radius).add(clip_rows(X, clip)[0])


def best(fn, *args) -> float:
    fn(*args)
    times = []
    for _ in range(3):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    rng = np.random.default_rng(0)
    with threadpool_limits(limits=1):
        for n, d in SIZES:
            X = rng.standard_normal((n, d))
            X /= 1.1 * np.linalg.norm(X, axis=1).max()
            one, old = best(_band_sums, X, 1.0, None, 1.0), best(add_path, X, 1.0, 1.0)
            same = _band_sums(X, 1.0, None, 1.0).counts == add_path(X, 1.0, 1.0).counts
            print(f"n = {n:>9}, d = {d:>3}: one-call pass {one:.3f} s, clip_rows + add {old:.3f} s "
                  f"({old / one:.1f}x), the same band counts: {same}")


if __name__ == "__main__":
    main()
