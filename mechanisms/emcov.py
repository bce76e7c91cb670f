"""Iterative eigenvector sampling (Amin et al. 2019, Algorithm 1), its Kapralov–Talwar variant, and
EMCov under rho-zCDP (Dong, Liang & Yi 2022, Appendix C).

All variants work on C = X^T X for rows in the unit ball (rows in the r-ball are rescaled by 1/r
and the result by r^2) and release Sigma = C / n.

Exponential-mechanism step: theta ~ exp(eta u^T C_i u) on the unit sphere of the current subspace.
For replace-one neighbours, u^T (C - C') u = (u^T x)^2 - (u^T x')^2 lies in [-1, 1], so one step is
2 eta-DP (McSherry & Talwar 2007) and 2 eta-bounded-range, hence eta^2 / 2-zCDP (Durfee & Rogers
2019; Cesar & Rogers 2021, Lemma 3.2: eps-BR => eps^2/8-zCDP).
"""
from __future__ import annotations

import math

import numpy as np

from .bingham import DEFAULT_MAX_PROPOSALS, sample_bingham_eigen
from .conditioned import complement_basis, householder_compression, sample_projection_chain, sample_subtract_chain
from .gaussian import gaussian_sigma
from .secular import compress_values, compress_vectors, rank_one_values, rank_one_vectors, sorted_values
from .privacy import PureDP, ZCDP, Accountant, eps_within
from .predictions import Bound, Facts
from .problem import CovProblem
from .spectral import Spectral
from .transcript import released as _step



def sample_eigenvectors(C: np.ndarray, etas: np.ndarray, rng: np.random.Generator, *,
                        subtract: np.ndarray | None = None, block: int | None = None,
                        eigen: tuple[np.ndarray, np.ndarray] | None = None,
                        max_proposals: int = DEFAULT_MAX_PROPOSALS, steps: int | None = None,
                        method: str | None = None) -> np.ndarray:
    """Amin Algorithm 1, step 2: theta_1..theta_d (columns), theta_i ~ exp(eta_i u^T C_i u); with
    ``steps`` = k < d, only theta_1..theta_k (the algorithm stopped after k steps: a d x k result).

    ``method``: "conditioned" (the default: conditioned Gaussian proposals, mechanisms/conditioned.py)
    or "eigenbasis" (the default when ``block`` is given: the chain of C_i's eigenvalues, the thetas
    accumulated in blocks). Both draw every theta_i exactly from its conditional distribution;
    their random streams differ.

    Projection (default): C_i is C compressed to the orthogonal complement of theta_1..theta_(i-1)
    (step 2b-c), so the thetas are orthonormal. Kapralov–Talwar (``subtract`` = the noisy
    eigenvalues): C_(i+1) = C_i - lambda^_i theta_i theta_i^T on the whole sphere.

    ``block``: steps per fresh eigenbasis (default max(32, 3 sqrt(d)), the measured optimum;
    block >= d is the plain backward accumulation). Any block gives the same thetas up to rounding
    where the C_i's eigenvalues are distinct, and the same distribution always.

    ``eigen``: C's eigh (values ascending, vectors) if already known (CovProblem.unit_gram_eigh).
    """
    thetas = _draw_eigenvectors(C, etas, rng, subtract=subtract, block=block, eigen=eigen, max_proposals=max_proposals,
                                steps=steps, method=method)
    # the transcript (mechanisms/transcript.py): the chain's score u^T C u moves by at most 1 for every u between
    # neighbours (rows in the unit ball: |u^T (x x^T - y y^T) u| <= 1), i.e. C by 1 in the operator norm; the
    # compressions C_i and the subtracted (released) eigenvalues are post-processing
    return _step("sampler", "eigenvectors (exponential mechanism)", C, thetas, sensitivity=1.0, norm="operator",
                 etas=np.asarray(etas, dtype=float), steps=steps, subtract=subtract, shape=thetas.shape)


