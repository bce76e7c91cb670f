"""The audit registry: every registered mechanism and configured variant as an audit line, its
fixed-pair and search black-box audits, its white-box noise fit, and its under-noised copies.

Black-box, fixed pair (``black_box``, the fast suite's): T runs of the mechanism (through
``mechanisms.registry.release`` only) on the line's own neighbouring datasets, a few statistics of every
output, the event chosen on half the runs and bounded on the held-out half (audits.bounds), against the
whole profile of the line's claim (``line_claim``: the Renyi region of zCDP, pure eps, the (eps, delta)
point, or the exact Gaussian profile for the lines that are post-processed Gaussian mechanisms).

Black-box, search (``search``): audits.blackbox.audit on the line: pair search over every family,
the learned attack, confirmation on fresh runs (what a plug-in gets from scripts/audit.py).

White-box (``calibrate``): the mechanism on a dataset where its noise is observable (large n, so that
thresholds, projections and clamps are inactive), T runs, the noise's variance fitted per noise step and
compared with the variance that the *paper's formula* gives at the claimed budget (the formulas are
written out in ``EXPECTED``; none is imported from the mechanism). ratio = fitted sd / formula sd, with
a CLT confidence interval; an under-noised copy is caught when the interval lies below 1.

Under-noised copies (``undernoised``): the mechanism run at the budget of its own notion at which the
notion's canonical mechanism has noise x c: rho / c^2 (Gaussian, sd ~ 1/sqrt(rho)); eps / c (Laplace
and exponential mechanisms, scale ~ 1/eps); (eps, delta) -> (eps, delta') with the analytic Gaussian's
mu divided by c. Every noise step of a mechanism then has its scale x c (or its temperature / c).
A line whose noise is not the canonical mechanism's names its own noise scale in ``COPY_SCALES``; its
copy is the budget of the same notion (eps kept, delta' found by bisection) at which that scale is x c
or just above: stable_gsampling's Gaussian sampling step draws m' = floor(m / c^2) samples (sd of the
entries ~ 1/sqrt(m)), the larger delta' also loosening its PTR test (releases that fail the test, the
zero matrix, are dropped from the white-box fit and counted).

The audit registry (``audit_lines``) is data: one ``AuditLine`` per registered mechanism (default
options, ``DEFAULT_BUDGETS``) and per distinct variant / mechanism_options of conf/experiment/*.yaml.
"""
from __future__ import annotations

import functools
import json
import math
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import numpy as np
import yaml
from scipy.optimize import brentq
from scipy.special import i0e, i1e
from scipy.stats import chi2
from scipy.stats import norm

from dpcov.mechanisms import stable as stable_module
from dpcov.mechanisms import thresholding
from dpcov.mechanisms.privacy import ZCDP, ApproxDP, PureDP, budget_guaranteeing
from dpcov.mechanisms.problem import CovProblem
from dpcov.mechanisms.registry import MECHANISMS, get_mechanism, release
from dpcov.mechanisms.regression import RidgeTask
from dpcov.mechanisms.spectral import as_matrix

from .blackbox import (DEFAULT_BUDGETS, AuditReport, add_remove_pairs_at, audit, audit_sweep, default_add_remove_pairs,
                       own_unit)
from .bounds import Bound, Claim, gaussian_delta, gaussian_mu, split_bound
from .bounds import claimed_mu, cp_lower, cp_upper  # noqa: F401  (the tests read them here)
from .pairs import PairSpec, Reference, upper_triangle

ROOT = Path(__file__).resolve().parents[1]
ALPHA = 0.05  # 1 - confidence of every audited bound
FACTORS = (0.8, 0.67, 0.5)  # noise scale of the under-noised copies


# ---------------------------------------------------------------------------------------------------
# Budgets: claims and under-noised copies


@functools.lru_cache(maxsize=256)
def zcdp_epsilon(rho: float, delta: float) -> float:
    """(eps, delta) of rho-zCDP by the Renyi conversion of dp-accounting (Canonne-Kamath-Steinke)."""
    import dp_accounting
    from dp_accounting import rdp
    orders = list(np.concatenate([np.linspace(1.01, 8, 100), np.geomspace(8, 1e6, 300)[1:]]))
    accountant = rdp.RdpAccountant(orders=orders)
    accountant.compose(dp_accounting.ZCDpEvent(rho))
    return float(accountant.get_epsilon(delta))


def undernoised(budget, c: float):
    """The budget of the same notion at which the notion's canonical mechanism has noise scale x c."""
    if c == 1:
        return budget
    if isinstance(budget, ZCDP):
        return ZCDP(budget.rho / c**2)
    if isinstance(budget, PureDP):
        return PureDP(budget.eps / c)
    mu = gaussian_mu(budget.eps, budget.delta) / c
    delta = gaussian_delta(mu, budget.eps)
    if not delta < 1:
        raise ValueError(f"no (eps, delta) budget gives noise x {c} at {budget}")
    return ApproxDP(budget.eps, delta)


def line_claim(line: "AuditLine") -> Claim:
    """What the black-box audits test: the whole profile of the line's claim (Renyi region of zCDP, pure
    eps, the (eps, delta) point), or the exact Gaussian profile for post-processed Gaussian lines."""
    return Claim.of(line.budget, gaussian=line.profile == "gaussian")


def epsilon_lower_bound(s0, s1, delta: float, alpha: float = ALPHA) -> Bound:
    """eps_lb at ``delta`` (0: pure) from two samples of a statistic, event chosen on the first halves."""
    budget = ApproxDP(1.0, delta) if delta > 0 else PureDP(1.0)
    return split_bound(s0, s1, Claim.of(budget), alpha)


def mu_lower_bound(s0, s1, alpha: float = ALPHA) -> Bound:
    return split_bound(s0, s1, Claim.of(ZCDP(0.5), gaussian=True), alpha)


