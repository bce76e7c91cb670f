"""Hardened against idealized numerics on the same data and budget: GaussCov, SeparateCov and AdaptiveCov at
Dong et al.'s Figure 3(a) point (d = 200, n = 50000, rho = 0.1, N = 4) and LapCov, SeparateCov and AdaptiveCov
under pure DP at a point of Figure 8 (d = 200, n = 50000, eps = 0.8, N = 4), 50 trials each (the runner, numerics=idealized vs numerics=hardened); Welch's z of the
mean Frobenius errors, and the hardened noise's grid and inflation.

    python scripts/hardened_vs_idealized.py [--trials 50]
"""
from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # a checkout without the package installed

from dpcov.experiments.config import compose_experiment  # noqa: E402
from dpcov.experiments.runner import run_experiment  # noqa: E402

POINTS = [("Dong Fig. 3(a), zCDP", "synthetic_trace", mechanism) for mechanism in ("gauss", "separate", "adaptive")] + \
         [("Dong Fig. 8, pure DP", "pure_trace", mechanism) for mechanism in ("lap", "separate_lap", "adaptive_lap")]


def errors(experiment: str, mechanism: str, numerics: str, trials: int, out: Path) -> pd.Series:
    exp = compose_experiment([f"experiment={experiment}", "scale=paper", f"mechanisms=[{mechanism}]", "params.N=4",
                              "params.n=50000", f"trials={trials}", f"numerics={numerics}",
                              f"output_dir={out / f'{experiment}_{mechanism}_{numerics}'}"])
    return pd.read_csv(run_experiment(exp).results).err_fro


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=50)
    args = parser.parse_args(argv)
    print(f"{'point':24s} {'line':12s} {'idealized: mean (se)':>24s} {'hardened: mean (se)':>24s} {'z':>6s}")
    with tempfile.TemporaryDirectory() as scratch:
        for title, experiment, mechanism in POINTS:
            a = errors(experiment, mechanism, "idealized", args.trials, Path(scratch))
            b = errors(experiment, mechanism, "hardened", args.trials, Path(scratch))
            se_a, se_b = a.std() / math.sqrt(len(a)), b.std() / math.sqrt(len(b))
            z = (b.mean() - a.mean()) / math.sqrt(se_a**2 + se_b**2)
            print(f"{title:24s} {mechanism:12s} {a.mean():14.6g} ({se_a:.2g}) {b.mean():14.6g} ({se_b:.2g}) {z:6.2f}",
                  flush=True)


if __name__ == "__main__":
    main()
