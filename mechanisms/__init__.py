"""Differentially private covariance mechanisms, their privacy budgets and accountant."""
from .predictions import Bound, Facts, Prediction
from .privacy import ApproxDP, Accountant, BudgetExceeded, PureDP, ZCDP, budget_guaranteeing
from .problem import CovProblem
from .registry import MECHANISMS, AuditNeeds, get_mechanism, register_mechanism, release
from .spectral import Spectral

__all__ = ["ApproxDP", "Accountant", "AuditNeeds", "Bound", "BudgetExceeded", "Facts", "Prediction", "PureDP",
           "ZCDP", "budget_guaranteeing", "CovProblem", "MECHANISMS", "get_mechanism", "register_mechanism",
           "release", "Spectral"]
