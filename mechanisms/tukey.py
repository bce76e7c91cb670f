"""TukeyEM (Amin, Joseph, Ribero & Vassilvitskii 2023, "Easy differentially private linear regression", Alg. 1): no
bound on the rows at all. Ordinary least squares on m disjoint parts of the rows gives m models; the release is a
point of high (approximate) Tukey depth among them, drawn by an exponential mechanism restricted to the deep region,
behind a propose-test-release check. The proof below is this module's own (the paper's lemma has other constants);
docs/privacy.md repeats it.

Approximate Tukey depth of y among models b_1..b_m (coordinate-wise; the paper's Def. 3):
    T(y) = min_j min(#{i : b_ij <= y_j}, #{i : b_ij >= y_j}),
so {T >= i} is the box prod_j [s_j(i), s_j(m + 1 - i)] (s_j: column j sorted), of volume V_i, i = 1..K = floor(m/2).
Neighbours (one row replaced) change one model, so T moves by at most 1 everywhere and
    V_{i+1}(D) <= V_i(D') <= V_{i-1}(D).                                                        (*)

Restricted EM at depth t: density p_D(y) proportional to exp(c T_D(y)) on {T_D >= t}. For neighbours D, D' and any
event E, with q = P_D(T_D >= t > T_D') and q' the same with D, D' swapped:
    P_D(E) <= e^{2c} / (1 - q') P_D'(E) + q,
as weights differ by e^c where both are positive and Z_D' (1 - q') <= e^c Z_D. Both q and q' are at most
    B(D) = min_{g >= 0} e^{-c g} V_{t-1}(D) / V_{t+g+1}(D)
(q <= e^{ct} V_t / Z_D and Z_D >= e^{c(t+g)} V_{t+g}; q' through (*)). So B(D) <= beta makes D *safe*: the restricted
EM is (2c + log(1 / (1 - beta)), beta)-indistinguishable on D and each neighbour.

Propose-test-release. C(D, k): some g >= 0 has e^{-c g} V_{t-k-1}(D) / V_{t+k+g+1}(D) <= beta (k = 0..t-2). By (*),
C(D, k) implies C(D', k - 1) for every neighbour, so k^(D) = max{k : C(D, k)} (-1 if none) has sensitivity 1, and
k^(D) >= 0 makes D safe. Release k^ + Lap(1/eps1); continue only if above T = log(1/(2 delta)) / eps1 (an unsafe D,
k^ = -1, passes with probability < delta). The whole: (eps1 + eps2, delta)-DP with eps2 = 2c + log(1/(1 - delta)) and
beta = delta; here eps1 = eps2 = eps / 2.

Parts (``part_labels``): replace-one, m near-equal parts of a uniformly random permutation (the changed row keeps its
position: one part changes); add/remove (native: m from the released count ñ, every row), a keyed hash of each row's
bytes, so an added row joins one part and no other row moves. Numerics are idealized (float volumes, a float Laplace
and uniform draws).
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import numpy as np

from .privacy import ApproxDP, Accountant
from .problem import CovProblem
from .regression import RidgeRelease
from .transcript import released as _step

MIN_ROWS_PER_MODEL = 2  # rows per model as a multiple of its coefficients (features + intercept): below, OLS overfits


@dataclass(frozen=True)
class TukeyPlan:
    """TukeyEM's public parameters, from public facts (the row count, d, the budget) only."""

    models: int  # m
    depth: int  # t, the restricted region's depth
    eps_test: float  # eps1
    eps_sample: float  # eps2
    delta: float
    exponent: float  # c of the restricted EM

    @property
    def threshold(self) -> float:
        """T of the test: an unsafe dataset passes with probability below delta."""
        return math.log(1 / (2 * self.delta)) / self.eps_test


def fewest_models(budget: ApproxDP) -> int:
    """The smallest m at which the test can pass at all: t - 2 (the largest k^) above T, with t = m // 4."""
    threshold = math.log(1 / (2 * budget.delta)) / (budget.eps / 2)
    return 4 * (math.floor(threshold) + 3)


