"""The precision-based attack (Haney et al. 2022) on peers' float releases, in the peers' interpreter (it
imports neither dpcov nor this repository; make the interpreter as docs/head_to_head.md says):

    PEERS_PYTHON scripts/peers_precision_attack.py [--fits 20000]

Neighbours: three values in [0, 1], all 0 (D) against one replaced by 1 (D'), so the exact mean is 0
(dyadic) against 1/3 (not). Releases at eps = 1 of
  - diffprivlib.tools.mean(values, epsilon=1, bounds=(0, 1))   (float Laplace, Holohan & Braghin's sampler);
  - OpenDP's float Laplace mechanism (make_laplace on atom_domain(T=float), scale 1/3: eps = 1 for the
    mean's sensitivity 1/3), applied to the float mean;
  - OpenDP's float Gaussian mechanism (make_gaussian, the same domain; sigma 1/3: rho = 1/2).
The event: the release in (-1/8, 1/8) and not a multiple of 2^-55. A Clopper-Pearson lower bound on eps
(95 %, both orders) from the two counts.
"""
from __future__ import annotations

import argparse
import math
import time
import warnings

import numpy as np
from scipy import stats


def event(value: float) -> bool:
    return abs(value) < 1 / 8 and not (value * 2.0**55).is_integer()


def eps_lower_bound(k1: int, k2: int, n: int, alpha: float = 0.05) -> float:
    if k1 == 0:
        return 0.0
    low = stats.beta.ppf(alpha / 2, k1, n - k1 + 1)
    high = stats.beta.ppf(1 - alpha / 2, k2 + 1, n - k2) if k2 < n else 1.0
    return max(0.0, math.log(low / high))


def releases():
    import opendp.prelude as dp
    from diffprivlib.tools import mean as dpl_mean
    dp.enable_features("contrib")
    space = dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float)
    laplace = dp.m.make_laplace(*space, scale=1 / 3)
    gaussian = dp.m.make_gaussian(*space, scale=1 / 3)
    return {
        "diffprivlib tools.mean (Laplace, eps = 1)": lambda v: float(dpl_mean(np.array(v), epsilon=1.0, bounds=(0, 1))),
        "OpenDP make_laplace on a float (eps = 1)": lambda v: float(laplace(float(np.mean(v)))),
        "OpenDP make_gaussian on a float (rho = 0.5)": lambda v: float(gaussian(float(np.mean(v)))),
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fits", type=int, default=20000)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    D, D2 = [0.0, 0.0, 0.0], [1.0, 0.0, 0.0]
    print(f"{'release':46s} {'events on D':>11s} {'on D-prime':>10s} {'eps >= (95%)':>12s} {'claim':>5s} {'s':>5s}")
    for name, fn in releases().items():
        start = time.perf_counter()
        k1 = sum(event(fn(D)) for _ in range(args.fits))
        k2 = sum(event(fn(D2)) for _ in range(args.fits))
        bound = max(eps_lower_bound(k1, k2, args.fits), eps_lower_bound(k2, k1, args.fits))
        claim = "rho .5" if "gaussian" in name else "1"
        print(f"{name:46s} {k1:11d} {k2:10d} {bound:12.2f} {claim:>5s} {time.perf_counter() - start:5.0f}", flush=True)


if __name__ == "__main__":
    main()
