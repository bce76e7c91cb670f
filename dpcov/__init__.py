"""dpcov: differentially private covariance estimation -- the public API under the project's own name.

    import dpcov
    cov = dpcov.PrivateCovariance(budget=dpcov.ZCDP(0.5), radius=1.0, centering="private").fit(X)
    cov.mechanism_, cov.advice_    # mechanism="auto": the measured best for n, d and the budget

Budgets (``ZCDP``, ``PureDP``, ``ApproxDP``), the problem and ``release`` (any registered mechanism or
plug-in by name), ``register_mechanism`` with what a plug-in may declare (``Prediction``, ``Bound``,
``AuditNeeds``), the error metrics, and scikit-learn estimators (``PrivateCovariance``, ``PrivatePCA``,
``PrivateRidge``; their defaults: dpcov/defaults.py), and ``local_cluster`` (Dask workers on this machine, for a
fit on a Dask array or dataframe). User code imports this, not the suite's folder names.
"""
from data.chunks import local_cluster
from experiments.metrics import METRICS
from mechanisms import (MECHANISMS, Accountant, ApproxDP, AuditNeeds, Bound, BudgetExceeded, CovProblem, Facts,
                        Prediction, PureDP, Spectral, ZCDP, budget_guaranteeing, get_mechanism, register_mechanism,
                        release)

from .estimators import PrivateCovariance, PrivatePCA, PrivateRidge, captured_variance_ratio

__all__ = ["Accountant", "ApproxDP", "AuditNeeds", "Bound", "BudgetExceeded", "CovProblem", "Facts", "MECHANISMS",
           "METRICS", "Prediction", "PrivateCovariance", "PrivatePCA", "PrivateRidge", "PureDP", "Spectral", "ZCDP",
           "budget_guaranteeing", "captured_variance_ratio", "get_mechanism", "local_cluster", "register_mechanism",
           "release"]
