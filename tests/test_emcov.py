"""Iterative eigenvector sampling (Amin Alg. 1), KT, IT-U, AD and EMCov under zCDP."""
import math
import os

import numpy as np
import pytest
from pseudocode import REFERENCES, Z_LIMIT, forward_reference, max_z
from scipy.stats import ortho_group

from dpcov.mechanisms import CovProblem, PureDP, ZCDP, Accountant, release
from dpcov.mechanisms.emcov import amin_pure, emcov_zcdp, sample_eigenvectors
from dpcov.mechanisms.secular import compress_sorted, rank_one_update
from dpcov.mechanisms.spectral import Spectral


def unit_rows(n, d, seed, rank=None):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, rank or d)) @ rng.standard_normal((rank or d, d))
    return X / np.linalg.norm(X, axis=1, keepdims=True) * rng.uniform(0.3, 1, (n, 1))


def compressed_spectrum(mu, u):
    """Reference: eigenvalues of diag(mu) restricted to u's complement, by eigh."""
    from scipy.linalg import null_space
    P = null_space(u[None, :])
    return np.linalg.eigvalsh(P.T @ np.diag(mu) @ P)


@pytest.mark.parametrize("case", ["distinct", "repeated", "zero_u", "all_equal", "rank_deficient", "q2"])
def test_secular_compression_against_eigh(case):
    rng = np.random.default_rng(abs(hash(case)) % 2**32)
    q = 2 if case == "q2" else 60
    mu = np.sort(rng.exponential(1.0, q))
    u = rng.standard_normal(q)
    if case == "repeated":
        mu = np.sort(np.repeat(mu[: q // 3], 3))
    if case == "zero_u":
        u[::4] = 0.0
    if case == "all_equal":
        mu = np.full(q, 2.5)
    if case == "rank_deficient":
        mu[: q // 2] = 0.0
        mu = np.sort(mu)
    u /= np.linalg.norm(u)
    new_mu, W = compress_sorted(mu, u)
    assert W.shape == (q, q - 1) and np.all(np.diff(new_mu) >= 0)
    assert np.allclose(W.T @ W, np.eye(q - 1), atol=1e-12)
    assert np.abs(W.T @ u).max() < 1e-12
    assert np.allclose(W.T @ np.diag(mu) @ W, np.diag(new_mu), atol=1e-12)
    assert np.allclose(new_mu, compressed_spectrum(mu, u), atol=1e-12)
    assert np.all(new_mu >= mu[:-1] - 1e-12) and np.all(new_mu <= mu[1:] + 1e-12)  # interlacing


@pytest.mark.parametrize("scale", [2.0**-1000, 1e-250, 1e-9, 3.7, 1e250])
def test_secular_compression_is_scale_free(scale):
    """The secular solve pairs terms (one division per two poles): products of two pole distances
    and their squares. Scaling to |poles| < 1 first keeps them finite and normal at any scale, so
    W is the same and the eigenvalues scale exactly (to rounding) -- without the scaling, 1e250
    overflows and 1e-250 underflows."""
    rng = np.random.default_rng(31)
    q = 80
    mu = np.sort(rng.exponential(1.0, q))
    u = rng.standard_normal(q)
    u[::9] = 1e-13  # roots within ~1e-26 (relative) of their poles
    u /= np.linalg.norm(u)
    reference_mu, reference_W = compress_sorted(mu, u)
    new_mu, W = compress_sorted(mu * scale, u)
    assert np.all(np.isfinite(W)) and np.allclose(W, reference_W, atol=1e-13)
    assert np.allclose(new_mu / scale, reference_mu, rtol=1e-13, atol=0)
    assert np.allclose(W.T @ W, np.eye(q - 1), atol=1e-12)
    assert np.allclose(W.T @ np.diag(mu) @ W, np.diag(reference_mu), atol=1e-12)
    for rho in (2.5, -0.7):  # Kapralov-Talwar's rank-one update scales the same way
        reference_mu, reference_Wt = rank_one_update(mu, u, rho)
        new_mu, Wt = rank_one_update(mu * scale, u, rho * scale)
        assert np.allclose(Wt, reference_Wt, atol=1e-13)
        assert np.allclose(new_mu / scale, reference_mu, rtol=1e-13, atol=1e-300)


@pytest.mark.parametrize("spectrum", ["gamma", "zipf", "clustered"])
def test_secular_far_field_against_eigh(spectrum):
    """At q = 500 most poles enter the secular sums through far-field expansions (GROUP roots share
    FAR_TERMS Taylor coefficients): the eigenvalues must still match eigh, and the eigenvectors
    stay orthonormal eigenvectors, for the compression and for KT's rank-one update."""
    from dpcov.mechanisms import secular
    rng = np.random.default_rng(len(spectrum))
    q = 500
    if spectrum == "gamma":
        mu = rng.gamma(0.5, size=q) * 1000
    elif spectrum == "zipf":
        mu = 1e4 / np.arange(1, q + 1) ** 2.5 + rng.uniform(0, 1e-6, q)
    else:
        mu = np.repeat(rng.uniform(0, 10, q // 5), 5) + rng.uniform(0, 1e-9, q)
    mu = np.sort(mu)
    u = rng.standard_normal(q)
    u[::11] *= 1e-9  # roots hugging their poles
    u /= np.linalg.norm(u)
    scale = mu.max()
    far_groups = [secular._group_near_range(mu, first, min(first + secular.GROUP, q - 1))[1:] != (0, q)
                  for first in range(0, q - 1, secular.GROUP)]
    assert np.mean(far_groups) > 0.5  # most groups of roots take the far-field path
    new_mu, W = compress_sorted(mu, u)
    assert np.allclose(new_mu, compressed_spectrum(mu, u), rtol=0, atol=1e-12 * scale)
    assert np.allclose(W.T @ W, np.eye(q - 1), atol=1e-12)
    assert np.allclose(W.T @ np.diag(mu) @ W, np.diag(new_mu), rtol=0, atol=1e-12 * scale)
    for rho in (0.3 * scale, -2.0 * scale):  # (the direct sums give the same 3e-12 on "clustered")
        new_mu, Wt = rank_one_update(mu, u, rho)
        A = np.diag(mu) + rho * np.outer(u, u)
        norm = scale + abs(rho)
        assert np.allclose(new_mu, np.linalg.eigvalsh(A), rtol=0, atol=1e-11 * norm)
        assert np.allclose(Wt @ Wt.T, np.eye(q), atol=1e-12)
        assert np.allclose(Wt @ A @ Wt.T, np.diag(new_mu), rtol=0, atol=1e-11 * norm)


def test_compressions_match_the_pseudocode(monkeypatch):
    """Steps 2b-2c by Householder updates must leave C_i = P_i C P_i^T. With a sampler that always
    returns the top eigenvector of C_i, the thetas must be C's eigenvectors in descending order
    (for both the projection and the Kapralov-Talwar deflation with exact eigenvalues)."""
    import dpcov.mechanisms.emcov as emcov
    def top_eigenvector(lam, rng, size, max_proposals=None):  # lam = -eta * mu: argmin = top
        out = np.zeros((1, len(lam)))
        out[0, np.argmin(lam)] = 1.0
        return out, None

    monkeypatch.setattr(emcov, "sample_bingham_eigen", top_eigenvector)
    R = ortho_group.rvs(7, random_state=3)
    values = np.array([9.0, 7.0, 5.0, 3.0, 2.0, 1.0, 0.5])
    C = R @ np.diag(values) @ R.T
    for subtract in (None, values):
        for block in (None, 1, 2, 3):  # axis-aligned draws: Householder reflectors with tau = 0
            thetas = sample_eigenvectors(C, np.ones(7), np.random.default_rng(0), subtract=subtract,
                                         block=block, method="eigenbasis")
            assert np.allclose(np.abs(np.sum(thetas * R, axis=0)), 1.0, atol=1e-8)


def test_shared_eigh_is_the_one_each_release_computed():
    """CovProblem.unit_gram_eigh replaces the eigh of C = X^T X (unit ball) each release used to
    compute: the same numbers bit for bit, and read-only (shared by the trials)."""
    from dpcov.mechanisms.emcov import _check_unit_scale
    problem = CovProblem.from_rows(unit_rows(300, 9, 5) * 0.7, radius=0.8)
    C, _ = _check_unit_scale(problem)
    values, vectors = problem.unit_gram_eigh
    reference = np.linalg.eigh(C)
    assert np.array_equal(values, reference[0]) and np.array_equal(vectors, reference[1])
    assert problem.unit_gram_eigh[1] is vectors and not vectors.flags.writeable
    with pytest.raises(ValueError, match="eigen="):
        sample_eigenvectors(C, np.ones(9), np.random.default_rng(0), eigen=np.linalg.eigh(C[:5, :5]))


def test_compression_of_a_subnormal_spectrum_stays_finite():
    rng = np.random.default_rng(8)
    mu = np.sort(rng.exponential(1.0, 30)) * 1e-310
    u = rng.standard_normal(30)
    u /= np.linalg.norm(u)
    new_mu, W = compress_sorted(mu, u)
    assert np.all(np.isfinite(new_mu)) and np.all(np.isfinite(W))


@pytest.mark.parametrize("mechanism, budget", [("emcov", ZCDP(0.5)), ("itu", PureDP(1.0)),
                                               ("ad", PureDP(1.0)), ("kt", PureDP(1.0))])
def test_budget_spent_equals_budget_given_and_reproducible(mechanism, budget):
    problem = CovProblem.from_rows(unit_rows(500, 6, 1))
    est, acc = release(mechanism, problem, budget, np.random.default_rng(3))
    assert acc.fully_spent() and str(acc.spent) == str(budget)
    assert len(acc.ledger) == 1 + problem.d
    again, _ = release(mechanism, problem, budget, np.random.default_rng(3))
    other, _ = release(mechanism, problem, budget, np.random.default_rng(4))
    assert np.array_equal(est, again) and not np.allclose(est, other)
    assert np.allclose(est, est.T) and np.all(np.linalg.eigvalsh(est) >= -1e-12)


def test_projection_variants_release_orthonormal_eigenvectors():
    problem = CovProblem.from_rows(unit_rows(400, 8, 2))
    for fn, budget in [(emcov_zcdp, ZCDP(1.0)), (amin_pure, PureDP(1.0))]:
        out = fn(problem, Accountant(budget), np.random.default_rng(0))
        assert isinstance(out, Spectral)
        assert np.allclose(out.vectors.T @ out.vectors, np.eye(8), atol=1e-10)


def test_adaptive_split_follows_corollary_1():
    problem = CovProblem.from_rows(unit_rows(2000, 5, 3))
    acc = Accountant(PureDP(2.0))
    amin_pure(problem, acc, np.random.default_rng(0), split="adaptive")
    steps = np.array([b.eps for what, b in acc.ledger[1:]])
    assert acc.ledger[0][1] == PureDP(1.0) and math.isclose(steps.sum(), 1.0)
    assert steps[0] > steps[-1]  # more budget to larger (noisy) eigenvalues
    acc = Accountant(PureDP(2.0))
    amin_pure(problem, acc, np.random.default_rng(0), split="uniform")
    assert np.allclose([b.eps for _, b in acc.ledger[1:]], 1.0 / 5)


def test_eigenvalue_noise_calibration():
    """EMCov (zCDP): lambda(C) + N(0, 2/rho) with rho/2 spent (sensitivity sqrt 2);
    Amin (pure): lambda(C) + Lap(2/eps_0), eps_0 = eps/2."""
    problem = CovProblem.from_rows(unit_rows(300, 3, 5))
    truth = problem.eigenvalues * problem.n
    gauss = np.concatenate([emcov_zcdp(problem, Accountant(ZCDP(0.2)), np.random.default_rng(s)).values
                            * problem.n - truth for s in range(800)])
    assert abs(gauss.std() / math.sqrt(2 / 0.2) - 1) < 0.05
    lap = np.concatenate([amin_pure(problem, Accountant(PureDP(1.0)), np.random.default_rng(s)).values
                          * problem.n - truth for s in range(800)])
    assert abs(np.mean(np.abs(lap)) / (2 / 0.5) - 1) < 0.05  # E|Lap(b)| = b


@pytest.mark.parametrize("rows", [
    np.full((50, 1), 0.5),  # d = 1
    unit_rows(300, 6, 7, rank=2),  # rank-deficient C
    np.zeros((40, 4)),  # zero data
])
@pytest.mark.parametrize("mechanism", ["emcov", "ad", "kt"])
def test_degenerate_inputs(rows, mechanism):
    problem = CovProblem.from_rows(rows)
    budget = ZCDP(1.0) if mechanism == "emcov" else PureDP(1.0)
    est, acc = release(mechanism, problem, budget, np.random.default_rng(0))
    assert est.shape == (problem.d, problem.d) and np.all(np.isfinite(est)) and acc.fully_spent()


def test_accurate_when_the_budget_is_large():
    problem = CovProblem.from_rows(unit_rows(5000, 4, 8))
    for mechanism, budget in [("emcov", ZCDP(1e4)), ("ad", PureDP(200.0))]:
        est, _ = release(mechanism, problem, budget, np.random.default_rng(0))
        assert np.linalg.norm(est - problem.sigma) < 0.05 * np.linalg.norm(problem.sigma)


def test_radius_scaling():
    X = unit_rows(400, 3, 9)
    one = release("emcov", CovProblem.from_rows(X), ZCDP(0.5), np.random.default_rng(1))[0]
    two = release("emcov", CovProblem.from_rows(2 * X, radius=2.0), ZCDP(0.5), np.random.default_rng(1))[0]
    assert np.allclose(two, 4 * one)


@pytest.mark.parametrize("d, rank, block", [(12, None, None), (30, None, None), (30, 5, None),
                                            (12, None, 1), (12, None, 5), (30, None, 2), (30, None, 7),
                                            (61, None, 9)])
def test_backward_accumulation_matches_the_forward_basis_updates(d, rank, block):
    """The chain of draws on eigenvalues with theta's accumulated backwards (in blocks with a fresh
    eigenbasis between them) gives the same thetas (same seed, same order of draws) as updating
    the basis forwards step by step. (With repeated eigenvalues a fresh eigh may rotate within
    the eigenspace: see the distribution test below.)"""
    C = (lambda X: X.T @ X)(unit_rows(2000, d, 11, rank=rank))
    etas = np.linspace(0.5, 0.05, d)
    fast = sample_eigenvectors(C, etas, np.random.default_rng(5), block=block, method="eigenbasis")
    assert np.allclose(fast, forward_reference(C, etas, np.random.default_rng(5)), atol=1e-8)
    assert np.abs(fast.T @ fast - np.eye(d)).max() < 1e-12


def test_blocks_keep_the_distribution_with_repeated_eigenvalues():
    """A rank-2 C in d = 6 (a 4-fold zero eigenvalue): blocks of 1 and 2 steps re-diagonalise
    within the null space, so the thetas differ path by path; E[theta_i theta_i^T] for every step
    must agree with the forward basis updates' (stored: tests/pseudocode.py; 1310 releases have the
    power of 2500 against 2500 drawn anew)."""
    name = "forward: rank 2, d = 6"
    C, etas = REFERENCES[name].C, REFERENCES[name].etas
    for block in (1, 2):
        z = max_z(lambda rng: sample_eigenvectors(C, etas, rng, block=block), name, 1310, block)
        assert z < Z_LIMIT, (block, z)


@pytest.mark.slow
def test_thetas_orthonormal_at_d_800():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3000, 800)) * (1.0 / np.arange(1, 801)) ** 0.7
    C = X.T @ X
    C *= 50000 / np.trace(C)
    thetas = sample_eigenvectors(C, np.full(800, math.sqrt(0.1 / 800)), rng)
    assert np.abs(thetas.T @ thetas - np.eye(800)).max() < 1e-10


def test_rank_one_update_against_eigh():
    rng = np.random.default_rng(12)
    mu = np.sort(np.concatenate([rng.exponential(1.0, 40), np.zeros(10), np.full(5, 2.0)]))
    u = rng.standard_normal(55)
    u[::7] = 0.0
    u /= np.linalg.norm(u)
    for rho in (3.0, -2.0, -60.0, 1e-9):
        new_mu, Wt = rank_one_update(mu, u, rho)
        A = np.diag(mu) + rho * np.outer(u, u)
        assert np.allclose(Wt @ Wt.T, np.eye(55), atol=1e-12) and np.all(np.diff(new_mu) >= 0)
        assert np.allclose(Wt @ A @ Wt.T, np.diag(new_mu), atol=1e-12 * max(1, abs(rho)))
        assert np.allclose(new_mu, np.linalg.eigvalsh(A), atol=1e-12 * max(1, abs(rho)))


def forward_reference_kt(C, etas, subtract, rng):
    """KT as before the blocks: C_i's eigenbasis updated by every rank-one update."""
    from dpcov.mechanisms.bingham import sample_bingham_eigen
    mu, basis = np.linalg.eigh(C)
    thetas = []
    for i, eta in enumerate(etas):
        u = sample_bingham_eigen(-eta * mu, rng, 1)[0][0]
        thetas.append(basis @ u)
        if i < len(etas) - 1:
            mu, Wt = rank_one_update(mu, u, -subtract[i])
            basis = basis @ Wt.T
    return np.array(thetas).T


@pytest.mark.parametrize("d, block", [(12, None), (12, 1), (25, 4), (40, 7)])
def test_kapralov_talwar_blocks_match_the_forward_basis_updates(d, block):
    C = (lambda X: X.T @ X)(unit_rows(2000, d, 13))
    etas = np.linspace(0.5, 0.05, d)
    values = np.linalg.eigvalsh(C)[::-1] + np.random.default_rng(2).normal(0, 5, d)  # noisy, some < 0
    fast = sample_eigenvectors(C, etas, np.random.default_rng(5), subtract=values, block=block, method="eigenbasis")
    assert np.allclose(fast, forward_reference_kt(C, etas, values, np.random.default_rng(5)), atol=1e-8)


def test_kapralov_talwar_distribution_unchanged():
    """KT keeps C_i as an eigen-decomposition updated by secular equations: its basis differs from
    a fresh eigh's (signs), so the thetas are compared in distribution with the eigh-per-step
    pseudocode's (stored: tests/pseudocode.py): E[theta_i theta_i^T] for each step, z-scores."""
    name = "kt: d = 3"
    reference = REFERENCES[name]
    sampler = lambda rng: sample_eigenvectors(reference.C, reference.etas, rng, subtract=reference.subtract,  # noqa: E731
                                              block=1)
    assert max_z(sampler, name, 1600, 0) < Z_LIMIT


@pytest.mark.slow
def test_kernels_compiled_in_workers_give_the_same_bits(tmp_path):
    """With an empty numba cache, two worker processes compile the secular kernels (and write the
    cache) while a later in-process run loads them: the same seed must give the same numbers for
    any n_jobs. (It did not -- last bits of EMCov's errors -- until the fastmath helpers were inlined
    at numba-IR level, so no compile-time inlining choice changes a sum's order.)"""
    import subprocess
    import sys
    from pathlib import Path

    import pandas as pd

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba_cache")}
    common = ["experiment=synthetic_trace", "scale=smoke", "mechanisms=[emcov,kt]", "params.d=100",
              "params.n=3000", "sweep.N=[1,2]", "trials=6"]
    for jobs in (2, 1):
        subprocess.run([sys.executable, str(root / "run.py"), *common, f"n_jobs={jobs}",
                        f"output_dir={tmp_path / str(jobs)}"], check=True, env=env, cwd=root,
                       stdout=subprocess.DEVNULL)
    key = ["mechanism", "trial", "N"]
    two, one = (pd.read_csv(tmp_path / str(jobs) / "results.csv").sort_values(key) for jobs in (2, 1))
    assert len(one) == 24 and np.array_equal(two.err_fro.values, one.err_fro.values)
