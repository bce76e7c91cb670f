"""The Bingham sampler against exact moments from quadrature (q = 2, 3) and its invariants."""
import numpy as np
import pytest
from scipy.stats import ortho_group

from dpcov.mechanisms.bingham import acg_parameter, log_acceptance, sample_bingham

N_DRAWS = 20000


def exact_second_moment(A):
    """E[x x^T] under exp(-x^T A x) on the circle (q=2) or sphere (q=3), by quadrature."""
    q = A.shape[0]
    if q == 2:
        phi = (np.arange(20000) + 0.5) * 2 * np.pi / 20000
        x = np.stack([np.cos(phi), np.sin(phi)], axis=1)
        w = np.ones(len(phi))
    else:  # Gauss-Legendre in cos(theta) times a uniform grid in phi
        c, wc = np.polynomial.legendre.leggauss(400)
        phi = (np.arange(800) + 0.5) * 2 * np.pi / 800
        C, P = np.meshgrid(c, phi, indexing="ij")
        s = np.sqrt(1 - C**2)
        x = np.stack([s * np.cos(P), s * np.sin(P), C], axis=-1).reshape(-1, 3)
        w = np.repeat(wc, len(phi))
    logf = -np.einsum("ij,jk,ik->i", x, A, x)
    f = w * np.exp(logf - logf.max())
    return (x.T * f) @ x / f.sum()


@pytest.mark.parametrize("q", [2, 3])
@pytest.mark.parametrize("spectrum", [(0, 0, 0), (0, 1, 2), (0, 5, 5), (0, 30, 60), (-40, 0, 80)])
def test_second_moments_match_quadrature(q, spectrum):
    rng = np.random.default_rng(abs(hash((q, spectrum))) % 2**32)
    R = ortho_group.rvs(q, random_state=np.random.default_rng(q).integers(1 << 30))
    A = R @ np.diag(np.asarray(spectrum[:q], float)) @ R.T
    x = sample_bingham(A, rng, N_DRAWS)
    products = np.einsum("ni,nj->nij", x, x)
    mean, se = products.mean(axis=0), products.std(axis=0) / np.sqrt(N_DRAWS)
    exact = exact_second_moment(A)
    assert np.all(np.abs(mean - exact) <= 5 * se + 1e-9), (mean, exact, se)
    assert np.allclose(np.linalg.norm(x, axis=1), 1.0)


def test_fourth_moment_matches_quadrature_q2():
    """Second moments do not identify the law; E[x1^4] adds a check on the shape."""
    A = np.diag([0.0, 3.0])
    x = sample_bingham(A, np.random.default_rng(5), N_DRAWS)
    phi = (np.arange(20000) + 0.5) * 2 * np.pi / 20000
    f = np.exp(-3.0 * np.sin(phi) ** 2)
    exact = np.sum(f * np.cos(phi) ** 4) / f.sum()
    assert abs(np.mean(x[:, 0] ** 4) - exact) <= 5 * np.std(x[:, 0] ** 4) / np.sqrt(N_DRAWS)


def test_acceptance_ratio_never_exceeds_one():
    rng = np.random.default_rng(0)
    for q in [2, 3, 10, 300, 784]:
        lam = np.sort(rng.exponential(rng.uniform(0.1, 1000), q))
        lam -= lam[0]
        b = acg_parameter(lam)
        assert 1 <= b <= q and abs(np.sum(1 / (b + 2 * lam)) - 1) < 1e-10
        t = np.concatenate([np.linspace(0, lam.max(), 10001), [(q - b) / 2]])
        logs = log_acceptance(t, q, b)
        assert np.all(np.isfinite(logs)) and logs.max() <= 1e-9
        assert abs(log_acceptance(np.array([(q - b) / 2]), q, b)[0]) < 1e-8  # the bound is tight


def test_zero_matrix_is_uniform_with_acceptance_one():
    x, stats = sample_bingham(np.zeros((4, 4)), np.random.default_rng(1), 5000, return_stats=True)
    assert stats.acceptance_rate == 1.0
    assert np.allclose(np.mean(x**2, axis=0), 0.25, atol=0.02)


