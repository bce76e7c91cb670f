"""Plug-in mechanisms used by tests/test_plugins.py: honest ones and broken ones (importable as
``plugin_cases:<name>``, from tests/ on sys.path, also in worker processes)."""
import numpy as np

from dpcov.mechanisms import PureDP, ZCDP, register_mechanism
from dpcov.mechanisms.gaussian import gauss_noisy


@register_mechanism(notion=ZCDP, label="Twice GaussCov")
def overspending(problem, accountant, rng):
    """Spends its whole budget twice (averaging two GaussCov releases): must be refused."""
    first = gauss_noisy(problem.sigma, problem.radius, problem.n, accountant.total, accountant, rng)
    second = gauss_noisy(problem.sigma, problem.radius, problem.n, accountant.total, accountant, rng)
    return (first + second) / 2


@register_mechanism(notion=PureDP, label="zCDP step under pure DP")
def wrong_notion(problem, accountant, rng):
    """Declares pure DP but spends a zCDP step: the accountant cannot charge it."""
    return gauss_noisy(problem.sigma, problem.radius, problem.n, ZCDP(0.1), accountant, rng)


@register_mechanism(notion="zcdp", label="Halves", name="halves")
def halves(problem, accountant, rng, *, parts: int = 2):
    """GaussCov at rho/parts, averaged over ``parts`` releases: spends exactly rho."""
    share = accountant.total.scaled(1 / parts)
    releases = [gauss_noisy(problem.sigma, problem.radius, problem.n, share, accountant, rng) for _ in range(parts)]
    return sum(releases) / parts


@register_mechanism(notion=ZCDP)
def wrong_shape(problem, accountant, rng):
    return np.zeros((problem.d + 1, problem.d))


@register_mechanism(notion=ZCDP)
def not_finite(problem, accountant, rng):
    return np.full((problem.d, problem.d), np.nan)


@register_mechanism(notion=ZCDP)
def asymmetric(problem, accountant, rng):
    return np.triu(np.ones((problem.d, problem.d)))


def undeclared(problem, accountant, rng):
    """A mechanism without @register_mechanism: its privacy notion is unknown, so it is refused."""
    return problem.sigma
