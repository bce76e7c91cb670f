"""Plug-in mechanisms with realistic calibration mistakes, for the black-box audit (docs/api.md, README).

Each function is a plug-in as a user would write one (``@register_mechanism``), each with one mistake
that its author might not notice: the accountant is satisfied (the budget is charged once, in the
right notion), the output is a finite symmetric matrix, yet the release is not private at the claim.
``python scripts/audit.py buggy_mechanisms:NAME`` (this directory on PYTHONPATH) flags every one of
them; ``correct_gauss`` is the same code without the mistake, and passes. These declare themselves
``idealized=True`` (float noise: private on paper only), so the audit tests their calibration, the mistake
under test, with the low bits rounded away.

The last three are correctly calibrated on paper but not private as executed, and do not declare it: the
audit's precision stage flags them on their low bits (docs/privacy.md). ``float_gauss`` and ``float_laplace``
add numpy float noise to the float statistic; ``unrounded_exact_gauss`` adds exact discrete Gaussian noise on a
2^k grid to a statistic it never rounded onto that grid. ``my_mechanisms:hardened_gauss`` is the remedy.
"""
import math

import numpy as np

from dpcov.mechanisms import ApproxDP, PureDP, Spectral, ZCDP, register_mechanism
from dpcov.mechanisms.bingham import sample_bingham
from dpcov.mechanisms.gaussian import symmetric_gaussian
from dpcov.mechanisms.laplace import symmetric_laplace
from dpcov.mechanisms.noise import discrete_gaussian, grid_step
from dpcov.mechanisms.thresholding import analytic_gaussian_sigma


@register_mechanism(idealized=True, notion=ZCDP, label="GaussCov (correct)")
def correct_gauss(problem, accountant, rng):
    """Sigma + N(0, s^2) on the upper triangle, s = sqrt(2) r^2 / n / sqrt(2 rho): rho-zCDP."""
    budget = accountant.spend(accountant.total, "noisy covariance")
    scale = math.sqrt(2) * problem.radius**2 / problem.n / math.sqrt(2 * budget.rho)
    return problem.sigma + scale * symmetric_gaussian(problem.d, rng)


@register_mechanism(idealized=True, notion=ZCDP, label="GaussCov (forgot sqrt 2)")
def gauss_forgot_sqrt2(problem, accountant, rng):
    """MISTAKE: sensitivity r^2 / n (add/remove-one) under replace-one neighbours: rho x 2."""
    budget = accountant.spend(accountant.total, "noisy covariance")
    scale = problem.radius**2 / problem.n / math.sqrt(2 * budget.rho)
    return problem.sigma + scale * symmetric_gaussian(problem.d, rng)


@register_mechanism(idealized=True, notion=ZCDP, label="SeparateCov (eigenvalues spent twice)")
def separate_spent_twice(problem, accountant, rng):
    """MISTAKE: the eigenvalue step is charged rho/2 but calibrated to rho with sensitivity r^2/n."""
    rho = accountant.total.rho
    accountant.spend(ZCDP(rho / 2), "eigenvalues")
    values = problem.eigenvalues + problem.radius**2 / problem.n / math.sqrt(2 * rho) * rng.standard_normal(problem.d)
    accountant.spend(ZCDP(rho / 2), "eigenvectors")
    scale = math.sqrt(2) * problem.radius**2 / problem.n / math.sqrt(rho)
    _, vectors = np.linalg.eigh(problem.sigma + scale * symmetric_gaussian(problem.d, rng))
    return Spectral(values, vectors[:, ::-1])


@register_mechanism(idealized=True, notion=PureDP, label="top direction (hot exponential mechanism)")
def hot_direction(problem, accountant, rng):
    """The top principal direction by the exponential mechanism on the score u^T C u (C = n Sigma / r^2,
    sensitivity 1 under replace-one), released as r^2 v v^T. eps-DP needs exp(eps/2 u^T C u).
    MISTAKE: a units slip makes it exp(2.5 eps u^T C u), 5x too hot (about 2.5 eps on the worst pair)."""
    budget = accountant.spend(accountant.total, "top direction")
    C = problem.sigma * problem.n / problem.radius**2
    v = sample_bingham(-2.5 * budget.eps * C, rng)  # density exp(-x^T A x)
    return problem.radius**2 * np.outer(v, v)


@register_mechanism(idealized=True, notion=PureDP, label="LapCov (l2 sensitivity)")
def lap_l2(problem, accountant, rng):
    """MISTAKE: Laplace noise scaled to the l2 sensitivity sqrt(2) r^2 / n instead of the l1 one
    (sqrt(2) d r^2 / n, Dong Lemma 12)."""
    budget = accountant.spend(accountant.total, "noisy covariance")
    scale = math.sqrt(2) * problem.radius**2 / (problem.n * budget.eps)
    return problem.sigma + scale * symmetric_laplace(problem.d, rng)


