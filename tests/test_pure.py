"""Pure-DP mechanisms of Dong et al. Appendix I and the projection mechanism of Appendix E."""
import math

import numpy as np
import pytest
from scipy import stats

import dpcov.mechanisms.laplace as lap
from dpcov.data.synthetic import synthetic_zipf
from dpcov.mechanisms import Accountant, CovProblem, PureDP, ZCDP, release
from dpcov.mechanisms.gaussian import project_eigenvalues


def unit_rows(n, d, seed):
    X = np.random.default_rng(seed).standard_normal((n, d))
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def test_lapcov_noise_scale(monkeypatch):
    problem = CovProblem.from_rows(unit_rows(500, 6, 0))
    noise = np.stack([release("lap", problem, PureDP(0.8), np.random.default_rng(s), clamp=False)[0]
                      - problem.sigma for s in range(400)])
    upper = noise[:, *np.triu_indices(6)].ravel()
    scale = math.sqrt(2) * 6 / (0.8 * 500)
    assert stats.kstest(upper / scale, "laplace").pvalue > 1e-3
    assert np.allclose(noise, noise.transpose(0, 2, 1))


def test_separate_lap_eigenvalue_noise_scale():
    problem = CovProblem.from_rows(unit_rows(300, 3, 1))
    eps = 1.0
    noise = np.concatenate([lap.separate_lap_cov(problem, Accountant(PureDP(eps)), np.random.default_rng(s)).values
                            - problem.eigenvalues for s in range(600)])
    scale = 2 / (problem.n * eps / 2)  # l1 sensitivity 2/n at eps/2
    assert stats.kstest(noise / scale, "laplace").pvalue > 1e-3


def neighbours(rng, n, d):
    """Random and adversarial replace-one pairs of datasets in the unit ball."""
    X = unit_rows(n, d, int(rng.integers(1 << 30))) * rng.uniform(0, 1, (n, 1))
    pairs = []
    Y = X.copy(); Y[0] = -X[0] / np.linalg.norm(X[0])  # moved to the far side of the sphere
    pairs.append((X, Y))
    Y = X.copy(); Y[0] = 0.0  # removed to the origin
    pairs.append((X, Y))
    Y = X.copy(); Y[0] = np.ones(d) / math.sqrt(d)  # dense direction: the l1 worst case
    Z = X.copy(); Z[0] = -np.ones(d) / math.sqrt(d)
    pairs.append((Y, Z))
    Y = X.copy(); Y[0] = unit_rows(1, d, int(rng.integers(1 << 30)))[0]
    pairs.append((X, Y))
    return pairs


@pytest.mark.parametrize("seed", range(5))
def test_l1_sensitivities_hold_on_neighbours(seed):
    rng = np.random.default_rng(seed)
    n, d = 40, 5
    for X, Y in neighbours(rng, n, d):
        sx, sy = X.T @ X / n, Y.T @ Y / n
        iu = np.triu_indices(d)
        assert np.abs(sx - sy)[iu].sum() <= math.sqrt(2) * d / n + 1e-12  # Lemma 12
        assert np.linalg.norm(sx - sy) <= math.sqrt(2) / n + 1e-12  # l2 (Gaussian mechanisms)
        ex, ey = np.linalg.eigvalsh(sx), np.linalg.eigvalsh(sy)
        assert np.abs(ex - ey).sum() <= 2 / n + 1e-12  # Lemma 13
        assert np.linalg.norm(ex - ey) <= math.sqrt(2) / n + 1e-12  # Lemma 10


@pytest.mark.parametrize("mechanism, options, ledger", [
    ("lap", {}, [0.8]),
    ("separate_lap", {}, [0.4, 0.4]),
    # AdaptiveCov: (radius,) trace, SVT, then the final mechanism's total (one or two entries)
    ("adaptive_lap", {"radius": "known"}, [0.1, 0.2, 0.5]),
    ("adaptive_lap", {"radius": "private"}, [0.1, 0.1, 0.2, 0.4]),
])
def test_pure_budgets_spent_and_reproducible(mechanism, options, ledger):
    problem = CovProblem.from_rows(synthetic_zipf(3000, 10, 4, 3, np.random.default_rng(0)))
    est, acc = release(mechanism, problem, PureDP(0.8), np.random.default_rng(2), options=options)
    assert acc.fully_spent() and str(acc.spent) == "0.8-DP"
    spent = [b.eps for _, b in acc.ledger]
    if mechanism == "adaptive_lap":
        fixed = len(ledger) - 1
        spent = spent[:fixed] + [sum(spent[fixed:])]
    assert np.allclose(spent, ledger)
    again, _ = release(mechanism, problem, PureDP(0.8), np.random.default_rng(2), options=options)
    assert np.array_equal(est, again)


def test_zcdp_mechanisms_refuse_a_pure_budget_and_zero_meets_any():
    problem = CovProblem.from_rows(unit_rows(100, 3, 0))
    with pytest.raises(ValueError, match="cannot meet"):
        release("gauss", problem, PureDP(1.0), np.random.default_rng(0))
    for budget in (PureDP(1.0), ZCDP(0.1)):
        est, acc = release("zero", problem, budget, np.random.default_rng(0))
        assert not est.any() and acc.spent is None


def test_eigenvalue_projection_solves_the_projection_problem():
    rng = np.random.default_rng(0)
    for _ in range(200):
        v = rng.normal(0.2, 1.0, 6)
        u = project_eigenvalues(v, 1.0)
        assert np.all(u >= 0) and u.sum() <= 1 + 1e-12
        # Optimality: no feasible point among random ones is closer.
        cand = rng.dirichlet(np.ones(6), 300) * rng.uniform(0, 1, (300, 1))
        assert np.linalg.norm(u - v) <= np.linalg.norm(cand - v, axis=1).min() + 1e-12


def test_projection_never_increases_the_error():
    """Projecting onto a convex set containing Sigma moves GaussCov's output closer to Sigma."""
    problem = CovProblem.from_rows(synthetic_zipf(500, 20, 2, 3, np.random.default_rng(1)))
    for seed in range(20):
        raw, _ = release("gauss", problem, ZCDP(0.1), np.random.default_rng(seed), clamp=False)
        proj, acc = release("projection", problem, ZCDP(0.1), np.random.default_rng(seed), clamp=False)
        assert np.linalg.norm(proj - problem.sigma) <= np.linalg.norm(raw - problem.sigma) + 1e-12
        assert np.linalg.eigvalsh(proj).min() >= -1e-12 and np.trace(proj) <= 1 + 1e-9
        assert acc.fully_spent()
