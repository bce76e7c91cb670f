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


def _stores_equal(a: ExactBandSums, b: ExactBandSums) -> bool:
    return a.counts == b.counts and all(np.array_equal(x[j], y[j]) for x, y in zip(a._stores, b._stores)
                                        for j in a.counts)


def test_sums_read_in_tiles_are_the_same_integers(monkeypatch):
    """Each band's rows a tile at a time, their products added into one accumulator by syrk: the integers of any
    tile size, any block of rows and any merge order."""
    import dpcov.mechanisms.exact_sums as exact_sums
    X = _rows(n=500, d=7, seed=2)
    shift = X.mean(axis=0)
    whole = ExactBandSums(1.0).add(X, np.inf, shift)
    monkeypatch.setattr(exact_sums, "TILE_ENTRIES", 7 * 13)  # 13 rows per tile
    tiled = ExactBandSums(1.0).add(X, np.inf, shift)
    merged = ExactBandSums(1.0).add(X[250:], np.inf, shift).merge(ExactBandSums(1.0).add(X[:250], np.inf, shift))
    assert _stores_equal(whole, tiled) and _stores_equal(whole, merged)
    # the products' diagonals are the squares' sums, exactly
    for j in whole.counts:
        assert np.array_equal(np.diag(whole.moments[j]), whole.moment_squares[j])
        assert np.array_equal(np.diag(whole.directions[j]), whole.direction_squares[j])


@pytest.mark.parametrize("m", [0, 2, 5])
def test_one_levels_products_and_deferred_sums_give_the_full_sums_statistics(m):
    """level=m holds one product per band (the rows' at or below tau, the directions' above), and deferred sums form
    it in a second pass: Sigma, the eigenvalue matrix and the trace at m are the full sums' to the bit."""
    X, n = _rows(), 400
    full = ExactBandSums(1.0).add(X)
    one = ExactBandSums(1.0, level=m).add(X)
    passes = []
    deferred = ExactBandSums(1.0, grams=False).add(X).defer(
        lambda level: passes.append(level) or ExactBandSums(1.0, level=level).add(X))
    for sums in (one, deferred):
        assert np.array_equal(sums.sigma(m, n)[0], full.sigma(m, n)[0])
        assert np.array_equal(sums.eigen_matrix(m, n)[0], full.eigen_matrix(m, n)[0])
        assert sums.trace(m, n) == full.trace(m, n)
        assert np.array_equal(sums.mean(m, n)[0], full.mean(m, n)[0])
    assert passes == [m]  # one second pass, kept for the level's later reads
    assert deferred.trace(m + 1, n) == full.trace(m + 1, n) and passes == [m]  # a trace reads no product
    with pytest.raises(ValueError, match=f"level {m}"):
        one._level_sum(m + 1, 2)


def test_deferred_sums_refuse_other_rows_and_problems_that_need_every_band():
    X = _rows()
    changed = ExactBandSums(1.0, grams=False).add(X).defer(lambda level: ExactBandSums(1.0, level=level).add(X[1:]))
    with pytest.raises(RuntimeError, match="not the rows summed first"):
        changed.sigma(0, 400)
    with pytest.raises(ValueError, match="grams=False"):
        ExactBandSums(1.0, grams=True).defer(lambda level: None)
    one_level = exact_problem(ExactBandSums(1.0, level=3).add(X), 400)  # one pass, one level's products
    assert one_level.band_moments is None
    assert np.array_equal(one_level.clipped_sigma(3), ExactBandSums(1.0).add(X).sigma(3, 400)[0])
    with pytest.raises(ValueError, match="level 3 reads, not level 2's"):
        one_level.clipped_sigma(2)
    deferred = ExactBandSums(1.0, grams=False).add(X).defer(lambda level: ExactBandSums(1.0, level=level).add(X))
    problem = exact_problem(deferred, 400)
    assert problem.band_moments is None and problem.given_sigma is None
    assert np.array_equal(problem.sigma, ExactBandSums(1.0).add(X).sigma(0, 400)[0])  # formed on first read
    assert np.array_equal(problem.clipped_sigma(4), ExactBandSums(1.0).add(X).sigma(4, 400)[0])
    with pytest.raises(ValueError, match="per-band products"):
        problem.clipped_problem(2)


