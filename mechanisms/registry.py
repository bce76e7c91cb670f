"""Name -> mechanism. The runner only ever goes through ``release``; it never names a mechanism."""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Callable

import numpy as np

from . import adaptive, coinpress, emcov, gaussian, laplace, regression, stable, thresholding
from .privacy import ApproxDP, PureDP, ZCDP, Accountant, Budget, budget_guaranteeing
from .problem import CovProblem
from .spectral import as_matrix, clamp_eigenvalues


@dataclass(frozen=True)
class Mechanism:
    name: str  # command-line name
    label: str  # name in the papers and on the figures
    notion: type  # privacy notion of its guarantee: ZCDP, PureDP or ApproxDP
    fn: Callable  # fn(problem, accountant, rng, **options) -> matrix or Spectral
    source: str
    check: Callable[[dict], None] | None = None  # option values no dataset makes valid -> ValueError

    def option_names(self) -> list[str]:
        params = inspect.signature(self.fn).parameters.values()
        return [p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY]


MECHANISMS = {m.name: m for m in [
    Mechanism("gauss", "GaussCov", ZCDP, gaussian.gauss_cov, "Dong et al. 2022 §3.1"),
    Mechanism("separate", "SeparateCov", ZCDP, gaussian.separate_cov, "Dong et al. 2022 Alg. 1"),
    Mechanism("adaptive", "AdaptiveCov", ZCDP, adaptive.adaptive_cov, "Dong et al. 2022 Alg. 2"),
    Mechanism("clip_gauss", "ClipGaussCov", ZCDP, gaussian.clip_gauss_cov, "Dong et al. 2022 §5.1"),
    Mechanism("clip_separate", "ClipSeparateCov", ZCDP, gaussian.clip_separate_cov, "Dong et al. 2022 §5.1"),
    Mechanism("projection", "Projection (App. E)", ZCDP, gaussian.projection_cov, "Dong et al. 2022 App. E"),
    Mechanism("coinpress", "CoinPress (t=1)", ZCDP, coinpress.coinpress_cov,
              "Biswas et al. 2020 (MVC), one iteration from Sigma; an extra line in Fig. 3"),
    # Spends nothing, so it meets every notion (PureDP is the strongest).
    Mechanism("zero", "Zero", PureDP, gaussian.zero_cov, "baseline: the zero matrix"),
    Mechanism("lap", "LapCov", PureDP, laplace.lap_cov, "Dong et al. 2022 App. I"),
    Mechanism("separate_lap", "SeparateCov", PureDP, laplace.separate_lap_cov, "Dong et al. 2022 App. I"),
    Mechanism("adaptive_lap", "AdaptiveCov", PureDP, adaptive.adaptive_cov, "Dong et al. 2022 App. I"),
    Mechanism("emcov_pure", "EMCov", PureDP, emcov.iterative_adaptive,
              "Dong et al. 2022 App. J.2: Amin Alg. 1, eps/2 eigenvalues, Corollary 1 split"),
    Mechanism("emcov", "EMCov", ZCDP, emcov.emcov_zcdp, "Dong et al. 2022 App. C (Amin et al. Alg. 1)"),
    Mechanism("itu", "IT-U", PureDP, emcov.iterative_uniform, "Amin et al. 2019 Alg. 1, uniform split"),
    Mechanism("ad", "AD", PureDP, emcov.iterative_adaptive, "Amin et al. 2019 Alg. 1, Corollary 1 split"),
    Mechanism("dp_threshold", "DP-Thresholding", ApproxDP, thresholding.dp_threshold, "Wang & Xu Alg. 1"),
    Mechanism("ldp_threshold", "LDP-Thresholding", ApproxDP, thresholding.ldp_threshold, "Wang & Xu Alg. 2"),
    Mechanism("gauss_approx", "Gaussian (ε,δ)", ApproxDP, thresholding.gauss_approx,
              "analytic Gaussian mechanism on Sigma (Wang & Xu §4.1 baseline; Amin et al.'s G)"),
    Mechanism("kt", "KT", PureDP, emcov.kapralov_talwar, "Kapralov & Talwar 2013 (Amin et al. §4)"),
    Mechanism("laplace", "L", PureDP, laplace.amin_laplace_cov, "Amin et al. 2019 §4: entries Lap(2d/eps) on C"),
    Mechanism("output_perturbation", "Output pert.", PureDP, regression.output_perturbation,
              "Chaudhuri et al. 2011 output perturbation of the ridge model (Amin et al. App. C)"),
    Mechanism("stable_gsampling", "Stable + GSampling", ApproxDP, stable.stable_gsampling,
              "lecture notes: Brown-Hopkins-Smith 2023 stable covariance + Alabi et al. 2023 Alg. 1",
              check=stable.check_options),
]}


def get_mechanism(name: str) -> Mechanism:
    if name not in MECHANISMS:
        raise ValueError(f"unknown mechanism {name!r}; known: {', '.join(sorted(MECHANISMS))}")
    return MECHANISMS[name]


def check_options(name: str, options: dict) -> None:
    known = get_mechanism(name).option_names()
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ValueError(f"unknown option(s) {unknown} for mechanism {name!r}; known: {known or 'none'}")
    if get_mechanism(name).check is not None:
        get_mechanism(name).check(options)


def release(name: str, problem: CovProblem, budget: Budget, rng: np.random.Generator, *,
            options: dict | None = None, clamp: bool = True) -> tuple[np.ndarray, Accountant]:
    """Run mechanism ``name`` on ``problem`` so that the output satisfies ``budget``.

    The mechanism gets the largest budget of its own notion that implies ``budget`` and spends it
    through the returned accountant. ``clamp`` projects the eigenvalues of the released estimate into
    [0, r^2] (post-processing, so free of privacy cost).
    """
    mechanism = get_mechanism(name)
    options = dict(options or {})
    check_options(name, options)
    accountant = Accountant(budget_guaranteeing(budget, mechanism.notion))
    estimate = mechanism.fn(problem, accountant, rng, **options)
    if isinstance(estimate, regression.RidgeRelease):
        return estimate, accountant
    if clamp:
        return clamp_eigenvalues(estimate, 0.0, problem.radius**2), accountant
    return as_matrix(estimate), accountant