def test_spectrum_shift_leaves_the_draws_unchanged():
    A = np.diag([1.0, 2.0, 7.0])
    a = sample_bingham(A, np.random.default_rng(3), 100)
    b = sample_bingham(A + 50 * np.eye(3), np.random.default_rng(3), 100)
    assert np.allclose(a, b)


def test_very_concentrated_and_high_dimensional():
    x = sample_bingham(np.diag([0.0, 1e6, 1e6]), np.random.default_rng(2), 200)
    assert np.all(np.abs(x[:, 0]) > 1 - 1e-4)
    lam = np.linspace(0, 5000, 784)  # MNIST-sized, very concentrated: no overflow, finishes
    x, stats = sample_bingham(np.diag(lam), np.random.default_rng(2), 20, return_stats=True)
    assert np.all(np.isfinite(x)) and stats.accepted >= 20 and stats.proposals >= stats.accepted
    # Mass sits on the low-eigenvalue directions: E[x_k^2] is about 1/(2 lam_k) for k >= 2.
    assert np.mean(x[:, 0] ** 2) > 0.3 and np.mean(x[:, -1] ** 2) < 1e-3


def test_shapes_reproducibility_and_q1():
    A = np.diag([0.0, 1.0, 2.0])
    assert sample_bingham(A, np.random.default_rng(0)).shape == (3,)
    assert sample_bingham(A, np.random.default_rng(0), 7).shape == (7, 3)
    assert np.array_equal(sample_bingham(A, np.random.default_rng(9), 5),
                          sample_bingham(A, np.random.default_rng(9), 5))
    one = sample_bingham(np.array([[3.0]]), np.random.default_rng(0), 100)
    assert set(np.unique(one)) == {-1.0, 1.0}


@pytest.mark.parametrize("A, error", [
    (np.ones((2, 3)), ValueError), (np.array([[0, np.nan], [np.nan, 0]]), ValueError),
    (np.array([[0.0, 1.0], [0.0, 0.0]]), ValueError),
])
def test_bad_input(A, error):
    with pytest.raises(error):
        sample_bingham(A, np.random.default_rng(0))


def test_stops_with_a_clear_error_instead_of_looping():
    with pytest.raises(RuntimeError, match="proposals"):
        sample_bingham(np.diag([0.0, 50.0, 100.0]), np.random.default_rng(0), 10**6, max_proposals=1000)


def test_compiled_screen_gives_the_vectorised_sampler_draws():
    """sample_bingham_eigen normalises and screens proposals in one compiled pass: the same seed
    gives the draws of the plain numpy form of the same steps (same proposals, same decisions)."""
    from dpcov.mechanisms.bingham import acg_parameter, sample_bingham_eigen

    def numpy_form(lam, rng, size):
        lam = lam - lam.min()
        q, b = len(lam), acg_parameter(lam)
        scale = 1.0 / np.sqrt(1.0 + 2.0 * lam / b)
        out, rate, proposals, accepted = [], 0.5, 0, 0
        while len(out) < size:
            batch = int(min(10_000_000 - proposals, max(8, 1.5 * (size - len(out)) / rate)))
            z = rng.standard_normal((batch, q)) * scale
            x = z / np.linalg.norm(z, axis=1, keepdims=True)
            accept = np.log(rng.uniform(size=batch)) < log_acceptance((x * x) @ lam, q, b)
            proposals, accepted = proposals + batch, accepted + int(accept.sum())
            out.extend(x[accept][: size - len(out)])
            rate = max(accepted / proposals, 1e-3)
        return np.array(out)

    for q, spread in [(1, 0.0), (5, 3.0), (40, 30.0), (300, 200.0)]:
        lam = -np.sort(np.random.default_rng(q).gamma(0.5, size=q)) * spread
        fast, _ = sample_bingham_eigen(lam, np.random.default_rng(11), 25)
        assert np.allclose(fast, numpy_form(lam, np.random.default_rng(11), 25), rtol=0, atol=1e-12)
