"""Error metrics, reported as column ``err_<name>``.

Matrix metrics: fn(estimate, truth) -> float; ``truth`` is Sigma = X^T X / n unless the dataset
supplies another target (e.g. Wang & Xu's population covariance U). Ridge metrics (Amin et al. §1.1):
fn(w_hat, w, task, sigma) -> float, where w_hat is the ridge model of the release (solved from the
estimate, or released directly by a regression mechanism) and w the non-private one.
"""
from __future__ import annotations

import math

import numpy as np

from dpcov.mechanisms.regression import RidgeRelease, RidgeTask


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


def mahalanobis(estimate: np.ndarray, truth: np.ndarray) -> float:
    """||Sigma^{-1/2} Sigma~ Sigma^{-1/2} - I||_F with Sigma = truth (lecture notes; affine invariant)."""
    values, vectors = np.linalg.eigh((truth + truth.T) / 2)
    if values[0] <= 0:
        raise ValueError(f"the Mahalanobis error needs a positive definite truth (smallest eigenvalue "
                         f"{values[0]:.3g})")
    root_inv = (vectors / np.sqrt(values)) @ vectors.T
    return float(np.linalg.norm(root_inv @ estimate @ root_inv - np.eye(len(truth))))


def excess_risk(w_hat: np.ndarray, w: np.ndarray, task: RidgeTask, sigma: np.ndarray) -> float:
    """J(w_hat) - J(w_alpha) >= 0: excess regularised empirical risk over the non-private model."""
    return task.objective(w_hat, sigma) - task.objective(w, sigma)


def weight_distance(w_hat: np.ndarray, w: np.ndarray, task: RidgeTask, sigma: np.ndarray) -> float:
    """||w_hat - w_alpha||_2 (the quantity of Amin et al.'s Lemma 1)."""
    return float(np.linalg.norm(w_hat - w))


MATRIX_METRICS = {"fro": frobenius, "fro_rel": relative_frobenius, "l2": relative_spectral, "l1": relative_l1,
                  "mahalanobis": mahalanobis}
RIDGE_METRICS = {"reg": excess_risk, "reg_w": weight_distance}
METRICS = {**MATRIX_METRICS, **RIDGE_METRICS}


def check_metrics(names) -> None:
    unknown = sorted(set(names) - set(METRICS))
    if unknown:
        raise ValueError(f"unknown metric(s) {unknown}; known: {sorted(METRICS)}")


def evaluate(metric: str, estimate, truth: np.ndarray, sigma: np.ndarray, task: RidgeTask | None) -> float:
    """``metric`` of a release: NaN where it does not apply (a matrix metric of a ridge model)."""
    if metric in MATRIX_METRICS:
        return math.nan if isinstance(estimate, RidgeRelease) else MATRIX_METRICS[metric](estimate, truth)
    if task is None:
        raise ValueError(f"metric {metric!r} needs a ridge task: a dataset with a regression target "
                         f"and ridge_alpha set in the config")
    w_hat = estimate.weights if isinstance(estimate, RidgeRelease) else task.weights(estimate)
    return RIDGE_METRICS[metric](w_hat, task.weights(sigma), task, sigma)
