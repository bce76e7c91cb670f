"""Runs peer libraries' private estimators for dpcov head-to-head, in the peers' own interpreter
(diffprivlib 0.6.6 pins scikit-learn <= 1.7.2, so the peers may live in a virtual environment of their
own). Imports neither dpcov nor anything of this repository.

    PEERS_PYTHON dpcov/commands/peer_calls.py JOB.npz      # prints one JSON line per finished trial

JOB.npz holds ``X`` (rows in the unit ball), optionally ``y``, and ``spec`` (JSON): {"method": ...,
"epsilon": ..., "k": ..., "trials": ..., "seed": ...}. Methods:
  diffprivlib_pca   diffprivlib.models.PCA(k, epsilon, data_norm=1, bounds=(-1, 1))  (centres privately)
  opendp_pca        opendp.extras.sklearn.decomposition.PCA(epsilon, row_norm=1, n_samples, n_features, k)
  diffprivlib_lr    diffprivlib.models.LinearRegression(epsilon, bounds_X=(-1, 1), bounds_y=(-1, 1))
  diffprivlib_bingham, opendp_bingham   draws of one eigenvector of spec["C"] at epsilon (sampler check)
"""
from __future__ import annotations

import json
import sys
import time
import warnings

import numpy as np


def _opendp():
    import opendp.prelude as dp

    dp.enable_features("contrib", "idealized-numerics", "honest-but-curious", "floating-point")
    return dp


def run(job) -> None:
    spec = json.loads(str(job["spec"]))
    method, eps, trials, seed = spec["method"], float(spec["epsilon"]), int(spec["trials"]), int(spec["seed"])
    X = job["X"] if "X" in job else None
    for trial in range(trials):
        start = time.perf_counter()
        out = {}
        if method == "diffprivlib_pca":
            from diffprivlib.models import PCA

            model = PCA(spec["k"], epsilon=eps, data_norm=1.0, bounds=(-1.0, 1.0), random_state=seed).fit(X)
            out["components"] = model.components_.tolist()
        elif method == "opendp_pca":
            _opendp()
            from opendp.extras.sklearn.decomposition import PCA

            model = PCA(epsilon=eps, row_norm=1.0, n_samples=len(X), n_features=X.shape[1], n_components=spec["k"])
            model.fit(X)
            out["components"] = np.asarray(model.components_).tolist()
        elif method == "diffprivlib_lr":
            from diffprivlib.models import LinearRegression

            model = LinearRegression(epsilon=eps, bounds_X=(-1.0, 1.0), bounds_y=(-1.0, 1.0),
                                     random_state=seed).fit(X, job["y"])
            out["coef"], out["intercept"] = np.ravel(model.coef_).tolist(), float(np.ravel(model.intercept_)[0])
        elif method == "diffprivlib_bingham":
            from diffprivlib.mechanisms import Bingham

            mech = Bingham(epsilon=eps, sensitivity=1.0, random_state=seed)
            C = np.asarray(spec["C"])
            out["draws"] = [mech.randomise(C).tolist() for _ in range(int(spec["draws"]))]
        elif method == "opendp_bingham":
            dp = _opendp()
            from opendp.extras.numpy import _sscp_domain
            from opendp.extras.sklearn._make_eigenvector import make_private_eigenvector

            C = np.asarray(spec["C"])
            meas = make_private_eigenvector(_sscp_domain(num_features=len(C), norm=1.0, p=2, T=float),
                                            dp.symmetric_distance(), eps)
            out["draws"] = [np.asarray(meas(C)).tolist() for _ in range(int(spec["draws"]))]
        else:
            raise ValueError(f"unknown method {method!r}")
        out.update(trial=trial, seconds=time.perf_counter() - start)
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    warnings.simplefilter("ignore")
    with np.load(sys.argv[1], allow_pickle=False) as job:
        run({k: job[k] for k in job.files})