@register_mechanism(idealized=True, notion=ZCDP, label="GaussCov (data's own norm)")
def gauss_data_norm(problem, accountant, rng):
    """MISTAKE: the noise is scaled by the data's own largest row norm (its dyadic band, r 2^-j)
    instead of the declared radius r: not private at all."""
    budget = accountant.spend(accountant.total, "noisy covariance")
    largest = problem.tau(int(problem.band_exponents.min())) if len(problem.band_exponents) else 0.0
    scale = math.sqrt(2) * largest**2 / problem.n / math.sqrt(2 * budget.rho)
    return problem.sigma + scale * symmetric_gaussian(problem.d, rng)


@register_mechanism(idealized=True, notion=ApproxDP, label="Gaussian (eps, delta) (add/remove sensitivity)")
def approx_forgot_sqrt2(problem, accountant, rng):
    """The analytic Gaussian mechanism (Balle & Wang 2018) on Sigma. MISTAKE: the sensitivity of
    add/remove-one neighbours, r^2 / n, under replace-one (sqrt(2) r^2 / n): mu x sqrt(2)."""
    budget = accountant.spend(accountant.total, "noisy covariance")
    sd = analytic_gaussian_sigma(problem.radius**2 / problem.n, budget)
    return problem.sigma + sd * symmetric_gaussian(problem.d, rng)


@register_mechanism(idealized=True, notion=ZCDP, label="PrivateCovariance (radius read from the data)", needs=("raw rows",))
def estimator_data_radius(problem, accountant, rng):
    """MISTAKE: dpcov's estimator given the rows' own largest norm as its "public" radius (the shortcut
    radius="private" exists to replace): the noise scales with the data, so one row moves it."""
    import dpcov

    radius = float(np.linalg.norm(problem.rows, axis=1).max()) or 1.0
    fit = dpcov.PrivateCovariance(mechanism="gauss", budget=accountant.total, radius=radius,
                                  centering="assume_centered", random_state=rng).fit(problem.rows)
    accountant.spend(fit.budget_spent_, "estimator")
    return fit.covariance_


@register_mechanism(idealized=True, notion=ZCDP, label="Private pipeline (radius read from the data)")
def pipeline_data_radius(problem, accountant, rng):
    """MISTAKE: the private pipeline's clipping radius taken from the rows' own largest norm band
    instead of PrivRadius: one row far out moves the radius, and the noise with it."""
    from dpcov.mechanisms.registry import release

    clipped = problem.clipped_problem(int(problem.band_exponents.min()))  # the top non-empty band
    estimate, _ = release("gauss", clipped, accountant.total, rng)
    accountant.spend(accountant.total, "covariance at the data's radius")
    return estimate


@register_mechanism(notion=ZCDP, label="GaussCov (float noise)")
def float_gauss(problem, accountant, rng):
    """correct_gauss without the idealized declaration: rho-zCDP on paper, its low bits carry Sigma."""
    budget = accountant.spend(accountant.total, "noisy covariance")
    scale = math.sqrt(2) * problem.radius**2 / problem.n / math.sqrt(2 * budget.rho)
    return problem.sigma + scale * symmetric_gaussian(problem.d, rng)


@register_mechanism(notion=PureDP, label="LapCov (float noise)")
def float_laplace(problem, accountant, rng):
    """LapCov with numpy float Laplace noise: eps-DP on paper, its low bits carry Sigma."""
    budget = accountant.spend(accountant.total, "noisy covariance")
    scale = math.sqrt(2) * problem.d * problem.radius**2 / (budget.eps * problem.n)
    return problem.sigma + scale * symmetric_laplace(problem.d, rng)


@register_mechanism(notion=ZCDP, label="GaussCov (exact noise, statistic not rounded)")
def unrounded_exact_gauss(problem, accountant, rng):
    """MISTAKE: exact discrete Gaussian noise g N on a grid g, added to Sigma as computed (not rounded to g)."""
    budget = accountant.spend(accountant.total, "noisy covariance")
    sigma = math.sqrt(2) * problem.radius**2 / problem.n / math.sqrt(2 * budget.rho)
    grid = grid_step(sigma, problem.radius**2)
    upper = discrete_gaussian(sigma / grid * 1.01, problem.d * problem.d, rng).reshape(problem.d, problem.d) * grid
    upper = np.triu(upper)
    return problem.sigma + upper + np.triu(upper, 1).T
