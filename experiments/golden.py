"""Golden numbers: every registered mechanism's seeded output on one tiny dataset.

    python -m experiments.golden            compare with tests/golden/golden.csv (what the test does)
    python -m experiments.golden --update   rewrite it (explain the change in the commit message)

Any change that alters a mechanism's output -- its noise calibration, its random-number use, its
post-processing -- shows up here, so it is noticed and must be explained.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from dpcov.mechanisms.privacy import ApproxDP, PureDP, ZCDP
from dpcov.mechanisms.problem import CovProblem
from dpcov.mechanisms.regression import RidgeRelease, RidgeTask
from dpcov.mechanisms.registry import MECHANISMS, release

from .seeding import generator

GOLDEN = Path(__file__).resolve().parents[1] / "tests" / "golden" / "golden.csv"
BUDGETS = {ZCDP: ZCDP(0.5), PureDP: PureDP(1.0), ApproxDP: ApproxDP(1.0, 1e-5)}
RTOL = 1e-8
OPTIONS = {"clip_gauss": {"tau": 0.5}, "clip_separate": {"tau": 0.5}}  # required options


def golden_problem() -> CovProblem:
    """n = 400000 Gaussian rows in d = 4 (stable_gsampling needs n this large), scaled into the unit ball (raw rows kept for norm-free
    mechanisms, a ridge task for the regression ones)."""
    rng = generator(0, "golden", "data")
    X = rng.standard_normal((400_000, 4)) * np.array([1.0, 0.7, 0.4, 0.2])
    X /= np.linalg.norm(X, axis=1).max()
    return CovProblem.from_rows(X, radius=1.0, ridge=RidgeTask(3, 0.05), rows=X)


def output_values(estimate, d: int) -> np.ndarray:
    """The numbers a release is compared by: a ridge model's weights, or the matrix's upper triangle."""
    return estimate.weights if isinstance(estimate, RidgeRelease) else estimate[np.triu_indices(d)]


def golden_rows() -> pd.DataFrame:
    problem = golden_problem()
    rows = []
    for name, mechanism in sorted(MECHANISMS.items()):
        budget = BUDGETS[mechanism.notion]
        estimate, accountant = release(name, problem, budget, generator(0, "golden", name),
                                       options=OPTIONS.get(name))
        values = output_values(estimate, problem.d)
        rows.append({"mechanism": name, "budget": str(budget), "spent": str(accountant.spent or "nothing"),
                     **{f"v{i}": float(v) for i, v in enumerate(values)}})
    return pd.DataFrame(rows)


def differences(current: pd.DataFrame, stored: pd.DataFrame) -> list[str]:
    """Human-readable differences (empty when everything matches to RTOL)."""
    problems = []
    merged = stored.merge(current, on="mechanism", how="outer", suffixes=("_stored", "_now"), indicator=True)
    for _, row in merged.iterrows():
        name = row["mechanism"]
        if row["_merge"] != "both":
            problems.append(f"{name}: only in {'the golden file' if row['_merge'] == 'left_only' else 'the registry'}")
            continue
        for column in [c[:-7] for c in merged.columns if c.endswith("_stored")]:
            old, new = row[f"{column}_stored"], row[f"{column}_now"]
            if isinstance(old, str) or isinstance(new, str):
                same = old == new
            else:
                same = (pd.isna(old) and pd.isna(new)) or np.isclose(old, new, rtol=RTOL, atol=1e-14)
            if not same:
                problems.append(f"{name}.{column}: golden {old!r}, now {new!r}")
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--update", action="store_true", help=f"rewrite {GOLDEN}")
    args = parser.parse_args()
    current = golden_rows()
    if args.update:
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        current.to_csv(GOLDEN, index=False, float_format="%.17g")
        print(f"wrote {len(current)} mechanisms to {GOLDEN}")
        return
    problems = differences(current, pd.read_csv(GOLDEN))
    print("\n".join(problems) or f"all {len(current)} mechanisms match {GOLDEN}")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
