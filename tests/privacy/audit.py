"""Black-box privacy audits of the registered mechanisms (issue #9).

Method (a distinguishing-test lower bound on epsilon, as in Jagielski et al. 2020 / Nasr et al. 2021):

1. Neighbouring datasets X, X' (replace-one: same n, one row changed), chosen per mechanism so that
   the change is as large as the mechanism's sensitivity allows (``neighbours``).
2. A scalar statistic of the output: the Frobenius projection <Sigma_hat, D> of the released matrix on
   the direction D = Sigma(X') - Sigma(X) of the change (for the rows e1 -> e2 this is
   Sigma_hat_22 - Sigma_hat_11, the sufficient statistic of GaussCov's likelihood ratio), or a weight
   coordinate for the ridge model of output perturbation.
3. T runs on each dataset, every run with its own Generator spawned from one seeded SeedSequence.
4. Threshold: the first half of both samples picks the event E = {s > t} or {s <= t} and the order
   (X vs X' or X' vs X) with the largest bound computed on that half; the held-out second half then
   gives one-sided Clopper-Pearson bounds, each at level alpha/2 (union bound: confidence 1 - alpha):
       eps_lb = ln((p1_lower - delta) / p0_upper),
   p1 = P[M(A) in E], p0 = P[M(B) in E] for the chosen order (A, B). If the mechanism is (eps, delta)-DP,
   p1 <= e^eps p0 + delta, so eps_lb <= eps except with probability alpha.

The claim checked against eps_lb is the mechanism's own guarantee at the audited budget, converted to
(eps, delta): pure eps-DP -> (eps, 0); rho-zCDP -> ``ZCDP(rho).to_approx_dp(delta)`` (the project's
conversion); (eps, delta)-DP -> itself.

``python tests/privacy/audit.py [T]`` prints the markdown table of audited bounds for every mechanism.
"""
from __future__ import annotations

import contextlib
import functools
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
from scipy.stats import beta as beta_dist

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mechanisms import stable as stable_module  # noqa: E402
from mechanisms import thresholding  # noqa: E402
from mechanisms.privacy import ZCDP, ApproxDP, PureDP  # noqa: E402
from mechanisms.problem import CovProblem  # noqa: E402
from mechanisms.registry import MECHANISMS, release  # noqa: E402
from mechanisms.regression import RidgeRelease, RidgeTask  # noqa: E402
from mechanisms.spectral import as_matrix  # noqa: E402

ALPHA = 0.05  # 1 - confidence of every audited bound
ZCDP_DELTA = 1e-5  # delta at which zCDP claims are converted to (eps, delta)
DEFAULT_BUDGETS = {ZCDP: ZCDP(0.5), PureDP: PureDP(1.0), ApproxDP: ApproxDP(1.0, 1e-5)}
# Mechanism options needed to run at all (clip threshold tau = r: nothing is clipped, the worst case).
OPTIONS = {"clip_gauss": {"tau": 1.0}, "clip_separate": {"tau": 1.0}, "stable_gsampling": {"on_fail": "zero"}}
# Per-run cost: cheap ones get the large T in the fast tests.
SLOW_MECHANISMS = {"adaptive", "adaptive_lap", "emcov", "emcov_pure", "itu", "ad", "kt"}


# ---------------------------------------------------------------------------------------------------
# Confidence bounds and the threshold choice


def cp_lower(k: int, n: int, level: float) -> float:
    """One-sided Clopper-Pearson lower bound: P[p < bound] <= level."""
    return 0.0 if k <= 0 else float(beta_dist.ppf(level, k, n - k + 1))


def cp_upper(k: int, n: int, level: float) -> float:
    """One-sided Clopper-Pearson upper bound: P[p > bound] <= level."""
    return 1.0 if k >= n else float(beta_dist.ppf(1 - level, k + 1, n - k))