@pytest.mark.parametrize("mechanism, budget", [("adaptive", "zcdp"), ("adaptive_lap", "pure"), ("separate", "zcdp"),
                                               ("gauss", "zcdp")])
def test_an_estimator_reading_one_level_releases_what_full_sums_release(monkeypatch, mechanism, budget):
    """The estimators' deferred sums (Mechanism.exact_levels) against the same line without the flag (every band's
    products in one pass): the same covariance, bit for bit."""
    from dataclasses import replace

    import dpcov
    rng = np.random.default_rng(3)
    X = rng.standard_normal((3000, 9)) * np.geomspace(1, 0.05, 9) / 4 + 0.05
    X /= np.linalg.norm(X, axis=1).max()
    common = dict(budget=dpcov.ZCDP(0.5) if budget == "zcdp" else dpcov.PureDP(3.0), radius=1.0,
                  mechanism=mechanism, centering="private", random_state=5)
    deferred = dpcov.PrivateCovariance(**common).fit(X)
    monkeypatch.setitem(MECHANISMS, mechanism, replace(MECHANISMS[mechanism], exact_levels=False))
    full = dpcov.PrivateCovariance(**common).fit(X)
    assert np.array_equal(deferred.covariance_, full.covariance_)
    assert deferred.ledger_ == full.ledger_


def test_separate_pairs_for_a_pca_are_the_full_release_s_top_pairs():
    """gaussian.paired with components: the pairs down to the deepest of the k largest released values, the same
    vectors as the full decomposition's to rounding (up to sign), the PCA's choice unchanged."""
    from dpcov.mechanisms.gaussian import paired
    rng = np.random.default_rng(4)
    A = rng.standard_normal((40, 40))
    M = (A + A.T) / 2
    values = np.sort(rng.standard_normal(40))[::-1] + rng.standard_normal(40) * 0.5  # released: out of order
    full, part = paired(values, M), paired(values, M, components=6)
    order = np.argsort(-values, kind="stable")[:6]
    assert len(part.values) == order.max() + 1 and np.array_equal(part.values, values[:len(part.values)])
    assert np.array_equal(np.argsort(-part.values, kind="stable")[:6], order)
    dots = np.abs(np.sum(part.vectors * full.vectors[:, :len(part.values)], axis=0))
    assert np.allclose(dots, 1, atol=1e-10)


def test_a_private_pca_reads_the_same_components_whichever_solver(monkeypatch):
    """PrivatePCA's default (AdaptiveCov, its pairs for k components only) against full decompositions: the same
    components to rounding, each signed so its largest entry is positive."""
    import dpcov
    import dpcov.mechanisms.adaptive as adaptive
    rng = np.random.default_rng(6)
    X = rng.standard_normal((4000, 12)) * np.geomspace(1, 0.1, 12)
    X /= np.linalg.norm(X, axis=1).max()
    common = dict(budget=dpcov.ZCDP(1.0), radius=1.0, centering="private", random_state=2, mechanism="adaptive")
    top = dpcov.PrivatePCA(3, **common).fit(X)
    from dataclasses import replace

    def without_components(problem, accountant, rng, *, beta=0.1, radius="private", split=None,
                           separate_noise_factor=1.0, numerics="idealized"):  # no option: a full decomposition
        return adaptive.adaptive_cov(problem, accountant, rng, beta=beta, radius=radius, split=split,
                                     separate_noise_factor=separate_noise_factor, numerics=numerics)
    monkeypatch.setitem(MECHANISMS, "adaptive", replace(MECHANISMS["adaptive"], fn=without_components))
    full = dpcov.PrivatePCA(3, **common).fit(X)
    assert full.mechanism_ == top.mechanism_ == "adaptive"
    assert np.allclose(top.components_, full.components_, atol=1e-10)
    assert not np.array_equal(top.components_, full.components_)  # two solvers: rounding apart
    assert np.all(top.components_[np.arange(3), np.abs(top.components_).argmax(axis=1)] > 0)


