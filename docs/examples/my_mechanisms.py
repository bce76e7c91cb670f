"""An example plug-in mechanism (docs/api.md): GaussCov with its eigenvalues shrunk.

GaussCov (Dong et al. 2022 §3.1) releases Sigma + s W, with W ~ SGW(d) (iid N(0, 1) on and above
the diagonal) and s = r^2 / (sqrt(rho) n). The eigenvalues of s W fill [-2 s sqrt(d), 2 s sqrt(d)]
(semicircle law), so every eigenvalue of the release is pushed up or down by up to that much. This
mechanism subtracts ``shrink`` * 2 s sqrt(d) from every eigenvalue of GaussCov's release and keeps
its eigenvectors: a soft threshold that removes the noise bulk. It helps when Sigma has a few large
eigenvalues (small trace) and hurts when it has many moderate ones; it is an example, not a claim.

Privacy: the only use of the data is GaussCov's release, spent through the accountant; the
shrinkage uses only public quantities (n, d, r, rho), so it is post-processing: rho-zCDP. GaussCov runs
with hardened numerics (a 2^k grid and exact discrete Gaussian noise, mechanisms/noise.py), so the
release is private as executed too, not only on paper. ``hardened_gauss`` below writes the same noise
with the noise API directly, as a plug-in author would for a statistic of their own.

Use it without editing the repository (this directory on PYTHONPATH):
    PYTHONPATH=docs/examples python run.py experiment=synthetic_trace 'mechanisms=[gauss,my_mechanisms:shrunk_gauss]'
"""
import math

import numpy as np

from dpcov.mechanisms import ZCDP, Prediction, Spectral, register_mechanism
from dpcov.mechanisms import noise
from dpcov.mechanisms.gaussian import covariance_float_error, gauss_noisy


def shrunk_gauss_error(facts, budget):
    """Declared prediction (a heuristic, at shrink = 1): the threshold t = 2 s sqrt(d) removes the
    noise bulk and costs each eigenvalue of Sigma up to t, so ||S~ - Sigma||_F ~ sqrt(sum_i min(lambda_i, t)^2).
    None without the eigenvalues (or a trace: then a flat spectrum is assumed)."""
    t = 2 * facts.r2 / (math.sqrt(budget.rho) * facts.n) * math.sqrt(facts.d)
    if facts.eigenvalues is not None:
        values = np.asarray(facts.eigenvalues)
    elif facts.trace is not None:
        values = np.full(facts.d, facts.trace / facts.d)
    else:
        return None
    return float(np.sqrt(np.sum(np.minimum(np.clip(values, 0, None), t) ** 2)))


@register_mechanism(notion=ZCDP, label="ShrunkGaussCov", name="shrunk_gauss", style=("#17becf", "X"),
                    predict=Prediction(shrunk_gauss_error, kind="declared",
                                       citation="soft threshold at the noise edge, a heuristic"))
def shrunk_gauss(problem, accountant, rng, *, shrink: float = 1.0):
    """GaussCov, then every eigenvalue lowered by shrink * 2 s sqrt(d) (s: GaussCov's noise scale)."""
    if isinstance(shrink, bool) or not isinstance(shrink, (int, float)) or not shrink >= 0:
        raise ValueError(f"shrink must be a number >= 0, got {shrink!r}")
    budget = accountant.total  # a ZCDP budget: the notion declared above
    noisy = gauss_noisy(problem.sigma, problem.radius, problem.n, budget, accountant, rng, numerics="hardened")
    scale = problem.radius**2 / (math.sqrt(budget.rho) * problem.n)
    values, vectors = np.linalg.eigh(noisy)
    return Spectral(np.maximum(values - shrink * 2 * scale * math.sqrt(problem.d), 0.0), vectors)


@register_mechanism(notion=ZCDP, label="GaussCov (hardened, by the noise API)", name="hardened_gauss")
def hardened_gauss(problem, accountant, rng):
    """GaussCov with dpcov.mechanisms.noise: Sigma's upper triangle (entries in [-r^2, r^2]) rounded to a 2^k
    grid plus exact discrete Gaussian noise; the l2-sensitivity sqrt(2) r^2 / n inflated by the rounding and
    by Sigma's float error (each entry a float sum of n products): rho-zCDP as executed."""
    budget = accountant.total
    r2, n = problem.radius**2, problem.n
    rows, cols = np.triu_indices(problem.d)
    released, how = noise.gaussian_release(
        problem.sigma[rows, cols], l2_sensitivity=math.sqrt(2) * r2 / n, rho=budget.rho, bound=r2,
        float_error=covariance_float_error(problem.radius, n, problem.d), rng=rng)
    accountant.spend(budget, f"noisy covariance ({how})")
    out = np.empty((problem.d, problem.d))
    out[rows, cols] = released
    out[cols, rows] = released
    return out
