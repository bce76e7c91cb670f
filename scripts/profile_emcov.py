"""Where one EMCov-family release spends its time (Amin et al. Algorithm 1 as mechanisms/emcov.py runs
it), against the floor of what the algorithm must do, as multiples of one eigh of the same d.

    python scripts/profile_emcov.py [--d 200 800] [--mechanism itu] [--repeat 3]

One BLAS thread (as a worker runs it), C's eigh computed beforehand (shared by every release of a
problem, as in scripts/benchmark.py). Parts, from cProfile's own time per function (the best of
``--repeat`` releases). The projection (EMCov, AD, IT-U) by conditioned proposals (mechanisms/conditioned.py):
  kriged draws     _phase (_phase_subtract for KT): every draw, its proposals conditioned on the previous
                   thetas (numba)
  fresh bases      householder_compression / complement_basis: C compressed to the complement of a
                   phase's thetas, diagonalised afresh, and the new basis (when a phase ends)
  theta products   sample_projection_chain's (sample_subtract_chain's) own time: basis x the phase's
                   thetas (for KT also C_i between phases; its eigh counts as a fresh basis)
KT (and the projection with method="eigenbasis"), by the chain of C_i's eigenvalues:
  draws            sample_bingham_eigen: the d exponential-mechanism draws (Bingham, rejection sampling)
  secular chain    compress_values / sorted_values (rank_one_values for KT): the eigenvalues of C_(i+1)
  step vectors     compress_vectors (rank_one_vectors): W_i, C_(i+1)'s eigenvectors in C_i's basis
  block products   _accumulate_block: Y_i = [u_i | W_i Y_(i+1)], the block's thetas in C_s's basis
  block bases      _next_basis / _next_eigenbasis_kt: QR, the fresh eigh of C_e and the basis products
  the rest         everything else (Python, release, the eigenvalue noise, clamping)
The floor: one eigh (the fresh decomposition a release may not avoid), about d^3/3 flops of secular
chain and one d x d x d product (2 d^3 flops) at the GEMM rate measured here.
Writes nothing; results/measurements/emcov_profile.txt holds a committed run.
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dpcov.data.synthetic import synthetic_zipf  # noqa: E402
from dpcov.mechanisms import CovProblem, PureDP, ZCDP, release  # noqa: E402

PARTS = {
    "kriged draws": ("_phase", "_phase_subtract"),
    "fresh bases": ("householder_compression", "complement_basis"),
    "draws": ("sample_bingham_eigen",),
    "secular chain": ("compress_values", "sorted_values", "rank_one_values"),
    "step vectors": ("compress_vectors", "rank_one_vectors"),
    "block products": ("_accumulate_block",),
    "block bases": ("_next_basis", "_next_eigenbasis_kt", "_aligned"),
}


def seconds(fn, repeat: int) -> float:
    best = np.inf
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def profile(d: int, mechanism: str, repeat: int) -> str:
    X = synthetic_zipf(max(4 * d, 2000), d, 1, 3.0, np.random.default_rng(0))
    problem = CovProblem.from_rows(X)
    _ = problem.unit_gram_eigh  # shared by every release of the problem
    budget = ZCDP(0.1) if mechanism == "emcov" else PureDP(1.0)
    A = problem.sigma + np.eye(d)
    B = np.random.default_rng(1).standard_normal((d, d))
    eigh = seconds(lambda: np.linalg.eigh(A), repeat)
    gemm = seconds(lambda: B @ B, repeat)
    release(mechanism, problem, budget, np.random.default_rng(0))  # warm-up (numba compiles once)
    plain = seconds(lambda: release(mechanism, problem, budget, np.random.default_rng(0)), repeat)
    best, stats = np.inf, None
    for k in range(repeat):
        profiler = cProfile.Profile()
        start = time.perf_counter()
        profiler.enable()
        release(mechanism, problem, budget, np.random.default_rng(k))
        profiler.disable()
        took = time.perf_counter() - start
        if took < best:
            best, stats = took, pstats.Stats(profiler)
    own = {}
    for (_, _, name), (_, _, tottime, cumtime, _) in stats.stats.items():
        own[name] = own.get(name, 0.0) + tottime
        own[f"cum:{name}"] = max(own.get(f"cum:{name}", 0.0), cumtime)
    parts = {}
    for part, names in PARTS.items():
        # a part's time: the cumulative time of its functions (they call only numpy/numba below them)
        parts[part] = sum(own.get(f"cum:{n}", 0.0) for n in names)
    parts["block products"] -= parts["step vectors"]  # _accumulate_block calls the step vectors
    if parts["block bases"]:  # the eigenbasis chain: _next_basis calls the fresh bases' functions
        parts["fresh bases"] = 0.0
    parts["theta products"] = own.get("sample_projection_chain", 0.0) + own.get("sample_subtract_chain", 0.0)
    # KT's fresh bases: the eigh of C_i that sample_subtract_chain calls between phases
    kt_bases = sum(cumtime for (_, _, name), (_, _, _, _, callers) in stats.stats.items() if name == "eigh"
                   for (_, _, caller), (_, _, _, cumtime) in callers.items() if caller == "sample_subtract_chain")
    parts["fresh bases"] += kt_bases
    parts = {part: value for part, value in parts.items() if value > 0}
    parts["the rest"] = best - sum(parts.values())
    floor = eigh + (d**3 / 3 + 2 * d**3) / (2 * d**3 / gemm)
    lines = [f"d = {d}, {mechanism}: one release {plain:.3f} s = {plain / eigh:.1f} x eigh ({eigh * 1e3:.1f} ms); "
             f"under the profiler {best:.3f} s (its per-call overhead inflates the Python-heavy parts); GEMM "
             f"{2 * d**3 / gemm / 1e9:.1f} GFLOP/s; the floor (eigh + d^3/3 + 2 d^3 flops at the GEMM rate) "
             f"{floor:.3f} s = {floor / eigh:.1f} x eigh",
             "  part (profiled)   seconds  share  x eigh"]
    for part, value in parts.items():
        lines.append(f"  {part:15s} {value:7.3f} s  {100 * value / best:5.1f} %  {value / eigh:5.1f} x eigh")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--d", type=int, nargs="+", default=[200, 800])
    parser.add_argument("--mechanism", default="itu", choices=["itu", "ad", "emcov", "emcov_pure", "kt"])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with threadpool_limits(limits=1):
        for d in args.d:
            print(profile(d, args.mechanism, args.repeat), flush=True)


if __name__ == "__main__":
    main()
