"""dpcov: differentially private covariance estimation -- the public API under the project's own name.

    import dpcov
    cov = dpcov.PrivateCovariance(budget=dpcov.ZCDP(0.5), radius=1.0, centering="private").fit(X)
    cov.mechanism_, cov.advice_    # mechanism="auto": the measured best for n, d and the budget

Budgets (``ZCDP``, ``PureDP``, ``ApproxDP``), the problem and ``release`` (any registered mechanism or
plug-in by name), ``register_mechanism`` with what a plug-in may declare (``Prediction``, ``Bound``,
``AuditNeeds``), the error metrics, and scikit-learn estimators (``PrivateCovariance``, ``PrivatePCA``,
``PrivateRidge``; their defaults: dpcov/defaults.py), and ``local_cluster`` (Dask workers on this machine, for a
fit on a Dask array or dataframe), and ``Session`` (one budget per dataset, charged by every release, its ledger
in a locked file).

dpcov is the one name the package installs: the suite's folders are its subpackages (``dpcov.mechanisms``,
``dpcov.data``, ``dpcov.experiments``, ``dpcov.figures``, ``dpcov.audits``; pyproject.toml's package-dir maps
each to its folder in a checkout). The names below load on first use (PEP 562), so ``import
dpcov.mechanisms.problem`` (what a Dask worker summing a table needs) does not import the estimators.
"""
from __future__ import annotations

from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING

# A checkout run without installing (python run.py, python scripts/X.py): the folders beside dpcov/ are
# its subpackages, as the installed wheel lays them out beneath it.
_CHECKOUT = Path(__file__).resolve().parents[1]
if (_CHECKOUT / "pyproject.toml").is_file() and (_CHECKOUT / "mechanisms" / "__init__.py").is_file():
    __path__.append(str(_CHECKOUT))  # noqa: F821 -- a package's own __path__

if TYPE_CHECKING:  # what the names below are, for readers and the API reference (griffe)
    from .data.chunks import local_cluster
    from .estimators import PrivateCovariance, PrivatePCA, PrivateRidge, UselessReleaseWarning, captured_variance_ratio
    from .experiments.metrics import METRICS
    from .session import Session
    from .mechanisms import (MECHANISMS, Accountant, ApproxDP, AuditNeeds, Bound, BudgetExceeded, CovProblem, Facts,
                             Prediction, PureDP, Spectral, ZCDP, budget_guaranteeing, get_mechanism,
                             register_mechanism, release)

_HOMES = {"local_cluster": ".data.chunks", "METRICS": ".experiments.metrics", "Session": ".session",
          **dict.fromkeys(("PrivateCovariance", "PrivatePCA", "PrivateRidge", "UselessReleaseWarning",
                           "captured_variance_ratio"), ".estimators"),
          **dict.fromkeys(("MECHANISMS", "Accountant", "ApproxDP", "AuditNeeds", "Bound", "BudgetExceeded",
                           "CovProblem", "Facts", "Prediction", "PureDP", "Spectral", "ZCDP", "budget_guaranteeing",
                           "get_mechanism", "register_mechanism", "release"), ".mechanisms")}
__all__ = sorted(_HOMES)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module 'dpcov' has no attribute {name!r}")
    value = getattr(import_module(_HOMES[name], __name__), name)
    globals()[name] = value  # once loaded, an ordinary attribute
    return value
