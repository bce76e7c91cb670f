"""Error metrics: name -> fn(estimate, truth) -> float, reported as column ``err_<name>``.

``truth`` is Sigma = X^T X / n unless the dataset supplies another target (e.g. Wang & Xu's
population covariance U).
"""
from __future__ import annotations

import numpy as np


def frobenius(estimate: np.ndarray, truth: np.ndarray) -> float:
    """||Sigma~ - Sigma||_F (Dong et al.)."""
    return float(np.linalg.norm(estimate - truth))


def relative_frobenius(estimate: np.ndarray, truth: np.ndarray) -> float:
    """||C^ - C||_F / ||C||_F = ||Sigma~ - Sigma||_F / ||Sigma||_F (Amin et al.)."""
    return float(np.linalg.norm(estimate - truth) / np.linalg.norm(truth))


def relative_spectral(estimate: np.ndarray, truth: np.ndarray) -> float:
    """||Sigma+ - U||_2 / ||U||_2 (Wang & Xu, l2)."""
    return float(np.linalg.norm(estimate - truth, 2) / np.linalg.norm(truth, 2))


def relative_l1(estimate: np.ndarray, truth: np.ndarray) -> float:
    """||Sigma+ - U||_1 / ||U||_1, the max absolute column sum (Wang & Xu, l1). For symmetric
    matrices it equals the l_inf norm (max absolute row sum); asserted."""
    diff = estimate - truth
    l1, linf = np.linalg.norm(diff, 1), np.linalg.norm(diff, np.inf)
    if not np.isclose(l1, linf, rtol=1e-9, atol=1e-12):
        raise ValueError(f"l1 ({l1:g}) != l_inf ({linf:g}): the estimate is not symmetric")
    return float(l1 / np.linalg.norm(truth, 1))


METRICS = {"fro": frobenius, "fro_rel": relative_frobenius, "l2": relative_spectral, "l1": relative_l1}


def check_metrics(names) -> None:
    unknown = sorted(set(names) - set(METRICS))
    if unknown:
        raise ValueError(f"unknown metric(s) {unknown}; known: {sorted(METRICS)}")
