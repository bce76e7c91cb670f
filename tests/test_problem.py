"""CovProblem: validation, dyadic norm bands and the exact clipped covariances built from them."""
from __future__ import annotations

import math

import numpy as np
import pytest

import dpcov.mechanisms.problem as problem_module
from dpcov.mechanisms.problem import CovProblem, dyadic_band, validate_rows


def clip_rows(X: np.ndarray, tau: float) -> np.ndarray:
    """Clip(X, tau) = min(1, tau/||x||) x row by row (Dong §5.1), computed directly."""
    norms = np.linalg.norm(X, axis=1)
    factor = np.ones_like(norms)
    big = norms > tau
    factor[big] = tau / norms[big]
    return X * factor[:, None]


def reference_band(norm: float, radius: float) -> int:
    """j >= 0 with r 2^-(j+1) < norm <= r 2^-j by a plain loop of exact comparisons."""
    j = 0
    while norm <= math.ldexp(radius, -(j + 1)):
        j += 1
    return j


def rows_with_norms(norms, d: int, rng: np.random.Generator) -> np.ndarray:
    """Rows in random directions with the given norms (up to rounding)."""
    norms = np.asarray(norms, dtype=float)
    X = rng.standard_normal((len(norms), d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X * norms[:, None]


@pytest.fixture(scope="module")
def varied_rows():
    """Rows of many norms, including rows exactly on band edges (axis-aligned, so the norm is
    exact), rows just above/below an edge, and zero rows."""
    rng = np.random.default_rng(20240601)
    d = 6
    random_part = rows_with_norms(rng.uniform(0, 1, 150) ** 3, d, rng)
    edges = np.zeros((8, d))
    for i, norm in enumerate([1.0, 0.5, 0.25, 0.125, 2.0**-10, 0.5, 0.25, 1.0]):
        edges[i, i % d] = norm if i % 2 == 0 else -norm  # exact norm, any sign
    near = rows_with_norms([np.nextafter(0.5, 1), np.nextafter(0.25, 0), 0.5000001, 0.2499999], d, rng)
    zeros = np.zeros((5, d))
    X = np.vstack([random_part, edges, near, zeros])
    return X[rng.permutation(len(X))]


# --- validation ---------------------------------------------------------------------------------
def test_rows_outside_ball_raise_with_row_and_norm():
    X = np.zeros((5, 3))
    X[3] = [1.0, 1.0, 0.0]
    with pytest.raises(ValueError, match=r"row 3 has norm 1\.41421 > radius 1"):
        CovProblem.from_rows(X)
    # the same rows fit a ball of radius 2
    assert CovProblem.from_rows(X, radius=2.0).n == 5


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_or_inf_raise(bad):
    X = np.full((4, 3), 0.1)
    X[2, 1] = bad
    with pytest.raises(ValueError, match=r"NaN or inf \(first at row 2, column 1\)"):
        CovProblem.from_rows(X)


@pytest.mark.parametrize("X", [np.full(3, 0.1), np.zeros((2, 2, 2)), np.float64(0.5)])
def test_non_2d_arrays_raise(X):
    with pytest.raises(ValueError, match="2-D"):
        CovProblem.from_rows(X)


@pytest.mark.parametrize("shape", [(0, 3), (3, 0)])
def test_empty_data_raise(shape):
    with pytest.raises(ValueError, match="at least one row"):
        CovProblem.from_rows(np.zeros(shape))


@pytest.mark.parametrize("radius", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_radius_raise(radius):
    with pytest.raises(ValueError, match="radius"):
        CovProblem.from_rows(np.zeros((2, 2)), radius=radius)


def test_unit_rows_with_rounding_are_accepted():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((500, 7))
    X /= np.linalg.norm(X, axis=1, keepdims=True)  # norms 1 +- a few ulp
    problem = CovProblem.from_rows(X)
    assert problem.band_exponents.tolist() == [0]
    assert problem.trace == pytest.approx(1.0, rel=1e-12)


@pytest.mark.parametrize("block", [1, 7, 64, 10**6])
def test_row_norms_are_numpys_bits_a_block_at_a_time(block, monkeypatch):
    monkeypatch.setattr(problem_module, "NORM_BLOCK", block)
    X = np.random.default_rng(3).standard_normal((101, 13)) * np.logspace(-8, 8, 13)
    assert np.array_equal(problem_module.row_norms(X), np.linalg.norm(X, axis=1))
    assert problem_module.row_norms(np.empty((0, 3))).shape == (0,)


def test_validate_rows_returns_float_array():
    out = validate_rows([[0, 1], [1, 0]], 1.0)
    assert out.dtype == np.float64 and out.shape == (2, 2)


# --- basic statistics ---------------------------------------------------------------------------
def test_sigma_and_eigenvalues_match_numpy(varied_rows):
    X = varied_rows
    problem = CovProblem.from_rows(X)
    n, d = X.shape
    assert (problem.n, problem.d, problem.radius) == (n, d, 1.0)
    np.testing.assert_allclose(problem.sigma, X.T @ X / n, rtol=0, atol=1e-14)
    np.testing.assert_array_equal(problem.sigma, problem.sigma.T)
    expected = np.sort(np.linalg.eigvalsh(X.T @ X / n))[::-1]
    assert np.all(np.diff(problem.eigenvalues) <= 0), "eigenvalues must be descending"
    np.testing.assert_allclose(problem.eigenvalues, expected, rtol=0, atol=1e-13)
    assert problem.trace == pytest.approx(np.sum(X**2) / n, rel=1e-12)


def test_band_counts_and_moments_match_direct_computation(varied_rows):
    X = varied_rows
    n = len(X)
    problem = CovProblem.from_rows(X)
    norms = np.linalg.norm(X, axis=1)
    bands = np.array([reference_band(v, 1.0) if v > 0 else -1 for v in norms])
    expected_exponents = np.unique(bands[bands >= 0])
    np.testing.assert_array_equal(problem.band_exponents, expected_exponents)
    assert np.all(np.diff(problem.band_exponents) > 0)
    assert problem.band_counts.sum() == np.count_nonzero(norms)  # zero rows are in no band
    for k, j in enumerate(expected_exponents):
        rows = X[bands == j]
        assert problem.band_counts[k] == len(rows)
        np.testing.assert_allclose(problem.band_moments[k], rows.T @ rows / n, atol=1e-14)
        unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
        np.testing.assert_allclose(problem.band_directions[k], unit.T @ unit / n, atol=1e-14)


def test_edge_rows_land_in_the_band_they_close():
    # a row of norm exactly r 2^-j belongs to band j: (r 2^-(j+1), r 2^-j]
    X = np.zeros((4, 2))
    X[0, 0], X[1, 1], X[2, 0], X[3, 1] = 1.0, 0.5, -0.25, 0.25
    problem = CovProblem.from_rows(X)
    np.testing.assert_array_equal(problem.band_exponents, [0, 1, 2])
    np.testing.assert_array_equal(problem.band_counts, [1, 1, 2])


def test_all_zero_rows():
    problem = CovProblem.from_rows(np.zeros((10, 3)))
    assert problem.band_exponents.size == 0 and problem.band_counts.size == 0
    np.testing.assert_array_equal(problem.sigma, np.zeros((3, 3)))
    np.testing.assert_array_equal(problem.eigenvalues, np.zeros(3))
    for m in [0, 1, 5]:
        np.testing.assert_array_equal(problem.clipped_sigma(m), np.zeros((3, 3)))
        exps, counts = problem.clipped_counts(m)
        assert exps.size == 0 and counts.size == 0


# --- dyadic bands -------------------------------------------------------------------------------
@pytest.mark.parametrize("radius", [1.0, 2.0, 0.5, 3.0, 0.7])
def test_dyadic_band_exact_on_powers_of_two(radius):
    j = np.arange(0, 1001)
    norms = np.ldexp(radius, -j)  # exactly r 2^-j, all normal floats
    np.testing.assert_array_equal(dyadic_band(norms, radius), j)
    # one ulp above the edge r 2^-j falls into band j - 1 (for j >= 1)
    above = np.nextafter(norms[1:200], np.inf)
    np.testing.assert_array_equal(dyadic_band(above, radius), j[1:200] - 1)
    # one ulp below stays in band j
    below = np.nextafter(norms[:200], 0)
    np.testing.assert_array_equal(dyadic_band(below, radius), j[:200])


@pytest.mark.parametrize("radius", [1.0, 3.0, 0.7])
def test_dyadic_band_matches_reference_on_random_norms(radius):
    rng = np.random.default_rng(11)
    norms = radius * np.exp2(-rng.uniform(0, 60, 3000))
    expected = [reference_band(v, radius) for v in norms]
    np.testing.assert_array_equal(dyadic_band(norms, radius), expected)


def test_dyadic_band_subnormal_norms():
    # regression: HEAD computed log2(radius / norm), which overflows for norms below ~r 2^-1024;
    # the int64 cast of inf put such norms in band 1
    j = np.array([1024, 1030, 1074])
    norms = np.ldexp(1.0, -j)
    assert np.all(norms > 0)
    np.testing.assert_array_equal(dyadic_band(norms, 1.0), j)


def test_dyadic_band_surface_rows_within_slack_are_band_zero():
    norms = np.array([1.0, np.nextafter(1.0, 2.0), 1.0 + 1e-12])
    np.testing.assert_array_equal(dyadic_band(norms, 1.0), [0, 0, 0])


# --- clipped statistics -------------------------------------------------------------------------
@pytest.mark.parametrize("radius", [1.0, 3.0])
def test_clipped_sigma_equals_direct_clipping(varied_rows, radius):
    X = varied_rows * radius
    n = len(X)
    problem = CovProblem.from_rows(X, radius=radius)
    for m in range(0, 14):
        tau = math.ldexp(radius, -m)
        assert problem.tau(m) == tau
        clipped = clip_rows(X, tau)
        expected = clipped.T @ clipped / n
        got = problem.clipped_sigma(m)
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12 * radius**2)
        np.testing.assert_allclose(got, got.T, rtol=0, atol=1e-15 * radius**2)


def test_clipped_sigma_far_below_every_norm_is_tau_squared_directions():
    rng = np.random.default_rng(5)
    X = rows_with_norms(rng.uniform(0.01, 1, 100), 4, rng)
    problem = CovProblem.from_rows(X)
    m = 30
    unit = X / np.linalg.norm(X, axis=1, keepdims=True)
    np.testing.assert_allclose(problem.clipped_sigma(m), 4.0**-m * unit.T @ unit / len(X),
                               rtol=1e-12, atol=0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_clipping_bias_bound_lemma_8(varied_rows, seed):
    """||Sigma(X) - Sigma(Clip(X, tau))||_F <= 1/n sum_i (||x_i||^2 - tau^2) 1(||x_i|| >= tau)."""
    rng = np.random.default_rng(seed)
    X = np.vstack([varied_rows, rows_with_norms(rng.uniform(0, 1, 200), varied_rows.shape[1], rng)])
    n = len(X)
    problem = CovProblem.from_rows(X)
    norms = np.linalg.norm(X, axis=1)
    for m in range(0, 12):
        tau = problem.tau(m)
        bias = np.linalg.norm(problem.sigma - problem.clipped_sigma(m), "fro")
        bound = np.sum((norms**2 - tau**2) * (norms >= tau)) / n
        assert bias <= bound + 1e-14
        if np.any(norms > tau):
            assert bias > 0  # clipping something must change Sigma


def test_lemma_8_is_tight_for_a_single_direction():
    # all rows along e_1: Sigma and its clipped version differ only in entry (0, 0) by the bound
    norms = np.array([1.0, 0.75, 0.5, 0.3, 0.1])
    X = np.zeros((5, 3))
    X[:, 0] = norms
    problem = CovProblem.from_rows(X)
    tau = problem.tau(2)
    bias = np.linalg.norm(problem.sigma - problem.clipped_sigma(2), "fro")
    assert bias == pytest.approx(np.sum((norms**2 - tau**2) * (norms >= tau)) / 5, rel=1e-12)


def test_clipped_counts_match_bands_of_clipped_rows(varied_rows):
    X = varied_rows
    problem = CovProblem.from_rows(X)
    for m in range(0, 14):
        # ||Clip(x, tau)|| = min(||x||, tau) exactly (clip_rows would add rounding at the edge)
        clipped_norms = np.minimum(np.linalg.norm(X, axis=1), problem.tau(m))
        bands = np.array([reference_band(v, 1.0) for v in clipped_norms[clipped_norms > 0]])
        expected_exps, expected_counts = np.unique(bands, return_counts=True)
        exps, counts = problem.clipped_counts(m)
        np.testing.assert_array_equal(exps, expected_exps)
        np.testing.assert_array_equal(counts, expected_counts)
        assert counts.sum() == np.count_nonzero(np.linalg.norm(X, axis=1))
        if len(exps):
            assert exps.min() >= m


def test_clipped_counts_merge_into_an_existing_band_and_a_new_one():
    X = np.zeros((6, 2))
    X[:, 0] = [1.0, 0.9, 0.6, 0.25, 0.2, 0.01]
    problem = CovProblem.from_rows(X)  # bands: 0 (x3), 2 (x2), 6 (x1)
    np.testing.assert_array_equal(problem.band_exponents, [0, 2, 6])
    exps, counts = problem.clipped_counts(2)  # three rows merge into existing band 2
    np.testing.assert_array_equal(exps, [2, 6])
    np.testing.assert_array_equal(counts, [5, 1])
    exps, counts = problem.clipped_counts(4)  # band 4 is new
    np.testing.assert_array_equal(exps, [4, 6])
    np.testing.assert_array_equal(counts, [5, 1])
    exps, counts = problem.clipped_counts(0)
    np.testing.assert_array_equal(exps, [0, 2, 6])
    np.testing.assert_array_equal(counts, [3, 2, 1])


# --- the streamed band sums (BandSums.add_columns: mechanisms/banded.py's compiled passes) -----
@pytest.mark.parametrize("radius", [1.0, 0.7, 3.0, 2.0**64, 1e300, 1e-300])
def test_compiled_band_is_dyadic_band(radius):
    from dpcov.mechanisms.banded import _band, band_edges

    rng = np.random.default_rng(5)
    edges = band_edges(radius)
    j = np.arange(0, 1000)
    exact = np.ldexp(radius, -j)
    norms = np.concatenate([exact, np.nextafter(exact, np.inf), np.nextafter(exact, 0),
                            radius * np.exp2(-rng.uniform(0, 1100, 2000)), [np.nextafter(radius, np.inf)]])
    norms = norms[(norms > 0) & (norms <= radius * (1 + 1e-9))]
    np.testing.assert_array_equal([_band(v, radius, edges) for v in norms], dyadic_band(norms, radius))


def _same_sums(a, b, tolerance=1e-12):
    assert a.n == b.n and a.d == b.d and a.counts == b.counts
    for j in a.counts:
        for x, y in [(a.moments, b.moments), (a.directions, b.directions), (a.totals, b.totals),
                     (a.unit_totals, b.unit_totals)]:
            assert np.abs(x[j] - y[j]).max() <= tolerance * max(a.counts[j] * a.radius ** 2, 1e-300)


@pytest.mark.parametrize("tile", [7, 8192])
def test_columns_give_adds_sums_in_blocks_and_tiles(varied_rows, tile, monkeypatch):
    monkeypatch.setattr(problem_module, "TILE_ROWS", tile)
    expected = problem_module.BandSums(1.0).add(varied_rows)
    streamed = problem_module.BandSums(1.0)
    for block in np.array_split(varied_rows, 3):
        assert streamed.add_columns(block.T) == (np.linalg.norm(block, axis=1).max(), 0)
    _same_sums(streamed, expected)
    np.testing.assert_allclose(streamed.problem().sigma, expected.problem().sigma, rtol=1e-12, atol=1e-15)


def test_columns_clip_then_divide(varied_rows):
    X = varied_rows * 3.0
    norms = np.linalg.norm(X, axis=1)
    streamed = problem_module.BandSums(1.0)
    largest, clipped = streamed.add_columns(X.T, clip=2.0, divisor=2.0)
    assert largest == pytest.approx(norms.max()) and clipped == int(np.sum(norms > 2.0))
    _same_sums(streamed, problem_module.BandSums(1.0).add(clip_rows(X, 2.0) / 2.0))


def test_columns_errors_number_rows_across_blocks():
    sums = problem_module.BandSums(1.0)
    sums.add_columns(np.zeros((3, 10)))
    bad = np.full((5, 3), 0.1)
    bad[2, 1] = np.nan
    with pytest.raises(ValueError, match=r"NaN or inf \(first at row 12, column 1\)"):
        sums.add_columns(bad.T)
    bad[2, 1] = 2.0
    with pytest.raises(ValueError, match=r"row 12 has norm 2.00\d* > radius 1"):
        sums.add_columns(bad.T)
    assert sums.n == 10 and sums.counts == {} and sums.moments == {}  # a refused block leaves the sums as they were
    with pytest.raises(ValueError, match="a block of 4 columns after blocks of 3"):
        sums.add_columns(np.zeros((4, 2)))


def test_columns_as_arrays_or_lists_and_reused_work_arrays_do_not_leak_between_sums(varied_rows):
    """Two sums fed in turn in one thread (each block goes through the thread's reused work arrays; blocks of
    other shapes in between) end as each would alone; a list of columns, strided or not, is the same block."""
    rng = np.random.default_rng(8)
    other = rng.uniform(-0.3, 0.3, (4000, 3))
    alone = problem_module.BandSums(1.0).add(varied_rows)
    alone_other = problem_module.BandSums(1.0).add(other)
    turns, turns_other = problem_module.BandSums(1.0), problem_module.BandSums(1.0)
    for block, block_other in zip(np.array_split(varied_rows, 4), np.array_split(other, 4)):
        turns.add_columns(list(block.T))  # strided columns of a row-major block
        turns_other.add_columns(np.ascontiguousarray(block_other.T))
    _same_sums(turns, alone)
    _same_sums(turns_other, alone_other)
    with pytest.raises(ValueError, match="arrays of the same length"):
        problem_module.BandSums(1.0).add_columns([np.zeros(3), np.zeros(4)])


def test_columns_refuse_inf_and_overflow_even_when_clipping():
    """Clipping an inf row (factor clip / inf = 0) would sum inf * 0 = NaN: refused like NaN, as are rows whose
    squares overflow."""
    sums = problem_module.BandSums(1.0)
    with pytest.raises(ValueError, match=r"NaN or inf \(first at row 1, column 0\)"):
        sums.add_columns(np.array([[0.5, np.inf], [0.1, 0.0]]), clip=1.0)
    with pytest.raises(ValueError, match=r"row 1 has entries up to 1e\+200, whose squares exceed float64"):
        sums.add_columns(np.array([[0.5, 1e200], [0.1, 0.0]]), clip=1.0)


def test_columns_refuse_every_row_pass_one_refuses_at_the_balls_edge():
    """Rows within a few ulps of radius (1 + slack): pass 1 sums squares in order, numpy pairwise; whatever pass
    1 decides, a refused row raises (it once fell through to the rest of the block with half-filled arrays)."""
    rng = np.random.default_rng(9)
    limit = 1.0 * (1 + problem_module._NORM_SLACK)
    for trial in range(300):
        X = rng.uniform(-0.2, 0.2, (40, 24))
        X[trial % 40] *= np.nextafter(limit, (2 * (trial % 2) - 1) * np.inf) / np.linalg.norm(X[trial % 40])
        X[trial % 40] *= 1 + (trial % 9 - 4) * 2.0**-52
        sums = problem_module.BandSums(1.0)
        try:
            sums.add_columns(X.T)
        except ValueError as err:
            assert f"row {trial % 40} has norm" in str(err)
            continue
        assert sums.n == 40 and sum(sums.counts.values()) == 40


def test_columns_empty_blocks_and_subnormal_norms():
    sums = problem_module.BandSums(1.0)
    assert sums.add_columns(np.zeros((3, 0))) == (0.0, 0) and sums.n == 0 and sums.d == 3  # a filtered partition
    X = np.array([[1e-310, 0.0, 0.0], [0.0, 2e-320, 1e-320], [0.3, 0.4, 0.0]])
    sums.add_columns(X.T)
    _same_sums(sums, problem_module.BandSums(1.0).add(X))  # unit rows of subnormal norms: finite, by division
    assert all(np.isfinite(v).all() for v in sums.directions.values())


def test_columns_directions_from_unit_rows_where_weights_would_underflow(varied_rows):
    """Directions come from the rows weighted by 1 / ||x||^2, except in a tile with a norm outside 2^-500..2^500
    (weights or products beyond float64), where unit rows x / ||x|| are summed: both agree with ``add``."""
    small = varied_rows * 1e-160  # norms up to 1e-160: 1 / ||x||^2 overflows
    mixed = np.concatenate([varied_rows, small[:5], varied_rows])
    for X in (small, mixed, varied_rows):
        sums = problem_module.BandSums(1.0)
        sums.add_columns(X.T)
        _same_sums(sums, problem_module.BandSums(1.0).add(X))
        assert all(np.isfinite(v).all() for v in sums.directions.values())


@pytest.mark.parametrize("first, last", [(0, 64), (3, 30), (5, 6), (7, 7)])
def test_compiled_gram_kernels_are_the_products(first, last):
    """gram_add and gram_pair add x x^T and sum w_i^2 x_i x_i^T over columns first..last to what the accumulators
    hold (upper triangles; any tail of columns, an empty range)."""
    from dpcov.mechanisms.banded import gram_add, gram_pair

    rng = np.random.default_rng(11)
    x, scale = rng.standard_normal((8, 64)), rng.uniform(0.5, 2.0, 64)
    upper = np.triu_indices(8)
    block = x[:, first:last]
    start = rng.standard_normal((3, 8, 8))
    out, scaled, single = start[0].copy(), start[1].copy(), start[2].copy()
    gram_pair(x, scale, first, last, out, scaled)
    gram_add(x, first, last, single)
    np.testing.assert_allclose(out[upper], (start[0] + block @ block.T)[upper], rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(single[upper], (start[2] + block @ block.T)[upper], rtol=1e-13, atol=1e-13)
    weighted = (block * scale[first:last] ** 2) @ block.T
    np.testing.assert_allclose(scaled[upper], (start[1] + weighted)[upper], rtol=1e-13, atol=1e-13)


def test_columns_grow_the_band_accumulators_within_a_block():
    """A block whose rows fall in 12 bands (band_block starts with room for 4): the accumulators grow and the tile
    that found no room is summed once, as ``add`` sums it."""
    rng = np.random.default_rng(12)
    X = rows_with_norms(np.repeat(2.0 ** -np.arange(12), 50) * 0.9, 5, rng)
    sums = problem_module.BandSums(1.0)
    sums.add_columns(X.T)
    assert len(sums.counts) == 12
    _same_sums(sums, problem_module.BandSums(1.0).add(X))


def test_columns_take_a_clipped_rows_norm_as_exactly_the_clip():
    """Rows of norm 3 clipped to 0.5 (radius 1) all lie in band 1, (0.25, 0.5]: their norm is taken as exactly
    0.5, not as the rounded norm of the scaled row, which clip_rows can leave an ulp above 0.5 (band 0)."""
    rows = np.random.default_rng(10).standard_normal((2000, 7))
    rows *= 3.0 / np.linalg.norm(rows, axis=1, keepdims=True)
    sums = problem_module.BandSums(1.0)
    assert sums.add_columns(rows.T, clip=0.5)[1] == 2000
    assert sums.counts == {1: 2000}