# ---------------------------------------------------------------------------------------------------
# Neighbouring datasets and statistics


@dataclass
class Neighbours:
    """Two datasets differing in one row, and the statistics (a vector per output) of the audit."""

    problems: tuple[CovProblem, CovProblem]
    statistics: Callable[[object], np.ndarray]
    description: str
    options: dict = field(default_factory=dict)  # options the pair needs (stable_gsampling: on_fail)
    unit: str = "replace_one"  # "add_remove": D' is D plus one row


def covariance_statistics(P: CovProblem, Pp: CovProblem) -> Callable[[object], np.ndarray]:
    """Of a released matrix S: (1) <S, Sigma' - Sigma> over the upper triangle (the likelihood ratio of
    symmetric iid noise on the upper triangle); (2) the descending eigenvalues of S projected on the
    change of the eigenvalues (or on the first one); (3, 4) the Laplace corners min_i z_i and max_i z_i,
    z_i = (S_i - m_i) / D_i over the upper-triangle entries i that change (m: midpoint, D: change) --
    both datasets' extreme regions of additive Laplace noise."""
    change = upper_triangle(Pp.sigma - P.sigma)
    midpoint = upper_triangle(Pp.sigma + P.sigma) / 2
    moved = np.abs(change) > 0
    spectrum = Pp.eigenvalues - P.eigenvalues
    spectrum = spectrum if np.any(spectrum != 0) else np.eye(len(spectrum))[0]

    def statistics(out) -> np.ndarray:
        S = as_matrix(out)
        z = (upper_triangle(S) - midpoint)[moved] / change[moved]
        return np.array([upper_triangle(S) @ change, np.linalg.eigvalsh(S)[::-1] @ spectrum, z.min(), z.max()])
    return statistics


