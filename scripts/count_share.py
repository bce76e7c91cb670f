"""The count's share under native add/remove (issue 59, item 3). With every row summed and divided by the released
count ñ, the count enters only as a divisor: Sigma~ = (S + noise) / ñ errs by the noise / ñ and by Sigma (n/ñ - 1).
This measures the default estimator's error (mechanism="auto", hardened, centering="private") across count_share
on sets from 178 to 50000 rows, and states what dividing by ñ costs from the count's calibration: its sd over n, the
relative error it puts on Sigma~ (``count sd / n`` at the default share).

    python scripts/count_share.py                 # writes results/measurements/count_share.txt
    python scripts/count_share.py --trials 5 --write /tmp/cs.txt
"""
from __future__ import annotations

import argparse
import math
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import dpcov  # noqa: E402
from dpcov.commands.head_to_head import pca_data, regression_data  # noqa: E402
from dpcov.measure import scenario_rows  # noqa: E402
from dpcov.mechanisms.units import COUNT_SHARE, count_noise  # noqa: E402


def count_sd(budget, share: float) -> float:
    """The sd of the count's noise (rows) at ``share`` of ``budget`` (units.count_noise)."""
    kind, scale = count_noise(budget.scaled(share))
    return math.sqrt(2) * scale if kind == "discrete Laplace" else scale

SHARES = (0.005, 0.01, 0.02, 0.05, 0.1)
BUDGETS = (dpcov.ZCDP(0.125), dpcov.ZCDP(0.5), dpcov.PureDP(1.0))


def datasets() -> dict[str, np.ndarray]:
    wine = pca_data("wine")
    airfoil_x, airfoil_y = regression_data("airfoil")
    adult = pca_data("adult")
    synthetic = scenario_rows(50000, 50, 1.0, 1.0, 0)
    return {"wine (178)": wine, "airfoil (1503)": np.column_stack([airfoil_x, airfoil_y]),
            "adult (48842)": adult, "synthetic (50000, d=50)": synthetic}


def one(X: np.ndarray, budget, share: float, seed: int) -> float:
    warnings.simplefilter("ignore")
    with threadpool_limits(limits=1):
        fit = dpcov.PrivateCovariance(budget=budget, radius=1.0, centering="private", count_share=share,
                                      random_state=seed).fit(X)
    return float(np.linalg.norm(fit.covariance_ - np.cov(X.T, bias=True)))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--write", default=str(ROOT / "results" / "measurements" / "count_share.txt"))
    args = parser.parse_args(argv)
    start = time.time()
    lines = [f"# count_share under native add/remove (issue 59, item 3): python scripts/count_share.py --trials "
             f"{args.trials}",
             f"# PrivateCovariance(budget, radius=1.0, centering='private'), auto, hardened; error ||Sigma~ - Sigma||_F,"
             f" mean over {args.trials} seeds, relative to the default share {COUNT_SHARE}",
             f"# {platform.machine()}, python {platform.python_version()}, numpy {np.__version__}", ""]
    header = f"{'data':26s} {'budget':10s} " + " ".join(f"{s:>8g}" for s in SHARES) + \
        "   best   err@default         count sd / n"
    lines.append(header)
    for name, X in datasets().items():
        for budget in BUDGETS:
            errors = {}
            for share in SHARES:
                values = Parallel(n_jobs=args.n_jobs)(delayed(one)(X, budget, share, seed)
                                                      for seed in range(args.trials))
                errors[share] = (float(np.mean(values)), float(np.std(values) / math.sqrt(len(values))))
            base = errors[COUNT_SHARE][0]
            best = min(errors, key=lambda s: errors[s][0])
            lines.append(f"{name:26s} {str(budget):10s} " + " ".join(f"{errors[s][0] / base:8.3f}" for s in SHARES)
                         + f"   {best:<6g} {base:.4g} (se {errors[COUNT_SHARE][1]:.2g})"
                         + f"   {count_sd(budget, COUNT_SHARE) / len(X):.2g}")
            print(lines[-1], flush=True)
    lines += ["", f"wall time {time.time() - start:.0f} s (n_jobs={args.n_jobs})"]
    Path(args.write).write_text("\n".join(lines) + "\n")
    print(f"wrote {args.write}")


if __name__ == "__main__":
    main()
