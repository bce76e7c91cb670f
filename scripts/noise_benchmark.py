"""Hardened noise, timed (mechanisms/noise.py): exact discrete Gaussian and Laplace draws per second on
one core at about 2^40 grid steps (PCG64 and ChaCha20), and PrivateCovariance's fit with
numerics="hardened" against "idealized" at d = 50, 200, 1000 (n = 20000, a private mean; GaussCov under zCDP,
and the default mechanism="auto", AdaptiveCov there, with its hardened sparse vector and trace steps), the two
fits alternating in one process, the median of --repeat rounds.

    python scripts/noise_benchmark.py [--repeat 3] [--dims 50 200 1000] [--mechanisms gauss auto]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # a checkout without the package installed

import dpcov  # noqa: E402
from dpcov.mechanisms import noise  # noqa: E402


def draws_per_second(sampler, scale, rng, size=10**6) -> float:
    sampler(scale, 1000, rng)  # compiled (or loaded from numba's cache) first
    start = time.perf_counter()
    sampler(scale, size, rng)
    return size / (time.perf_counter() - start)


def fit_seconds(X: np.ndarray, numerics: str, mechanism: str = "gauss") -> float:
    model = dpcov.PrivateCovariance(mechanism=mechanism, budget=dpcov.ZCDP(0.5), radius=1.0, clip=True,
                                    centering="private", numerics=numerics, random_state=0)
    start = time.perf_counter()
    model.fit(X)
    return time.perf_counter() - start


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dims", type=int, nargs="+", default=[50, 200, 1000])
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--mechanisms", nargs="+", default=["gauss", "auto"])
    parser.add_argument("--no-draws", action="store_true", help="time the fits only")
    args = parser.parse_args(argv)
    with threadpool_limits(limits=1):
        for name, rng in () if args.no_draws else (("PCG64", np.random.default_rng(0)),
                                                   ("ChaCha20", noise.secure_generator())):
            gauss = draws_per_second(noise.discrete_gaussian, 2.0**40, rng)
            lap = draws_per_second(noise.discrete_laplace, 2**40, rng)
            print(f"{name:9s} discrete Gaussian (sigma 2^40): {gauss / 1e6:.2f} M draws/s; "
                  f"discrete Laplace (t 2^40): {lap / 1e6:.2f} M draws/s (one core)", flush=True)
        print(f"\n{'mechanism':>9s} {'d':>5s} {'idealized (s)':>14s} {'hardened (s)':>13s} {'ratio':>6s}   (n = {args.n}, one BLAS thread, "
              f"median of {args.repeat} alternating rounds)")
        for mechanism in args.mechanisms:
            for d in args.dims:
                X = np.random.default_rng(d).normal(size=(args.n, d)) / (2 * np.sqrt(d))
                fit_seconds(X, "hardened", mechanism), fit_seconds(X, "idealized", mechanism)  # warm
                times = {"idealized": [], "hardened": []}
                for round_ in range(args.repeat):
                    for numerics in (("idealized", "hardened") if round_ % 2 == 0 else ("hardened", "idealized")):
                        times[numerics].append(fit_seconds(X, numerics, mechanism))
                ideal, hard = statistics.median(times["idealized"]), statistics.median(times["hardened"])
                print(f"{mechanism:>9s} {d:5d} {ideal:14.3f} {hard:13.3f} {hard / ideal:6.2f}", flush=True)


if __name__ == "__main__":
    main()