def covariance_pair(pair: str, n: int) -> Neighbours:
    """Replace-one neighbours in the unit disc (d = 2); every other row is shared.

    - swap_vectors: n - 1 zero rows; the row e1 -> e2. Moves the eigenvectors only (the old pair).
    - swap_values: 60 % of the rows e1, the rest e2; one row e2 -> e1: the eigenvalues move by
      (+1, -1)/n (l2 change sqrt(2)/n, the sensitivity of both Sigma's upper triangle and the eigenvalues)
      and the eigenvectors stay.
    - scale: 60 % e1, the rest e2 but one row, e1 -> 0 (a row scaled to 0: lambda_1 moves by 1/n).
    - new_direction: every row e1 but one zero row, which becomes e2 (a new eigen-direction).
    - l1: n - 1 zero rows; (cos t, sin t) -> (sin t, -cos t), tan 2t = 1/2: the largest l1 change of the
      upper triangle in d = 2 (sqrt(5)/n), for Laplace noise.
    - dense: rows (1, 1)/sqrt(2) (half), e1, e2 (a quarter each; every entry of Sigma is >= 1/4, so
      thresholding keeps them); one row e2 -> e1.
    - calibration: 60 % of the rows 0.7 e1, the rest 0.7 e2 (no change; for ``calibrate``): eigenvalues
      0.294 and 0.196, far from 0 and from the trace bound 1, so no projection or clamp is active.
    """
    X = np.zeros((n, 2))
    k = int(0.6 * n)
    if pair in ("swap_values", "scale"):
        X[:k, 0] = 1.0
        X[k:, 1] = 1.0
    elif pair == "new_direction":
        X[:, 0] = 1.0
    elif pair == "calibration":
        X[:k, 0] = 0.7
        X[k:, 1] = 0.7
    elif pair == "dense":
        X[: n // 2] = 1 / math.sqrt(2)
        X[n // 2: 3 * n // 4, 0] = 1.0
        X[3 * n // 4:, 1] = 1.0
    elif pair not in ("swap_vectors", "l1"):
        raise ValueError(f"unknown neighbour pair {pair!r}")
    last, new = X[-1].copy(), X[-1].copy()
    if pair == "swap_vectors":
        last, new = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    elif pair in ("swap_values", "dense"):
        last, new = np.array([0.0, 1.0]), np.array([1.0, 0.0])
    elif pair == "scale":
        last, new = np.array([1.0, 0.0]), np.zeros(2)
    elif pair == "new_direction":
        last, new = np.zeros(2), np.array([0.0, 1.0])
    elif pair == "l1":
        t = math.atan(0.5) / 2
        last, new = np.array([math.cos(t), math.sin(t)]), np.array([math.sin(t), -math.cos(t)])
    Xp = X.copy()
    X[-1], Xp[-1] = last, new
    P, Pp = CovProblem.from_rows(X, rows=X), CovProblem.from_rows(Xp, rows=Xp)  # rows: for whole pipelines
    return Neighbours((P, Pp), covariance_statistics(P, Pp),
                      f"{pair}: n={n}, d=2, row {np.round(last, 3).tolist()} -> {np.round(new, 3).tolist()}")


def ridge_pair(n: int = 10, alpha: float = 1.0, add: bool = False) -> Neighbours:
    """The regression lines (output perturbation, AdaSSP): d = 2, column 1 predicted from column 0 (ridge alpha),
    n - 1 zero rows and one row (c, c) vs (c, -c), c = 1/sqrt(2): the weight flips sign, w = +-1/(1 + 4 n alpha).
    ``add``: D' is D plus the row (c, -c) (add/remove neighbours). Statistic: the weight. The problems hold their
    rows (release(privacy_unit="add_remove") reads them)."""
    c = 1 / math.sqrt(2)
    task = RidgeTask(target=1, alpha=alpha)
    X = np.zeros((n, 2))
    X[-1] = (c, c)
    Xp = np.vstack([X, [(c, -c)]]) if add else np.vstack([X[:-1], [(c, -c)]])
    problems = CovProblem.from_rows(X, ridge=task, rows=X), CovProblem.from_rows(Xp, ridge=task, rows=Xp)
    how = "plus the row (c, -c)" if add else "row (c, c) -> (c, -c)"
    return Neighbours(problems, lambda out: np.array([float(out.weights[0])]),
                      f"ridge{'_add' if add else ''}: n={n}, alpha={alpha:g}, {how}",
                      unit="add_remove" if add else "replace_one")


def tukey_pair(n: int = 4000, add: bool = False, seed: int = 0) -> Neighbours:
    """TukeyEM (raw rows, no bound): y = x + noise on n - 1 Gaussian rows, and one row of leverage 1000 that drags its
    part's model far out -- (1000, 1000) vs (1000, -1000), or added (add/remove). Statistics: the slope and the
    intercept (zero on the test's "no output")."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n)
    rows = np.column_stack([x, x + 0.5 * rng.standard_normal(n)])
    rows[-1] = (1000.0, 1000.0)
    other = np.vstack([rows, [(1000.0, -1000.0)]]) if add else np.vstack([rows[:-1], [(1000.0, -1000.0)]])
    task = RidgeTask(target=1, alpha=1.0)
    problems = CovProblem.from_raw_rows(rows, task), CovProblem.from_raw_rows(other, task)
    how = "plus the row (1000, -1000)" if add else "row (1000, 1000) -> (1000, -1000)"
    return Neighbours(problems, lambda out: np.array([float(out.weights[0]), float(out.intercept)]),
                      f"tukey{'_add' if add else ''}: n={n}, y = x + noise, {how}",
                      unit="add_remove" if add else "replace_one")


def stable_pair(n: int = 300_000, d: int = 2, seed: int = 0) -> Neighbours:
    """Stable + Gaussian sampling (no norm bound, raw rows): n - 1 standard Gaussian rows and one row at
    3 e1 vs 3 e2. The CovProblem's bounded rows are the rows scaled into the unit ball (unused)."""
    rng = np.random.default_rng(seed)
    rows = rng.standard_normal((n, d))
    rows_p = rows.copy()
    rows[-1], rows_p[-1] = 3 * np.eye(d)[0], 3 * np.eye(d)[1]
    scale = max(np.linalg.norm(rows, axis=1).max(), np.linalg.norm(rows_p, axis=1).max())
    P = CovProblem.from_rows(rows / scale, rows=rows)
    Pp = CovProblem.from_rows(rows_p / scale, rows=rows_p)
    change = upper_triangle(np.outer(rows_p[-1], rows_p[-1]) - np.outer(rows[-1], rows[-1]))
    return Neighbours((P, Pp), lambda out: np.array([upper_triangle(as_matrix(out)) @ change]),
                      f"stable: n={n}, d={d}, Gaussian rows, 3e1 -> 3e2", {"on_fail": "zero"})


ADD_FORMS = ("ridge", "tukey")  # own pairs with an add/remove form, "<name>_add"


@functools.lru_cache(maxsize=32)
def neighbours(pair: str, n: int) -> Neighbours:
    if pair == "ridge":
        return ridge_pair(n)
    if pair == "ridge_add":
        return ridge_pair(n, add=True)
    if pair == "stable":
        return stable_pair(n)
    if pair in ("tukey", "tukey_add"):
        return tukey_pair(n, add=pair == "tukey_add")
    return covariance_pair(pair, n)


# ---------------------------------------------------------------------------------------------------
# The audit registry


@dataclass(frozen=True)
class AuditLine:
    """One audited line: a registered mechanism with options, claimed budget and neighbour pairs."""

    line: str
    mechanism: str
    options: dict
    budget: object  # the claimed guarantee
    pairs: tuple  # (pair, n): the first is the fast suite's
    profile: str  # "gaussian" (post-processed Gaussian mechanism) or "dp"
    calibration: str | None  # key of EXPECTED (white-box), None: no noise to fit
    source: str = "registry"
    label: str = ""  # the figure label of a configured variant

    @property
    def as_published(self) -> bool:
        """A variant labelled "as published": a paper's calibration kept deliberately although it is
        not private at the claimed budget, so the audits are expected to flag it, not to pass it."""
        return "as published" in self.label.lower()

    def key(self):
        """What makes two lines the same audit: options at their defaults do not count."""
        import inspect
        defaults = {p.name: p.default for p in inspect.signature(get_mechanism(self.mechanism).fn).parameters.values()}
        options = {k: v for k, v in self.options.items() if defaults.get(k, inspect.Parameter.empty) != v}
        return (self.mechanism, json.dumps(options, sort_keys=True), str(self.budget))


# What each registered mechanism's audit needs (profile, pairs, options, slow) is declared with it
# (``Mechanism.audit``, mechanisms/registry.py). Kept here on purpose: which of the white-box
# re-derivations in ``EXPECTED`` below checks a mechanism -- those are written independently of the
# mechanisms' code, so that a mistake in one is not copied into its check.
CALIBRATION_OF = {
    "gauss": "gauss", "clip_gauss": "gauss", "projection": "gauss", "coinpress": "gauss",
    "separate": "separate", "clip_separate": "separate", "adaptive": "adaptive", "emcov": "emcov",
    "lap": "lap", "laplace": "laplace", "separate_lap": "separate_lap", "adaptive_lap": "adaptive_lap",
    "emcov_pure": "ad", "itu": "itu", "ad": "ad", "kt": "kt", "dp_threshold": "dp_threshold",
    "gauss_approx": "gauss_approx", "ldp_threshold": "ldp_threshold", "output_perturbation": "output_perturbation",
    "stable_gsampling": "stable",
}  # not the private pipelines (mechanisms/pipeline.py): their noise follows a private radius; black-box only


def slow_line(line: "AuditLine") -> bool:
    """Black-box audited under -m slow only (e.g. 3e5 rows per run), as its mechanism declares."""
    return get_mechanism(line.mechanism).audit.slow


def line_for(name: str, mechanism: str, options: dict, budget, source: str, label: str = "") -> AuditLine:
    needs = get_mechanism(mechanism).audit
    return AuditLine(name, mechanism, {**needs.run_options, **options}, budget, tuple(needs.pairs),
                     needs.profile, CALIBRATION_OF.get(mechanism), source, label)


def _config_lines() -> list[AuditLine]:
    """The variants and mechanism_options of conf/experiment/*.yaml, at the default budget of the
    mechanism's notion with the variant's budget keys (e.g. delta = 1e-16) on top."""
    lines = []
    for path in sorted((ROOT / "conf" / "experiment").glob("*.yaml")):
        raw = yaml.safe_load(path.read_text()) or {}
        for name, options in (raw.get("mechanism_options") or {}).items():
            if options:
                notion = get_mechanism(name).notion
                lines.append(line_for(f"{name}[{path.stem}]", name, dict(options), DEFAULT_BUDGETS[notion],
                                       f"{path.name}: mechanism_options"))
        for name, spec in (raw.get("variants") or {}).items():
            mechanism = spec["mechanism"]
            budget_keys = spec.get("budget") or {}
            base = DEFAULT_BUDGETS[get_mechanism(mechanism).notion]
            if "delta" in budget_keys:  # an (eps, delta) claim on top of the grid's eps
                eps = budget_keys.get("eps", base.eps if hasattr(base, "eps") else 1.0)
                budget = ApproxDP(eps, float(budget_keys["delta"]))
            else:
                budget = base
            lines.append(line_for(name, mechanism, dict(spec.get("options") or {}), budget,
                                   f"{path.name}: variants", str(spec.get("label", name))))
    return lines


@functools.lru_cache(maxsize=1)
def audit_lines() -> tuple[AuditLine, ...]:
    """Every registered mechanism at its notion's default budget, then every distinct configured line."""
    lines = [line_for(name, name, {}, DEFAULT_BUDGETS[m.notion], "registry") for name, m in MECHANISMS.items()]
    seen = {line.key() for line in lines}
    for line in _config_lines():
        if line.key() not in seen:
            seen.add(line.key())
            lines.append(line)
    return tuple(lines)


def audit_line(name: str) -> AuditLine:
    for line in audit_lines():
        if line.line == name:
            return line
    raise KeyError(f"no audit line {name!r}; known: {[x.line for x in audit_lines()]}")


# ---------------------------------------------------------------------------------------------------
# Running a mechanism


def run_budget(line: AuditLine, c: float = 1.0, problem: CovProblem | None = None):
    """The budget the copy with noise x c runs at, in the mechanism's own notion (so ``release`` passes
    it through unchanged): the claim converted to that notion, then under-noised -- by the notion's
    canonical rule, or, for a mechanism in ``COPY_SCALES``, by its own noise scale on ``problem``."""
    budget = budget_guaranteeing(line.budget, get_mechanism(line.mechanism).notion)
    scale = COPY_SCALES.get(line.mechanism)
    if scale is None or c == 1:
        return undernoised(budget, c)
    if problem is None:
        raise ValueError(f"the noise x {c} copy of {line.line} depends on the data's n and d: pass the problem")
    return scaled_budget(lambda b: scale(line, b, problem), budget, c)


def scaled_budget(scale: Callable[[ApproxDP], float], budget: ApproxDP, c: float, steps: int = 80) -> ApproxDP:
    """The largest delta' in [delta, 1) (eps kept) with scale(eps, delta') >= c scale(eps, delta), by
    bisection on ln delta' (``scale``: the mechanism's noise scale, non-increasing in delta). For a
    scale with steps (stable_gsampling's integer m) the copy's noise is x c or just above, never below."""
    if not isinstance(budget, ApproxDP):
        raise TypeError(f"noise-scale copies are (eps, delta) budgets, got {budget}")
    target = c * scale(budget)
    lo, hi = math.log(budget.delta), math.log1p(-1e-9)
    if scale(ApproxDP(budget.eps, math.exp(hi))) >= target:
        return ApproxDP(budget.eps, math.exp(hi))
    if not scale(budget) >= target:
        raise ValueError(f"no (eps, delta) budget gives noise x {c} at {budget}")
    for _ in range(steps):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if scale(ApproxDP(budget.eps, math.exp(mid))) >= target else (lo, mid)
    return ApproxDP(budget.eps, math.exp(lo))


class _Memo:
    """Memoise deterministic, data-only work that dominates some per-run costs (the analytic Gaussian
    root-find; Alg 3 and Sigma_w of the stable estimator): the released distribution is unchanged."""

    STABLE = ("stable_covariance", "stability_score", "weighted_covariance")

    def __enter__(self):
        self.sigma = thresholding.analytic_gaussian_sigma
        self.stable = {name: getattr(stable_module, name) for name in self.STABLE}
        thresholding.analytic_gaussian_sigma = functools.lru_cache(maxsize=64)(self.sigma)
        for name, original in self.stable.items():
            setattr(stable_module, name, self._by_content(original))
        return self

    @staticmethod
    def _by_content(original):
        """Cached on equal arguments (arrays compared entry by entry: stable_release hands over a fresh,
        rescaled copy of the rows on every call, so identity would never match)."""
        entries: list = []

        def same(a, b):
            if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
                a, b = np.asarray(a), np.asarray(b)
                return a is b or (a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b))
            return type(a) is type(b) and a == b

        def cached(*args):
            for key, result in entries:
                if len(key) == len(args) and all(same(a, b) for a, b in zip(key, args)):
                    return result
            result = original(*args)
            entries[:] = [*entries[-3:], (args, result)]
            return result
        return cached

    def __exit__(self, *exc):
        thresholding.analytic_gaussian_sigma = self.sigma
        for name, original in self.stable.items():
            setattr(stable_module, name, original)


def outputs(mechanism: str, options: dict, budget, problem: CovProblem, T: int, seed) -> list:
    """T releases (unclamped: the clamp is post-processing) with Generators spawned from ``seed``."""
    children = np.random.SeedSequence(seed).spawn(T)
    with _Memo():
        return [release(mechanism, problem, budget, np.random.default_rng(child), options=options or None,
                        clamp=False)[0] for child in children]


def stable_seed(*parts) -> list[int]:
    """A fixed entropy from names and numbers (Python's str hash is salted per process: not used)."""
    text = "/".join(map(str, parts)).encode()
    return [int.from_bytes(text[i:i + 4].ljust(4, b"\0"), "little") for i in range(0, len(text), 4)]


# ---------------------------------------------------------------------------------------------------
# Black-box audit


@dataclass
class BlackBox:
    """The fixed-pair audit of one line: T runs per dataset, the event chosen on half of them."""

    line: str
    pair: str
    c: float
    claim: Claim
    bound: Bound
    T: int

    @property
    def exceeded(self) -> bool:
        return self.bound.value > self.claim.value

    def describe(self) -> str:
        return (f"{self.line} x{self.c:g} on {self.pair}: {self.claim.symbol} >= {self.bound.value:.3f} vs claim "
                f"{self.claim.value:.3f}; event {self.bound.event}, counts {self.bound.counts}")


def black_box(line: AuditLine, T: int, c: float = 1.0, pair: tuple | None = None, seed: int = 0,
              alpha: float = ALPHA) -> BlackBox:
    """Audit the copy of ``line`` with noise x c on ``pair`` (default: the line's first) with T runs per
    dataset, against the whole profile of the line's claim (``line_claim``)."""
    pair = pair or line.pairs[0]
    nb = neighbours(*pair)
    budget = run_budget(line, c, nb.problems[0])
    options = {**line.options, **nb.options}
    samples = [np.array([nb.statistics(out) for out in
                         outputs(line.mechanism, options, budget, problem, T, stable_seed(line.line, pair, c, j, seed))])
               for j, problem in enumerate(nb.problems)]
    claim = line_claim(line)
    return BlackBox(line.line, nb.description, c, claim, split_bound(samples[0], samples[1], claim, alpha), T)


@dataclass
class _FixedPair:
    """A line's own neighbour pair (ridge, stable: data the generic families cannot build) for ``search``."""

    neighbours: Neighbours

    @property
    def problems(self):
        return self.neighbours.problems

    @functools.cached_property
    def reference(self):
        return Reference.of(self.problems[0].sigma, self.problems[1].sigma)

    def describe(self) -> str:
        return self.neighbours.description

    @property
    def unit(self) -> str:
        return self.neighbours.unit


def search(line: AuditLine, c: float = 1.0, seconds: float = 60.0, seed: int = 0, n_jobs: int = -1,
           alpha: float = ALPHA, confirmations: int = 3, runs: int | None = None, log=None,
           budgets: list | None = None, privacy_unit: str | None = None,
           numerics: str | None = None) -> list[AuditReport]:
    """The black-box search audit (audits.blackbox) of the copy of ``line`` with noise x c, against the
    line's claim (``budgets``: several claims, e.g. SWEEP_BUDGETS, time and alpha split between them):
    pair search, learned attack, confirmation on fresh runs. One report per claim audited.
    ``privacy_unit``: the neighbours (audits.blackbox.audit; default: the mechanism's own, else replace-one).
    ``numerics``: "as executed" (two verdicts: the low bits and the calibration) or "idealized" (the calibration
    only); default: as the mechanism declares (audits.blackbox.as_executed). Under "add_remove" a line whose search starts from its own replace-one pairs (data of a given size) gets
    add/remove pairs at that size first (``add_remove_pairs_at``)."""
    # where the search starts when the generic families do not fit: a line's own pairs (data they cannot
    # build), or PairSpecs of the families at other sizes (e.g. the estimators' private norm bound refuses
    # fewer than thousands of rows)
    own = get_mechanism(line.mechanism).audit.search_pairs
    pairs = [p if isinstance(p, PairSpec) else _FixedPair(neighbours(*p)) for p in own] if own else None
    first = pairs[0] if pairs else _FixedPair(neighbours("swap_values", 1000))
    probe = first.build().problems[0] if isinstance(first, PairSpec) else first.problems[0]
    options = {**line.options, **(first.neighbours.options if pairs and isinstance(first, _FixedPair) else {})}
    mechanism = get_mechanism(line.mechanism)
    unit = privacy_unit if privacy_unit is not None else own_unit(mechanism) or "replace_one"
    if unit == "add_remove" and pairs is not None and not any(getattr(p, "unit", "") == "add_remove" for p in pairs):
        size = next((p for p in pairs if isinstance(p, PairSpec)), None)
        ridge = [_FixedPair(neighbours(f"{p[0]}_add", p[1])) for p in own  # a regression line's own pairs' add form
                 if isinstance(p, tuple) and p[0] in ADD_FORMS]
        pairs = (add_remove_pairs_at(size.n, size.d) if size is not None else ridge or default_add_remove_pairs()) \
            + pairs
    lines = [line] if budgets is None else [replace(line, budget=b) for b in budgets]
    common = dict(options=options, pairs=pairs, gaussian=line.profile == "gaussian", n_jobs=n_jobs, seed=seed,
                  confirmations=confirmations, runs=runs, log=log, privacy_unit=unit, numerics=numerics)
    if c == 1:
        return audit_sweep(line.mechanism, [x.budget for x in lines], seconds=seconds, alpha=alpha, **common)
    reports, started = [], time.perf_counter()
    for k, copy in enumerate(lines):  # each claim's copy runs at its own under-noised budget
        left = seconds - (time.perf_counter() - started)
        skip = {"precision_pairs": []} if any(r.low_bits_exceeded for r in reports) else {}
        reports.append(audit(copy.mechanism, copy.budget, seconds=max(left / (len(lines) - k), 1.0),
                             alpha=alpha / len(lines), run_at=run_budget(copy, c, probe), **common, **skip))
        if reports[-1].calibration_exceeded:
            break
    return reports


# ---------------------------------------------------------------------------------------------------
# White-box calibration: noise coordinates and the paper's variance of each


@functools.lru_cache(maxsize=256)
def _analytic_sd(sensitivity: float, budget: ApproxDP) -> float:
    """Balle & Wang 2018's analytic Gaussian sd, from dp-accounting (not from the mechanism)."""
    import dp_accounting
    return sensitivity * dp_accounting.get_sigma_gaussian(budget.eps, budget.delta)


def _rho(budget) -> float:
    """The rho a zCDP mechanism runs at under ``budget``: rho itself; (eps, delta) -> the largest rho
    with rho + 2 sqrt(rho ln(1/delta)) <= eps, i.e. (sqrt(ln(1/delta) + eps) - sqrt(ln(1/delta)))^2."""
    if isinstance(budget, ZCDP):
        return budget.rho
    log_term = math.log(1 / budget.delta)
    return (math.sqrt(log_term + budget.eps) - math.sqrt(log_term)) ** 2


def _adaptive_cov_fraction(options: dict) -> float:
    """AdaptiveCov's covariance share (Dong Alg. 2: radius 1/8, trace 1/8, SVT 1/4, covariance the rest;
    radius="known" gives PrivRadius's share to the covariance)."""
    split = {"radius": 1 / 8, "trace": 1 / 8, "svt": 1 / 4, **(options.get("split") or {})}
    if options.get("radius") == "known":
        split["radius"] = 0.0
    return 1 - sum(split.values())


def _entries_gauss(sd):
    """Noise on the upper triangle of Sigma (n = 1000 rows of the dense/axes data, d = 2)."""
    return lambda P, out, line: (upper_triangle(as_matrix(out) - P.sigma), sd(P, line))


def _spectral(sd_values, sd_vectors=None):
    """Released eigenvalues minus the true ones; optionally the angle of the top eigenvector (its
    first-order noise (lambda_1 - lambda_2) theta is the off-diagonal noise of the matrix it comes from)."""
    def extract(P, out, line):
        values, vectors = np.linalg.eigh(as_matrix(out))
        coords, sds = list(values[::-1] - P.eigenvalues), [sd_values(P, line)] * len(values)
        if sd_vectors is not None:
            top = vectors[:, -1] * np.sign(vectors[0, -1])
            coords.append(math.atan2(top[1], top[0]) * (P.eigenvalues[0] - P.eigenvalues[1]))
            sds.append(sd_vectors(P, line))
        return np.array(coords), np.array(sds)
    return extract


def _trace(sd_values):
    """tr(released) - tr(Sigma): the sum of the d noisy eigenvalues' noise (exact for KT, whose
    eigenvectors need not be orthogonal but have unit norm)."""
    return lambda P, out, line: (np.array([np.trace(as_matrix(out)) - P.trace]),
                                 np.array([math.sqrt(P.d) * sd_values(P, line)]))


def _bingham(eta):
    """The top released eigenvector theta_1 ~ exp(eta u^T C u) on the circle, C = n Sigma (unit rows):
    with phi its angle to e1, 2 phi is von Mises with kappa = eta (c_1 - c_2), so
    E[cos 2 phi] = I1(kappa / 2) / I0(kappa / 2). Coordinate: cos 2 phi; 'sd': eta (see calibrate)."""
    def extract(P, out, line):
        values, vectors = np.linalg.eigh(as_matrix(out))
        top = vectors[:, -1]
        return np.array([top[0] ** 2 - top[1] ** 2]), np.array([eta(P, line, values[::-1])])
    return extract


SQRT2 = math.sqrt(2)
# Paper formulas for the noise sd (Sigma scale, unit ball r = 1, d = 2, replace-one neighbours).
_gauss_sd = lambda P, line: SQRT2 / P.n / math.sqrt(2 * _rho(line.budget))  # noqa: E731 Dong Lemma 3, Delta = sqrt2/n
_half_gauss_sd = lambda P, line: SQRT2 / P.n / math.sqrt(_rho(line.budget))  # noqa: E731 rho/2 steps (Dong Alg. 1)
EXPECTED = {
    # GaussCov (Dong §3.1), ClipGaussCov at tau = r, the projection mechanism, CoinPress t = 1 (domain B = 1)
    "gauss": _entries_gauss(_gauss_sd),
    # SeparateCov (Dong Alg. 1): eigenvalues N(0, 2/(n^2 rho)) at rho/2; eigenvectors of GaussCov at rho/2
    "separate": _spectral(_half_gauss_sd, _half_gauss_sd),
    # AdaptiveCov on unit rows at n = 1000: tau = r and the GaussCov branch, at the covariance share
    "adaptive": _entries_gauss(lambda P, line: SQRT2 / P.n / math.sqrt(
        2 * _rho(line.budget) * _adaptive_cov_fraction(line.options))),
    "adaptive_lap": _entries_gauss(lambda P, line: SQRT2 * SQRT2 * P.d / (
        line.budget.eps * _adaptive_cov_fraction(line.options) * P.n)),  # Laplace: sd = sqrt2 * scale
    # EMCov (Dong App. C): eigenvalues of C by the Gaussian mechanism at rho/2 (Delta = sqrt 2, Lemma 10)
    "emcov": _spectral(_half_gauss_sd),
    "emcov_vectors": _bingham(lambda P, line, values: math.sqrt(_rho(line.budget) / P.d)),  # eta^2/2 = rho/(2d)
    # LapCov (Dong App. I, Lemma 12): Laplace scale sqrt2 d / (eps n); sd = sqrt2 * scale
    "lap": _entries_gauss(lambda P, line: SQRT2 * SQRT2 * P.d / (line.budget.eps * P.n)),
    # Amin's L (§4): Lap(2d/eps) on C's entries
    "laplace": _entries_gauss(lambda P, line: SQRT2 * 2 * P.d / (line.budget.eps * P.n)),
    # SeparateCov, Laplace (Dong App. I, Lemma 13): eigenvalues Lap(2/(n eps/2))
    "separate_lap": _spectral(lambda P, line: SQRT2 * 4 / (line.budget.eps * P.n)),
    # Amin Alg. 1 (IT-U, AD, KT): eigenvalues of C + Lap(2/eps_0), eps_0 = eps/2
    "itu": _spectral(lambda P, line: SQRT2 * 4 / (line.budget.eps * P.n)),
    "ad": _spectral(lambda P, line: SQRT2 * 4 / (line.budget.eps * P.n)),
    "kt": _trace(lambda P, line: SQRT2 * 4 / (line.budget.eps * P.n)),
    # IT-U: theta_i ~ exp(eps_i/4 u^T C_i u), eps_i = eps/(2d)
    "itu_vectors": _bingham(lambda P, line, values: line.budget.eps / (2 * P.d) / 4),
    # AD (Corollary 1): eps_i = eps/2 sqrt(l_i + tau) / sum_j sqrt(l_j + tau), tau = 2/eps_0 ln(2d/beta),
    # l = the released eigenvalues on C's scale (public), beta = 0.1
    "ad_vectors": _bingham(lambda P, line, values: _ad_eta(P, line, values)),
    # Wang & Xu (analytic Gaussian, Delta = sqrt2 r^2 / n; LDP: per user Delta = sqrt2 r^2, averaged over n)
    "dp_threshold": _entries_gauss(lambda P, line: _analytic_sd(SQRT2 / P.n, line.budget)),
    "gauss_approx": _entries_gauss(lambda P, line: _analytic_sd(SQRT2 / P.n, line.budget)),
    "ldp_threshold": _entries_gauss(lambda P, line: _analytic_sd(SQRT2, line.budget) / math.sqrt(P.n)),
}
# Which calibration keys a line's calibration runs (eigenvectors: a second fit on the same outputs).
CALIBRATION_PARTS = {"emcov": ("emcov", "emcov_vectors"), "itu": ("itu", "itu_vectors"), "ad": ("ad", "ad_vectors")}
CALIBRATION_DATA = {"stable": ("stable", 300_000),  # inside the proved regime at (1, 1e-5) for d = 2
                    "dp_threshold": ("dense", 1000), "gauss_approx": ("dense", 1000),
                    # AdaptiveCov picks its GaussCov / LapCov branch at large n (SeparateCov's predicted
                    # error falls as 1/sqrt(n), GaussCov's as 1/n), whatever the noise-prediction factor
                    "adaptive": ("calibration", 100_000), "adaptive_lap": ("calibration", 100_000),
                    "ldp_threshold": ("dense", 1_000_000), "output_perturbation": ("ridge", 10)}


def _ad_eta(P, line, values):
    eps = line.budget.eps
    eps0 = eps / 2
    tau = 2 / eps0 * math.log(2 * P.d / 0.1)
    weights = np.sqrt(np.maximum(values * P.n + tau, 0.0))
    return eps / 2 * weights[0] / weights.sum() / 4


def _output_perturbation(P, out, line):
    """w + b, ||b|| ~ Gamma(d - 1 = 1, Delta/eps) with a random sign in 1-D: Laplace(Delta/eps), Delta =
    sqrt(1 + 1/(2 alpha)) / (n alpha) (Chaudhuri et al. 2011, Cor. 8)."""
    task = P.ridge
    w = task.weights(P.sigma)
    scale = math.sqrt(1 + 1 / (2 * task.alpha)) / (P.n * task.alpha) / line.budget.eps
    return np.asarray(out.weights) - w, np.array([SQRT2 * scale])


EXPECTED["output_perturbation"] = _output_perturbation


def stable_samples(n: int, d: int, budget: ApproxDP, ptr_fraction: float = 0.1, beta: float = 1.0) -> int:
    """m of stable_gsampling's Gaussian sampling step for n rows in R^d at (eps, delta), from the notes
    (Alg 1: m <= eps^2 / (8 Delta^2 ln(1/delta))) and docs/stable_privacy.md (step 0, Lemma 9):
    (eps1, delta1) = (f eps, delta/2) for the PTR test, (eps2, delta2) the rest;
    L0 = chi2_d^{-1}(1 - beta/n) / (n (1 - sqrt(d/n))^2);
    k = the smallest even k with exp(-(k/2 - 2) eps1/2) / 2 <= delta1;
    Delta = (1 + 2/(n - k)) c/(1 - 2c) + 2 sqrt(d)/(n - k), c = 4 * 20 L0;
    m = floor(eps2^2 / (8 Delta^2 ln(1/delta2)))."""
    eps1, delta1 = ptr_fraction * budget.eps, budget.delta / 2
    eps2, delta2 = budget.eps - eps1, budget.delta - delta1
    L0 = chi2.isf(beta / n, d) / (n * (1 - math.sqrt(d / n)) ** 2)
    k = 2
    while math.exp(-(k / 2 - 2) * eps1 / 2) / 2 > delta1:
        k += 2
    c = 4 * 20 * L0
    Delta = (1 + 2 / (n - k)) * c / (1 - 2 * c) + 2 * math.sqrt(d) / (n - k)
    return math.floor(eps2**2 / (8 * Delta**2 * math.log(1 / delta2)))


def _stable_m(P: CovProblem, line: AuditLine, budget=None) -> int:
    options = {key: line.options[key] for key in ("ptr_fraction", "beta") if key in line.options}
    return stable_samples(P.n, P.d, budget_guaranteeing(budget or line.budget, ApproxDP), **options)


_MOMENTS: dict = {}


def _second_moment(P: CovProblem) -> np.ndarray:
    """The raw rows' X^T X / n (once per problem: the rows are kept alive, so their id stays unique)."""
    if id(P.rows) not in _MOMENTS:
        _MOMENTS[id(P.rows)] = (P.rows, P.rows.T @ P.rows / len(P.rows))
    return _MOMENTS[id(P.rows)][1]


def _stable_sampling(P, out, line):
    """Alg 1 on Sigma_w: (1/m) sum_l y_l y_l^T, y_l ~ N(0, Sigma_w) iid (Wishart(m, Sigma_w) / m), so entry
    (i, j) has mean Sigma_ij and variance (Sigma_ij^2 + Sigma_ii Sigma_jj) / m. On the calibration data
    (standard Gaussian rows, n = 3e5, d = 2) every weight is 1 (tested), so Sigma_w is the raw rows'
    second moment; m at the claimed budget (``stable_samples``)."""
    sigma = _second_moment(P)
    variance = (sigma**2 + np.outer(np.diag(sigma), np.diag(sigma))) / _stable_m(P, line)
    return upper_triangle(as_matrix(out) - sigma), np.sqrt(upper_triangle(variance))


EXPECTED["stable"] = _stable_sampling
# Mechanisms whose noise is not the canonical mechanism of their notion: their noise scale at a budget on
# a problem, for the under-noised copies (run_budget). stable_gsampling: sd of the entries ~ 1/sqrt(m).
COPY_SCALES = {"stable_gsampling": lambda line, budget, P: 1 / math.sqrt(max(_stable_m(P, line, budget), 1e-300))}


@dataclass
class Calibration:
    line: str
    part: str
    c: float
    ratio: float  # fitted noise / the paper's noise at the claimed budget (temperature: claimed / fitted)
    low: float  # confidence interval at 1 - ALPHA (two-sided)
    high: float
    T: int
    dropped: int = 0  # releases of the documented "no output" (zero matrix: a failed PTR test), not fitted

    @property
    def caught(self) -> bool:
        """The noise is significantly below the paper's formula."""
        return self.high < 1

    def describe(self) -> str:
        dropped = f", {self.dropped} of {self.T} releases empty (dropped)" if self.dropped else ""
        return (f"{self.line} x{self.c:g} [{self.part}]: noise ratio {self.ratio:.3f} ({self.low:.3f}, "
                f"{self.high:.3f}){dropped}")


def _variance_ratio(coords: np.ndarray, sds: np.ndarray, alpha: float) -> tuple[float, float, float]:
    """sqrt(mean((x / sd)^2)) with a CLT interval on the mean of squares."""
    squares = (coords / sds) ** 2
    mean, se = squares.mean(), squares.std(ddof=1) / math.sqrt(squares.size)
    z = norm.isf(alpha / 2)
    return math.sqrt(mean), math.sqrt(max(mean - z * se, 0.0)), math.sqrt(mean + z * se)


def _temperature_ratio(cos2: np.ndarray, etas: np.ndarray, gaps: float, alpha: float):
    """eta_expected / eta_fitted from the mean of cos 2 phi (von Mises in 2 phi with kappa/2 = eta gap/2)."""
    def kappa_half(m):  # invert I1/I0 (increasing) on (0, 1)
        m = min(max(m, 1e-12), 1 - 1e-12)
        return brentq(lambda k: i1e(k) / i0e(k) - m, 1e-12, 1e8)
    mean, se = cos2.mean(), cos2.std(ddof=1) / math.sqrt(len(cos2))
    z = norm.isf(alpha / 2)
    expected = float(np.mean(etas)) * gaps / 2
    fit = [kappa_half(m) for m in (mean, mean - z * se, mean + z * se)]
    # the released noise is ~ 1/sqrt(kappa): ratio = sqrt(expected kappa / fitted kappa)
    return math.sqrt(expected / fit[0]), math.sqrt(expected / fit[2]), math.sqrt(expected / fit[1])


def calibrate(line: AuditLine, T: int, c: float = 1.0, seed: int = 0, alpha: float = ALPHA) -> list[Calibration]:
    """White-box: T releases of the copy with noise x c on a dataset where its noise is observable; per
    noise step, the fitted sd over the paper's sd at the claimed budget."""
    if line.calibration is None:
        return []
    pair, n = CALIBRATION_DATA.get(line.calibration, ("calibration", 1000))
    P = neighbours(pair, n).problems[0]
    options = {**line.options, **neighbours(pair, n).options}
    outs = outputs(line.mechanism, options, run_budget(line, c, P), P, T, stable_seed("calibrate", line.line, c, seed))
    if options.get("on_fail") == "zero":  # the documented "no output" has no noise step to fit
        outs = [out for out in outs if np.any(as_matrix(out) != 0)]
    dropped = T - len(outs)
    if not outs:
        raise RuntimeError(f"{line.line}: every one of the {T} calibration releases was empty")
    results = []
    for part in CALIBRATION_PARTS.get(line.calibration, (line.calibration,)):
        extracted = [EXPECTED[part](P, out, line) for out in outs]
        coords = np.array([np.atleast_1d(e[0]) for e in extracted])
        sds = np.array([np.broadcast_to(e[1], np.shape(np.atleast_1d(e[0]))) for e in extracted])
        if part.endswith("_vectors"):
            ratio = _temperature_ratio(coords[:, 0], sds[:, 0], n * (P.eigenvalues[0] - P.eigenvalues[1]), alpha)
        else:
            ratio = _variance_ratio(coords, sds, alpha)
        results.append(Calibration(line.line, part, c, *ratio, T, dropped))
    return results
