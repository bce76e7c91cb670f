"""Neighbouring datasets for black-box audits, and the features of a release an attack looks at.

Privacy must hold for every pair of replace-one neighbours (same n, one row changed), so the audit
searches over families of pairs, each built to expose one kind of mistake (GUIDE.md, "Black-box
auditing"):

- ``swap_values``: 60 % of the rows e1, the rest e2; one row e2 -> e1. The eigenvalues move by the
  full sensitivity, the eigenvectors stay (exposes eigenvalue and entry noise).
- ``tie``: a near-degenerate spectrum, k + 1 rows e1 and k rows e2 against k and k + 1: the top
  eigenvector flips while the sorted eigenvalues stay (exposes exponential-mechanism steps, which leak
  most where the two datasets' modes differ).
- ``swap_vectors``: zero rows and one row e1 -> e2; ``grow``: every row e1, one becomes e2 (at n = 2:
  C = diag(2, 0) against diag(1, 1), eigenvalues and eigenvectors move together).
- ``scale``: one row e1 -> 0 (a row scaled away); ``new_direction``: every row e1, one zero row -> e2.
- ``l1``: the largest l1 change of Sigma's upper triangle (Laplace noise): in d = 2 the rows
  (cos t, sin t) -> (sin t, -cos t), tan 2t = 1/2; in d > 2, (1, ..., 1)/sqrt(d) -> alternating signs.
- ``sphere``: every row tiny (norm 0.01) against one row on the unit sphere: moves the largest row norm
  and the trace (exposes noise scaled by the data's own norms); ``zeros``: all-zero data against one
  unit row (a data-dependent scale then releases Sigma = 0 exactly on one side).
- ``threshold``: rows on a clipping threshold r 2^-m, one of them moved to the sphere (exposes clipped
  or norm-banded steps, AdaptiveCov's).
- ``dense``: every entry of Sigma >= 1/4 (thresholding keeps all of them).
- ``random``: rows uniform in the ball, the replaced row random on the sphere.
- ``band_edge``: rows on a dyadic band edge r 2^-m (random unit directions times r 2^-m, half of them computed at or
  below the edge and half above it), the last one computed at or below the edge on D, above it on D' (stresses the
  code that puts a row in a norm band: two routines that round differently disagree there; issue 58).
- ``band_fill``: rows of norms 0.2 r to 0.45 r in random directions, one replaced by a row of norm 0.9 r: D' fills
  the band (r/2, r] that is empty on D (a band's count, clipping level or norm bound read from the data moves).

Add/remove neighbours (``ADD_REMOVE_FAMILIES``, privacy unit "add_remove": a row's presence, not only its content,
is protected; GUIDE.md section 9, issue 54): D has n rows and D' is D plus one row (``remove=True``: D' is D minus
its last row, the same two datasets in the other order -- the audit's events take both orders anyway, but a
one-sided construction is tested as it is written). n is then not public, and a release that follows it leaks:

- ``add_zeros``: n zero rows against n + 1: only n differs (Sigma = 0 on both sides). The membership pair of
  issue 54 is ``add_zeros`` at n = 809; at n = 1 a grid or a noise scale that follows the exact n moves by 2x.
- ``add_unit``: n zero rows, plus one row e1 (Sigma = 0 against a rank-one Sigma; the low bits of 1/(n+1)).
- ``add_sphere``: every row tiny (norm 0.01), plus one row on the unit sphere (the largest norm, the trace).
- ``add_direction``: every row e1, plus one row e2 (a new direction); ``add_values``: 60 % e1, the rest e2,
  plus one row e1 (the eigenvalues move); ``add_tie``: k rows e1 and k rows e2, plus one row e1 (the top
  eigenvector goes from any direction to e1).
- ``add_threshold``: rows on a clipping threshold r 2^-m, plus one row on the sphere.
- ``add_random``: rows uniform in the ball, plus one random row on the sphere.
- ``add_band_edge``: rows on a dyadic band edge r 2^-m (as ``band_edge``), plus one whose computed norm is just above
  it; ``add_band_fill``: rows of norms 0.2 r to 0.45 r, plus one of norm 0.9 r (the band (r/2, r] filled).

Every family takes n, d, the radius r (the declared bound: a mechanism that forgets r^2 shows at r != 1)
and a rotation angle of the (e1, e2) plane (splits a change between eigenvalues and eigenvectors).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, is_dataclass
from functools import cached_property, lru_cache

import numpy as np

from dpcov.mechanisms.gaussian import upper_indices
from dpcov.mechanisms.problem import CovProblem
from dpcov.mechanisms.spectral import as_matrix

FAMILIES = ("swap_values", "tie", "swap_vectors", "grow", "scale", "new_direction", "l1", "sphere", "zeros",
            "threshold", "dense", "random", "band_edge", "band_fill")
ADD_REMOVE_FAMILIES = ("add_zeros", "add_unit", "add_sphere", "add_direction", "add_values", "add_tie",
                       "add_threshold", "add_random", "add_band_edge", "add_band_fill")
SEEDED = ("random", "add_random", "band_edge", "add_band_edge", "band_fill", "add_band_fill")  # rows drawn from seed
EDGED = ("threshold", "add_threshold", "band_edge", "add_band_edge")  # rows at r 2^-m
UNITS = ("replace_one", "add_remove")


def unit_of(family: str) -> str:
    """The privacy unit whose neighbours the family builds: "replace_one" (same n, one row changed) or
    "add_remove" (one row more or less)."""
    if family in FAMILIES:
        return "replace_one"
    if family in ADD_REMOVE_FAMILIES:
        return "add_remove"
    raise ValueError(f"unknown neighbour family {family!r}; known: {', '.join(FAMILIES + ADD_REMOVE_FAMILIES)}")


def _directions(rng: np.random.Generator, count: int, d: int) -> np.ndarray:
    """``count`` random unit directions (rows)."""
    G = rng.standard_normal((count, d))
    return G / np.linalg.norm(G, axis=1, keepdims=True)


def _computed_norms(X: np.ndarray) -> np.ndarray:
    """Row norms as the problem's band routine computes them: squares added in column order, then sqrt
    (mechanisms/banded.py squares_by_row)."""
    squares = np.zeros(len(X))
    for k in range(X.shape[1]):
        squares += X[:, k] * X[:, k]
    return np.sqrt(squares)


def _edge_rows(rng: np.random.Generator, count: int, d: int, edge: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(``count`` rows edge * a random direction, half of them with a computed norm at most ``edge`` and half above
    it, one more at most ``edge``, one more above it). Directions times the edge land mostly at or below it (about
    1 % of computed norms above; none for d = 1): a row is put above by scaling it up an ulp at a time, below by
    scaling it down, until its computed norm is on its side."""
    rows = _directions(rng, count + 2, d) * edge
    up = np.zeros(count + 2, dtype=bool)
    up[rng.permutation(count)[:count // 2]] = True
    up[-1] = True
    for _ in range(64):  # a few ulps at most
        norms = _computed_norms(rows)
        wrong = np.flatnonzero(np.where(up, norms <= edge, norms > edge))
        if not len(wrong):
            break
        rows[wrong] *= np.where(up[wrong], 1 + 2.0**-52, 1 - 2.0**-53)[:, None]
    return rows[:count], rows[count], rows[count + 1]


def _spread_rows(rng: np.random.Generator, count: int, d: int) -> np.ndarray:
    """``count`` rows in random directions with norms uniform in [0.2, 0.45]: the band (1/2, 1] empty."""
    return _directions(rng, count, d) * rng.uniform(0.2, 0.45, size=(count, 1))


def _added_rows(family: str, n: int, d: int, m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(X: the n rows of D, the row D' adds) on the unit ball."""
    e = np.eye(d)
    X = np.zeros((n, d))
    k = int(0.6 * n)
    if family == "add_zeros":
        return X, np.zeros(d)
    if family == "add_unit":
        return X, e[0]
    if family == "add_sphere":
        X[:k, 0] = 0.01
        X[k:, 1] = 0.01
        return X, e[0]
    if family == "add_direction":
        X[:, 0] = 1.0
        return X, e[1]
    if family == "add_values":
        X[:k, 0] = 1.0
        X[k:, 1] = 1.0
        return X, e[0]
    if family == "add_tie":
        X[: n // 2, 0] = 1.0
        X[n // 2:, 1] = 1.0  # odd n: one e2 more, and the added e1 makes the two a tie
        return X, e[0]
    if family == "add_threshold":
        tau = 2.0 ** -m
        X[:k, 0] = tau
        X[k:, 1] = tau
        return X, e[0]
    if family == "add_random":
        rng = np.random.default_rng(seed)
        X = rng.standard_normal((n, d))
        X *= (rng.uniform(size=(n, 1)) ** (1 / d)) / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-300)
        new = rng.standard_normal(d)
        return X, new / np.linalg.norm(new)
    if family == "add_band_edge":
        X, _, above = _edge_rows(np.random.default_rng(seed), n, d, 2.0 ** -m)
        return X, above
    if family == "add_band_fill":
        rng = np.random.default_rng(seed)
        return _spread_rows(rng, n, d), 0.9 * _directions(rng, 1, d)[0]
    raise ValueError(f"unknown add/remove neighbour family {family!r}; known: {', '.join(ADD_REMOVE_FAMILIES)}")


def _rows(family: str, n: int, d: int, m: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(X without its last row, the last row in D, the last row in D') on the unit ball."""
    e = np.eye(d)
    X = np.zeros((n - 1, d))
    k = int(0.6 * n)
    if family == "swap_values":
        X[:k, 0] = 1.0
        X[k:, 1] = 1.0
        return X, e[1], e[0]
    if family == "tie":
        X[: (n - 1 + 1) // 2, 0] = 1.0  # ceil((n-1)/2) rows e1
        X[(n - 1 + 1) // 2:, 1] = 1.0
        if (n - 1) % 2:  # odd: one e1 too many; the moved row balances it
            return X, e[1], e[0]
        return X, e[0], e[1]
    if family == "swap_vectors":
        return X, e[0], e[1]
    if family == "grow":
        X[:, 0] = 1.0
        return X, e[0], e[1]
    if family == "scale":
        X[:k, 0] = 1.0
        X[k:, 1] = 1.0
        return X, e[0], np.zeros(d)
    if family == "new_direction":
        X[:, 0] = 1.0
        return X, np.zeros(d), e[1]
    if family == "l1":
        if d == 2:
            t = math.atan(0.5) / 2
            return X, np.array([math.cos(t), math.sin(t)]), np.array([math.sin(t), -math.cos(t)])
        signs = np.where(np.arange(d) % 2 == 0, 1.0, -1.0)
        return X, np.ones(d) / math.sqrt(d), signs / math.sqrt(d)
    if family == "sphere":
        X[:k, 0] = 0.01
        X[k:, 1] = 0.01
        return X, 0.01 * e[0], e[1]
    if family == "zeros":
        return X, np.zeros(d), e[0]
    if family == "threshold":
        tau = 2.0 ** -m
        X[:k, 0] = tau
        X[k:, 1] = tau
        return X, tau * e[1], e[0]
    if family == "dense":
        h, q = (n - 1) // 2, (n - 1) // 4
        X[:h] = 1 / math.sqrt(d)
        X[h:h + q, 0] = 1.0
        X[h + q:, 1] = 1.0
        return X, e[1], e[0]
    if family == "random":
        rng = np.random.default_rng(seed)
        X = rng.standard_normal((n - 1, d))
        X *= (rng.uniform(size=(n - 1, 1)) ** (1 / d)) / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-300)
        last, new = rng.standard_normal(d), rng.standard_normal(d)
        return X, last / np.linalg.norm(last), new / np.linalg.norm(new)
    if family == "band_edge":
        return _edge_rows(np.random.default_rng(seed), n - 1, d, 2.0 ** -m)
    if family == "band_fill":
        rng = np.random.default_rng(seed)
        X = _spread_rows(rng, n, d)
        return X[:-1], X[-1], 0.9 * _directions(rng, 1, d)[0]
    raise ValueError(f"unknown neighbour family {family!r}; known: {', '.join(FAMILIES)}")


@dataclass(frozen=True)
class PairSpec:
    """A point of the search space of neighbouring datasets."""

    family: str
    n: int
    d: int = 2
    radius: float = 1.0
    angle: float = 0.0  # rotation of the (e1, e2) plane
    m: int = 1  # threshold and band_edge families: rows at r 2^-m
    seed: int = 0  # random and band families (SEEDED)
    remove: bool = False  # add/remove families: D has n + 1 rows and D' is D minus its last row

    def __post_init__(self):
        unit = unit_of(self.family)  # a clear error for an unknown family
        if self.n < 1 or self.d < 2:
            raise ValueError(f"a neighbour pair needs n >= 1 and d >= 2, got n={self.n}, d={self.d}")
        if self.remove and unit != "add_remove":
            raise ValueError(f"remove=True is for the add/remove families ({', '.join(ADD_REMOVE_FAMILIES)}), "
                             f"not {self.family!r}")

    @property
    def unit(self) -> str:
        """The privacy unit of the pair: "replace_one" (equal n) or "add_remove" (n and n + 1 rows)."""
        return unit_of(self.family)

    def describe(self) -> str:
        extras = [f"r={self.radius:g}"] if self.radius != 1 else []
        extras += [f"rotated {math.degrees(self.angle):.1f} deg"] if self.angle else []
        extras += [f"{'edge' if 'band' in self.family else 'tau'}=r/2^{self.m}"] if self.family in EDGED else []
        extras += [f"seed={self.seed}"] if self.family in SEEDED else []
        if self.unit == "add_remove":
            extras.append(f"{self.n + 1} -> {self.n} rows" if self.remove else f"{self.n} -> {self.n + 1} rows")
        return f"{self.family}(n={self.n}, d={self.d}{''.join(', ' + x for x in extras)})"

    def build(self) -> "Pair":
        if self.unit == "add_remove":
            X, new = _added_rows(self.family, self.n, self.d, self.m, self.seed)
            D, Dp = X.copy(), np.vstack([X, new])
            if self.remove:
                D, Dp = Dp, D
        else:
            X, last, new = _rows(self.family, self.n, self.d, self.m, self.seed)
            D = np.vstack([X, last])
            Dp = np.vstack([X, new])
        if self.angle:
            c, s = math.cos(self.angle), math.sin(self.angle)
            R = np.eye(self.d)
            R[:2, :2] = [[c, -s], [s, c]]
            D, Dp = D @ R.T, Dp @ R.T
        # rows exactly on the sphere may round just outside it: renormalise those (never grow a row)
        for A in (D, Dp):
            norms = np.linalg.norm(A, axis=1)
            over = norms > 1
            A[over] /= norms[over, None]
        D, Dp = D * self.radius, Dp * self.radius
        return Pair(self, D, Dp)


@dataclass
class Pair:
    """Two neighbouring datasets (rows D and D': one row differing, or one row more or less) and their problems."""

    spec: PairSpec
    D: np.ndarray
    Dp: np.ndarray
    problems: tuple = field(init=False)

    def __post_init__(self):
        # the rows too, for what needs them (the estimators' whole path: dpcov/audited.py)
        self.problems = (CovProblem.from_rows(self.D, radius=self.spec.radius, rows=self.D),
                         CovProblem.from_rows(self.Dp, radius=self.spec.radius, rows=self.Dp))

    @property
    def unit(self) -> str:
        """"replace_one" (D and D' of equal n) or "add_remove" (one row more or less)."""
        return "replace_one" if len(self.D) == len(self.Dp) else "add_remove"

    def describe(self) -> str:
        if self.unit == "add_remove":
            big, verb = (self.Dp, "added") if len(self.Dp) > len(self.D) else (self.D, "removed")
            return f"{self.spec.describe()}: row {np.round(big[-1], 3).tolist()} {verb}"
        moved = np.flatnonzero(np.any(self.D != self.Dp, axis=1))
        i = int(moved[0]) if len(moved) else len(self.D) - 1
        return (f"{self.spec.describe()}: row {np.round(self.D[i], 3).tolist()} -> "
                f"{np.round(self.Dp[i], 3).tolist()}")

    @cached_property
    def reference(self) -> "Reference":
        return Reference.of(self.problems[0].sigma, self.problems[1].sigma)


def upper_triangle(matrix: np.ndarray) -> np.ndarray:
    """The entries on and above the diagonal, row by row (the statistics of the audits' pairs)."""
    return matrix[upper_indices(matrix.shape[0])]


@dataclass(frozen=True)
class Reference:
    """What the features compare a release with: Sigma(D), Sigma(D') and their spectra."""

    a: np.ndarray  # upper triangle of Sigma(D)
    b: np.ndarray  # of Sigma(D')
    change: np.ndarray  # Sigma(D') - Sigma(D), full matrix
    values_a: np.ndarray  # descending eigenvalues
    values_b: np.ndarray
    top_a: np.ndarray  # top eigenvector of Sigma(D)
    top_b: np.ndarray

    @classmethod
    def of(cls, sigma_a: np.ndarray, sigma_b: np.ndarray) -> "Reference":
        va, wa = np.linalg.eigh(sigma_a)
        vb, wb = np.linalg.eigh(sigma_b)
        return cls(upper_triangle(sigma_a), upper_triangle(sigma_b), sigma_b - sigma_a, va[::-1], vb[::-1],
                   wa[:, -1], wb[:, -1])


HAND_NAMES = ("gauss_llr", "laplace_llr", "laplace_low", "laplace_high", "log_dist_D", "log_dist_D'",
              "values_change", "values_laplace_llr", "trace", "top_score_change", "top_align_D",
              "top_align_D'", "top_value", "bottom_value")
_FLOOR = -745.0  # log of a distance of 0 (a release equal to Sigma exactly)


GRID = 2.0 ** -24  # releases are rounded to multiples of GRID r^2 before any feature (see ``quantize``)


def quantize(outs: list, radius: float) -> np.ndarray:
    """Releases (matrices, Spectral or released weights) as one array, rounded to a fixed grid (GRID r^2;
    weights: GRID), the same for both datasets.

    A floating-point release leaks through its low-order bits (Mironov 2012): Sigma(D') + noise is
    rounded to the ulp of Sigma(D')'s entries, Sigma(D) + noise = noise is not, and a classifier finds
    that perfectly. That leak is real but is not what a mechanism's analysis is about; rounding to a
    data-independent grid is post-processing, so every bound stays valid and the leak is gone."""
    if getattr(outs[0], "weights", None) is not None:
        return np.round(np.array([_model_numbers(o) for o in outs]) / GRID) * GRID
    q = GRID * radius**2
    return np.round(np.array([as_matrix(o) for o in outs]) / q) * q


def _model_numbers(release) -> np.ndarray:
    """A released model's numbers: its weights, and its own intercept where it has one (TukeyEM)."""
    weights = np.asarray(release.weights, float).ravel()
    intercept = getattr(release, "intercept", None)
    return weights if intercept is None else np.append(weights, float(intercept))


PRECISION_WINDOW = 1 / 8  # entries within r^2 / 8 of zero: a small sum takes the ulp of its larger operand


def precision_statistics(outs: list, radius: float) -> np.ndarray:
    """What a release's low bits say, before any rounding (``quantize`` removes them): per entry of the
    upper triangle (or per released weight), the exponent of the largest power of two dividing it
    (1100 for 0), the same inside the window |x| < r^2 / 8 (1100 outside: a windowed "not a multiple of
    2^j" event is a threshold on it), and its mantissa's trailing zero bits (53 for 0). A float statistic
    plus float noise lies on the grid of the statistic's ulp (Mironov 2012; Haney et al. 2022); a hardened
    release lies on one public grid 2^k whatever the data."""
    if getattr(outs[0], "weights", None) is not None:
        U = np.array([_model_numbers(o) for o in outs])
    else:
        S = np.array([as_matrix(o) for o in outs], dtype=float)
        U = S[:, *np.triu_indices(S.shape[1])]
    mantissa, exponent = np.frexp(U)
    integer = np.abs(mantissa * 2.0**53).astype(np.int64)  # the 53-bit mantissa, exactly
    zeros = np.log2(np.maximum(integer & -integer, 1)).astype(np.int64)  # its trailing zero bits
    zero = U == 0
    valuation = np.where(zero, 1100, exponent - 53 + zeros)
    windowed = np.where(np.abs(U) < PRECISION_WINDOW * radius**2, valuation, 1100)
    return np.column_stack([valuation, windowed, np.where(zero, 53, zeros)]).astype(float)


def precision_statistic_name(j: int, width: int) -> str:
    entry, kind = j % (width // 3), j // (width // 3)
    return ["largest power of two dividing entry {}", "largest power of two dividing entry {} within r^2/8 of 0",
            "trailing zero bits of entry {}'s mantissa"][kind].format(entry)


# a Spectral's or RidgeRelease's numbers (``quantize``), and a model's noise covariance (post-processing of them)
FEATURED_FIELDS = ("values", "vectors", "weights", "intercept", "noise_covariance")


def transcript(estimate, accountant) -> str:
    """Everything a release publishes besides the numbers that ``features`` reads, as one text: every ledger line
    (its text and its budget's repr), how the release ended (``accountant.released``: "ok" or a fallback's reason)
    and the output's kind (its type, and a dataclass output's other fields: a RidgeRelease's, or a Spectral's when
    ``release`` returns it factored). A private mechanism's transcript depends on the data through its noise only; a
    text that one dataset's releases give and the other's never do is an event of probability 0 on one side
    (issue 58)."""
    lines = [_ledger_line(what, budget) for what, budget in accountant.ledger]
    lines.append(f"released: {accountant.released}")
    if isinstance(estimate, np.ndarray):
        lines.append(_array_kind(estimate.dtype, estimate.shape))
    else:
        extra = [f"{f.name}={getattr(estimate, f.name)!r}" for f in fields(estimate)
                 if f.name not in FEATURED_FIELDS] if is_dataclass(estimate) else []
        lines.append(f"output: {type(estimate).__name__}" + "".join(f" {x}" for x in extra))
    return "\n".join(lines)


@lru_cache(maxsize=4096)
def _ledger_line(what: str, budget) -> str:
    """A ledger line's text (formatted once per distinct line: the audit writes millions of transcripts)."""
    return f"ledger: {what} | {budget!r}"


@lru_cache(maxsize=256)
def _array_kind(dtype: np.dtype, shape: tuple) -> str:
    return f"output: ndarray {dtype} {shape}"


def features(reference: Reference, outs: np.ndarray, entries: bool) -> np.ndarray:
    """One row per release (``quantize``'s array: matrices, or weights): the hand-picked statistics (HAND_NAMES, each the
    likelihood ratio or a symptom of one kind of mistake), then basis-free features for a learned
    attack: the sorted eigenvalues, |<v_i, e_j>| of the top three eigenvectors and, at small d
    (``entries``), the entries of the upper triangle."""
    if np.ndim(outs) == 2:  # a released model's weights (output perturbation), not a matrix
        W = np.array(outs, dtype=float)
        return np.nan_to_num(np.column_stack([W, np.linalg.norm(W, axis=1)]), posinf=1e300, neginf=-1e300)
    S = np.array(outs, dtype=float)  # (runs, d, d)
    d = S.shape[1]
    rows, cols = np.triu_indices(d)
    U = S[:, rows, cols]
    r = reference
    change = r.b - r.a
    mid = (r.a + r.b) / 2
    moved = np.abs(change) > 0
    Z = (U - mid)[:, moved] / change[moved] if np.any(moved) else np.zeros((len(S), 1))
    values, vectors = np.linalg.eigh(S)
    values, vectors = values[:, ::-1], vectors[:, :, ::-1]
    dv = r.values_b - r.values_a
    top = vectors[:, :, 0]
    scale = max(float(np.linalg.norm(r.change)), 1e-300)
    with np.errstate(divide="ignore"):
        dist_a = np.log(np.linalg.norm(U - r.a, axis=1))
        dist_b = np.log(np.linalg.norm(U - r.b, axis=1))
    hand = np.column_stack([
        (U - mid) @ change,  # Gaussian noise on the upper triangle: the likelihood ratio
        np.sum(np.abs(U - r.a) - np.abs(U - r.b), axis=1),  # Laplace noise on the upper triangle: the ratio
        Z.min(axis=1), Z.max(axis=1),  # the corners of additive Laplace noise (extreme regions)
        np.maximum(dist_a, _FLOOR), np.maximum(dist_b, _FLOOR),  # the noise's scale (0: a release equal to Sigma)
        values @ (dv if np.any(dv) else np.eye(d)[0]),  # eigenvalues along their change
        np.sum(np.abs(values - r.values_a) - np.abs(values - r.values_b), axis=1),  # Laplace eigenvalues
        np.trace(S, axis1=1, axis2=2),
        np.einsum("ri,ij,rj->r", top, r.change, top) / scale,  # an exponential mechanism's score change
        (top @ r.top_a) ** 2, (top @ r.top_b) ** 2,
        values[:, 0], values[:, -1],
    ])
    parts = [hand, values, np.abs(vectors[:, :, :3]).transpose(0, 2, 1).reshape(len(S), -1)]
    if entries:
        parts.append(U)
    return np.nan_to_num(np.column_stack(parts), nan=0.0, posinf=1e300, neginf=-1e300)
