"""Amin et al. Algorithm 1 step 2 as its pseudocode writes it -- the reference distribution of the
eigenvector samplers' distribution tests (test_conditioned.py, test_emcov.py).

The samplers are compared with it in distribution: E[theta_i theta_i^T] for every step i, two-sample
z-scores. Drawing the pseudocode is the slow side (an eigh and Kent's sampler per step, in Python: about
1 ms a release), so each case's moments were drawn once, ``STORED_TRIALS`` releases, and are kept in
golden/pseudocode_moments.npz with their standard errors. A test draws only the sampler's side; T = 1600
releases against the stored 30000 have the power of the former 3000 against 3000 drawn anew
(sqrt(1/1600 + 1/30000) < sqrt(2/3000)). After changing a case (``stored`` says when):

    python tests/pseudocode.py --update

test_pseudocode.py checks the stored moments against a fresh draw of the pseudocode (and, with
``-m slow``, a large one).
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.stats import ortho_group

from dpcov.mechanisms.bingham import sample_bingham_eigen
from dpcov.mechanisms.secular import compress_sorted

STORED = Path(__file__).parent / "golden" / "pseudocode_moments.npz"
STORED_TRIALS = 30000
Z_LIMIT = 4.5  # max |z| over a case's moments (about 100 of them): a false alarm is far rarer than 1e-3


def eigh_per_step(C, etas, rng):
    """Projection (step 2): C_i = C compressed to the complement of the previous thetas (an orthonormal
    basis F of it), diagonalised, and Kent's sampler in its eigenbasis."""
    d = C.shape[0]
    thetas = np.empty((d, len(etas)))
    for i, eta in enumerate(etas):
        F = np.linalg.qr(np.hstack([thetas[:, :i], np.eye(d)]))[0][:, i:d] if i else np.eye(d)
        mu, E = np.linalg.eigh(F.T @ C @ F)
        thetas[:, i] = F @ (E @ sample_bingham_eigen(-eta * mu, rng, 1)[0][0])
    return thetas


def kt_eigh_per_step(C, etas, subtract, rng):
    """Kapralov-Talwar: an eigh of C_i and Kent's sampler per step, C_(i+1) = C_i - lambda^ t t^T."""
    thetas = []
    for eta, lam in zip(etas, subtract):
        mu, vectors = np.linalg.eigh(C)
        theta = vectors @ sample_bingham_eigen(-eta * mu, rng, 1)[0][0]
        thetas.append(theta)
        C = C - lam * np.outer(theta, theta)
    return np.array(thetas).T


def forward_reference(C, etas, rng):
    """Projection with the eigenbasis of C_i updated by every compression (a secular equation per step,
    the basis carried forwards: what the blocked samplers shortcut)."""
    mu, basis = np.linalg.eigh(C)
    thetas = []
    for eta in etas:
        u = sample_bingham_eigen(-eta * mu, rng, 1)[0][0]
        thetas.append(basis @ u)
        if len(mu) > 1:
            mu, W = compress_sorted(mu, u)
            basis = basis @ W
    return np.array(thetas).T


def _rotated(values, seed):
    R = ortho_group.rvs(len(values), random_state=seed)
    return R @ np.diag(values) @ R.T


# The projection cases of test_conditioned.py: flat, concentrated (adaptive etas), degenerate.
CASES = {
    "flat": (_rotated([1.0, 1.5, 2.0, 2.5, 3.0], 4), np.full(5, 0.4)),
    "concentrated, adaptive etas": (_rotated([0.0, 0.5, 1.0, 6.0, 20.0], 4), np.linspace(1.5, 0.2, 5)),
    "repeated eigenvalues": (_rotated([0.0, 0.0, 0.0, 4.0, 9.0], 4), np.full(5, 0.6)),
}
# KT's subtractions per case: positive, negative and zero (noisy eigenvalues can be any of them).
KT_SUBTRACT = {"flat": np.array([3.0, 2.5, 2.0, 1.5, 1.0]),
               "concentrated, adaptive etas": np.array([20.0, -6.0, 1.0, 0.5, -3.0]),
               "repeated eigenvalues": np.array([9.0, 4.0, -1.0, 0.0, 0.0])}


