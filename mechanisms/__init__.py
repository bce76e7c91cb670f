"""Differentially private covariance mechanisms, their privacy budgets and accountant."""
from .privacy import ApproxDP, Accountant, BudgetExceeded, PureDP, ZCDP, budget_guaranteeing
from .problem import CovProblem
from .registry import MECHANISMS, get_mechanism, register_mechanism, release
from .spectral import Spectral

__all__ = ["ApproxDP", "Accountant", "BudgetExceeded", "PureDP", "ZCDP", "budget_guaranteeing",
           "CovProblem", "MECHANISMS", "get_mechanism", "register_mechanism", "release", "Spectral"]
