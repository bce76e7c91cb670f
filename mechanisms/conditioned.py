"""Amin et al. Algorithm 1's projection chain (theta_i ~ exp(eta_i u^T C u) on the unit sphere of the
complement of theta_1..theta_(i-1)) without an eigenbasis per step: each draw is an exact rejection
sample whose proposal is a Gaussian *conditioned* on the previous thetas.

Kent, Ganeiber & Mardia's envelope for the Bingham density on the q-dimensional complement S is the
angular central Gaussian (ACG) of N(0, Omega^-1) with Omega = gamma I - C_i, C_i = C compressed to S
(mechanisms/bingham.py: Omega = I + 2 A / b, i.e. gamma = lambda_max(C_i) + b / (2 eta)). In C's
eigenbasis (C = diag(mu)), that Gaussian is y ~ N(0, Sigma), Sigma = diag(1 / (gamma - mu)),
conditioned on T y = 0 for the rows T of the previous thetas -- the precision of a Gaussian
conditioned on a subspace is its precision compressed to that subspace. Kriging gives it in
O(q i) per proposal: x = y - Sigma Z^T Z y, with Z = L^-1 T (Sigma-orthonormal rows, one
Gram-Schmidt row per accepted theta). The acceptance ratio is exp(eta c) (gamma - c)^(q/2) with
c = x^T C x / x^T x, bounded by its value at c* = gamma - q / (2 eta) clipped to C's spectrum.

Gamma is fixed while Z grows (a new gamma would change Sigma). When the accepted fraction falls
below a half (the top directions of C are gone, so the bound at lambda_max(C) is loose) or a step
needs CAP proposals, a *phase* ends: C is compressed to the complement of the phase's thetas and
diagonalised afresh (one eigh), and the next phase starts from that eigenbasis with Kent's gamma.
A step abandoned after CAP proposals is drawn again from scratch (conditional on acceptance, a
rejection sample has the target distribution whatever the number of tries, so abandoning and
redrawing keeps every draw exact); a phase that cannot accept its first step draws it with
Kent's sampler in the eigenbasis. Either way every theta_i has exactly Algorithm 1's
distribution given theta_1..theta_(i-1).
"""
from __future__ import annotations

import math

import numpy as np
import scipy.linalg
from numba import njit

from .bingham import DEFAULT_MAX_PROPOSALS, acg_parameter, sample_bingham_eigen

CONDITION = 100.0  # largest (gamma - min mu) / (gamma - max mu): keeps the kriging well conditioned
CAP = 64  # proposals for one step before its phase ends
# A phase's step i costs O(i q) (the kriging passes over Z), a fresh eigenbasis O(q^3): a phase of
# at most q / 3 steps trades them off (q / 2 and q / 5 were slower in scripts/benchmark.py at d = 800
# and on MNIST, d = 784); at least MIN_PHASE steps, for a small q, where a fresh basis costs mostly
# its fixed Python/LAPACK overhead.
PHASE_FRACTION = 1 / 3
MIN_PHASE = 16
WINDOW = 16  # etas averaged for gamma's target (below)


def phase_steps(q: int, left: int) -> int:
    """The most steps a phase on a q-dimensional space takes (``left``: the chain's steps left)."""
    return min(left, max(MIN_PHASE, math.ceil(PHASE_FRACTION * q)))