def _draw_eigenvectors(C, etas, rng, *, subtract, block, eigen, max_proposals, steps, method) -> np.ndarray:
    d = C.shape[0]
    # Step 2a at step i needs only the eigenvalues mu_i of C_i and gives u_i, theta_i's coordinates
    # in C_i's eigenbasis. Projection (steps 2b-2c): C_(i+1) is C_i compressed to u_i's complement;
    # KT: C_(i+1) = C_i - lambda^_i theta_i theta_i^T, in C_i's eigenbasis diag(mu_i) - lambda^_i
    # u_i u_i^T. Either way mu_(i+1) comes from a secular equation (mechanisms/secular.py, O(q^2)),
    # so the chain of draws runs on eigenvalues alone ...
    if eigen is not None and eigen[1].shape != C.shape:
        raise ValueError(f"eigen= is the eigh of a {eigen[1].shape} matrix, C is {C.shape}")
    k = d if steps is None else int(steps)
    if not 1 <= k <= d:
        raise ValueError(f"steps must be an integer in [1, d = {d}], got {steps!r}")
    if method is None:
        method = "conditioned" if block is None else "eigenbasis"
    if method not in ("conditioned", "eigenbasis"):
        raise ValueError(f"method must be 'conditioned' or 'eigenbasis', got {method!r}")
    mu, basis = np.linalg.eigh(C) if eigen is None else eigen
    if method == "conditioned" and subtract is None:
        return sample_projection_chain(mu, basis, np.asarray(etas, dtype=float)[:k], rng,
                                       max_proposals=max_proposals)
    if method == "conditioned":
        return sample_subtract_chain(mu, basis, np.asarray(etas, dtype=float)[:k], np.asarray(subtract), rng,
                                     max_proposals=max_proposals)
    draws, updates, spectra = [], [], [mu]
    for i in range(k):
        u = sample_bingham_eigen(-etas[i] * mu, rng, 1, max_proposals=max_proposals)[0][0]
        draws.append(u)
        if i < k - 1:
            if subtract is None:
                updates.append(compress_values(mu, u))
                mu = sorted_values(updates[-1])
            else:
                mu, description = rank_one_values(mu, u, -subtract[i])
                updates.append(description)
            spectra.append(mu)

    def step_vectors(j: int) -> np.ndarray:  # W_j^T: C_(j+1)'s eigenvectors in C_j's eigenbasis
        if subtract is None:
            return compress_vectors(draws[j], updates[j])[1]
        return rank_one_vectors(updates[j], d)

    # ... and theta_i = B_s W_s ... W_(i-1) u_i (B_s: C_s's eigenbasis) is built in blocks of
    # steps s..e-1: backwards within the block, then a fresh eigh gives B_e, instead of one basis
    # product per step (d^4/4 flops projecting, d^4 for KT).
    thetas = np.empty((d, k))
    block = max(32, int(3 * math.sqrt(d))) if block is None else int(block)
    if block < 1:
        raise ValueError(f"block must be >= 1, got {block}")
    s = 0
    while s < k:
        e = min(s + block, k)
        Yt, probe = _accumulate_block(draws, step_vectors, s, e)
        if e < k and subtract is None:
            thetas[:, s:e], basis = _next_basis(basis, spectra[s], Yt, spectra[e], probe)
        else:
            thetas[:, s:e] = basis @ Yt.T
            if e < k:
                basis = basis @ _next_eigenbasis_kt(spectra[s], Yt, subtract[s:e], spectra[e], probe)
        s = e
    if subtract is None:
        thetas /= np.linalg.norm(thetas, axis=0)
    return thetas