def eps_from_counts(k1, n1, k0, n0, delta: float, alpha: float):
    """ln((p1_lower - delta) / p0_upper) with one-sided CP bounds at alpha/2 each (vectorised);
    -inf where p1_lower <= delta."""
    k1, k0 = np.asarray(k1), np.asarray(k0)
    lower = np.where(k1 > 0, beta_dist.ppf(alpha / 2, np.maximum(k1, 1), n1 - k1 + 1), 0.0)
    upper = np.where(k0 < n0, beta_dist.ppf(1 - alpha / 2, k0 + 1, np.maximum(n0 - k0, 1)), 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(lower > delta, np.log(np.maximum(lower - delta, 1e-300) / upper), -np.inf)


@dataclass(frozen=True)
class Event:
    """E = {sign * s > sign * t} (sign +1: upper tail; -1: s < t), with P[M(first) in E] the numerator;
    ``swap`` means first = X' (the second dataset)."""

    sign: int
    threshold: float
    swap: bool

    def count(self, s: np.ndarray) -> int:
        return int(np.sum(self.sign * s > self.sign * self.threshold))


def _counts_above(sorted_s: np.ndarray, t: np.ndarray, sign: int) -> np.ndarray:
    if sign > 0:
        return len(sorted_s) - np.searchsorted(sorted_s, t, side="right")
    return np.searchsorted(sorted_s, t, side="left")


def choose_event(s0: np.ndarray, s1: np.ndarray, delta: float, alpha: float,
                 candidates: int = 400) -> tuple[Event, float]:
    """The event with the largest bound on (s0, s1): both tails, both orders, thresholds at the
    quantiles of the pooled sample (plus just below/above every extreme, for point masses)."""
    pooled = np.concatenate([s0, s1])
    grid = np.unique(np.concatenate([np.quantile(pooled, np.linspace(0, 1, candidates)), np.unique(pooled)[:50],
                                     np.unique(pooled)[-50:]]))
    sorted0, sorted1 = np.sort(s0), np.sort(s1)
    best, best_eps = Event(1, float(grid[0]), False), -np.inf
    for sign in (1, -1):
        c0, c1 = _counts_above(sorted0, grid, sign), _counts_above(sorted1, grid, sign)
        for swap, (num, den, nn, nd) in ((False, (c0, c1, len(s0), len(s1))), (True, (c1, c0, len(s1), len(s0)))):
            eps = eps_from_counts(num, nn, den, nd, delta, alpha)
            i = int(np.argmax(eps))
            if eps[i] > best_eps:
                best, best_eps = Event(sign, float(grid[i]), swap), float(eps[i])
    return best, best_eps


@dataclass
class AuditResult:
    eps_lb: float  # max(0, ln((p1_lower - delta) / p0_upper)) on the held-out half
    raw: float  # the bound before clipping at 0 (-inf when p1_lower <= delta)
    event: Event
    counts: tuple[int, int, int]  # k1, k0, held-out runs per dataset
    T: int


def epsilon_lower_bound(s0: np.ndarray, s1: np.ndarray, delta: float, alpha: float = ALPHA) -> AuditResult:
    """Event chosen on the first half of each sample, eps bound computed on the second half."""
    s0, s1 = np.asarray(s0, float), np.asarray(s1, float)
    h0, h1 = len(s0) // 2, len(s1) // 2
    event, _ = choose_event(s0[:h0], s1[:h1], delta, alpha)
    test0, test1 = s0[h0:], s1[h1:]
    first, second = (test1, test0) if event.swap else (test0, test1)
    k1, k0 = event.count(first), event.count(second)
    raw = float(eps_from_counts(k1, len(first), k0, len(second), delta, alpha))
    return AuditResult(max(raw, 0.0), raw, event, (k1, k0, len(first)), len(s0))


# ---------------------------------------------------------------------------------------------------
# Neighbouring datasets and statistics


@dataclass
class Neighbours:
    """Two datasets differing in one row, and the scalar statistic of a mechanism's output."""

    problems: tuple[CovProblem, CovProblem]
    statistic: Callable[[object], float]
    description: str
    options: dict = field(default_factory=dict)


def _projection(direction: np.ndarray) -> Callable[[object], float]:
    direction = direction / np.linalg.norm(direction)

    def statistic(out) -> float:
        return float(np.sum(as_matrix(out) * direction))
    return statistic


def covariance_neighbours(pair: str = "swap", n: int = 10, d: int = 2) -> Neighbours:
    """n - 1 zero rows and one row that is e1 in X and, in X', e2 ("swap": Sigma changes by
    (e2 e2^T - e1 e1^T)/n, the largest l2 change of the upper triangle, sqrt(2)/n) or 0 ("remove":
    a row at a new direction vs no row; l2 change 1/n). Statistic: <Sigma_hat, Sigma' - Sigma>_F."""
    X = np.zeros((n, d))
    X[-1, 0] = 1.0
    Xp = np.zeros((n, d))
    if pair == "swap":
        Xp[-1, 1] = 1.0
    elif pair != "remove":
        raise ValueError(f"pair must be 'swap' or 'remove', got {pair!r}")
    P, Pp = CovProblem.from_rows(X), CovProblem.from_rows(Xp)
    return Neighbours((P, Pp), _projection(Pp.sigma - P.sigma), f"{pair}: n={n}, d={d}, row e1 -> "
                      + ("e2" if pair == "swap" else "0"))


def ridge_neighbours(n: int = 10, alpha: float = 1.0) -> Neighbours:
    """Output perturbation: d = 2, column 1 predicted from column 0 (ridge alpha), n - 1 zero rows
    and one row (c, c) vs (c, -c), c = 1/sqrt(2): the weight flips sign, w = +-1/(1 + 4 n alpha).
    Statistic: the weight."""
    c = 1 / math.sqrt(2)
    task = RidgeTask(target=1, alpha=alpha)
    X, Xp = np.zeros((n, 2)), np.zeros((n, 2))
    X[-1], Xp[-1] = (c, c), (c, -c)
    problems = CovProblem.from_rows(X, ridge=task), CovProblem.from_rows(Xp, ridge=task)

    def statistic(out: RidgeRelease) -> float:
        return float(out.weights[0])
    return Neighbours(problems, statistic, f"ridge: n={n}, alpha={alpha:g}, row (c, c) -> (c, -c)")


def stable_neighbours(n: int = 300_000, d: int = 2, seed: int = 0) -> Neighbours:
    """Stable + Gaussian sampling (no norm bound, needs raw rows): n - 1 standard Gaussian rows and
    one row at 3 e1 vs 3 e2 (a typical row moved to a new direction; norms within the safe range).
    The CovProblem's clipped rows are the rows scaled into the unit ball (unused by the mechanism)."""
    rng = np.random.default_rng(seed)
    rows = rng.standard_normal((n, d))
    rows_p = rows.copy()
    rows[-1], rows_p[-1] = 3 * np.eye(d)[0], 3 * np.eye(d)[1]
    scale = max(np.linalg.norm(rows, axis=1).max(), np.linalg.norm(rows_p, axis=1).max())
    P = CovProblem.from_rows(rows / scale, rows=rows)
    Pp = CovProblem.from_rows(rows_p / scale, rows=rows_p)
    direction = np.outer(rows_p[-1], rows_p[-1]) - np.outer(rows[-1], rows[-1])
    return Neighbours((P, Pp), _projection(direction), f"stable: n={n}, d={d}, Gaussian rows, 3e1 -> 3e2",
                      {"on_fail": "zero"})


def neighbours_for(name: str, pair: str = "swap") -> Neighbours:
    if name == "output_perturbation":
        return ridge_neighbours()
    if name == "stable_gsampling":
        return stable_neighbours()
    return covariance_neighbours(pair)


# ---------------------------------------------------------------------------------------------------
# Running a mechanism


@contextlib.contextmanager
def fast_calibration():
    """Memoise the analytic Gaussian calibration (a deterministic root-find that dominates the cost of
    dp_threshold / gauss_approx / ldp_threshold at small d) and Alg 3 of the stable estimator (a
    deterministic function of the rows): the released distribution is unchanged."""
    original_sigma = thresholding.analytic_gaussian_sigma
    original_stable = stable_module.stable_covariance
    stable_cache: dict = {}

    def cached_stable(X, L0, k):
        key = (id(X), X.shape, float(L0), int(k))
        if key not in stable_cache:
            stable_cache[key] = (X, original_stable(X, L0, k))  # keep X alive so id(X) stays unique
        return stable_cache[key][1]

    thresholding.analytic_gaussian_sigma = functools.lru_cache(maxsize=64)(original_sigma)
    stable_module.stable_covariance = cached_stable
    try:
        yield
    finally:
        thresholding.analytic_gaussian_sigma = original_sigma
        stable_module.stable_covariance = original_stable


def registry_runner(name: str, budget, options: dict | None = None) -> Callable:
    """run(problem, rng) -> output of ``release`` (unclamped: the clamp is post-processing, and the raw
    estimate carries at least as much information)."""
    options = {**OPTIONS.get(name, {}), **(options or {})}

    def run(problem, rng):
        out, _ = release(name, problem, budget, rng, options=options or None, clamp=False)
        return out
    return run


def sample_statistics(run: Callable, neighbours: Neighbours, T: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """T runs on each dataset; run i on dataset j uses its own Generator, child (j, i) of
    SeedSequence(seed)."""
    children = np.random.SeedSequence(seed).spawn(2 * T)
    samples = []
    with fast_calibration():
        for j, problem in enumerate(neighbours.problems):
            samples.append(np.array([neighbours.statistic(run(problem, np.random.default_rng(children[j * T + i])))
                                     for i in range(T)]))
    return samples[0], samples[1]


def claimed(budget, delta: float = ZCDP_DELTA) -> ApproxDP | PureDP:
    """The (eps, delta) guarantee of ``budget``: zCDP converted at ``delta``."""
    if isinstance(budget, ZCDP):
        return budget.to_approx_dp(delta)
    return budget


def claimed_pair(budget, delta: float = ZCDP_DELTA) -> tuple[float, float]:
    c = claimed(budget, delta)
    return (c.eps, 0.0) if isinstance(c, PureDP) else (c.eps, c.delta)


@dataclass
class MechanismAudit:
    name: str
    notion: str
    budget: object
    claim: tuple[float, float]
    result: AuditResult
    neighbours: str
    seconds: float


def audit_run(run: Callable, neighbours: Neighbours, budget, T: int, seed: int = 0,
              delta: float = ZCDP_DELTA, alpha: float = ALPHA) -> tuple[tuple[float, float], AuditResult]:
    """Audit an arbitrary ``run(problem, rng)`` claiming ``budget``: (claimed (eps, delta), result)."""
    claim = claimed_pair(budget, delta)
    s0, s1 = sample_statistics(run, neighbours, T, seed)
    return claim, epsilon_lower_bound(s0, s1, claim[1], alpha)


def audit_mechanism(name: str, T: int, seed: int = 0, pair: str = "swap", budget=None,
                    alpha: float = ALPHA) -> MechanismAudit:
    mechanism = MECHANISMS[name]
    budget = budget or DEFAULT_BUDGETS[mechanism.notion]
    neighbours = neighbours_for(name, pair)
    start = time.perf_counter()
    claim, result = audit_run(registry_runner(name, budget, neighbours.options), neighbours, budget, T,
                              seed, alpha=alpha)
    return MechanismAudit(name, mechanism.notion.__name__, budget, claim, result, neighbours.description,
                          time.perf_counter() - start)


def markdown_table(rows: list[list[MechanismAudit]]) -> str:
    """One line per mechanism; one column of audited bounds per neighbouring pair (max in bold)."""
    lines = ["| mechanism | notion | budget | claimed (ε, δ) | ε_lb, e1 → e2 | ε_lb, e1 → 0 | T per dataset | time (s) |",
             "|---|---|---|---|---|---|---|---|"]
    for audits in rows:
        a = audits[0]
        eps, delta = a.claim
        bounds = [f"{x.result.eps_lb:.3f}" for x in audits]
        if len(audits) == 1:  # a mechanism-specific pair (ridge model, stable estimator)
            bounds = [f"{bounds[0]} ({a.neighbours})", "–"]
        lines.append(f"| {a.name} | {a.notion} | {a.budget} | ({eps:.3g}, {delta:g}) | {bounds[0]} | {bounds[1]} | "
                     f"{a.result.T} | {sum(x.seconds for x in audits):.1f} |")
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    """python tests/privacy/audit.py [T [T_iterative [T_stable]]]"""
    T = int(argv[0]) if argv else 4000
    T_slow = int(argv[1]) if len(argv) > 1 else T // 2
    T_stable = int(argv[2]) if len(argv) > 2 else 200
    rows = []
    for name in MECHANISMS:
        t = T_stable if name == "stable_gsampling" else T_slow if name in SLOW_MECHANISMS else T
        if t <= 0:
            continue
        pairs = ["swap"] if name in ("output_perturbation", "stable_gsampling") else ["swap", "remove"]
        rows.append([audit_mechanism(name, t, seed=seed, pair=pair) for seed, pair in enumerate(pairs)])
        print(f"{name}: eps_lb = {[round(a.result.eps_lb, 3) for a in rows[-1]]} "
              f"({sum(a.seconds for a in rows[-1]):.1f} s)", file=sys.stderr)
    print(f"Audits at confidence {1 - ALPHA:g} (one-sided Clopper-Pearson, alpha/2 per tail); zCDP claims "
          f"converted at delta = {ZCDP_DELTA:g}; neighbours: n = 10, d = 2, n - 1 zero rows.\n")
    print(markdown_table(rows))


if __name__ == "__main__":
    main(sys.argv[1:])
