"""The black-box audit under add/remove neighbours (issue 54, item 5): pairs of n and n + 1 rows, a registered
mechanism run through release(privacy_unit="add_remove"), a plug-in that protects a row's presence itself run as it
is, and constructions that use the exact n caught by the add/remove pairs where the replace-one pairs cannot."""
from __future__ import annotations

import numpy as np
import pytest

import dpcov
from dpcov import PureDP, ZCDP
from dpcov.audits.blackbox import audit, claims_unit, default_add_remove_pairs, default_pairs
from dpcov.audits.pairs import ADD_REMOVE_FAMILIES, FAMILIES, PairSpec
from dpcov.mechanisms.registry import register_mechanism, release
from dpcov.mechanisms.units import private_count

# fits on rows of zeros release (numerically) nothing, and say so: expected here
pytestmark = pytest.mark.filterwarnings("ignore::dpcov.estimators.UselessReleaseWarning")


# --- Deliberately broken add/remove constructions (plug-ins of this module, run in this process: n_jobs=1) -------

@claims_unit("add_remove")
@register_mechanism(notion="zcdp", label="count released, then GaussCov at the exact n")
def exact_n_gauss(problem, accountant, rng):
    """Buys a private count (2 % of the budget) and ignores it: GaussCov with the exact n public. Private for
    replace-one pairs (GaussCov at 98 % of its budget), not for add/remove ones: the noise scale is 1/n."""
    private_count(problem.n, accountant.total.scaled(0.02), accountant, rng)
    out, inner = release("gauss", problem, accountant.total.scaled(0.98), rng, clamp=False)
    accountant.spend(accountant.total.scaled(0.98), "GaussCov at the exact n")
    return out


@claims_unit("add_remove")
@register_mechanism(notion="zcdp", label="PrivateCovariance (gauss) under replace-one, claiming add/remove")
def replace_one_estimator(problem, accountant, rng):
    """Issue 54's membership configuration under privacy_unit="replace_one" (n public), claiming add/remove: the
    released centre's grid follows the exact n."""
    fit = dpcov.PrivateCovariance(mechanism="gauss", budget=accountant.total, radius=1.0, centering="private",
                                  privacy_unit="replace_one", random_state=rng).fit(problem.rows)
    accountant.spend(fit.budget_spent_, "estimator")
    return np.diag(fit.location_)


# --- Pairs ----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("family", ADD_REMOVE_FAMILIES)
@pytest.mark.parametrize("n, d, radius, angle, remove", [(1, 2, 1.0, 0.0, False), (10, 3, 4.0, 0.4, True),
                                                          (101, 2, 1.0, 0.0, False)])
def test_every_add_remove_family_adds_or_removes_one_row(family, n, d, radius, angle, remove):
    spec = PairSpec(family, n, d=d, radius=radius, angle=angle, seed=1, remove=remove)
    pair = spec.build()
    small, big = (pair.Dp, pair.D) if remove else (pair.D, pair.Dp)
    assert small.shape == (n, d) and big.shape == (n + 1, d)
    assert np.array_equal(big[:-1], small)  # D' is D plus one row (or minus its last)
    for rows in (pair.D, pair.Dp):
        assert np.all(np.linalg.norm(rows, axis=1) <= radius * (1 + 1e-12))
    assert spec.unit == pair.unit == "add_remove"
    assert [p.n for p in pair.problems] == [len(pair.D), len(pair.Dp)]
    assert ("removed" if remove else "added") in pair.describe()


def test_units_are_marked_and_the_replace_one_pairs_stay():
    assert all(PairSpec(f, 3).unit == "replace_one" and PairSpec(f, 3).build().unit == "replace_one" for f in FAMILIES)
    assert {p.family for p in default_pairs()} == set(FAMILIES)  # unchanged
    assert {p.family for p in default_add_remove_pairs()} == set(ADD_REMOVE_FAMILIES)
    assert any(p.remove for p in default_add_remove_pairs()) and any(not p.remove for p in default_add_remove_pairs())
    membership = PairSpec("add_zeros", 809).build()  # issue 54's pair: only n differs
    assert membership.D.shape == (809, 2) and membership.Dp.shape == (810, 2)
    assert not membership.D.any() and not membership.Dp.any()
    with pytest.raises(ValueError, match="remove=True is for the add/remove families"):
        PairSpec("zeros", 3, remove=True)
    with pytest.raises(ValueError, match="unknown neighbour family"):
        PairSpec("add_nothing", 3)
    with pytest.raises(ValueError, match="privacy_unit='add_remove'"):  # add/remove pairs in a replace-one audit
        audit("gauss", ZCDP(0.5), pairs=[PairSpec("add_zeros", 1)], runs=10, n_jobs=1)


# --- Registered mechanisms under add/remove pass ----------------------------------------------------------------------

