"""The estimators' forecast (dpcov/forecast.py) beside the measured error at every head-to-head cell (issue 55):
does the warning fire where the committed release was no better than the trivial one, and stay silent elsewhere?

    python scripts/forecast.py            # writes results/measurements/forecast.txt

For each cell of results/head_to_head/{pca,covariance,regression}.csv (dpcov's default, mechanism="auto", pure
eps, n public as measured there) one fit through the estimator at the cell's settings (replace_one, seed 0) gives
the forecast it computes before its covariance step (``forecast_``, and whether it warned); the measured side is
the committed trials' mean against the trivial release on the same data: the zero matrix's error ||Sigma||_F
(covariance), a random k-subspace's expected captured variance (k/d) tr(Sigma) / (top-k eigenvalues) (PCA), and
predicting y's mean, an MSE of Var(y), i.e. 1 / (1 - R^2_OLS) times least squares' (ridge).
"""
from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.linear_model import LinearRegression

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import dpcov  # noqa: E402
from dpcov.commands.head_to_head import COMPONENTS, DEFAULT, pca_data, regression_data  # noqa: E402
from dpcov.estimators import UselessReleaseWarning  # noqa: E402

OUT = ROOT / "results" / "measurements" / "forecast.txt"
COMMON = dict(radius=1.0, centering="private", random_state=0, privacy_unit="replace_one")


def fitted(task: str, X, y, k: int, eps: float):
    """(the estimator after one fit, whether it warned) at the cell's settings."""
    budget = dpcov.PureDP(eps)
    model = {"pca": lambda: dpcov.PrivatePCA(k, budget=budget, **COMMON),
             "covariance": lambda: dpcov.PrivateCovariance(budget=budget, **COMMON),
             "ridge": lambda: dpcov.PrivateRidge(budget=budget, **COMMON)}[task]()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UselessReleaseWarning)
        model.fit(X) if y is None else model.fit(X, y)
    return model, any(issubclass(w.category, UselessReleaseWarning) for w in caught)


def rows() -> list[dict]:
    out = []
    frames = {task: pd.read_csv(ROOT / "results" / "head_to_head" / f"{name}.csv")
              for task, name in (("pca", "pca"), ("covariance", "covariance"), ("ridge", "regression"))}
    for task, frame in frames.items():
        ours = frame[(frame.method == DEFAULT) & (frame.status == "ok")]
        for dataset, cells in ours.groupby("dataset", sort=False):
            if task == "ridge":
                X, y = regression_data(dataset)
                r2 = LinearRegression().fit(X, y).score(X, y)
                trivial, k = 1 / (1 - r2), 1  # the mean's MSE over least squares'
            else:
                X, y, k = pca_data(dataset), None, COMPONENTS.get(dataset, 1)
                sigma = np.cov(X.T, bias=True)
                values = np.sort(np.linalg.eigvalsh(sigma))[::-1]
                trivial = (k / len(values) * values.sum() / values[:k].sum() if task == "pca"
                           else float(np.linalg.norm(sigma)))
            for eps, cell in cells.groupby("eps"):
                measured = cell[{"pca": "captured", "covariance": "value", "ridge": "mse_ratio"}[task]].mean()
                # no better than the trivial: PCA within 10 % of a random subspace's captured variance
                # (the zero release's error is the trivial one's: equal to the last bits)
                useless = measured <= 1.1 * trivial if task == "pca" else measured >= trivial * (1 - 1e-9)
                model, warned = fitted(task, X, y, k, float(eps))
                f = model.forecast_
                out.append({"task": task, "dataset": dataset, "n": len(X), "d": X.shape[1] + (task == "ridge"),
                            "eps": eps, "chosen": model.mechanism_, "ratio": np.nan if f is None else f.ratio,
                            "limit": np.nan if f is None else f.limit, "warned": warned,
                            "measured": measured, "trivial": trivial, "useless": useless})
    return out


def main() -> None:
    table = pd.DataFrame(rows())
    agree = table.warned == table.useless
    lines = ["# The estimators' forecast beside the measured error at the head-to-head cells (issue 55):",
             "# python scripts/forecast.py; the measured side is results/head_to_head/*.csv (dpcov default, its trials)",
             "# ratio: predicted noise / largest signal the public facts allow; warned: UselessReleaseWarning at the fit;",
             "# useless: the committed release no better than the trivial one (PCA: captured <= 1.1 x a random",
             "# subspace's; covariance: error >= ||Sigma||_F; ridge: MSE >= the mean's)", ""]
    shown = table.assign(ratio=table.ratio.map(lambda v: f"{v:.3g}"), limit=table.limit.map(lambda v: f"{v:.3g}"),
                         measured=table.measured.map(lambda v: f"{v:.4g}"), trivial=table.trivial.map(lambda v: f"{v:.4g}"))
    lines.append(shown.to_string(index=False))
    lines += ["", f"agreement: {int(agree.sum())} of {len(table)} cells "
                  f"(missed: {int((~table.warned & table.useless).sum())} useless releases without a warning; "
                  f"false alarms: {int((table.warned & ~table.useless).sum())} warnings on useful releases)"]
    for task, part in table.groupby("task", sort=False):
        lines.append(f"  {task}: {int((part.warned == part.useless).sum())} of {len(part)}")
    OUT.write_text("\n".join(lines) + "\n")
    print("\n".join(lines[-4:]))


if __name__ == "__main__":
    main()