def _accumulate_block(draws, step_vectors, s: int, e: int):
    """Rows i - s: theta_i (s <= i < e) in C_s's eigenbasis, Y_i = [u_i | W_i Y_(i+1)] accumulated
    backwards (kept transposed, so each product fills a contiguous block); and P 1 with
    P = W_s ... W_(e-1) (C_e's eigenbasis as the chain of updates gives it), the probe that fixes
    the signs of the fresh eigenbasis."""
    has_probe = e < len(draws)
    if has_probe:  # the probe row 1^T W_(e-1)^T rides along with the draws
        Yt = np.vstack([draws[e - 1], step_vectors(e - 1).sum(axis=0)])
    else:
        Yt = draws[e - 1][None, :]
    for i in range(e - 2, s - 1, -1):
        Wt = step_vectors(i)
        previous, Yt = Yt, np.empty((len(Yt) + 1, len(draws[i])))
        Yt[0] = draws[i]
        np.matmul(previous, Wt, out=Yt[1:])
    if has_probe:
        return np.delete(Yt, e - s, axis=0), Yt[e - s]
    return Yt, None


def _aligned(nu: np.ndarray, N: np.ndarray, projection: np.ndarray, mu_s: np.ndarray, mu_e: np.ndarray):
    """The fresh eigenbasis N (eigenvalues nu ascending) with the chain's signs: P 1 = N diag(signs) 1
    for P the chain's basis, so signs = sign(N^T P 1) (``projection``); its eigenvalues must be the
    chain's."""
    scale = max(float(np.max(np.abs(mu_s))), float(np.max(np.abs(mu_e))), np.finfo(float).tiny)
    drift = float(np.max(np.abs(nu - mu_e)))
    if not drift <= 1e-8 * scale:  # (NaN fails too)
        raise FloatingPointError(f"eigenvalues of the block's update drifted from the secular chain by "
                                 f"{drift / scale:.1e} (relative)")
    N *= np.where(projection >= 0, 1.0, -1.0)
    return N


def _next_basis(basis: np.ndarray, mu_s: np.ndarray, Yt: np.ndarray, mu_e: np.ndarray,
                probe: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Projection: the block's thetas (basis Yt^T) and C_e's eigenbasis (d x q_e) from C_s's
    (``basis``, d x q_s): diag(mu_s) compressed to the complement of the block's thetas (rows of
    Yt), diagonalised afresh."""
    k = Yt.shape[0]
    qr, V, T, nu, E = householder_compression(mu_s, Yt)
    # basis Q = basis - (basis V) T V^T: the thetas are its first k columns times R (Yt^T = Q R), the
    # new basis its last q - k columns times E; the probe's coordinates in it are E^T (Q^T probe)[k:].
    E = _aligned(nu, E, E.T @ (probe[k:] - (T @ V[k:].T).T @ (V.T @ probe)), mu_s, mu_e)
    BV = basis @ V
    thetas = (basis[:, :k] - BV @ (T @ V[:k].T)) @ np.triu(qr[:k])
    return thetas, complement_basis(basis, V, T, E, BV)


def _next_eigenbasis_kt(mu_s, Yt, lambdas, mu_e, probe) -> np.ndarray:
    """KT: C_e's eigenvectors in C_s's eigenbasis, diag(mu_s) - sum_i lambda^_i t_i t_i^T over the
    block's thetas t_i (rows of Yt), diagonalised afresh."""
    nu, E = np.linalg.eigh(np.diag(mu_s) - (Yt.T * lambdas) @ Yt)
    return _aligned(nu, E, E.T @ probe, mu_s, mu_e)


def _check_unit_scale(problem: CovProblem) -> tuple[np.ndarray, float]:
    """C = X^T X of the rows rescaled into the unit ball, and the factor r^2 / n back to Sigma."""
    r2 = problem.radius**2
    return problem.sigma * (problem.n / r2), r2 / problem.n


def _release(values: np.ndarray, thetas: np.ndarray, back: float, orthonormal: bool = True) -> Spectral | np.ndarray:
    """Step 3: C^ = sum lambda^_i theta_i theta_i^T, rescaled to Sigma. The projection's thetas are
    orthonormal by construction (kept factored; fixed probes check it in O(d^2) as a smoke test, not
    a d^3 Gram matrix -- the tests check the Gram matrix); KT's (orthonormal=False) need not be."""
    if not orthonormal:
        return (thetas * (values * back)) @ thetas.T
    # Theta^T Theta P = P for four fixed +-1 probes (a fixed generator of their own, not the release's).
    probes = np.random.default_rng(0).choice([-1.0, 1.0], size=(len(values), 4)) / math.sqrt(len(values))
    if not np.allclose(thetas.T @ (thetas @ probes), probes, rtol=0, atol=1e-8):
        raise FloatingPointError("the sampled eigenvectors lost orthonormality")
    return Spectral(values * back, thetas)