@njit(cache=True, error_model="numpy")
def _phase(mu, etas, k, gamma, floor, rng, V, Z):
    """Steps 0..k-1 of one phase in the coordinates where C = diag(mu) (ascending): rows of V are the
    accepted thetas, Z their Sigma-orthonormalised rows; etas: the chain's steps left (gamma's target
    looks ahead). Returns (steps accepted, proposals): it stops after k steps (``phase_steps``), when
    a step needs more than CAP proposals (that step is dropped), or when fewer than half the
    proposals so far were accepted."""
    q0 = len(mu)
    top, low = mu[q0 - 1], mu[0]
    sigma = 1.0 / (gamma - mu)
    scale = np.sqrt(sigma)
    y, x, sv = np.empty(q0), np.empty(q0), np.empty(q0)
    start_peak = min(max(gamma - q0 / (2.0 * etas[0]), low), top) if etas[0] > 0 else low
    moved = 0
    proposals = 0
    for i in range(k):
        q, eta = q0 - i, etas[i]
        # Kent's gamma falls with q (gamma - c* = q / (2 eta)): keep the peak where it started, and
        # re-orthonormalise Z in the new Sigma (i x i Cholesky) when gamma has moved by 10 % (at most
        # every 4 steps). AD's and EMCov (pure)'s eta jitter from step to step: the mean of the next
        # WINDOW etas follows their trend without a move (an O(i^2 q) solve) for every jitter. Any
        # gamma > lambda_max keeps the draw exact; gamma only sets the acceptance rate.
        trend = np.mean(etas[i:min(i + WINDOW, len(etas))])
        target = max(start_peak + q / (2.0 * trend), floor) if trend > 0 else gamma
        if abs(target - gamma) > 0.1 * (gamma - top) and i >= moved + 4:
            gamma, moved = target, i
            sigma = 1.0 / (gamma - mu)
            scale = np.sqrt(sigma)
            if i:
                factor = np.linalg.cholesky(np.dot(V[:i] * sigma, V[:i].T))
                Z[:i] = np.linalg.solve(factor, V[:i])
        peak = min(max(gamma - q / (2.0 * eta), low), top)  # argmax of the log ratio over c in [low, top]
        log_bound = eta * peak + 0.5 * q * math.log(gamma - peak)
        tries = 0
        while True:
            tries += 1
            if tries > CAP:
                return i, proposals
            proposals += 1
            g = rng.standard_normal(q0)
            log_u = math.log(rng.uniform())
            for j in range(q0):
                y[j] = scale[j] * g[j]
            if i:  # kriging: x = y - Sigma Z^T (Z y)
                w = np.dot(np.dot(Z[:i], y), Z[:i])
                for j in range(q0):
                    x[j] = y[j] - sigma[j] * w[j]
            else:
                x[:] = y
            norm2 = quad = 0.0
            for j in range(q0):
                norm2 += x[j] * x[j]
                quad += mu[j] * x[j] * x[j]
            c = quad / norm2
            if log_u < eta * c + 0.5 * q * math.log(gamma - c) - log_bound:
                break
        inv = 1.0 / math.sqrt(norm2)
        for j in range(q0):
            V[i, j] = x[j] * inv
            sv[j] = sigma[j] * V[i, j]
        # Gram-Schmidt in the Sigma inner product: Z's new row (v - Z^T l) / sqrt(v^T Sigma v - |l|^2)
        vsv = np.dot(V[i], sv)
        if i:
            coefficients = np.dot(Z[:i], sv)
            projection = np.dot(coefficients, Z[:i])
            norm = 1.0 / math.sqrt(vsv - np.dot(coefficients, coefficients))
            for j in range(q0):
                Z[i, j] = (V[i, j] - projection[j]) * norm
        else:
            norm = 1.0 / math.sqrt(vsv)
            for j in range(q0):
                Z[i, j] = V[i, j] * norm
        if proposals > 2 * (i + 1) + 8:
            return i + 1, proposals
    return k, proposals


def gamma_floor(mu: np.ndarray) -> float:
    """The least gamma with (gamma - min mu) / (gamma - max mu) <= CONDITION (Sigma's condition)."""
    top, low = float(mu[-1]), float(mu[0])
    return top + max(top - low, abs(top) * 1e-12, np.finfo(float).tiny) / (CONDITION - 1)


def kent_gamma(mu: np.ndarray, eta: float) -> float:
    """Gamma of Kent's ACG envelope for exp(eta u^T diag(mu) u), raised to keep the condition number
    of Sigma = diag(1 / (gamma - mu)) at most CONDITION."""
    top, low = float(mu[-1]), float(mu[0])
    if eta <= 0:  # uniform: any gamma; a large one makes the kriging a Euclidean projection
        return top + max(top - low, abs(top), 1.0) * 1e6
    return max(top + acg_parameter(eta * (top - mu)) / (2 * eta), gamma_floor(mu))


def householder_compression(mu: np.ndarray, Yt: np.ndarray):
    """diag(mu) compressed to the complement of the orthonormal rows of Yt (k x q), through the
    Householder QR of Yt^T in compact WY form, Q = I - V T V^T (T upper triangular, built column by
    column as LAPACK's dlarft does; tau_i = 0 is allowed); Q's last q - k columns span the
    complement. Returns (qr, V, T, nu, E): the compression in that basis is E diag(nu) E^T."""
    k, q = Yt.shape
    qr, tau, _, info = scipy.linalg.lapack.dgeqrf(Yt.T)
    if info:
        raise np.linalg.LinAlgError("LAPACK geqrf failed on the block's thetas")
    V = np.tril(qr, -1)
    V[np.diag_indices(k)] = 1.0
    VtV = V.T @ V
    T = np.zeros((k, k))
    for i in range(k):
        T[i, i] = tau[i]
        T[:i, i] = -tau[i] * (T[:i, :i] @ VtV[:i, i])
    # Q^T D Q = D - G V^T - V G^T with G = D V T - V T^T (V^T D V) T / 2: its trailing block by one
    # symmetric rank-2k update (lower triangle, what eigh reads).
    DV = mu[:, None] * V
    G = DV @ T - 0.5 * V @ (T.T @ (V.T @ DV) @ T)
    M = scipy.linalg.blas.dsyr2k(-1.0, G[k:], V[k:], beta=1.0, c=np.diag(mu[k:]), lower=1, overwrite_c=1)
    nu, E = np.linalg.eigh(M, UPLO="L")
    return qr, V, T, nu, E


