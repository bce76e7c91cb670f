"""Error metrics: name -> fn(estimate, problem) -> float, reported as column ``err_<name>``."""
from __future__ import annotations

import numpy as np


def frobenius(estimate: np.ndarray, problem) -> float:
    """||Sigma~ - Sigma||_F (Dong et al.)."""
    return float(np.linalg.norm(estimate - problem.sigma))


def relative_frobenius(estimate: np.ndarray, problem) -> float:
    """||C^ - C||_F / ||C||_F = ||Sigma~ - Sigma||_F / ||Sigma||_F (Amin et al.)."""
    return float(np.linalg.norm(estimate - problem.sigma) / np.linalg.norm(problem.sigma))


METRICS = {"fro": frobenius, "fro_rel": relative_frobenius}


def check_metrics(names) -> None:
    unknown = sorted(set(names) - set(METRICS))
    if unknown:
        raise ValueError(f"unknown metric(s) {unknown}; known: {sorted(METRICS)}")
