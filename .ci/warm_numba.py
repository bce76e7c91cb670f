"""Fill numba's cache before the test suite (.ci/run): the project's kernels compile on first use and are
cached beside their modules (mechanisms/__pycache__). On a clean clone that cache is empty, and every test
process, joblib worker and command that needs a kernel before another has written it compiles it again
(about 35 s of CPU for all of them). One process compiles them here, at the smoke scale of experiments that
use them all: EMCov's samplers, the pure-DP lines, Amin et al.'s iterative samplers and G-k, the stable
mechanism, the private table pipeline, the thresholding lines and the hardened (exact-noise) Gaussian.
Measured on the 2-core machine: 40 s of CPU with the cache empty, 6 s once it is filled."""
import sys
import tempfile

from dpcov.experiments.config import compose_experiment
from dpcov.experiments.runner import run_experiment

RUNS = [("experiment=synthetic_trace",), ("experiment=synthetic_trace", "numerics=hardened", "mechanisms=[gauss]"),
        ("experiment=pure_trace",), ("experiment=amin_fig1a",), ("experiment=amin_fig1b",),
        ("experiment=stable_mahalanobis",), ("experiment=table_private",), ("experiment=wangxu_sparsity",)]

with tempfile.TemporaryDirectory() as scratch:
    for i, args in enumerate(RUNS):
        run_experiment(compose_experiment([*args, "scale=smoke", "n_jobs=1", f"output_dir={scratch}/{i}"]))
print(f"numba's cache is filled ({len(RUNS)} smoke runs)", file=sys.stderr)