def complement_basis(basis: np.ndarray, V: np.ndarray, T: np.ndarray, E: np.ndarray,
                     BV: np.ndarray | None = None) -> np.ndarray:
    """basis Q[:, k:] E, Q = I - V T V^T: the compression's eigenvectors in the original coordinates
    (``BV``: basis V, if the caller has it)."""
    k = T.shape[0]
    return (basis[:, k:] - (basis @ V if BV is None else BV) @ (T @ V[k:].T)) @ E


def sample_projection_chain(mu: np.ndarray, basis: np.ndarray, etas: np.ndarray, rng: np.random.Generator, *,
                            max_proposals: int = DEFAULT_MAX_PROPOSALS) -> np.ndarray:
    """theta_1..theta_k (columns, k = len(etas)) of Algorithm 1's projection chain for C = basis
    diag(mu) basis^T (mu ascending), theta_i ~ exp(etas[i] u^T C_i u)."""
    d, k = basis.shape[0], len(etas)
    etas = np.ascontiguousarray(etas, dtype=float)
    mu = np.array(mu, dtype=float)  # writeable (a read-only array would compile _phase a second time)
    thetas = np.empty((d, k))
    done = 0
    while done < k:
        q = len(mu)
        rows, Z = np.empty((k - done, q)), np.empty((k - done, q))
        m, _ = _phase(mu, etas[done:], phase_steps(q, k - done), kent_gamma(mu, etas[done]), gamma_floor(mu), rng,
                      rows, Z)
        if m == 0:  # a concentrated first step: Kent's sampler in the eigenbasis
            rows[0] = sample_bingham_eigen(-etas[done] * mu, rng, 1, max_proposals=max_proposals)[0][0]
            m = 1
        thetas[:, done:done + m] = basis @ rows[:m].T
        done += m
        if done < k:  # the next phase: C compressed to the complement of this phase's thetas
            _, V, T, mu, E = householder_compression(mu, rows[:m])
            basis = complement_basis(basis, V, T, E)
    return thetas



# --- Kapralov-Talwar: C_(i+1) = C_i - lambda^_i theta_i theta_i^T on the whole sphere ---------------
# In a phase's coordinates C_i = diag(mu) - T_P^T Lambda_P T_P + T_N^T |Lambda_N| T_N (rows T of the
# phase's thetas, split by the sign of lambda^). The proposal is Kent's ACG for the positive part,
# Omega = gamma I - diag(mu) + T_P^T Lambda_P T_P: the posterior precision of x ~ N(0, Sigma) observed
# through T_P x + e = 0, e ~ N(0, Lambda_P^-1), sampled by Matheron's rule x = x0 - Sigma T_P^T Cap^-1
# (T_P x0 + e) with Cap = Lambda_P^-1 + T_P Sigma T_P^T = L L^T and Z = L^-1 T_P (one row per positive
# step). The negative part only raises the density, by at most exp(eta sum |lambda^_N|) (its
# quadratic form on the unit sphere is at most the trace), which the bound absorbs.

