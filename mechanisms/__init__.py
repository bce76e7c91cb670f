"""Differentially private covariance mechanisms, their privacy budgets and accountant.

The names below load on first use (PEP 562): ``import mechanisms.problem`` alone (what a Dask worker summing
a table needs) does not compile or import the registry's mechanisms."""
from importlib import import_module

_HOMES = {"Bound": "predictions", "Facts": "predictions", "Prediction": "predictions", "ApproxDP": "privacy",
          "Accountant": "privacy", "BudgetExceeded": "privacy", "PureDP": "privacy", "ZCDP": "privacy",
          "budget_guaranteeing": "privacy", "CovProblem": "problem", "MECHANISMS": "registry",
          "AuditNeeds": "registry", "get_mechanism": "registry", "register_mechanism": "registry",
          "release": "registry", "Spectral": "spectral"}
__all__ = list(_HOMES)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module 'mechanisms' has no attribute {name!r}")
    return getattr(import_module(f".{_HOMES[name]}", __name__), name)