AMIN_CALIBRATIONS = ("paper", "public_code")


def check_components(components, d: int) -> int:
    """k of a top-k release (None: all d)."""
    if components is None:
        return d
    if isinstance(components, bool) or not isinstance(components, (int, np.integer)) or not 1 <= components <= d:
        raise ValueError(f"components must be an integer in [1, d = {d}] (or None: all), got {components!r}")
    return int(components)


def amin_pure(problem: CovProblem, accountant: Accountant, rng: np.random.Generator, *,
              split: str = "adaptive", variant: str = "project", beta: float = 0.1,
              calibration: str = "paper", max_proposals: int = DEFAULT_MAX_PROPOSALS,
              components: int | None = None):
    """Amin et al. Algorithm 1 under eps-DP: eps_0 = eps/2 on the eigenvalues (Laplace, l1
    sensitivity 2), eps/2 over the d sampling steps, uniformly (IT-U) or by Corollary 1 (AD):
    eps_i proportional to sqrt(lambda^_i + tau), tau = 2/eps_0 log(2d/beta). Each step samples
    exp(eps_i/4 u^T C_i u) and is charged eps_i, as in Amin's Theorem 1 (the standard analysis
    above gives eps_i / 2: the charge is conservative, the paper's calibration is kept).

    calibration="public_code" is Algorithm 1 *as published* in google-research
    private_covariance_estimation/mechanisms.py (iterative_mechanism): eigenvalues + Lap(1/eps_0),
    sorted descending and clipped to [0, n]; each step samples exp(2 eps_i u^T C_i u) (their
    sample_bingham_opt(-2 eps_i C), 8x the paper's eps_i/4). Same split as above. NOT eps-DP under
    the paper's replace-one neighbours: the eigenvalues' l1 sensitivity is 2 (so Lap(1/eps_0) is
    2 eps_0-DP) and a step exp(eta u^T C u) with u^T (C - C') u in [-1, 1] is 2 eta = 4 eps_i-DP, so
    the release is (2 eps/2 + 4 eps/2) = 3 eps-DP by the standard analysis (1.5 eps under add/remove-
    one neighbours, where both sensitivities halve). The accountant records the budget the code
    claims (eps), labelled as such; the figures label the line "(as published)".

    components = k < d: Algorithm 1 stopped after k steps (a private top-k PCA): eps/2 split over the
    k eigenvectors only, the release V diag(lambda^_1..k) V^T of rank k."""
    if split not in ("adaptive", "uniform") or variant not in ("project", "subtract"):
        raise ValueError(f"split must be adaptive|uniform and variant project|subtract, got {split}, {variant}")
    if calibration not in AMIN_CALIBRATIONS:
        raise ValueError(f"calibration must be one of {AMIN_CALIBRATIONS}, got {calibration!r}")
    published = calibration == "public_code"
    claimed = " (as published: claimed, not the true cost)" if published else ""
    total: PureDP = accountant.total
    C, back = _check_unit_scale(problem)
    d = problem.d
    k = check_components(components, d)
    eps0 = accountant.spend(total.scaled(0.5), "eigenvalues (Laplace)" + claimed).eps
    exact = problem.eigenvalues * (problem.n / problem.radius**2)
    l1 = problem.neighbours.eigenvalues_l1(1.0, 1)  # 2 (replace-one); 1 under add/remove (neighbours.py)
    scale = (1 if published else l1) / eps0
    values = _step("laplace", "eigenvalues (Laplace)", exact, exact + rng.laplace(scale=scale, size=d),
                   sensitivity=l1, norm="l1", scale=scale)
    if published:  # the public code sorts the noisy eigenvalues and clips them to [0, n]
        values = np.clip(np.sort(values)[::-1], 0.0, problem.n)
    if split == "uniform":
        eps = np.full(k, total.eps / 2 / k)
    else:  # Corollary 1 (over the k steps taken)
        tau = 2 / eps0 * math.log(2 * d / beta)
        weights = np.sqrt(np.maximum(values[:k] + tau, 0.0))
        eps = total.eps / 2 * (weights / weights.sum() if weights.sum() > 0 else np.full(k, 1 / k))
    for i in range(k):
        if eps[i] > 0:
            accountant.spend(PureDP(eps[i]), f"eigenvector {i + 1} (exponential mechanism){claimed}")
    etas = 2 * eps if published else eps / 4 * problem.neighbours.exponent_factor()  # x2: one-sided (add/remove)
    thetas = sample_eigenvectors(C, etas, rng, subtract=values if variant == "subtract" else None,
                                 eigen=problem.unit_gram_eigh, max_proposals=max_proposals, steps=k)
    return _release(values[:k], thetas, back, orthonormal=variant == "project")