def test_gauss_passes_under_add_remove_with_its_low_bits():
    """GaussCov through release(privacy_unit="add_remove"), hardened: the precision stage on 1 against 2 zero rows
    (the grid follows the released count) and on zeros(n=3), then add/remove and replace-one pairs."""
    report = audit("gauss", ZCDP(0.5), options={"numerics": "hardened"}, privacy_unit="add_remove", gaussian=True,
                   pairs=[PairSpec("add_unit", 1), PairSpec("add_zeros", 1), PairSpec("swap_values", 10)],
                   runs=1000, confirmations=2, seed=3, n_jobs=1)
    assert report.privacy_unit == "add_remove" and "release(privacy_unit='add_remove')" in report.run_as
    assert len(report.findings) == 4 and report.findings[0].pair.startswith("add_zeros(n=1")  # 2 precision + 2
    assert not report.exceeded, report.describe()
    assert "add/remove" in report.describe()


def test_a_pure_dp_mechanism_passes_under_add_remove():
    report = audit("lap", PureDP(1.0), privacy_unit="add_remove",
                   pairs=[PairSpec("add_unit", 1), PairSpec("add_values", 10), PairSpec("l1", 10)],
                   runs=1500, confirmations=2, seed=3, n_jobs=1)
    assert not report.exceeded, report.describe()


def test_a_mechanism_that_cannot_protect_presence_is_refused():
    from dpcov.mechanisms.registry import MECHANISMS
    refusing = [name for name, m in MECHANISMS.items() if m.add_remove is not None]
    if not refusing:
        pytest.skip("every registered mechanism qualifies for add/remove")
    with pytest.raises(ValueError, match="cannot protect a row's presence"):
        audit(refusing[0], privacy_unit="add_remove", runs=10, n_jobs=1)


# --- Broken constructions: caught by the add/remove pairs, not by the replace-one ones ------------------------------

def test_the_exact_n_is_caught_by_add_remove_pairs_only():
    replace_pairs = [PairSpec("swap_values", 10), PairSpec("zeros", 1), PairSpec("new_direction", 2)]
    honest_looking = audit(exact_n_gauss, ZCDP(0.5), privacy_unit="replace_one", pairs=replace_pairs, runs=1500,
                           confirmations=3, seed=3, n_jobs=1, numerics="idealized")
    assert honest_looking.privacy_unit == "replace_one"
    assert not honest_looking.exceeded, honest_looking.describe()
    caught = audit(exact_n_gauss, ZCDP(0.5), pairs=[PairSpec("add_zeros", 1)] + replace_pairs, runs=1500,
                   confirmations=1, seed=3, n_jobs=1, numerics="idealized")
    assert caught.privacy_unit == "add_remove" and "as it is" in caught.run_as  # its own unit, by default
    assert caught.exceeded and caught.worst.pair.startswith("add_zeros(n=1"), caught.describe()
    assert caught.worst.bound.value > 2 * caught.claim.value  # noise sd 1/1 against 1/2: far above the claim


def test_the_membership_leak_is_caught_on_its_low_bits_and_the_default_unit_passes():
    """Issue 54's estimator under replace-one, claiming add/remove: the precision stage on the membership pair (809
    against 810 zero rows, the first add_zeros pair given) finds the centre's grid following n. The estimators'
    default unit on the same pairs: nothing."""
    from dpcov import audited  # noqa: F401  (registers membership_gauss)
    pairs = [PairSpec("add_zeros", 809), PairSpec("swap_values", 10)]
    leaky = audit(replace_one_estimator, ZCDP(0.5), pairs=pairs, runs=600, confirmations=1, seed=3, n_jobs=1)
    assert leaky.exceeded and "[low bits]" in leaky.worst.pair and "add_zeros(n=809" in leaky.worst.pair, \
        leaky.describe()
    honest = audit("dpcov.audited:membership_gauss", ZCDP(0.5), pairs=pairs, runs=600, confirmations=1, seed=3,
                   n_jobs=1)
    assert honest.numerics == "as executed" and honest.privacy_unit == "add_remove"
    assert not honest.exceeded, honest.describe()


# --- The command line -------------------------------------------------------------------------------------------------

def test_audit_command_takes_a_privacy_unit(capsys):
    from dpcov.commands.audit import main
    pairs_small = ["--runs", "40", "--confirmations", "1", "--quiet", "--n-jobs", "1", "--budget", "rho=0.5"]
    assert main(["gauss", "--privacy-unit", "add_remove", *pairs_small]) == 0
    out = capsys.readouterr().out
    assert "privacy unit add_remove" in out and "neighbours: add/remove" in out and "no evidence" in out
    with pytest.raises(SystemExit):  # argparse: an unknown unit
        main(["gauss", "--privacy-unit", "sideways", *pairs_small])
