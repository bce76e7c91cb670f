"""Wide data (issue 61): what the estimators skip for speed changes no release, and what it skipped is never read."""
import numpy as np
import pytest

from dpcov.mechanisms.exact_sums import ExactBandSums, exact_problem
from dpcov.mechanisms.registry import MECHANISMS


def _rows(n=400, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * np.geomspace(1, 1e-3, n)[:, None]  # rows over many norm bands
    return X / np.linalg.norm(X, axis=1).max()


def test_sums_without_directions_serve_level_zero_exactly_and_refuse_clipping():
    X = _rows()
    full, lean = ExactBandSums(1.0).add(X), ExactBandSums(1.0, directions=False).add(X)
    assert np.array_equal(full._level_sum(0, 2)[0], lean._level_sum(0, 2)[0])
    assert np.array_equal(full.eigen_matrix(0, 400)[0], lean.eigen_matrix(0, 400)[0])
    with pytest.raises(ValueError, match="directions' products"):
        lean._level_sum(3, 2)
    problem = exact_problem(lean, 400)
    assert problem.band_directions is None
    with pytest.raises(ValueError, match="directions' products"):
        problem.clipped_sigma(3)
    with pytest.raises(ValueError, match="another radius, grid or kind"):
        full.merge(lean)


def test_every_line_that_reads_clipping_levels_says_so():
    """The flagged set. A line that reads a clipping level m > 0 without the flag fails loudly (the sums refuse it,
    above), and the suite runs every native line hardened under add/remove (tests/privacy/test_replay.py)."""
    assert {name for name, m in MECHANISMS.items() if m.clips} == {
        "adaptive", "adaptive_lap", "clip_gauss", "clip_separate", "pipeline", "pipeline_pure"}


def test_eigenvalues_are_computed_on_first_read():
    X = _rows()
    problem = exact_problem(ExactBandSums(1.0).add(X), 400)
    assert problem.given_eigenvalues is None
    assert np.allclose(problem.eigenvalues, np.linalg.eigvalsh(problem.sigma)[::-1])


def test_a_pca_decomposes_only_its_top_k():
    """Spectral.top: the k largest eigenvalues of the full decomposition, to rounding, and the same subspace."""
    from dpcov.mechanisms.spectral import Spectral
    rng = np.random.default_rng(1)
    A = rng.standard_normal((60, 60))
    M = (A + A.T) / 2
    full, top = Spectral.of(M), Spectral.top(M, 5)
    assert np.allclose(top.values, full.values[-5:], rtol=0, atol=1e-12)
    projector = full.vectors[:, -5:] @ full.vectors[:, -5:].T
    assert np.allclose(projector @ top.vectors, top.vectors, atol=1e-10)
    assert Spectral.top(M, 60).values.shape == (60,)  # k = d: the full decomposition