EMCOV_CALIBRATIONS = ("zcdp", "public_code")
PUBLIC_CODE_DELTA = 1e-10  # Dong et al.'s experiment scripts (args.delta = 1e-10)


def advanced_composition_step(eps: float, steps: int, delta: float) -> float:
    """x with steps x^2 + sqrt(2 steps ln(1/delta)) x = eps: the per-step epsilon of Dong et al.'s
    public code (exponential/utils.py convert_eps), advanced composition with k x (e^x - 1) ~ k x^2."""
    b = math.sqrt(2 * steps * math.log(1 / delta))
    return 2 * eps / (b + math.sqrt(b * b + 4 * steps * eps))  # the positive root, without cancellation


def emcov_zcdp(problem: CovProblem, accountant: Accountant, rng: np.random.Generator, *,
               charge: str = "bounded_range", calibration: str = "zcdp",
               max_proposals: int = DEFAULT_MAX_PROPOSALS, components: int | None = None):
    """EMCov under rho-zCDP (Dong et al. Appendix C): rho/2 on the eigenvalues of C by the Gaussian
    mechanism (l2 sensitivity sqrt(2), Dong Lemma 10), rho/2 split evenly over the d
    exponential-mechanism steps. A step of budget rho_i samples exp(eta u^T C_i u) with
    eta = sqrt(2 rho_i) when charged by bounded range (eta^2/2-zCDP, default), or
    eta = sqrt(2 rho_i) / 2 when charged as a 2 eta-DP mechanism ((2 eta)^2/2 = rho_i, Dong's
    eps^2/2 accounting; 2x less concentrated).

    calibration="public_code" is EMCov *as published* in Dong et al.'s code (exponential/algos.py,
    run with delta = 1e-10 by their scripts): eps = rho + 2 sqrt(rho ln(1/delta)) (the (eps, delta)
    guarantee rho-zCDP implies), eigenvalues + Lap(2/(eps/2)) clipped to [0, n], and each of the d
    steps samples exp(eps_1/4 u^T C_i u) with eps_1 = advanced_composition_step(eps/2, d, delta).
    That release is (eps, delta)-DP (the Laplace step is eps/2-DP; a step is eps_1/2-DP, and
    advanced composition of d such steps stays below eps/2 at delta) but it is NOT rho-zCDP: a
    single (eps, delta) pair does not imply zCDP, so the line is compared at a weaker guarantee than
    the others. The accountant records the claimed rho, labelled as such.

    components = k < d: stopped after k steps, rho/2 split over those k (a private top-k PCA)."""
    if charge not in ("bounded_range", "pure"):
        raise ValueError(f"charge must be 'bounded_range' or 'pure', got {charge!r}")
    if calibration not in EMCOV_CALIBRATIONS:
        raise ValueError(f"calibration must be one of {EMCOV_CALIBRATIONS}, got {calibration!r}")
    total: ZCDP = accountant.total
    C, back = _check_unit_scale(problem)
    d = problem.d
    k = check_components(components, d)
    if calibration == "public_code":
        eps = total.to_approx_dp(PUBLIC_CODE_DELTA).eps
        accountant.spend(total, f"as published: ({eps:g}, {PUBLIC_CODE_DELTA:g})-DP claimed as {total}")
        exact = problem.eigenvalues * (problem.n / problem.radius**2)
        noisy = exact + rng.laplace(scale=2 / (eps / 2), size=d)
        values = np.clip(_step("laplace", "eigenvalues (Laplace)", exact, noisy, sensitivity=2.0, norm="l1",
                               scale=2 / (eps / 2)), 0.0, problem.n)
        eta = advanced_composition_step(eps / 2, k, PUBLIC_CODE_DELTA) / 4
        thetas = sample_eigenvectors(C, np.full(k, eta), rng, eigen=problem.unit_gram_eigh,
                                     max_proposals=max_proposals, steps=k)
        return _release(values[:k], thetas, back)
    half = accountant.spend(total.scaled(0.5), "eigenvalues (Gaussian)")
    exact = problem.eigenvalues * (problem.n / problem.radius**2)
    l2 = problem.neighbours.eigenvalues_l2(1.0, 1)  # sqrt(2) (Lemma 10); 1 under add/remove (neighbours.py)
    scale = gaussian_sigma(l2, half)
    values = _step("gaussian", "eigenvalues (Gaussian)", exact, exact + scale * rng.standard_normal(d),
                   sensitivity=l2, norm="l2", scale=scale)
    step = total.scaled(0.5 / k)
    for i in range(k):
        accountant.spend(step, f"eigenvector {i + 1} (exponential mechanism, {charge})")
    # eta^2/2 <= rho_i exactly; x2 under add/remove: the one-sided score halves the privacy loss's range
    eta = eps_within(step.rho) * (1.0 if charge == "bounded_range" else 0.5) * problem.neighbours.exponent_factor()
    thetas = sample_eigenvectors(C, np.full(k, eta), rng, eigen=problem.unit_gram_eigh,
                                 max_proposals=max_proposals, steps=k)
    return _release(values[:k], thetas, back)