def plan(n: int, d: int, budget: ApproxDP, models: int | str = "auto") -> TukeyPlan:
    """m models of d coefficients (features + intercept) from n rows; t = m // 4 (the paper's choice). ``models``:
    an int, or "auto": as many as n allows at MIN_ROWS_PER_MODEL * d rows each. A clear error where n is too small
    for the test ever to pass (it says how many rows it needs)."""
    if not isinstance(budget, ApproxDP):
        raise TypeError(f"TukeyEM is (eps, delta)-DP: its budget must be ApproxDP, got {budget!r}")
    fewest = fewest_models(budget)
    if models == "auto":
        models = n // (MIN_ROWS_PER_MODEL * d)
        if models < fewest:
            raise ValueError(f"TukeyEM needs at least {fewest} models of {MIN_ROWS_PER_MODEL * d} rows each, "
                             f"{fewest * MIN_ROWS_PER_MODEL * d} rows, for its test to pass at {budget} with d = {d} "
                             f"coefficients; it has {n} rows (under add/remove: the released count). Use a regression line with bounds (adassp) or more "
                             f"rows/budget")
    if isinstance(models, bool) or not isinstance(models, (int, np.integer)) or models < 8:
        raise ValueError(f"models must be 'auto' or an integer >= 8, got {models!r}")
    if models * d > n:
        raise ValueError(f"TukeyEM with {models} models of {d} coefficients needs at least {models * d} rows (d per "
                         f"model), got {n}")
    eps_test = eps_sample = budget.eps / 2
    exponent = (eps_sample - math.log1p(budget.delta / (1 - budget.delta))) / 2  # eps2 = 2c + log(1 / (1 - delta))
    if exponent <= 0:
        raise ValueError(f"TukeyEM needs eps / 2 > log(1 / (1 - delta)), got {budget}")
    return TukeyPlan(int(models), int(models) // 4, eps_test, eps_sample, budget.delta, exponent)


def part_labels(rows: np.ndarray, models: int, rng: np.random.Generator, by_content: bool) -> np.ndarray:
    """Each row's part, 0..m-1. Replace-one: near-equal parts of a uniformly random permutation (the changed row keeps
    its position, so one part changes). Add/remove (``by_content``): a keyed hash of the row's bytes (the key from the
    generator), so every other row keeps its part whichever rows are added or removed, and the added row joins one."""
    n = len(rows)
    if not by_content:
        labels = np.empty(n, dtype=np.int64)
        labels[rng.permutation(n)] = np.arange(n) * models // n
        return labels
    key = rng.bytes(16)
    canonical = np.ascontiguousarray(rows + 0.0)  # -0.0 and 0.0 hash alike
    return np.array([int.from_bytes(hashlib.blake2b(row.tobytes(), key=key, digest_size=8).digest(), "little") % models
                     for row in canonical], dtype=np.int64)


PART_CHUNK = 2**22  # rows x coefficients^2 per batched solve (memory), a public constant


def part_models(rows: np.ndarray, target: int, labels: np.ndarray, models: int) -> np.ndarray:
    """(m, d) least-squares models [weights..., intercept] of column ``target`` on the others plus a constant, one per
    part: pinv(A^T A) A^T y, the minimum-norm solution, by one routine for every part whatever the row count (so a
    model is a function of its part alone, never of how many rows the others have), batched over parts in chunks of
    at most PART_CHUNK. A part that is empty, overflows or whose solve fails gets the zero model (public)."""
    n = len(rows)
    order = np.argsort(labels, kind="stable")
    with np.errstate(all="ignore"):
        features = np.column_stack([np.delete(rows, target, axis=1), np.ones(n)])[order]
        y = rows[order, target]
        d = features.shape[1]
        counts = np.bincount(labels[order], minlength=models)
        ends = np.cumsum(counts)
        starts = ends - counts
        out = np.zeros((models, d))
        full = np.flatnonzero(counts)
        chunk, first = [], 0
        for i, j in enumerate(full):
            chunk.append(j)
            if ends[j] - starts[full[first]] >= PART_CHUNK // (d * d) or i == len(full) - 1:
                _solve_parts(features, y, starts, ends, np.array(chunk), out)
                chunk, first = [], i + 1
    out[~np.all(np.isfinite(out), axis=1)] = 0.0
    return out


def _solve_parts(features, y, starts, ends, parts, out) -> None:
    """out[j] = pinv(A_j^T A_j) A_j^T y_j for the contiguous parts ``parts``; each matrix on its own where the batch
    fails (numpy's stacked pinv is the same routine per matrix, so a part's model never depends on its batch)."""
    lo, hi = starts[parts[0]], ends[parts[-1]]
    block, labels = features[lo:hi], y[lo:hi]
    offsets = starts[parts] - lo
    grams = np.add.reduceat(block[:, :, None] * block[:, None, :], offsets, axis=0)
    moments = np.add.reduceat(block * labels[:, None], offsets, axis=0)
    finite = np.all(np.isfinite(grams), axis=(1, 2)) & np.all(np.isfinite(moments), axis=1)
    parts, grams, moments = parts[finite], grams[finite], moments[finite]  # an overflowing part: its zero model
    try:
        out[parts] = np.einsum("mij,mj->mi", np.linalg.pinv(grams, hermitian=True), moments)
    except np.linalg.LinAlgError:  # each on its own, by the same arithmetic as the batch (the same bits)
        for j, gram, moment in zip(parts, grams, moments):
            try:
                out[j] = np.einsum("ij,j->i", np.linalg.pinv(gram, hermitian=True), moment)
            except np.linalg.LinAlgError:
                out[j] = 0.0


def log_volumes(columns: np.ndarray) -> np.ndarray:
    """log V_i for i = 0..K+1 (index = depth), from the models' sorted columns (d, m): V_0 = inf (depth >= 0 is
    everything), V_{K+1} = 0; -inf where a box is flat."""
    m = columns.shape[1]
    depth_max = m // 2
    with np.errstate(all="ignore"):  # an overflowing width is inf: the test then fails (C needs finite ratios)
        widths = columns[:, ::-1][:, :depth_max] - columns[:, :depth_max]  # depth i = 1..K: s(m + 1 - i) - s(i)
        inner = np.log(np.maximum(widths, 0.0)).sum(axis=0)
    return np.concatenate([[np.inf], inner, [-np.inf]])


def distance_to_unsafe(log_v: np.ndarray, depth: int, exponent: float, log_beta: float) -> int:
    """k^ = max{k in 0..t-2 : some g >= 0 has -c g + log V_{t-k-1} - log V_{t+k+g+1} <= log beta}, -1 if none."""
    depth_max = len(log_v) - 2
    best = -1
    for k in range(depth - 1):
        deep = log_v[depth + k + 1:depth_max + 2]  # g = 0, 1, ..
        with np.errstate(invalid="ignore"):
            score = log_v[depth - k - 1] - deep - exponent * np.arange(len(deep))
        if not np.any(score <= log_beta):  # C(D, k) fails, and so for every larger k (monotone)
            break
        best = k
    return best


def depth_of(point: np.ndarray, columns: np.ndarray) -> int:
    """T(point) among the models whose sorted columns are ``columns`` (d, m)."""
    below = np.array([np.searchsorted(c, p, side="right") for c, p in zip(columns, point)])
    above = np.array([len(c) - np.searchsorted(c, p, side="left") for c, p in zip(columns, point)])
    return int(np.minimum(below, above).min())


def sample_restricted(columns: np.ndarray, log_v: np.ndarray, depth: int, exponent: float,
                      rng: np.random.Generator) -> np.ndarray | None:
    """A draw from density ~ exp(c T(y)) on {T >= t}: a depth i >= t with weight e^{c i} (V_i - V_{i+1}), then a
    uniform point of the shell {T = i} = box_i minus box_{i+1}, split by the first coordinate outside the inner box.
    None where the region has no volume (only on data the test calls unsafe)."""
    depth_max = len(log_v) - 2
    levels = np.arange(depth, depth_max + 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        shell = log_v[levels] + np.log1p(-np.exp(log_v[levels + 1] - log_v[levels]))
    weights = exponent * levels + shell
    if not np.any(np.isfinite(weights)):
        return None
    level = int(levels[_gumbel_max(weights, rng)])
    with np.errstate(all="ignore"):
        outer = columns[:, level - 1], columns[:, -level]
        if level + 1 <= depth_max:
            inner = columns[:, level], columns[:, -(level + 1)]
        else:  # the innermost box is flat
            mid = outer[0] / 2 + outer[1] / 2
            inner = mid, mid
        out_w, in_w = outer[1] - outer[0], inner[1] - inner[0]
        if not (np.all(np.isfinite(out_w)) and np.all(np.isfinite(in_w))):
            return None  # an overflowing box: V_{t-1} = inf, so the test called these data unsafe (delta's event)
        log_in, log_out = np.log(in_w), np.log(out_w)
        before = np.concatenate([[0.0], np.cumsum(log_in)[:-1]])  # inner widths of coordinates < j
        after = np.concatenate([np.cumsum(log_out[::-1])[::-1][1:], [0.0]])  # outer widths of coordinates > j
        pieces = before + np.log(np.maximum(out_w - in_w, 0.0)) + after
    j = _gumbel_max(pieces, rng)
    point = np.where(np.arange(len(out_w)) < j, rng.uniform(inner[0], inner[1]), rng.uniform(outer[0], outer[1]))
    gap_left, gap_right = inner[0][j] - outer[0][j], outer[1][j] - inner[1][j]
    u = rng.uniform(0.0, gap_left + gap_right)
    point[j] = outer[0][j] + u if u < gap_left else inner[1][j] + (u - gap_left)
    return point


def _gumbel_max(log_weights: np.ndarray, rng: np.random.Generator) -> int:
    """An index drawn with probability ~ exp(log_weights) (-inf: never)."""
    noisy = np.where(np.isfinite(log_weights), log_weights + rng.gumbel(size=len(log_weights)), -np.inf)
    return int(np.argmax(noisy))


def tukey_em(problem: CovProblem, accountant: Accountant, rng: np.random.Generator, *, models="auto"):
    """TukeyEM (Amin et al. 2023, Alg. 1) on the raw rows ``problem.rows``, predicting the ridge task's target
    column from the others with an intercept. (eps, delta)-DP for any rows (no bound): eps/2 to the test, eps/2 to
    the restricted exponential mechanism (the proof: this module's docstring). Returns a ``RidgeRelease`` with its
    intercept; where the test fails, the documented "no output": zero weights and intercept, ``passed`` False."""
    if problem.ridge is None:
        raise ValueError("tukey needs a ridge task: a dataset with a regression target (the config key ridge_alpha)")
    if problem.rows is None:
        raise ValueError("tukey needs the raw rows (CovProblem.rows): build the problem with rows=")
    rows = np.asarray(problem.rows, dtype=float)
    if not np.all(np.isfinite(rows)):
        raise ValueError("tukey: the rows contain NaN or inf")
    budget: ApproxDP = accountant.total
    p = plan(problem.n, problem.d, budget, models)
    # one line: propose-test-release composes as a whole (eps1 + eps2, delta), not step by step (docstring)
    accountant.spend(budget, f"TukeyEM: test (eps {p.eps_test:.4g}, Laplace) + restricted exponential mechanism "
                             f"(eps {p.eps_sample:.4g}; {p.models} models, depth >= {p.depth})")
    # Step 1: m models on disjoint parts
    labels = part_labels(rows, p.models, rng, by_content=problem.neighbours.add_remove)
    columns = np.sort(part_models(rows, problem.ridge.target, labels, p.models).T, axis=1)
    log_v = log_volumes(columns)
    # Step 2: propose-test-release on the distance to an unsafe dataset (sensitivity 1)
    k_hat = distance_to_unsafe(log_v, p.depth, p.exponent, math.log(p.delta))
    noisy = float(_step("laplace", "TukeyEM: distance to unsafe", float(k_hat),
                        k_hat + rng.laplace(scale=1 / p.eps_test), sensitivity=1.0, norm="l1",
                        scale=1 / p.eps_test, threshold=p.threshold))
    d = problem.d
    if noisy <= p.threshold:
        return RidgeRelease(np.zeros(d - 1), intercept=0.0, passed=False)
    # Step 3: the restricted exponential mechanism on {T >= t}
    point = sample_restricted(columns, log_v, p.depth, p.exponent, rng)
    point = _step("sampler", "TukeyEM: a deep model (restricted exponential mechanism)",
                  lambda out: np.array([depth_of(out, columns) if out is not None else 0.0]), point,
                  sensitivity=1.0, norm="linf", models=p.models, depth=p.depth, exponent=p.exponent)
    if point is None:
        return RidgeRelease(np.zeros(d - 1), intercept=0.0, passed=False)
    return RidgeRelease(np.asarray(point[:-1]), intercept=float(point[-1]), passed=True)
