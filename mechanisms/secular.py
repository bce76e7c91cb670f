"""Eigen-decomposition of a diagonal matrix compressed to the complement of one unit vector, in
O(q^2) (compiled with numba) instead of an O(q^3) eigh per step of Amin et al.'s Algorithm 1.

Given D = diag(mu) (mu ascending) and a unit vector u, the compression of D to u's orthogonal
complement has q - 1 eigenvalues interlacing mu: after deflation (equal mu's, negligible u_j)
they are the roots x_k of the secular equation sum_j u_j^2 / (mu_j - x) = 0, and the eigenvectors
are (D - x_k)^-1 u^ with u^ recomputed from the roots (Loewner's formula, as in Gu & Eisenstat
1994) so that they are orthogonal to working precision. Roots are found by the rational
two-pole iteration of Li / Gragg ("middle way"), safeguarded by bisection.
"""
from __future__ import annotations

import numpy as np
from numba import njit

EPS = np.finfo(float).eps


@njit(cache=True, fastmath={"reassoc", "contract"})
def _secular_root(mu, z2, k, tol):
    """Root of sum_j z2_j / (mu_j - x) = 0 in (mu_k, mu_k+1); returns (origin index, tau) with
    x = mu[origin] + tau, so mu_j - x = (mu_j - mu[origin]) - tau is computed accurately."""
    m = len(mu)
    gap = mu[k + 1] - mu[k]
    mid = 0.5 * gap
    f = 0.0
    for j in range(m):
        f += z2[j] / ((mu[j] - mu[k]) - mid)
    if f >= 0:  # the root lies in the left half: measure from mu_k
        origin, lo, hi, tau = k, 0.0, mid, 0.5 * mid
    else:
        origin, lo, hi, tau = k + 1, -mid, 0.0, -0.5 * mid
    base = mu[origin]
    for _ in range(100):
        psi = dpsi = phi = dphi = 0.0
        for j in range(k + 1):  # split loops (no branch) so they vectorise
            r = 1.0 / ((mu[j] - base) - tau)
            t = z2[j] * r
            psi += t
            dpsi += t * r
        for j in range(k + 1, m):
            r = 1.0 / ((mu[j] - base) - tau)
            t = z2[j] * r
            phi += t
            dphi += t * r
        f = psi + phi
        if f < 0:
            lo = tau
        else:
            hi = tau
        if abs(f) <= tol * m * (abs(psi) + abs(phi)) or hi - lo <= 4 * EPS * max(abs(lo), abs(hi)):
            break
        # Two-pole rational model a + s/(Dk - eta) + t/(Dk1 - eta) matching value and slope.
        dk = (mu[k] - mu[origin]) - tau
        dk1 = (mu[k + 1] - mu[origin]) - tau
        s = dpsi * dk * dk
        tt = dphi * dk1 * dk1
        a = f - s / dk - tt / dk1
        b = a * (dk + dk1) + s + tt
        c = dk * dk1 * f
        if a == 0.0:
            eta = c / b
        else:
            disc = max(b * b - 4.0 * a * c, 0.0)
            root = np.sqrt(disc)
            eta = 2.0 * c / (b + root) if b >= 0 else (b - root) / (2.0 * a)
        new = tau + eta
        if not (lo < new < hi):
            new = 0.5 * (lo + hi)
        if new == tau:
            break
        tau = new
    return origin, tau