@dataclass(frozen=True)
class Reference:
    """One reference distribution: the pseudocode ``kind`` on C with these etas (and KT's subtractions)."""

    kind: str  # "projection" (eigh_per_step), "kt" (kt_eigh_per_step) or "forward" (forward_reference)
    C: np.ndarray
    etas: np.ndarray
    subtract: np.ndarray | None = None

    def release(self, rng):
        if self.kind == "projection":
            return eigh_per_step(self.C, self.etas, rng)
        if self.kind == "kt":
            return kt_eigh_per_step(self.C, self.etas, self.subtract, rng)
        return forward_reference(self.C, self.etas, rng)

    def inputs(self) -> dict[str, np.ndarray]:
        return {"kind": np.array(self.kind), "C": self.C, "etas": self.etas,
                "subtract": np.array([]) if self.subtract is None else self.subtract}


REFERENCES = {
    **{f"projection: {case}": Reference("projection", C, etas) for case, (C, etas) in CASES.items()},
    **{f"kt: {case}": Reference("kt", C, etas, KT_SUBTRACT[case]) for case, (C, etas) in CASES.items()},
    # test_emcov.py: a rank-2 C in d = 6 (a 4-fold zero eigenvalue), and KT in d = 3
    "forward: rank 2, d = 6": Reference("forward", _rotated([0, 0, 0, 0, 3.0, 8.0], 8), np.full(6, 0.5)),
    "kt: d = 3": Reference("kt", _rotated([10.0, 6.0, 3.0], 4), np.full(3, 0.4), np.array([10.0, 6.0, 3.0])),
}


def outer_products(sampler, trials: int, seed: int) -> np.ndarray:
    """theta_i theta_i^T (every step i, flattened) of ``trials`` releases, one row per release."""
    rng = np.random.default_rng(seed)
    return np.array([np.einsum("ai,bi->iab", t, t).ravel() for t in (sampler(rng) for _ in range(trials))])


def moments(outer: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error of each entry."""
    return outer.mean(axis=0), outer.std(axis=0) / math.sqrt(len(outer))


def stored(name: str) -> tuple[np.ndarray, np.ndarray]:
    """The stored moments (mean, standard error) of reference ``name``, drawn for the inputs defined here
    (compared to rounding: ortho_group's last bits may differ between scipy and LAPACK builds)."""
    with np.load(STORED) as data:
        for key, value in REFERENCES[name].inputs().items():
            kept = data.get(f"{name}/{key}")
            same = kept is not None and kept.shape == value.shape and bool(
                np.all(kept == value) if key == "kind" else np.allclose(kept, value, rtol=0, atol=1e-9))
            if not same:
                raise LookupError(f"{STORED.name} has no moments of reference {name!r} as defined now ({key}): "
                                  "python tests/pseudocode.py --update")
        return data[f"{name}/mean"], data[f"{name}/se"]


def max_z(sampler, name: str, trials: int, seed: int) -> float:
    """Largest |z| between ``trials`` releases of ``sampler`` and reference ``name``'s stored moments."""
    m1, s1 = moments(outer_products(sampler, trials, seed))
    m2, s2 = stored(name)
    return float(np.max(np.abs(m1 - m2) / np.sqrt(s1**2 + s2**2 + 1e-12)))


def update(trials: int = STORED_TRIALS) -> None:
    """Draw every reference anew (seed 1000 + its index) and store its moments."""
    arrays = {}
    for index, (name, reference) in enumerate(REFERENCES.items()):
        mean, se = moments(outer_products(reference.release, trials, 1000 + index))
        arrays.update({f"{name}/mean": mean, f"{name}/se": se,
                       **{f"{name}/{key}": value for key, value in reference.inputs().items()}})
        print(f"{name}: {trials} releases", flush=True)
    np.savez_compressed(STORED, **arrays)


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit("usage: python tests/pseudocode.py --update")
    update()
