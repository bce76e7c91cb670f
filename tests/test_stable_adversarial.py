"""Adversarial search for violations of the four properties of Alg 3 (docs/stable_privacy.md):

  (P1) score sensitivity   |d_hat(x) - d_hat(x')| <= 2                          (Lemma 4)
  (P2) completeness        every l(i) <= L0  =>  d_hat = 0 and w = 1            (Lemma 5)
  (P3) soundness           d_hat < k, w_i > 0  =>  l_w(i) <= B(k, L0) <= 20 L0  (Lemma 7)
  (P4) weight stability    d_hat(x), d_hat(x') < k  =>  ||w - w'||_1 <= 2 - 1/k  (Lemma 8),
                           and d_M(Sigma_w(x), Sigma_w(x')) <= the bound of Lemma 9

The search starts from borderline datasets (a bulk of low-leverage rows plus planted outliers: spread
out, duplicated, or collinear groups, with leverages around the thresholds e^{j/k} L0) and improves the
target quantity by random and greedy moves (rescale a planted row, jitter it, duplicate another one,
align it with another one, replace it); for P1/P4 the neighbour (row r replaced by y) is searched too.
Every candidate the search visits is checked, not only the best one.

Inside the proved regime (same n = 300, d = 3, k = 6 as tests/test_stable.py, L0 just under
``stable.proved_L0_limit(k)``) the search must find nothing. At the pre-issue-16 parameters (L0 =
default_L0(300, 3), where (C1) and (C2) fail) the same search finds a dataset with d_hat < k and
weighted leverage > 20 L0: it has power. The fast versions take seconds; ``-m slow`` runs larger ones.
"""
import math

import numpy as np
import pytest
import scipy.linalg
from threadpoolctl import threadpool_limits

from dpcov.mechanisms import stable
from dpcov.mechanisms.privacy import ApproxDP

N, D, K = 300, 3, 6
OLD_L0 = stable.default_L0(N, D)  # before issue 16: e^2 L0 = 0.42, far outside (C1) and (C2)
L0_IN = 0.95 * stable.proved_L0_limit(K)  # inside the proved regime


@pytest.fixture(autouse=True)
def one_blas_thread():
    with threadpool_limits(limits=1):  # tiny matrices: BLAS threads only cost time
        yield


# ---------------------------------------------------------------------------------------------------
# Borderline datasets and moves


def bulk(n, d, rng):
    """Rows on the sphere of radius sqrt(d): every leverage about d/n, below L0 in both regimes."""
    Z = rng.standard_normal((n, d))
    return Z / np.linalg.norm(Z, axis=1, keepdims=True) * math.sqrt(d)


def unit(rng, d):
    u = rng.standard_normal(d)
    return u / np.linalg.norm(u)


