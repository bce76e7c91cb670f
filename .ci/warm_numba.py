"""Fill numba's cache before the test suite (.ci/run): the project's kernels compile on first use and are
cached beside their modules (mechanisms/__pycache__). On a clean clone that cache is empty, and every test
process, joblib worker and command that needs a kernel before another has written it compiles it again
(about 35 s of CPU for all of them). One process compiles them here, at the smoke scale of experiments that
use most of them: EMCov's samplers, the pure-DP lines, Amin et al.'s iterative samplers and G-k, the stable
mechanism, the private table pipeline, the thresholding lines and the hardened (exact-noise) Gaussian; then
the ones no smoke run reaches (Kent's sampler, the eigenvalue chain, the hardened SVT's discrete Laplace).
Measured on the 2-core machine: 50 s of CPU with the cache empty."""
import sys
import tempfile

import numpy as np

from dpcov.experiments.config import compose_experiment
from dpcov.experiments.runner import run_experiment
from dpcov.mechanisms import secular
from dpcov.mechanisms.bingham import log_acceptance, sample_bingham_eigen
from dpcov.mechanisms.emcov import sample_eigenvectors
from dpcov.mechanisms.noise import discrete_laplace

RUNS = [("experiment=synthetic_trace",), ("experiment=synthetic_trace", "numerics=hardened", "mechanisms=[gauss]"),
        ("experiment=pure_trace",), ("experiment=amin_fig1a",), ("experiment=amin_fig1b",),
        ("experiment=stable_mahalanobis",), ("experiment=table_private",), ("experiment=wangxu_sparsity",)]

with tempfile.TemporaryDirectory() as scratch:
    for i, args in enumerate(RUNS):
        run_experiment(compose_experiment([*args, "scale=smoke", "n_jobs=1", f"output_dir={scratch}/{i}"]))
# Kernels no smoke run reaches: Kent's sampler, the eigenbasis chain (mechanisms/secular.py, projection and KT)
# and the exact discrete Laplace of the hardened SVT (the estimators' default).
rng = np.random.default_rng(0)
C = np.diag([3.0, 2.0, 1.0, 0.5])
sample_bingham_eigen(np.array([0.0, 1.0, 2.0]), rng, 4)
for subtract in (None, np.diag(C)):
    sample_eigenvectors(C, np.full(4, 0.5), rng, method="eigenbasis", subtract=subtract)
discrete_laplace(3, 8, rng)
# Two that tests call on their own, with other argument types: the ACG bound over an array of t, the grouping of
# nearby poles.
log_acceptance(np.linspace(0.0, 1.0, 5), 3, 1.5)
secular._group_near_range(np.linspace(0.0, 1.0, 40), 0, 8)
print(f"numba's cache is filled ({len(RUNS)} smoke runs)", file=sys.stderr)
