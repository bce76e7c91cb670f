"""Predicted errors of registered mechanisms, for the theory overlays on the figures, the advisor and
``python -m experiments.theory results/<target> ...`` (measured / predicted per line).

    predicted_error(mechanism, params, metric="fro") -> float | None

Generic machinery only: what a mechanism's error is predicted to be is declared with the mechanism
(``Mechanism.predict`` in mechanisms/registry.py, or ``register_mechanism(..., predict=...)``; the
kinds and facts are explained in mechanisms/predictions.py). ``mechanism`` is a registry name or
plug-in path. ``params`` (plain numbers):

    n, d            rows and dimension (always needed)
    rho | eps [+ delta]
                    the privacy budget the line must satisfy, as in a grid point; it is converted
                    to the mechanism's own notion exactly as ``release`` does (budget_guaranteeing)
    radius          row-norm bound r (default 1)
    trace           tr(Sigma) of Sigma = X^T X / n
    eigenvalues     the eigenvalues of Sigma; trace and fro_sigma default to their sum / root sum
                    of squares
    fro_sigma       ||Sigma||_F (the relative metric fro_rel)

``metric``: "fro" = ||S~ - Sigma||_F, "fro_rel" = ||S~ - Sigma||_F / ||Sigma||_F (= Amin's
||C^ - C||_F / ||C||_F), "mahalanobis" = ||Sigma^-1/2 S~ Sigma^-1/2 - I||_F. The result is None when
the mechanism declares no prediction for that metric, or a quantity it needs is not in ``params``.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from dpcov.data.synthetic import zipf_norms
from dpcov.mechanisms.predictions import METRICS, Facts, Prediction
from dpcov.mechanisms.privacy import budget_guaranteeing
from dpcov.mechanisms.registry import get_mechanism

from .config import budget_from_params, load_yaml
from .instances import SPECTRUM_COLUMNS, SPECTRUM_FILE


def prediction_of(mechanism) -> Prediction | None:
    """The prediction ``mechanism`` declares (None: none, or an unknown name)."""
    try:
        return get_mechanism(mechanism).predict
    except ValueError:
        return None


def line_budget(mechanism: str, params: dict):
    """The budget ``mechanism`` runs at for a grid point's rho | eps [+ delta] (as release does)."""
    point = {k: params[k] for k in ("rho", "eps", "delta", "n") if k in params}
    return budget_guaranteeing(budget_from_params(point), get_mechanism(mechanism).notion)


def predicted_error(mechanism: str, params: dict, metric: str = "fro") -> float | None:
    """Predicted mean error of ``mechanism`` at ``params`` in ``metric`` (module docstring), or None."""
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
    for key in ("n", "d"):
        if key not in params:
            raise ValueError(f"params needs {key!r}, got {sorted(params)}")
    prediction = prediction_of(mechanism)
    if prediction is None:
        return None
    return prediction.value(Facts.from_params(params), line_budget(mechanism, params), metric)


def zipf_trace(n: int, N: int, s: float) -> float:
    """tr(Sigma) of Dong's synthetic data (data/synthetic.py): the mean squared row norm of the Zipf bins."""
    return float(np.mean(np.square(zipf_norms(int(n), int(N), s))))


# --- from the tidy results: a summary row (+ the data's spectrum) -> params ---------------------------


def read_spectra(directory) -> pd.DataFrame | None:
    path = Path(directory) / SPECTRUM_FILE
    return pd.read_csv(path) if path.exists() else None


def _matching_spectrum(row: dict, spectra: pd.DataFrame | None) -> dict | None:
    """The spectrum row with the same data parameters as ``row`` (eigenvalues parsed once per frame)."""
    if spectra is None or spectra.empty:
        return None
    keys = [c for c in spectra.columns if c not in SPECTRUM_COLUMNS]
    if not all(k in row for k in keys):
        return None
    if "_lookup" not in spectra.attrs:
        spectra.attrs["_lookup"] = {
            tuple(str(r[k]) for k in keys): {"rows": r["rows"], "dim": r["dim"],
                                             "eigenvalues": np.array(str(r["eigenvalues"]).split(), dtype=float)}
            for r in spectra.to_dict("records")}
    return spectra.attrs["_lookup"].get(tuple(str(row[k]) for k in keys))


def row_params(row: dict, spectra: pd.DataFrame | None = None, budget: dict | None = None) -> dict:
    """predicted_error's params for a summary.csv row: n, d and the budget from the row (``budget``:
    a variant's overrides, e.g. {"delta": 1e-16}), the eigenvalues and the true n, d from the
    matching spectrum row, the trace of Dong's synthetic data in closed form."""
    params = {k: row[k] for k in ("n", "d", "rho", "eps", "delta", "N", "s") if k in row and pd.notna(row[k])}
    params.update(budget or {})
    spectrum = _matching_spectrum(row, spectra)
    if spectrum is not None:
        params["n"], params["d"] = int(spectrum["rows"]), int(spectrum["dim"])
        params["eigenvalues"] = spectrum["eigenvalues"]
    elif row.get("dataset") == "synthetic_zipf" and {"n", "N", "s"} <= set(params):
        params["trace"] = zipf_trace(params["n"], params["N"], params["s"])
    for key in ("n", "d"):
        if key in params:
            params[key] = int(params[key])
    if isinstance(params.get("delta"), str) and params["delta"] != "1/n":
        params["delta"] = float(params["delta"])
    return params


# --- measured vs predicted -------------------------------------------------------------------------

def comparison(summary: pd.DataFrame, metric: str, variants: dict | None = None,
               spectra: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per summary row with a prediction: line, kind, measured mean, predicted, ratio."""
    rows = []
    for row in summary.to_dict("records"):
        spec = (variants or {}).get(row["mechanism"], {})
        mechanism = spec.get("mechanism", row["mechanism"])
        prediction = prediction_of(mechanism)
        if spec.get("options") or prediction is None or metric not in METRICS:
            continue
        predicted = predicted_error(mechanism, row_params(row, spectra, spec.get("budget")), metric)
        if predicted is None or not predicted > 0:
            continue
        measured = row[f"err_{metric}_mean"]
        rows.append({"line": row["label"], "kind": prediction.kind, "measured": measured,
                     "predicted": predicted, "ratio": measured / predicted, "point": row})
    return pd.DataFrame(rows)


def _report(directories: list[str]) -> None:
    """python -m experiments.theory results/dong2022/fig3c ...: measured / predicted per line."""
    for name in directories:
        directory = Path(name)
        summary = pd.read_csv(directory / "summary.csv")
        resolved = load_yaml(directory / "config.yaml")
        metric = resolved["metrics"][0]
        table = comparison(summary, metric, resolved.get("variants") or {}, read_spectra(directory))
        print(f"== {directory} ({metric})")
        for (line, kind), part in table.groupby(["line", "kind"], sort=False) if len(table) else []:
            print(f"  {line:28s} {kind:5s} measured/predicted: min {part.ratio.min():.3g}  "
                  f"median {part.ratio.median():.3g}  max {part.ratio.max():.3g}  ({len(part)} points)")


if __name__ == "__main__":
    _report(sys.argv[1:])