@njit(cache=True, error_model="numpy")
def _phase_subtract(mu, etas, lambdas, k, gamma, rng, T, Z, L):
    """KT steps 0..k-1 of one phase where C = diag(mu): rows of T are the accepted thetas. Returns
    (steps accepted, proposals), stopping as _phase does."""
    d = len(mu)
    top = mu[d - 1]
    sigma = 1.0 / (gamma - mu)
    scale = np.sqrt(sigma)
    x, st, a = np.empty(d), np.empty(d), np.empty(k)
    weight = np.empty(k)  # 1 / sqrt(lambda^) of the positive steps, in Z's row order
    positive = 0
    negative_mass = 0.0
    proposals = 0
    for i in range(k):
        eta = etas[i]
        peak = min(gamma - d / (2.0 * eta), top)
        log_bound = eta * peak + 0.5 * d * math.log(gamma - peak) + eta * negative_mass
        tries = 0
        while True:
            tries += 1
            if tries > CAP:
                return i, proposals
            proposals += 1
            g = rng.standard_normal(d)
            noise = rng.standard_normal(positive)
            log_u = math.log(rng.uniform())
            for j in range(d):
                x[j] = scale[j] * g[j]
            if positive:  # Matheron: a = Z x0 + L^-1 e, x = x0 - Sigma Z^T a
                zx = np.dot(Z[:positive], x)
                for r in range(positive):  # forward substitution
                    total = noise[r] * weight[r]
                    for c in range(r):
                        total -= L[r, c] * a[c]
                    a[r] = total / L[r, r]
                for r in range(positive):
                    a[r] += zx[r]
                w = np.dot(a[:positive], Z[:positive])
                for j in range(d):
                    x[j] -= sigma[j] * w[j]
            norm2 = quad = 0.0
            for j in range(d):
                norm2 += x[j] * x[j]
                quad += mu[j] * x[j] * x[j]
            c_positive = quad
            c_all = quad
            if i:  # the previous thetas' terms of x^T C_i x
                tx = np.dot(T[:i], x)
                for r in range(i):
                    term = lambdas[r] * tx[r] * tx[r]
                    c_all -= term
                    if lambdas[r] > 0:
                        c_positive -= term
            c_positive /= norm2
            c_all /= norm2
            if log_u < eta * c_all + 0.5 * d * math.log(gamma - c_positive) - log_bound:
                break
        inv = 1.0 / math.sqrt(norm2)
        for j in range(d):
            T[i, j] = x[j] * inv
            st[j] = sigma[j] * T[i, j]
        lam = lambdas[i]
        if lam > 0:  # Cap grows by one row: l = Z Sigma t, L's new row (l, sqrt(1/lam + t Sigma t - |l|^2))
            tst = np.dot(T[i], st)
            if positive:
                l = np.dot(Z[:positive], st)
                projection = np.dot(l, Z[:positive])
                diagonal = math.sqrt(1.0 / lam + tst - np.dot(l, l))
                for c in range(positive):
                    L[positive, c] = l[c]
                for j in range(d):
                    Z[positive, j] = (T[i, j] - projection[j]) / diagonal
            else:
                diagonal = math.sqrt(1.0 / lam + tst)
                for j in range(d):
                    Z[0, j] = T[i, j] / diagonal
            L[positive, positive] = diagonal
            weight[positive] = 1.0 / math.sqrt(lam)
            positive += 1
        elif lam < 0:
            negative_mass -= lam
        if proposals > 2 * (i + 1) + 8:
            return i + 1, proposals
    return k, proposals


def sample_subtract_chain(mu: np.ndarray, basis: np.ndarray, etas: np.ndarray, lambdas: np.ndarray,
                          rng: np.random.Generator, *, max_proposals: int = DEFAULT_MAX_PROPOSALS) -> np.ndarray:
    """theta_1..theta_k (columns) of Kapralov-Talwar's chain for C = basis diag(mu) basis^T:
    theta_i ~ exp(etas[i] u^T C_i u) on the whole sphere, C_(i+1) = C_i - lambdas[i] theta_i theta_i^T."""
    d, k = basis.shape[0], len(etas)
    etas = np.ascontiguousarray(etas, dtype=float)
    lambdas = np.ascontiguousarray(lambdas[:k], dtype=float)
    mu = np.array(mu, dtype=float)
    thetas = np.empty((d, k))
    done = 0
    while done < k:
        rows, Z, L = np.empty((k - done, d)), np.empty((k - done, d)), np.zeros((k - done, k - done))
        m, _ = _phase_subtract(mu, etas[done:], lambdas[done:], phase_steps(d, k - done), kent_gamma(mu, etas[done]),
                               rng, rows, Z, L)
        if m == 0:  # a concentrated first step: Kent's sampler in the eigenbasis
            rows[0] = sample_bingham_eigen(-etas[done] * mu, rng, 1, max_proposals=max_proposals)[0][0]
            m = 1
        thetas[:, done:done + m] = basis @ rows[:m].T
        if done + m < k:  # the next phase: C_i = diag(mu) - sum lambda^ t t^T, diagonalised afresh
            update = np.diag(mu) - (rows[:m].T * lambdas[done:done + m]) @ rows[:m]
            mu, E = np.linalg.eigh(update)
            basis = basis @ E
        done += m
    return thetas