def planted_dataset(rng, L0, n=N, d=D, k=K):
    """Bulk rows plus q planted outliers (rows 0..q-1) of leverage ~ e^u L0, u in [-0.5, 2.5]: spread
    out, in duplicated pairs/triples, or collinear with different magnitudes; or a band of about k rows
    just above L0 (u in [0, 2/k]: removed at j = 0 only)."""
    X = bulk(n, d, rng)
    kind = rng.integers(4)
    q = int(rng.integers(1, k + 3)) if kind < 3 else int(rng.integers(k - 1, k + 4))
    scales = np.sqrt(n * L0 * np.exp(rng.uniform(-0.5, 2.5, q) if kind < 3 else rng.uniform(0, 2 / k, q)))
    kind = min(kind, 2 * int(rng.integers(2)))  # the band: spread out or collinear
    if kind == 0:  # spread
        directions = np.array([unit(rng, d) for _ in range(q)])
    elif kind == 1:  # duplicated groups: same direction and magnitude
        groups = rng.integers(0, max(1, q // 2), q)
        base = np.array([unit(rng, d) for _ in range(q)])
        directions, scales = base[groups], scales[groups]
    else:  # collinear
        directions = np.tile(unit(rng, d), (q, 1)) * rng.choice([-1, 1], (q, 1))
    X[:q] = directions * scales[:, None]
    return X, list(range(q))


DOMAIN = 1e150  # stay inside stable_release's domain (entries <= 2^500 ~ 3e150)


def move(row, others, rng):
    """One random perturbation of a free row (``others``: the other free rows, for duplicate/align),
    kept inside the mechanism's domain."""
    new = _move(row, others, rng)
    top = np.abs(new).max()
    return new * (DOMAIN / top) if top > DOMAIN else new


def _move(row, others, rng):
    kind = rng.integers(5 if len(others) else 3)
    norm = np.linalg.norm(row) or 1.0
    if kind == 0:
        return row * math.exp(rng.normal(0, 0.3))
    if kind == 1:
        return row + rng.normal(0, 0.3, len(row)) * norm / math.sqrt(len(row))
    if kind == 2:
        return unit(rng, len(row)) * norm * math.exp(rng.normal(0, 1))
    other = others[rng.integers(len(others))]
    if kind == 3:
        return other * math.exp(rng.normal(0, 0.05))  # a (near-)duplicate
    return norm * other / (np.linalg.norm(other) or 1.0)  # aligned with another row


def neighbour_row(X, r, free, rng):
    """Initial replacement of row r: far outlier (up to 1e150, the edge of the mechanism's domain, where
    floating point bites), duplicate, removed (zero row), scaled, fresh, aligned."""
    kind = rng.integers(6)
    other = X[free[rng.integers(len(free))]] if free else X[(r + 1) % len(X)]
    d = X.shape[1]
    far = 10 ** rng.uniform(1, 150) * unit(rng, d)
    return [far, other.copy(), np.zeros(d), X[r] * rng.uniform(0.5, 3),
            unit(rng, d) * math.sqrt(d), np.linalg.norm(X[r]) * other / (np.linalg.norm(other) or 1.0)][kind]


# ---------------------------------------------------------------------------------------------------
# The search


class Search:
    """Greedy hill climbing with random restarts. ``evaluate(state) -> (value, violation or None)`` is
    called on every candidate; the first violation is kept (with its state) and ends the search."""

    def __init__(self, evaluate, seed):
        self.evaluate, self.rng = evaluate, np.random.default_rng(seed)
        self.best, self.evaluations, self.violation = -math.inf, 0, None

    def _score(self, state):
        self.evaluations += 1
        value, violation = self.evaluate(state)
        if violation is not None and self.violation is None:
            self.violation = (violation, state)
        self.best = max(self.best, value)
        return value

    def run(self, start, perturb, restarts, steps):
        for _ in range(restarts):
            state = start(self.rng)
            value = self._score(state)
            for _ in range(steps):
                if self.violation is not None:
                    return self
                candidate = perturb(state, self.rng)
                new = self._score(candidate)
                if new >= value:  # ties move too: plateaus are common (integer scores, 1/k weights)
                    state, value = candidate, new
        return self


def single_start(L0):
    def start(rng):
        X, free = planted_dataset(rng, L0)
        return X, free
    return start


def single_perturb(state, rng):
    X, free = state
    X = X.copy()
    i = free[rng.integers(len(free))]
    X[i] = move(X[i], [X[j] for j in free if j != i], rng)
    return X, free


def pair_start(L0):
    def start(rng):
        X, free = planted_dataset(rng, L0)
        r = int(rng.choice(free)) if rng.random() < 0.7 else int(rng.integers(len(free), N))
        return X, free, r, neighbour_row(X, r, [j for j in free if j != r], rng)
    return start


def pair_perturb(state, rng):
    X, free, r, y = state
    rows = [X[j] for j in free if j != r] + [y]
    slot = rng.integers(len(rows))
    if slot == len(rows) - 1:  # move the neighbour's new row
        return X, free, r, move(y, rows[:-1], rng)
    X = X.copy()
    i = [j for j in free if j != r][slot]
    X[i] = move(X[i], [row for j, row in zip([j for j in free if j != r] + [None], rows) if j != i], rng)
    return X, free, r, y


def replaced(X, r, y):
    Y = X.copy()
    Y[r] = y
    return Y


# ---------------------------------------------------------------------------------------------------
# The four properties as search objectives


def soundness_objective(L0, k=K, bound=None):
    """Value: max weighted leverage / L0 over the support when d_hat < k; violation: above ``bound``."""
    bound = stable.soundness_bound(L0, k) / L0 if bound is None else bound

    def evaluate(state):
        X, _ = state
        result = stable.stable_covariance(X, L0, k)
        if result.d_hat >= k:
            return -1.0, None
        value = stable.weighted_leverages(X, result.w)[result.w > 0].max() / L0
        return value, (f"d_hat = {result.d_hat}, weighted leverage {value:.3g} L0 > {bound:.3g} L0"
                       if value > bound * (1 + 1e-9) else None)
    return evaluate


def completeness_objective(L0, k=K):
    """Datasets whose every leverage is <= L0 (the planted rows are shrunk onto the boundary); value:
    how many rows sit within 1% of L0; violation: d_hat != 0 or w != 1."""
    def evaluate(state):
        X, free = state
        X = X.copy()
        lev = stable.leverages(X)
        for _ in range(50):  # shrink offending rows until every leverage <= L0 (0.5% below, then exact)
            if lev.max() <= L0:
                break
            worst = int(np.argmax(lev))
            X[worst] *= math.sqrt(L0 / lev[worst]) * 0.995
            lev = stable.leverages(X)
        if lev.max() > L0:
            return -1.0, None
        result = stable.stable_covariance(X, L0, k)
        value = float((lev > 0.99 * L0).sum())
        bad = result.d_hat != 0 or not (result.w == 1).all()
        return value, (f"every leverage <= L0 but d_hat = {result.d_hat}, min w = {result.w.min()}"
                       if bad else None)
    return evaluate


def score_objective(L0, k=K, compare_full=True):
    """The score the PTR test uses (``stability_score``, early-stopped) on x and x'; violation: a gap
    above 2, or (``compare_full``) a difference from Alg 3's d_hat (``stable_covariance``)."""
    def evaluate(state):
        X, _, r, y = state
        Y = replaced(X, r, y)
        a, b = stable.stability_score(X, L0, k)[0], stable.stability_score(Y, L0, k)[0]
        gap = abs(a - b)
        # ties broken towards the middle of the score range, where the cap at k does not hide changes
        value = gap + 0.01 * min(a, k - a)
        full = (stable.stable_covariance(X, L0, k).d_hat, stable.stable_covariance(Y, L0, k).d_hat
                ) if compare_full else (a, b)
        if (a, b) != full:
            return value, f"early-stopped scores {a}, {b} but Alg 3 gives {full}"
        return value, (f"d_hat {a} -> {b}" if gap > 2 else None)
    return evaluate


def mahalanobis_bound(L0, n, d, k):
    """Lemma 9 with the proved soundness bound B (independent of the code's 20 L0 constant):
    ||E||_F <= a B + a' B / (1 - a' B), a + a' <= 3 - 1/k, a' <= 2 - 1/k; W' >= n - k + 1."""
    B = stable.soundness_bound(L0, k)
    mass, one_side = 3 - 1 / k, 2 - 1 / k
    if one_side * B >= 1:
        return math.inf
    E = (mass - one_side) * B + one_side * B / (1 - one_side * B)
    W = n - k + 1
    return (1 + one_side / W) * E + one_side * math.sqrt(d) / W


def weights_objective(L0, k=K, bound=None):
    """Value: ||w - w'||_1 when both scores are < k; violation: above 2 - 1/k, or d_M above Lemma 9."""
    bound = 2 - 1 / k if bound is None else bound
    dm_bound = mahalanobis_bound(L0, N, D, k)

    def evaluate(state):
        X, _, r, y = state
        Y = replaced(X, r, y)
        a, b = stable.stable_covariance(X, L0, k), stable.stable_covariance(Y, L0, k)
        if a.d_hat >= k or b.d_hat >= k:
            return -1.0 + 0.1 * (a.d_hat < k) + 0.1 * (b.d_hat < k), None
        value = float(np.abs(a.w - b.w).sum())
        dm = max(mahalanobis_weighted(X, a.w, Y, b.w), mahalanobis_weighted(Y, b.w, X, a.w))
        if value > bound + 1e-9:
            return value, f"||w - w'||_1 = {value:.4g} > {bound:.4g} (d_hat {a.d_hat}, {b.d_hat})"
        if dm > dm_bound:
            return value, f"d_M = {dm:.4g} > {dm_bound:.4g}"
        return value, None
    return evaluate


def mahalanobis_weighted(X, w, Y, v):
    """||S^{-1/2} (T - S) S^{-1/2}||_F for S = Sigma_w(X), T = Sigma_v(Y), from R factors of the weighted
    rows (no Gram matrix: rows up to 1e150 neither overflow nor swamp the rest). With S = R^T R / W and
    T = Q^T Q / V, the matrix is orthogonally similar to (W/V) Z Z^T - I, Z = R^{-T} Q^T."""
    R = np.linalg.qr(np.sqrt(w[w > 0])[:, None] * X[w > 0], mode="r")
    Q = np.linalg.qr(np.sqrt(v[v > 0])[:, None] * Y[v > 0], mode="r")
    Z = scipy.linalg.solve_triangular(R, Q.T, trans="T")
    return float(np.linalg.norm(w.sum() / v.sum() * Z @ Z.T - np.eye(len(Z))))


# ---------------------------------------------------------------------------------------------------
# Inside the proved regime: nothing found


def test_test_parameters_inside_and_outside_the_proved_regime():
    assert OLD_L0 > stable.proved_L0_limit(K) > L0_IN
    assert math.e**2 * OLD_L0 == pytest.approx(0.4168, abs=1e-3)  # the issue's 0.42 against ~0.15
    assert stable.soundness_bound(OLD_L0, K) == math.inf
    assert stable.soundness_bound(L0_IN, K) <= stable.SOUNDNESS_FACTOR * L0_IN


FAST, SLOW = (8, 80), (60, 300)  # (restarts, greedy steps)


def _run(evaluate, start, perturb, size, seed):
    restarts, steps = size
    return Search(evaluate, seed).run(start, perturb, restarts, steps)


def _assert_nothing_found(search):
    assert search.violation is None, search.violation[0]
    assert search.evaluations > 0


@pytest.mark.parametrize("size", [FAST, pytest.param(SLOW, marks=pytest.mark.slow)], ids=["fast", "slow"])
def test_score_sensitivity_adversarial(size):
    search = _run(score_objective(L0_IN), pair_start(L0_IN), pair_perturb, size, seed=1)
    _assert_nothing_found(search)
    assert search.best >= 1  # the search does move the score: it is not vacuous


@pytest.mark.parametrize("size", [FAST, pytest.param(SLOW, marks=pytest.mark.slow)], ids=["fast", "slow"])
def test_completeness_adversarial(size):
    search = _run(completeness_objective(L0_IN), single_start(L0_IN), single_perturb, size, seed=2)
    _assert_nothing_found(search)
    assert search.best >= 1  # some dataset had a row right at the boundary L0


@pytest.mark.parametrize("size", [FAST, pytest.param(SLOW, marks=pytest.mark.slow)], ids=["fast", "slow"])
def test_soundness_adversarial(size):
    search = _run(soundness_objective(L0_IN), single_start(L0_IN), single_perturb, size, seed=3)
    _assert_nothing_found(search)
    assert search.best > math.e * 1.0  # points outside S_{k+1} were found (leverage above e^{(k+1)/k} L0)


@pytest.mark.parametrize("size", [FAST, pytest.param(SLOW, marks=pytest.mark.slow)], ids=["fast", "slow"])
def test_weight_stability_adversarial(size):
    search = _run(weights_objective(L0_IN), pair_start(L0_IN), pair_perturb, size, seed=4)
    _assert_nothing_found(search)
    assert search.best >= 1  # the replaced row itself, at least, changed weight


# ---------------------------------------------------------------------------------------------------
# Outside it: the same search finds the violation (power)


@pytest.mark.parametrize("size", [FAST, pytest.param(SLOW, marks=pytest.mark.slow)], ids=["fast", "slow"])
def test_search_finds_the_soundness_violation_at_the_old_parameters(size):
    """n = 300, d = 3, k = 6, L0 = default_L0: d_hat < k and weighted leverage > 20 L0 exist (issue 16),
    so the 20 L0 that Delta uses was not a bound there. The mechanism now refuses these parameters."""
    search = _run(soundness_objective(OLD_L0, bound=stable.SOUNDNESS_FACTOR), single_start(OLD_L0),
                  single_perturb, size, seed=3)
    assert search.violation is not None, f"best {search.best:.3g} L0 after {search.evaluations} candidates"
    X, _ = search.violation[1]
    result = stable.stable_covariance(X, OLD_L0, K)
    lev = stable.weighted_leverages(X, result.w)[result.w > 0].max()
    assert result.d_hat < K and lev > 20 * OLD_L0
    with pytest.raises(stable.InsufficientData, match=r"\(C1\) threshold spacing FAILS.*\(C2\) soundness"):
        stable.stable_parameters(N, D, ApproxDP(1.0, 1e-6), L0=OLD_L0, k=K)


@pytest.mark.slow
def test_search_finds_a_weight_change_above_the_proved_constant_at_the_old_parameters():
    """Outside (C1) the same search also breaks Lemma 7's constant: ||w - w'||_1 > 2 - 1/k with both
    scores < k (the notes' constant 2 survived every search we ran; the proof does not cover it there)."""
    search = _run(weights_objective(OLD_L0), pair_start(OLD_L0), pair_perturb, SLOW, seed=0)
    assert search.violation is not None and "||w - w'||_1" in search.violation[0], search.best


def _stability_score_before_issue_16(X, L0, k):
    """The early stopping as it was: k as soon as k rows were removed at ANY threshold (wrong when that
    threshold is below k: many rows just above L0 give d_hat = 1 through S_1)."""
    X = np.asarray(X, dtype=float)
    n, k = len(X), int(k)
    filters = stable._Filter(X)
    d_hat = k
    for j in range(2 * k, -1, -1):
        S = filters.run(math.exp(j / k) * L0, limit=k)
        if S is None:
            return k, filters.rounds
        if j <= k:
            d_hat = min(d_hat, n - int(S.sum()) + j)
    return d_hat, filters.rounds


def test_search_finds_the_early_stopping_bug_inside_the_proved_regime(monkeypatch):
    """Power for P1: with the pre-issue-16 early stopping put back, the search (looking only at the
    released score's gap between neighbours, not comparing with Alg 3) finds a gap above 2."""
    monkeypatch.setattr(stable, "stability_score", _stability_score_before_issue_16)
    search = _run(score_objective(L0_IN, compare_full=False), pair_start(L0_IN), pair_perturb, FAST, seed=1)
    assert search.violation is not None, search.best
    assert search.violation[0].startswith("d_hat")
