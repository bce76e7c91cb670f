"""Eigen-decomposition of a diagonal matrix compressed to the complement of one unit vector, in
O(q^2) (compiled with numba) instead of an O(q^3) eigh per step of Amin et al.'s Algorithm 1.

Given D = diag(mu) (mu ascending) and a unit vector u, the compression of D to u's orthogonal
complement has q - 1 eigenvalues interlacing mu: after deflation (equal mu's, negligible u_j)
they are the roots x_k of the secular equation sum_j u_j^2 / (mu_j - x) = 0, and the eigenvectors
are (D - x_k)^-1 u^ with u^ recomputed from the roots (Loewner's formula, as in Gu & Eisenstat
1994) so that they are orthogonal to working precision. Roots are found by the rational
two-pole iteration of Li / Gragg ("middle way"), safeguarded by bisection.

The eigenvalues (``compress_values``, what the chain of Bingham draws needs) and the eigenvectors
(``compress_vectors``, only for the output thetas) are separate steps, so the eigenvectors can be
built later from the stored roots without solving the secular equation again.
``rank_one_update`` diagonalises diag(mu) + rho u u^T the same way (Kapralov–Talwar's deflation
C - lambda theta theta^T): one more root, beyond the top pole, and the constant 1/rho in the
secular equation 1/rho + sum_j u_j^2 / (mu_j - x) = 0.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

EPS = np.finfo(float).eps


@njit(cache=True, inline="always", fastmath={"reassoc", "contract"}, error_model="numpy")
def _pole_sums(poles, z2, base, tau):
    """sum_j z2_j / delta_j and sum_j z2_j / delta_j^2, delta_j = (poles_j - base) - tau, all delta_j of
    one sign (the poles on one side of the root). Terms are taken in pairs sharing one division,
    z2_a / delta_a + z2_b / delta_b = (z2_a delta_b + z2_b delta_a) / (delta_a delta_b): each pair's
    sum has the same few-ulp relative error as the two terms, and division throughput, not
    multiplication, bounds this loop (it is most of the secular solve). Callers pass slices, which
    lets the loop vectorise; the poles are scaled to |poles| < 1 so no product under/overflows."""
    n = len(poles)
    h = n // 2
    s = ds = 0.0
    for j in range(h):
        a = (poles[j] - base) - tau
        b = (poles[j + h] - base) - tau
        r = 1.0 / (a * b)
        ta = z2[j] * b
        tb = z2[j + h] * a
        s += (ta + tb) * r
        ds += (ta * b + tb * a) * (r * r)
    if n % 2:
        r = 1.0 / ((poles[n - 1] - base) - tau)
        t = z2[n - 1] * r
        s += t
        ds += t * r
    return s, ds


# Far field (the one-dimensional fast multipole idea): GROUP consecutive roots share, for the poles
# at least FAR_RATIO group radii from the group's centre, FAR_TERMS Taylor coefficients about the
# centre, computed once; each evaluation then sums the near poles directly and the far ones as a
# polynomial. Truncation: < 6^-21 / (1 - 1/6) = 6e-17 of the far sums, far below the residual
# test's tol m. Groups with fewer than MIN_FAR far poles sum every pole directly.
GROUP, FAR_RATIO, FAR_TERMS, MIN_FAR = 16, 6.0, 21, 128


@njit(cache=True, inline="always", error_model="numpy")
def _group_near_range(poles, first, last):
    """(centre, near_lo, near_hi) for the roots first..last-1, which lie in (poles[first],
    poles[last]): the poles near_lo:near_hi are within FAR_RATIO group radii of the centre and are
    summed directly; all of them when fewer than MIN_FAR would be far."""
    centre = 0.5 * (poles[first] + poles[last])
    reach = FAR_RATIO * 0.5 * (poles[last] - poles[first])
    near_lo = np.searchsorted(poles, centre - reach)
    near_hi = np.searchsorted(poles, centre + reach, side="right")
    if near_lo + len(poles) - near_hi < MIN_FAR:
        return centre, 0, len(poles)
    return centre, near_lo, near_hi


@njit(cache=True, inline="always", fastmath={"reassoc", "contract"}, error_model="numpy")
def _far_coefficients(poles, z2, centre, out):
    """out[p] = sum_j z2_j / (poles_j - centre)^(p+1): the Taylor coefficients about the centre of
    sum_j z2_j / (poles_j - x)."""
    inv = 1.0 / (poles - centre)
    w = z2 * inv
    for p in range(len(out)):
        total = 0.0
        for j in range(len(w)):
            total += w[j]
            w[j] *= inv[j]
        out[p] = total


@njit(cache=True, inline="always", error_model="numpy")
def _far_sums(left, right, delta):
    """At centre + delta, from the coefficients c_p of the far poles below (left) and above (right):
    each side's sum_p c_p delta^p and its derivative sum_p (p+1) c_(p+1) delta^p, as four
    independent Horner chains in one loop (latency, not arithmetic, bounds them)."""
    n = len(left)
    value_l, value_r = left[n - 1], right[n - 1]
    slope_l = slope_r = 0.0
    for p in range(n - 2, -1, -1):
        slope_l = slope_l * delta + (p + 1) * left[p + 1]
        slope_r = slope_r * delta + (p + 1) * right[p + 1]
        value_l = value_l * delta + left[p]
        value_r = value_r * delta + right[p]
    return value_l, slope_l, value_r, slope_r


@njit(cache=True, inline="always", fastmath={"reassoc", "contract"}, error_model="numpy")
def _secular_root(mu, z2, k, tol, const, near_lo, near_hi, centre, far_left, far_right):
    """Root of const + sum_j z2_j / (mu_j - x) = 0 in (mu_k, mu_k+1) (const >= 0); returns
    (origin index, tau) with x = mu[origin] + tau, so mu_j - x = (mu_j - mu[origin]) - tau is
    computed accurately. The poles near_lo:near_hi are summed directly, those below and above
    through their far-field coefficients about ``centre`` (if near_lo:near_hi is not all of them)."""
    m = len(mu)
    step_tol = np.sqrt(tol * m)
    far = near_lo > 0 or near_hi < m
    left_mu, left_z2 = mu[near_lo:k + 1], z2[near_lo:k + 1]
    right_mu, right_z2 = mu[k + 1:near_hi], z2[k + 1:near_hi]
    mid = 0.5 * (mu[k + 1] - mu[k])
    # The first evaluation, at the midpoint, picks the half holding the root and makes the first
    # model step: measured from mu_k (left half) or from mu_k+1 (right half).
    origin, lo, hi, base, tau = k, 0.0, mid, mu[k], mid
    for it in range(100):
        psi, dpsi = _pole_sums(left_mu, left_z2, base, tau)  # poles below the root
        phi, dphi = _pole_sums(right_mu, right_z2, base, tau)  # and above it
        if far:
            delta = (base - centre) + tau
            value_l, slope_l, value_r, slope_r = _far_sums(far_left, far_right, delta)
            psi += value_l
            dpsi += slope_l
            phi += value_r
            dphi += slope_r
        psi += const
        if it == 0 and psi + phi < 0:
            origin, lo, hi, base, tau = k + 1, -mid, 0.0, mu[k + 1], -mid
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
        model_step = lo < new < hi
        if not model_step:  # bisection
            new = 0.5 * (lo + hi)
        # The residual test above accepts a root error of ~tol m relative. The iteration converges
        # quadratically (error after a step ~ K step^2, K ~ 1e-2 measured), so a step below
        # sqrt(tol m) relative leaves no more than that: take it without another evaluation.
        last = model_step and abs(new - tau) <= step_tol * abs(new)
        if new == tau:
            break
        tau = new
        if last:
            break
    return origin, tau


# Column kinds of the compressed eigenvector matrix W (see _compress_values).
_UNIT, _HOUSEHOLDER, _REPRESENTATIVE, _CAUCHY = 0, 1, 2, 3


@njit(cache=True)
def _householder(u, start, end):
    """Unit v and sign with H = -sign (I - 2 v v^T) (within rows start:end), H e_1 = u_g / ||u_g||."""
    g = end - start
    norm = 0.0
    for j in range(start, end):
        norm += u[j] * u[j]
    norm = np.sqrt(norm)
    v = np.empty(g)
    for j in range(g):
        v[j] = u[start + j] / norm
    sign = 1.0 if v[0] >= 0 else -1.0
    v[0] += sign
    v /= np.sqrt(np.sum(v * v))
    return v, sign


@njit(cache=True, fastmath={"reassoc", "contract"}, error_model="numpy")
def _compress_values(mu, u, tol_mu, tol_u, rho):
    """Deflation and secular roots: the q - 1 eigenvalues of diag(mu) compressed to u's complement
    (rho = 0), or the q eigenvalues of diag(mu) + rho u u^T (rho > 0), unsorted, and a description
    of each eigenvector (column) for ``_compress_vectors``.

    Column c is of kind[c]: _UNIT (e_arg[c]), _HOUSEHOLDER (column arg2[c] of the Householder
    reflector of representative arg[c]'s group), _REPRESENTATIVE (representative arg[c]), or
    _CAUCHY (secular root arg[c])."""
    q = len(mu)
    update = rho > 0
    new_mu = np.empty(q)
    kind = np.empty(q, dtype=np.int64)
    arg = np.empty(q, dtype=np.int64)
    arg2 = np.empty(q, dtype=np.int64)
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
        level = 0.0
        for j in range(start, end):
            norm += u[j] * u[j]
            level += mu[j]
        norm = np.sqrt(norm)
        level /= g
        if g == 1:
            rep_vec[start] = 1.0
            rep_mu[nrep], rep_u[nrep] = mu[start], u[start]
            rep_start[nrep], rep_end[nrep] = start, end
            nrep += 1
        elif norm == 0.0:  # u has no component here: the whole group stays
            for j in range(start, end):
                kind[ncol], arg[ncol], new_mu[ncol] = _UNIT, j, mu[j]
                ncol += 1
        else:
            # Householder H (within the group) with H e_1 = u_g / ||u_g||: columns 2..g of H are
            # eigenvectors orthogonal to u with eigenvalue `level`; column 1 is the representative.
            v, sign = _householder(u, start, end)
            for r in range(g):
                rep_vec[start + r] = -sign * ((1.0 if r == 0 else 0.0) - 2.0 * v[r] * v[0])
            for c in range(1, g):
                kind[ncol], arg[ncol], arg2[ncol], new_mu[ncol] = _HOUSEHOLDER, nrep, c, level
                ncol += 1
            rep_mu[nrep], rep_u[nrep] = level, norm
            rep_start[nrep], rep_end[nrep] = start, end
            nrep += 1
        start = end
    # Representatives with a negligible u component are eigenvectors as they are.
    m = 0
    idx = np.empty(nrep, dtype=np.int64)
    for r in range(nrep):
        if abs(rep_u[r]) <= tol_u:
            kind[ncol], arg[ncol], new_mu[ncol] = _REPRESENTATIVE, r, rep_mu[r]
            ncol += 1
        else:
            idx[m] = r
            m += 1
    idx = idx[:m]
    smu = rep_mu[idx]
    z = rep_u[idx]
    if not update and m < 2:  # a single representative has u's whole weight: nothing is left of it
        m = 0
    nroots = m if update else max(m - 1, 0)
    base = np.empty(nroots)  # root k is base[k] + taus[k], base[k] its nearer pole
    taus = np.empty(nroots)
    if nroots > 0:
        z2 = z[:m] * z[:m]
        if update:  # the last root lies in (mu_m, mu_m + rho |z|^2): a pole of weight 0 beyond it
            poles = np.append(smu[:m], smu[m - 1] + 2.0 * rho * np.sum(z2))
            z2 = np.append(z2, 0.0)
            c = 1.0 / rho
        else:
            poles = smu[:m]
            z2 /= np.sum(z2)
            c = 0.0
        # Scale by a power of two (exact) to |poles| < 1: the roots' and eigenvectors' pairwise
        # products (_pole_sums, _compress_vectors) then cannot under- or overflow.
        unit = math.ldexp(1.0, min(-math.frexp(np.max(np.abs(poles)))[1], 1020))  # (no inf if subnormal)
        poles = poles * unit
        smu = smu * unit
        rho = rho * unit
        c = c / unit
        far_left = np.empty(FAR_TERMS)
        far_right = np.empty(FAR_TERMS)
        for first in range(0, nroots, GROUP):
            last = min(first + GROUP, nroots)
            centre, near_lo, near_hi = _group_near_range(poles, first, last)
            if near_lo > 0 or near_hi < len(poles):
                _far_coefficients(poles[:near_lo], z2[:near_lo], centre, far_left)
                _far_coefficients(poles[near_hi:], z2[near_hi:], centre, far_right)
            for k in range(first, last):
                origin, taus[k] = _secular_root(poles, z2, k, 8 * EPS, c, near_lo, near_hi, centre,
                                                far_left, far_right)
                base[k] = poles[origin]
                kind[ncol], arg[ncol], new_mu[ncol] = _CAUCHY, k, (base[k] + taus[k]) / unit
                ncol += 1
    # smu, base, taus and rho are in the scaled units (the eigenvectors depend only on ratios).
    return (new_mu[:ncol], kind[:ncol], arg[:ncol], arg2[:ncol], rep_vec, rep_start[:nrep],
            rep_end[:nrep], idx[:m], smu[:m], z[:m], base, taus, rho)


@njit(cache=True, inline="always", fastmath={"reassoc", "contract"}, error_model="numpy")
def _ratio_product(root_base, root_tau, poles, pole):
    """prod_l ((root_base_l - pole) + root_tau_l) / (poles_l - pole): Loewner's ratios, each in (0, 1]
    by interlacing, two to a division (see _pole_sums)."""
    n = len(poles)
    h = n // 2
    prod = 1.0
    for l in range(h):
        prod *= (((root_base[l] - pole) + root_tau[l]) * ((root_base[l + h] - pole) + root_tau[l + h])) \
            / ((poles[l] - pole) * (poles[l + h] - pole))
    if n % 2:
        prod *= ((root_base[n - 1] - pole) + root_tau[n - 1]) / (poles[n - 1] - pole)
    return prod


@njit(cache=True, inline="always", fastmath={"reassoc", "contract"}, error_model="numpy")
def _cauchy_column(zhat, poles, base, tau, out):
    """out_j = zhat_j / ((poles_j - base) - tau), two to a division (see _pole_sums); returns |out|^2."""
    n = len(poles)
    h = n // 2
    norm = 0.0
    for j in range(h):
        a = (poles[j] - base) - tau
        b = (poles[j + h] - base) - tau
        r = 1.0 / (a * b)
        out[j] = zhat[j] * b * r
        out[j + h] = zhat[j + h] * a * r
        norm += out[j] * out[j] + out[j + h] * out[j + h]
    if n % 2:
        out[n - 1] = zhat[n - 1] / ((poles[n - 1] - base) - tau)
        norm += out[n - 1] * out[n - 1]
    return norm


@njit(cache=True, fastmath={"reassoc", "contract"}, error_model="numpy")
def _compress_vectors(u, values):
    """W^T (columns x q, rows in ascending order of the eigenvalues) from ``_compress_values``."""
    (new_mu, kind, arg, arg2, rep_vec, rep_start, rep_end, idx, smu, z, base, taus, rho) = values
    q = len(u)
    order = np.argsort(new_mu, kind="mergesort")
    Wt = np.empty((len(new_mu), q))  # rows are zeroed where needed (none when nothing deflated)
    m = len(smu)
    zhat = np.empty(m)
    if m >= 1:
        # Loewner: z^_j^2 = prod_k (x_k - mu_j) / prod_{l != j} (mu_l - mu_j) (/ rho for the
        # update, whose extra root x_(m-1) gives one more factor), paired as ratios (l < j with x_l,
        # l > j with x_(l-1)); x_k - mu_j is computed from x_k's nearer pole.
        for j in range(m):
            prod = (_ratio_product(base[:j], taus[:j], smu[:j], smu[j])
                    * _ratio_product(base[j:m - 1], taus[j:m - 1], smu[j + 1:], smu[j]))
            if rho > 0:
                prod *= ((base[m - 1] - smu[j]) + taus[m - 1]) / rho
            zhat[j] = np.sqrt(max(prod, 0.0)) * (1.0 if z[j] >= 0 else -1.0)
    column = np.empty(m)
    for p in range(len(new_mu)):
        c = order[p]
        a = arg[c]
        if kind[c] != _CAUCHY or m < q:
            Wt[p] = 0.0
        if kind[c] == _UNIT:
            Wt[p, a] = 1.0
        elif kind[c] == _REPRESENTATIVE:
            for row in range(rep_start[a], rep_end[a]):
                Wt[p, row] = rep_vec[row]
        elif kind[c] == _HOUSEHOLDER:
            start, end = rep_start[a], rep_end[a]
            v, sign = _householder(u, start, end)
            for r in range(end - start):
                Wt[p, start + r] = -sign * ((1.0 if r == arg2[c] else 0.0) - 2.0 * v[r] * v[arg2[c]])
        else:  # eigenvector (D - x_k)^-1 z^ of the representatives, expanded onto their groups
            scale = 1.0 / np.sqrt(_cauchy_column(zhat, smu, base[a], taus[a], column))
            if m == q:  # nothing deflated: representative j is row j
                for j in range(m):
                    Wt[p, j] = column[j] * scale
            else:
                for j in range(m):
                    r = idx[j]
                    for row in range(rep_start[r], rep_end[r]):
                        Wt[p, row] = rep_vec[row] * (column[j] * scale)
    return new_mu[order], Wt


def compress_values(mu: np.ndarray, u: np.ndarray):
    """Eigenvalues (unsorted) of diag(mu) compressed to u's complement, and what
    ``compress_vectors`` needs to build the eigenvectors (mu ascending, u a unit vector)."""
    scale = max(float(np.max(np.abs(mu))), np.finfo(float).tiny)
    return _compress_values(mu, u, 16 * len(mu) * EPS * scale, 16 * EPS, 0.0)


def compress_vectors(u: np.ndarray, values) -> tuple[np.ndarray, np.ndarray]:
    """(new_mu ascending, W^T) from ``compress_values(mu, u)``: W (q x (q-1)) orthonormal,
    W^T u ~ 0, W^T diag(mu) W = diag(new_mu)."""
    return _compress_vectors(u, values)


def sorted_values(values) -> np.ndarray:
    """The compressed eigenvalues from ``compress_values``, ascending (ties in column order)."""
    return np.sort(values[0], kind="stable")


def compress_sorted(mu: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(new_mu, W): the compression of diag(mu) to u's complement, eigenvalues ascending."""
    new_mu, Wt = compress_vectors(u, compress_values(mu, u))
    return new_mu, Wt.T


def rank_one_values(mu: np.ndarray, u: np.ndarray, rho: float):
    """(new_mu ascending, description): the eigenvalues of diag(mu) + rho u u^T (mu ascending, u a
    unit vector), and what ``rank_one_vectors`` needs for its eigenvectors. A negative rho is the
    positive update of -diag(mu) reversed."""
    if rho == 0:
        return mu.copy(), None
    scale = max(float(np.max(np.abs(mu))), abs(rho), np.finfo(float).tiny)
    if rho > 0:
        values = _compress_values(mu, u, 16 * len(mu) * EPS * scale, 16 * EPS, rho)
        return np.sort(values[0], kind="stable"), (False, u, values)
    flipped_u = u[::-1].copy()
    values = _compress_values(np.ascontiguousarray(-mu[::-1]), flipped_u, 16 * len(mu) * EPS * scale,
                              16 * EPS, -rho)
    return -np.sort(values[0], kind="stable")[::-1], (True, flipped_u, values)


def rank_one_vectors(description, q: int) -> np.ndarray:
    """W^T (q x q, rows in ascending order of the eigenvalues) from ``rank_one_values``."""
    if description is None:
        return np.eye(q)
    flipped, u, values = description
    Wt = _compress_vectors(u, values)[1]
    return np.ascontiguousarray(Wt[::-1, ::-1]) if flipped else Wt


def rank_one_update(mu: np.ndarray, u: np.ndarray, rho: float) -> tuple[np.ndarray, np.ndarray]:
    """(new_mu ascending, W^T): W orthogonal (q x q), W^T (diag(mu) + rho u u^T) W = diag(new_mu)
    (mu ascending, u a unit vector)."""
    new_mu, description = rank_one_values(mu, u, rho)
    return new_mu, rank_one_vectors(description, len(mu))