def iterative_uniform(problem: CovProblem, accountant: Accountant, rng: np.random.Generator, *,
                      calibration: str = "paper", max_proposals: int = DEFAULT_MAX_PROPOSALS,
                      components: int | None = None):
    """IT-U (Amin et al. §4): Algorithm 1 with eps/2 split uniformly over the eigenvectors
    (calibration="public_code": as published in their code, not eps-DP; see amin_pure)."""
    return amin_pure(problem, accountant, rng, split="uniform", calibration=calibration,
                     max_proposals=max_proposals, components=components)


def iterative_adaptive(problem: CovProblem, accountant: Accountant, rng: np.random.Generator, *,
                       beta: float = 0.1, calibration: str = "paper",
                       max_proposals: int = DEFAULT_MAX_PROPOSALS, components: int | None = None):
    """AD (Amin et al. §4): Algorithm 1 with the Corollary 1 split (calibration="public_code": as
    published in their code, not eps-DP; see amin_pure)."""
    return amin_pure(problem, accountant, rng, split="adaptive", beta=beta, calibration=calibration,
                     max_proposals=max_proposals, components=components)


def kapralov_talwar(problem: CovProblem, accountant: Accountant, rng: np.random.Generator, *,
                    max_proposals: int = DEFAULT_MAX_PROPOSALS, components: int | None = None):
    """KT (Kapralov & Talwar 2013 as run by Amin et al.): subtract lambda^_i theta_i theta_i^T instead
    of projecting; uniform split of eps/2 over the eigenvectors."""
    return amin_pure(problem, accountant, rng, split="uniform", variant="subtract",
                     max_proposals=max_proposals, components=components)