def test_the_compiled_pass_gives_numpy_s_integers(monkeypatch):
    """The compiled pass (_norms_kernel, _rounded_kernel: a row's transformation and rounding fused) against
    numpy's path (_compiled None): every store the same, over radii, clips, shifts, deep and zero rows, rows on the
    sphere, Fortran-ordered blocks, rows whose squares overflow (numpy's path then) and every kind of sums."""
    rng = np.random.default_rng(7)
    kinds = [dict(), dict(directions=False), dict(level=3), dict(grams=False), dict(level=1, lean=True),
             dict(grams=False, lean=True)]
    for case in range(48):
        n, d = int(rng.integers(1, 120)), int(rng.integers(1, 12))
        radius = float([1.0, 0.37, 2.0**40, 1e300][case % 4])
        X = rng.standard_normal((n, d)) * np.geomspace(1, 1e-12, n)[:, None] * radius
        X[rng.integers(0, n)] = 0
        X[-1] *= 1e-15  # a row in the floor band (below r 2^-60): its directions left zero
        first = np.linalg.norm(X[0] / radius) * radius
        X[0] *= radius / first if first > 0 else 0  # on the sphere
        X = np.asfortranarray(X) if case % 5 == 0 else X
        clip = [np.inf, radius, radius * 0.3][case % 3]
        shift = None if (case // len(kinds)) % 2 else rng.standard_normal(d) * 0.1  # every kind with and without
        shift = None if shift is None else shift * radius
        kind = kinds[case % len(kinds)]
        compiled = ExactBandSums(radius, **kind).add(X, clip, shift)
        with monkeypatch.context() as patch:
            patch.setattr(ExactBandSums, "_compiled", lambda self, clip, shift: None)
            reference = ExactBandSums(radius, **kind).add(X, clip, shift)
        assert compiled.n == reference.n and _stores_equal(compiled, reference), (case, kind)


@pytest.mark.parametrize("slots", [1, 2, 7, 1 << 30])
def test_discrete_gaussian_draws_do_not_depend_on_the_pending_buffer(monkeypatch, slots):
    """The undecided draws' buffer is bounded (PENDING slots, not one per draw; the fill resumes where it stopped):
    the same draws and the same generator state after, whatever its size. The exact band widened to 3e-2 so that
    many draws are undecided (about 1e-14 of them at the float bound): the resumption is exercised."""
    from dpcov.mechanisms import noise
    t, c = noise.discrete_gaussian_parameters(3.7)
    reference_rng = np.random.default_rng(1)
    reference = noise._discrete_gaussian(t, c, 20_000, reference_rng, slack=3e-2)
    monkeypatch.setattr(noise, "PENDING", slots)
    rng = np.random.default_rng(1)
    assert np.array_equal(noise._discrete_gaussian(t, c, 20_000, rng, slack=3e-2), reference)
    assert rng.integers(0, 2**62) == reference_rng.integers(0, 2**62)
    calls = []
    original = noise._discrete_gaussian_fill
    monkeypatch.setattr(noise, "_discrete_gaussian_fill", lambda *args: calls.append(1) or original(*args))
    noise._discrete_gaussian(t, c, 20_000, np.random.default_rng(1), slack=3e-2)
    assert len(calls) > 1 or slots > 20_000  # stopped and resumed: the path under test ran


def test_in_place_symmetric_helpers_are_the_numpy_expressions():
    """spectral.symmetrized, mirror_upper, upper_vector / from_upper: the bits of (M + M^T) / 2, triu mirrored and
    np.triu_indices' order, across block edges, with no d x d temporary."""
    from dpcov.mechanisms.spectral import from_upper, mirror_upper, symmetrized, upper_vector
    rng = np.random.default_rng(8)
    for d in (1, 2, 511, 512, 513, 1100):
        A = rng.standard_normal((d, d))
        assert np.array_equal(symmetrized(A.copy()), (A + A.T) / 2)
        upper = np.triu(A)
        assert np.array_equal(mirror_upper(np.asfortranarray(A.copy())), upper + np.triu(A, 1).T)
        rows, cols = np.triu_indices(d)
        assert np.array_equal(upper_vector(A), A[rows, cols])
        assert np.array_equal(from_upper(A[rows, cols], d), upper + np.triu(A, 1).T)
