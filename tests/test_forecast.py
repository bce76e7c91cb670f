"""A warning before a useless release (dpcov/forecast.py): from public facts, before the covariance's budget is
spent; silent on well-posed fits."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_diabetes

import dpcov
from dpcov.estimators import UselessReleaseWarning
from dpcov.forecast import forecast


def _diabetes():
    X, y = load_diabetes(return_X_y=True)
    scale = np.linalg.norm(np.column_stack([X, y]), axis=1).max()  # rows [x, y] into the unit ball
    return X / scale, y / scale


def test_ridge_on_diabetes_warns_before_it_releases():
    """Issue 55's case: PrivateRidge at PureDP(4) on 442 rows is worse than predicting the mean (R^2 < 0 on every
    seed here). The warning comes before the covariance is released (raised as an error it stops the fit there)
    and says how many rows or how much budget would do."""
    X, y = _diabetes()
    with pytest.warns(UselessReleaseWarning, match=r"no better than predicting y's mean .* about \d+ rows"):
        fit = dpcov.PrivateRidge(budget=dpcov.PureDP(4.0), radius=1.0, centering="private", random_state=0).fit(X, y)
    assert fit.forecast_.useless and fit.forecast_.n_needed > 2000
    assert fit.score(X, y) < 0.05
    with warnings.catch_warnings():
        warnings.simplefilter("error", UselessReleaseWarning)
        with pytest.raises(UselessReleaseWarning):
            dpcov.PrivateRidge(budget=dpcov.PureDP(4.0), radius=1.0, centering="private", random_state=0).fit(X, y)


def test_well_posed_fits_are_silent():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50000, 10))
    X /= np.linalg.norm(X, axis=1).max() * 1.01
    y = X @ rng.normal(size=10) * 0.05
    with warnings.catch_warnings():
        warnings.simplefilter("error", UselessReleaseWarning)
        ridge = dpcov.PrivateRidge(budget=dpcov.PureDP(4.0), radius=1.0, centering="private", random_state=0).fit(X, y)
        pca = dpcov.PrivatePCA(3, budget=dpcov.PureDP(4.0), radius=1.0, centering="private", random_state=0).fit(X)
        cov = dpcov.PrivateCovariance(budget=dpcov.ZCDP(0.5), radius=1.0, centering="private", random_state=0).fit(X)
    assert not (ridge.forecast_.useless or pca.forecast_.useless or cov.forecast_.useless)


def test_a_zero_release_warns_whether_chosen_named_or_numerically_zero():
    """60 rows at rho = 0.05: AdaptiveCov's private radius finds no row and the covariance comes back (numerically)
    zero -- issue 55's silent case; the named zero mechanism says it is the trivial release."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    X /= np.linalg.norm(X, axis=1).max()
    with pytest.warns(UselessReleaseWarning, match="zero matrix"):
        dpcov.PrivateCovariance(budget=dpcov.ZCDP(0.05), radius=1.0, centering="private", random_state=0).fit(X)
    with pytest.warns(UselessReleaseWarning, match="releases the zero matrix"):
        dpcov.PrivateCovariance(mechanism="zero", budget=dpcov.ZCDP(0.05), radius=1.0,
                                centering="assume_centered").fit(X)


def test_the_forecast_scales_with_n_and_budget_and_its_needs_pass():
    """What the warning says is needed does pass the forecast, and a bit less does not."""
    f = forecast("covariance", "gauss", 100, 50, 1.0, dpcov.ZCDP(0.01))
    assert f.useless and f.n_needed and f.scale_needed
    assert not forecast("covariance", "gauss", f.n_needed, 50, 1.0, dpcov.ZCDP(0.01)).useless
    assert forecast("covariance", "gauss", int(f.n_needed * 0.95), 50, 1.0, dpcov.ZCDP(0.01)).useless
    assert not forecast("covariance", "gauss", 100, 50, 1.0, dpcov.ZCDP(0.01 * f.scale_needed)).useless
    assert forecast("covariance", "zero", 100, 50, 1.0, dpcov.ZCDP(0.01)) is None  # the estimators say so themselves


def test_the_forecast_of_a_tiny_approx_budget_keeps_its_delta():
    """A fit at (0.1, 1e-6) whose forecast looks ~1e6 x further for the budget it needs: the larger budget keeps
    delta (scaling it past 1 raised a ValueError inside the fit: issue 60's benchmark found it)."""
    import warnings

    import numpy as np

    import dpcov
    from dpcov.forecast import times
    assert times(dpcov.ApproxDP(0.1, 1e-6), 1e7) == dpcov.ApproxDP(1e6, 1e-6)
    assert times(dpcov.ZCDP(0.5), 4) == dpcov.ZCDP(2.0)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 12)) * 0.05
    y = X @ rng.normal(size=12) * 0.1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = dpcov.PrivateRidge(budget=dpcov.ApproxDP(0.1, 1e-6), radius=1.0, clip=True, centering="private",
                                   random_state=0).fit(X, y)
    assert model.coef_.shape == (12,)