# --- predicted errors (mechanisms/predictions.py) --------------------------------------------------
# Amin et al. Theorem 2 bounds ||C^ - C||_F by sqrt(sum_i d lambda_i(C) / eps_i) + sqrt(d) / eps_0 on
# C = n Sigma / r^2, up to logarithms; each bound below is that leading order with the eps_i of its
# split (true eigenvalues in place of the private ones), one constant fitted, and mapped back to
# Sigma (x r^2 / n). The second term is the eigenvalue noise, kept at its own scale.

def _on_sigma(f: Facts, a: float, b: float) -> tuple[float, float]:
    return a * f.r2 / f.n, b * f.r2 / f.n


def ad_terms(f: Facts, budget: PureDP) -> tuple[float, float] | None:
    """Corollary 1 split: c sqrt(d / eps) sum_i sqrt(lambda_i(C) + 1/eps) + 4 sqrt(2d) / eps."""
    lam = f.eigenvalues_of_c()
    if lam is None:
        return None
    eps = budget.eps
    return _on_sigma(f, math.sqrt(f.d / eps) * float(np.sum(np.sqrt(lam + 1 / eps))), 4 * math.sqrt(2 * f.d) / eps)


def uniform_terms(f: Facts, budget: PureDP) -> tuple[float, float] | None:
    """Uniform split eps_i = eps / (2d): c sqrt(sum_i d lambda_i(C) 2d / eps) + 4 sqrt(2d) / eps."""
    lam = f.eigenvalues_of_c()
    if lam is None:
        return None
    eps = budget.eps
    return _on_sigma(f, f.d * math.sqrt(2 * float(np.sum(lam)) / eps), 4 * math.sqrt(2 * f.d) / eps)


def kt_terms(f: Facts, budget: PureDP) -> tuple[float, float] | None:
    """Kapralov & Talwar's Theorem 18 as Amin et al. §3.1 quote it: spectral error zeta lambda_1(C) once
    lambda_1(C) >= C_1 d^4 / (eps zeta^6), i.e. zeta = (d^4 / (eps lambda_1))^(1/6); the Frobenius
    error is at most sqrt d times that: c sqrt(d) d^(2/3) lambda_1^(5/6) eps^(-1/6) + 4 sqrt(2d) / eps."""
    lam = f.eigenvalues_of_c()
    if lam is None:
        return None
    eps, top = budget.eps, float(np.max(lam, initial=0.0))
    return _on_sigma(f, math.sqrt(f.d) * f.d**(2 / 3) * top**(5 / 6) * eps**(-1 / 6), 4 * math.sqrt(2 * f.d) / eps)


def emcov_zcdp_terms(f: Facts, budget: ZCDP) -> tuple[float, float] | None:
    """Dong et al. App. C: Amin's bound with eps_i = sqrt(rho / d) (rho/(2d)-zCDP steps), so
    c d^(3/4) sqrt(tr C) / rho^(1/4) + the Gaussian eigenvalue noise at rho/2, sqrt(2d / rho)."""
    if f.trace is None:
        return None
    trace_c = max(f.trace, 0.0) * f.n / f.r2
    return _on_sigma(f, f.d**0.75 * math.sqrt(trace_c) / budget.rho**0.25, math.sqrt(2 * f.d / budget.rho))


AD_PREDICTION = Bound(ad_terms, constant=0.953, citation="Amin Thm 2 + Cor. 1", fitted_on=("amin2019/fig1a",))
ITU_PREDICTION = Bound(uniform_terms, constant=0.609, citation="Amin Thm 2, uniform split",
                       fitted_on=("amin2019/fig1a",))
KT_PREDICTION = Bound(kt_terms, constant=0.0606, citation="Kapralov-Talwar Thm 18 (Amin §3.1)",
                      fitted_on=("amin2019/fig1a",))
EMCOV_PREDICTION = Bound(emcov_zcdp_terms, constant=0.391, citation="Dong App. C",
                         fitted_on=("dong2022/fig2", "dong2022/fig3a", "dong2022/fig3b", "dong2022/fig3c",
                                    "dong2022/fig3d"))
