"""The precision-based attack (Haney et al. 2022; Mironov 2012) on the estimators' released mean, as a
new user would run it: PrivateCovariance(mechanism="zero", budget=PureDP(1), radius=1, centering="private",
mean_share=0.5) fitted on 3 rows of zeros (D) and on the same rows with one replaced by (1, 0) (D').
The event "location_[0] in (-1/8, 1/8) and not a multiple of 2^-55, location_ inside the unit ball" (a mean
released outside the ball is rescaled onto it, which scrambles its low bits on both sides) is counted on
each; a Clopper-Pearson
lower bound on eps at 95 % compares the two frequencies (both ways), against the claim eps = 1.

"default" runs the estimator as a new user gets it (no numerics= given: hardened since issue 48);
``--mechanism auto`` the default mechanism too (the covariance then spends the other half).

    python scripts/precision_attack.py [--fits 20000] [--numerics default idealized hardened] [--mechanism zero]
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # a checkout without the package installed

import dpcov  # noqa: E402

WINDOW, BITS = 1 / 8, 55


def event(location: np.ndarray) -> bool:
    """The first coordinate inside the window and not an exact multiple of 2^-BITS; not rescaled."""
    value = float(location[0])
    return abs(value) < WINDOW and not (value * 2.0**BITS).is_integer() and np.linalg.norm(location) < 1 - 1e-9


def eps_lower_bound(k1: int, k2: int, n: int, alpha: float = 0.05) -> float:
    """A one-sided (1 - alpha) lower bound on eps from k1 of n events on one side and k2 of n on the other:
    Clopper-Pearson bounds at alpha/2 each, log(lower(p1) / upper(p2))."""
    if k1 == 0:
        return 0.0
    low = stats.beta.ppf(alpha / 2, k1, n - k1 + 1)
    high = stats.beta.ppf(1 - alpha / 2, k2 + 1, n - k2) if k2 < n else 1.0
    return max(0.0, math.log(low / high))


def count(rows: np.ndarray, fits: int, numerics: str, seed: int, mechanism: str = "zero") -> int:
    hits = 0
    chosen = {} if numerics == "default" else {"numerics": numerics}
    for i in range(fits):
        model = dpcov.PrivateCovariance(mechanism=mechanism, budget=dpcov.PureDP(1.0), radius=1.0, centering="private",
                                        mean_share=0.5, random_state=seed * 10**7 + i, **chosen)
        hits += event(model.fit(rows).location_)
    return hits


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fits", type=int, default=20000, help="fits per neighbouring dataset")
    parser.add_argument("--numerics", nargs="+", default=["default", "idealized", "hardened"])
    parser.add_argument("--mechanism", default="zero", help='"zero" (the issue\'s attack) or any other, e.g. "auto"')
    args = parser.parse_args(argv)
    D = np.zeros((3, 2))
    D2 = D.copy()
    D2[0] = (1.0, 0.0)
    print(f"mechanism={args.mechanism}")
    print(f"{'numerics':10s} {'fits':>6s} {'events on D':>12s} {'on D-prime':>11s} {'eps >= (95%)':>13s} "
          f"{'claim':>6s} {'seconds':>8s}")
    for numerics in args.numerics:
        start = time.perf_counter()
        k1, k2 = count(D, args.fits, numerics, 1, args.mechanism), count(D2, args.fits, numerics, 2, args.mechanism)
        bound = max(eps_lower_bound(k1, k2, args.fits), eps_lower_bound(k2, k1, args.fits))
        print(f"{numerics:10s} {args.fits:6d} {k1:12d} {k2:11d} {bound:13.2f} {1.0:6.1f} "
              f"{time.perf_counter() - start:8.1f}", flush=True)


if __name__ == "__main__":
    main()