@njit(cache=True)
def compress(mu, u, tol_mu, tol_u):
    """(new_mu, W): W (q x (q-1)) orthonormal, W^T u ~ 0, W^T diag(mu) W = diag(new_mu)."""
    q = len(mu)
    W = np.zeros((q, q - 1))
    new_mu = np.empty(q - 1)
    ncol = 0
    # Representatives of groups of (numerically) equal eigenvalues.
    rep_vec = np.zeros(q)  # each row lies in one group: its entry of that group's representative
    rep_mu = np.empty(q)
    rep_u = np.empty(q)
    rep_start = np.empty(q, dtype=np.int64)  # a representative's direction lives on its group's rows
    rep_end = np.empty(q, dtype=np.int64)
    nrep = 0
    start = 0
    while start < q:
        end = start + 1
        while end < q and mu[end] - mu[start] <= tol_mu:
            end += 1
        g = end - start
        norm = 0.0
        for j in range(start, end):
            norm += u[j] * u[j]
        norm = np.sqrt(norm)
        level = 0.0
        for j in range(start, end):
            level += mu[j]
        level /= g
        if g == 1 or norm == 0.0:
            for j in range(start, end):
                if g == 1:
                    rep_vec[j] = 1.0
                    rep_mu[nrep] = mu[j]
                    rep_u[nrep] = u[j]
                    rep_start[nrep], rep_end[nrep] = j, j + 1
                    nrep += 1
                else:  # u has no component here: the whole group stays
                    W[j, ncol] = 1.0
                    new_mu[ncol] = mu[j]
                    ncol += 1
        else:
            # Householder H (within the group) with H e_1 = u_g / ||u_g||: columns 2..g of H are
            # eigenvectors orthogonal to u with eigenvalue `level`.
            v = np.zeros(g)
            for j in range(g):
                v[j] = u[start + j] / norm
            sign = 1.0 if v[0] >= 0 else -1.0
            v[0] += sign
            vn = np.sqrt(np.sum(v * v))
            v /= vn
            # H = -sign (I - 2 v v^T) maps e_1 to u_g/||u_g||.
            for c in range(g):
                for r in range(g):
                    h = (1.0 if r == c else 0.0) - 2.0 * v[r] * v[c]
                    h *= -sign
                    if c == 0:
                        rep_vec[start + r] = h
                    else:
                        W[start + r, ncol + c - 1] = h
            for c in range(1, g):
                new_mu[ncol + c - 1] = level
            ncol += g - 1
            rep_mu[nrep] = level
            rep_u[nrep] = norm
            rep_start[nrep], rep_end[nrep] = start, end
            nrep += 1
        start = end
    # Representatives with a negligible u component are eigenvectors as they are.
    keep = np.zeros(nrep, dtype=np.bool_)
    m = 0
    for r in range(nrep):
        if abs(rep_u[r]) <= tol_u:
            for row in range(rep_start[r], rep_end[r]):
                W[row, ncol] = rep_vec[row]
            new_mu[ncol] = rep_mu[r]
            ncol += 1
        else:
            keep[r] = True
            m += 1
    if m >= 2:
        idx = np.empty(m, dtype=np.int64)
        i = 0
        for r in range(nrep):
            if keep[r]:
                idx[i] = r
                i += 1
        smu = rep_mu[idx]
        z = rep_u[idx]
        z2 = z * z
        z2 /= np.sum(z2)
        origins = np.empty(m - 1, dtype=np.int64)
        taus = np.empty(m - 1)
        for k in range(m - 1):
            origins[k], taus[k] = _secular_root(smu, z2, k, 8 * EPS)
        # Loewner: z^_j^2 = prod_k (x_k - mu_j) / prod_{l != j} (mu_l - mu_j), paired as ratios.
        zhat = np.empty(m)
        for j in range(m):
            prod = 1.0
            for l in range(m):
                if l == j:
                    continue
                k = l if l < j else l - 1
                xk_minus_muj = (smu[origins[k]] - smu[j]) + taus[k]
                prod *= xk_minus_muj / (smu[l] - smu[j])
            zhat[j] = np.sqrt(max(prod, 0.0)) * (1.0 if z[j] >= 0 else -1.0)
        V = np.empty((m, m - 1))  # eigenvectors in representative coordinates
        for k in range(m - 1):
            norm = 0.0
            for j in range(m):
                V[j, k] = zhat[j] / ((smu[j] - smu[origins[k]]) - taus[k])
                norm += V[j, k] * V[j, k]
            norm = np.sqrt(norm)
            for j in range(m):
                V[j, k] /= norm
            new_mu[ncol + k] = smu[origins[k]] + taus[k]
        for j in range(m):  # W = R V with R's columns supported on their groups: O(q m)
            r = idx[j]
            for row in range(rep_start[r], rep_end[r]):
                coef = rep_vec[row]
                for k in range(m - 1):
                    W[row, ncol + k] += coef * V[j, k]
        ncol += m - 1
    return new_mu, W


def compress_sorted(mu: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``compress`` with default tolerances, output sorted ascending (mu must be ascending)."""
    scale = max(float(np.max(np.abs(mu))), np.finfo(float).tiny)
    new_mu, W = compress(mu, u, 16 * len(mu) * EPS * scale, 16 * EPS)
    order = np.argsort(new_mu, kind="stable")
    return new_mu[order], W[:, order]
