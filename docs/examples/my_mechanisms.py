"""An example plug-in mechanism (docs/api.md): GaussCov with its eigenvalues shrunk.

GaussCov (Dong et al. 2022 §3.1) releases Sigma + s W, with W ~ SGW(d) (iid N(0, 1) on and above
the diagonal) and s = r^2 / (sqrt(rho) n). The eigenvalues of s W fill [-2 s sqrt(d), 2 s sqrt(d)]
(semicircle law), so every eigenvalue of the release is pushed up or down by up to that much. This
mechanism subtracts ``shrink`` * 2 s sqrt(d) from every eigenvalue of GaussCov's release and keeps
its eigenvectors: a soft threshold that removes the noise bulk. It helps when Sigma has a few large
eigenvalues (small trace) and hurts when it has many moderate ones; it is an example, not a claim.

Privacy: the only use of the data is GaussCov's release, spent through the accountant; the
shrinkage uses only public quantities (n, d, r, rho), so it is post-processing: rho-zCDP.

Use it without editing the repository (this directory on PYTHONPATH):
    PYTHONPATH=docs/examples python run.py experiment=synthetic_trace 'mechanisms=[gauss,my_mechanisms:shrunk_gauss]'
"""
import math

import numpy as np

from mechanisms import ZCDP, Spectral, register_mechanism
from mechanisms.gaussian import gauss_noisy


@register_mechanism(notion=ZCDP, label="ShrunkGaussCov", name="shrunk_gauss")
def shrunk_gauss(problem, accountant, rng, *, shrink: float = 1.0):
    """GaussCov, then every eigenvalue lowered by shrink * 2 s sqrt(d) (s: GaussCov's noise scale)."""
    if isinstance(shrink, bool) or not isinstance(shrink, (int, float)) or not shrink >= 0:
        raise ValueError(f"shrink must be a number >= 0, got {shrink!r}")
    budget = accountant.total  # a ZCDP budget: the notion declared above
    noisy = gauss_noisy(problem.sigma, problem.radius, problem.n, budget, accountant, rng)
    scale = problem.radius**2 / (math.sqrt(budget.rho) * problem.n)
    values, vectors = np.linalg.eigh(noisy)
    return Spectral(np.maximum(values - shrink * 2 * scale * math.sqrt(problem.d), 0.0), vectors)
