"""Privacy budgets, their conversions, ``budget_guaranteeing`` and the ``Accountant``.

Facts checked (GUIDE.md §1, Dong et al. §3.1, Bun & Steinke 2016 Prop. 1.3/1.4):
eps-DP => eps^2/2-zCDP; rho-zCDP => (rho + 2 sqrt(rho ln 1/delta), delta)-DP; zCDP and pure DP
compose by adding budgets.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from dpcov.mechanisms.privacy import (
    Accountant,
    ApproxDP,
    BudgetExceeded,
    PureDP,
    ZCDP,
    budget_guaranteeing,
)

BAD_POSITIVE = [0, 0.0, -1e-300, -1, float("nan"), float("inf"), float("-inf")]
NOT_NUMBERS = ["0.5", None, [0.5], True, False, 1 + 0j]


# --- validation ---------------------------------------------------------------------------------
@pytest.mark.parametrize("value", BAD_POSITIVE)
def test_zcdp_rejects_non_positive_or_non_finite_rho(value):
    with pytest.raises(ValueError, match="rho"):
        ZCDP(value)


@pytest.mark.parametrize("value", BAD_POSITIVE)
def test_pure_dp_rejects_non_positive_or_non_finite_eps(value):
    with pytest.raises(ValueError, match="eps"):
        PureDP(value)


@pytest.mark.parametrize("value", BAD_POSITIVE)
def test_approx_dp_rejects_bad_eps(value):
    with pytest.raises(ValueError, match="eps"):
        ApproxDP(value, 1e-6)


@pytest.mark.parametrize("delta", [0, 0.0, -1e-9, 1, 1.0, 1.5, float("nan"), float("inf")])
def test_approx_dp_rejects_delta_outside_open_unit_interval(delta):
    with pytest.raises(ValueError, match="delta"):
        ApproxDP(1.0, delta)


@pytest.mark.parametrize("value", NOT_NUMBERS)
@pytest.mark.parametrize("cls", [ZCDP, PureDP])
def test_budgets_reject_non_numbers(cls, value):
    with pytest.raises(TypeError, match="must be a number"):
        cls(value)


@pytest.mark.parametrize("value", NOT_NUMBERS)
def test_approx_dp_rejects_non_number_delta(value):
    with pytest.raises(TypeError, match="delta"):
        ApproxDP(1.0, value)


def test_budgets_store_floats_and_accept_ints_and_numpy_floats():
    assert ZCDP(2).rho == 2.0 and isinstance(ZCDP(2).rho, float)
    assert PureDP(np.float64(0.25)).eps == 0.25
    budget = ApproxDP(1, 1e-5)
    assert (budget.eps, budget.delta) == (1.0, 1e-5)


@pytest.mark.parametrize("value", [np.int64(1), np.float32(0.5)])
def test_budgets_accept_numpy_scalars(value):
    # regression: HEAD's _positive accepted only int/float and rejected these numbers with TypeError
    assert ZCDP(value).rho == pytest.approx(float(value))
    assert isinstance(PureDP(value).eps, float)


def test_zcdp_to_approx_dp_validates_delta():
    for delta in [0.0, 1.0, -0.5, float("nan")]:
        with pytest.raises(ValueError, match="delta"):
            ZCDP(0.1).to_approx_dp(delta)


def test_budgets_are_immutable_values():
    budget = ZCDP(0.5)
    with pytest.raises(Exception):
        budget.rho = 1.0  # frozen dataclass
    assert ZCDP(0.5) == budget and hash(ZCDP(0.5)) == hash(budget)
    assert ZCDP(0.5) != PureDP(0.5)


# --- conversions --------------------------------------------------------------------------------
@pytest.mark.parametrize("eps", [1e-3, 0.1, 0.8, 1.0, 6.4])
def test_pure_dp_to_zcdp_is_eps_squared_over_two(eps):
    assert PureDP(eps).to_zcdp() == ZCDP(eps**2 / 2)
    assert PureDP(eps).to_zcdp().rho == pytest.approx(eps * eps / 2, rel=1e-15)


@pytest.mark.parametrize("rho", [1e-4, 0.1, 1.0, 10.0])
@pytest.mark.parametrize("delta", [1e-10, 1e-5, 0.5])
def test_zcdp_to_approx_dp_formula(rho, delta):
    approx = ZCDP(rho).to_approx_dp(delta)
    assert isinstance(approx, ApproxDP)
    assert approx.delta == delta
    assert approx.eps == pytest.approx(rho + 2 * math.sqrt(rho * math.log(1 / delta)), rel=1e-14)


def test_zcdp_to_approx_dp_known_value():
    # rho = 1, delta = e^-4: eps = 1 + 2 sqrt(4) = 5
    assert ZCDP(1.0).to_approx_dp(math.exp(-4)).eps == pytest.approx(5.0, rel=1e-14)


@pytest.mark.parametrize("rho", [1e-8, 1e-4, 0.1, 1.0, 10.0, 100.0])
@pytest.mark.parametrize("delta", [1e-10, 1e-5, 0.5])
def test_approx_dp_to_zcdp_inverts_the_conversion(rho, delta):
    approx = ZCDP(rho).to_approx_dp(delta)
    assert approx.to_zcdp().rho == pytest.approx(rho, rel=1e-9)


@pytest.mark.parametrize("eps, delta", [(0.1, 1e-10), (1.0, 1e-6), (8.0, 0.01)])
def test_approx_dp_to_zcdp_is_the_largest_sufficient_rho(eps, delta):
    rho = ApproxDP(eps, delta).to_zcdp().rho
    # rho-zCDP reaches exactly (eps, delta); any larger rho overshoots eps
    assert ZCDP(rho).to_approx_dp(delta).eps == pytest.approx(eps, rel=1e-12)
    assert ZCDP(rho * (1 + 1e-6)).to_approx_dp(delta).eps > eps


def test_scaled_budgets():
    assert ZCDP(0.8).scaled(0.25) == ZCDP(0.2)
    assert PureDP(2.0).scaled(0.5) == PureDP(1.0)
    scaled = ApproxDP(1.0, 1e-4).scaled(0.5)
    assert (scaled.eps, scaled.delta) == (0.5, 5e-5)
    with pytest.raises(ValueError):
        ZCDP(1.0).scaled(0.0)


# --- budget_guaranteeing ------------------------------------------------------------------------
@pytest.mark.parametrize("budget", [ZCDP(0.3), PureDP(0.7), ApproxDP(1.0, 1e-6)])
def test_budget_guaranteeing_same_notion_is_identity(budget):
    assert budget_guaranteeing(budget, type(budget)) is budget


@pytest.mark.parametrize("rho", [1e-4, 0.1, 2.0])
def test_pure_dp_mechanism_under_zcdp_target_gets_sqrt_2rho(rho):
    budget = budget_guaranteeing(ZCDP(rho), PureDP)
    assert isinstance(budget, PureDP)
    assert budget.eps == pytest.approx(math.sqrt(2 * rho), rel=1e-15)
    # and its zCDP cost is exactly the target
    assert budget.to_zcdp().rho == pytest.approx(rho, rel=1e-12)


def test_pure_dp_mechanism_under_approx_target_gets_eps():
    assert budget_guaranteeing(ApproxDP(0.9, 1e-7), PureDP) == PureDP(0.9)


def test_zcdp_mechanism_under_approx_target_gets_converted_rho():
    target = ApproxDP(1.0, 1e-6)
    budget = budget_guaranteeing(target, ZCDP)
    assert isinstance(budget, ZCDP)
    log_term = math.log(1e6)
    assert budget.rho == pytest.approx((math.sqrt(log_term + 1) - math.sqrt(log_term)) ** 2, rel=1e-12)
    assert budget.to_approx_dp(1e-6).eps <= 1.0 * (1 + 1e-12)


@pytest.mark.parametrize("target, notion", [
    (PureDP(1.0), ZCDP),  # zCDP does not imply pure DP
    (PureDP(1.0), ApproxDP),  # delta > 0 never implies pure DP
    (ZCDP(0.1), ApproxDP),  # (eps, delta)-DP does not imply zCDP
])
def test_budget_guaranteeing_impossible_cases_raise(target, notion):
    with pytest.raises(ValueError, match="cannot meet"):
        budget_guaranteeing(target, notion)


# --- Accountant ---------------------------------------------------------------------------------
def test_accountant_rejects_non_budget_total():
    for total in [0.1, None, "rho=0.1"]:
        with pytest.raises(TypeError):
            Accountant(total)


def test_accountant_starts_empty():
    acc = Accountant(ZCDP(1.0))
    assert acc.ledger == [] and acc.spent is None and not acc.fully_spent()
    assert acc.notion is ZCDP and acc.total == ZCDP(1.0)


def test_zcdp_composition_adds_and_ledger_records_each_charge():
    acc = Accountant(ZCDP(1.0))
    assert acc.spend(ZCDP(0.25), "a") == ZCDP(0.25)
    acc.spend(ZCDP(0.5), "b")
    assert acc.spent == ZCDP(0.75)
    assert acc.ledger == [("a", ZCDP(0.25)), ("b", ZCDP(0.5))]
    assert not acc.fully_spent()
    acc.spend(ZCDP(0.25), "c")
    assert acc.fully_spent()


def test_pure_dp_spend_converts_into_zcdp_accountant():
    acc = Accountant(ZCDP(1.0))
    acc.spend(PureDP(1.0), "svt")  # costs 1/2
    assert acc.spent.rho == pytest.approx(0.5, rel=1e-15)
    assert acc.ledger == [("svt", PureDP(1.0))]
    acc.spend(PureDP(1.0), "svt again")
    assert acc.fully_spent()
    with pytest.raises(BudgetExceeded):
        acc.spend(PureDP(1e-3), "one more")


def test_pure_dp_accountant_adds_eps():
    acc = Accountant(PureDP(1.0))
    acc.spend(PureDP(0.3), "x")
    acc.spend(PureDP(0.7), "y")
    assert acc.spent.eps == pytest.approx(1.0)
    assert acc.fully_spent()


def test_approx_dp_accountant_adds_eps_and_delta():
    acc = Accountant(ApproxDP(1.0, 1e-6))
    acc.spend(PureDP(0.5), "pure step")
    assert acc.spent == PureDP(0.5)  # no delta spent yet: reported as pure DP
    acc.spend(ApproxDP(0.5, 1e-6), "approx step")
    assert acc.spent == ApproxDP(1.0, 1e-6)
    assert acc.fully_spent()
    with pytest.raises(BudgetExceeded):
        acc.spend(ApproxDP(1e-3, 1e-9), "over")


def test_remaining_is_what_the_accountant_still_allows():
    """Accountant.remaining (mechanism='auto''s fallback runs at it): the total minus what was spent, in the
    accountant's notion; spending exactly it is allowed and fills the total; None once nothing is left."""
    for total, first, left in ((ZCDP(1.0), PureDP(1.0), ZCDP(0.5)), (PureDP(2.0), PureDP(0.5), PureDP(1.5)),
                               (ApproxDP(1.0, 1e-6), PureDP(0.25), ApproxDP(0.75, 1e-6)),
                               (ApproxDP(1.0, 1e-6), ApproxDP(0.25, 1e-6), PureDP(0.75)),  # no delta left
                               (ApproxDP(1.0, 1e-6), ApproxDP(0.25, 4e-7), ApproxDP(0.75, 6e-7))):
        acc = Accountant(total)
        assert acc.remaining == total
        acc.spend(first, "first")
        remaining = acc.remaining
        assert type(remaining) is type(left)
        assert all(getattr(remaining, f) == pytest.approx(getattr(left, f), rel=1e-12) for f in vars(left))
        acc.spend(remaining, "the rest")
        assert acc.fully_spent() and acc.remaining is None
        with pytest.raises(BudgetExceeded):
            acc.spend(PureDP(1e-3), "over")


@pytest.mark.parametrize("total, spend", [
    (ZCDP(1.0), ApproxDP(0.1, 1e-6)),
    (PureDP(1.0), ZCDP(0.1)),
    (PureDP(1.0), ApproxDP(0.1, 1e-6)),
    (ApproxDP(1.0, 1e-6), ZCDP(0.1)),
])
def test_accountant_refuses_incompatible_notions(total, spend):
    acc = Accountant(total)
    with pytest.raises(TypeError, match="cannot charge"):
        acc.spend(spend, "x")
    assert acc.ledger == []


def test_overspending_raises_and_leaves_ledger_unchanged():
    acc = Accountant(ZCDP(1.0))
    acc.spend(ZCDP(0.6), "first")
    ledger_before, spent_before = list(acc.ledger), acc.spent
    with pytest.raises(BudgetExceeded, match="second"):
        acc.spend(ZCDP(0.5), "second")
    assert acc.ledger == ledger_before
    assert acc.spent == spent_before
    # the remaining 0.4 can still be spent afterwards
    acc.spend(ZCDP(0.4), "third")
    assert acc.fully_spent()


def test_single_overspend_on_empty_accountant():
    acc = Accountant(ZCDP(0.1))
    with pytest.raises(BudgetExceeded):
        acc.spend(ZCDP(0.1000001), "too much")
    assert acc.ledger == [] and acc.spent is None


def test_float_rounding_of_sub_budgets_is_tolerated():
    total = ZCDP(0.1)
    acc = Accountant(total)
    for _ in range(3):
        acc.spend(total.scaled(1 / 3), "third")
    assert acc.fully_spent()
    acc7 = Accountant(ZCDP(0.7))
    for _ in range(7):  # 7 * 0.1 != 0.7 in floating point
        acc7.spend(ZCDP(0.1), "tenth")
    assert acc7.fully_spent()


def test_accountants_do_not_share_state():
    a, b = Accountant(ZCDP(1.0)), Accountant(ZCDP(1.0))
    a.spend(ZCDP(1.0), "all")
    assert b.ledger == [] and b.spent is None
