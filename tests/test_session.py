"""dpcov.Session (issue 54): one budget per dataset across every release, in one ledger (dpcov/session.py).

Composition per notion; a refused release spends nothing and says what is left; the ledger file survives a
restart, is shared by processes under a lock (two racing for the last share: exactly one gets it), and a
file that does not parse or holds another unit or notion is refused and left unchanged; the zCDP -> (eps,
delta) conversion (Canonne, Kamath & Steinke 2020) against dp-accounting; the ``dpcov session`` command."""
from __future__ import annotations

import copy
import functools
import json
import math
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import dpcov
from dpcov.cli import main
from dpcov.mechanisms.privacy import ApproxDP, BudgetExceeded, PureDP, ZCDP, zcdp_delta, zcdp_eps
from dpcov.session import Session

ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------------------------------------------
# composition


def test_zcdp_session_adds_rho_and_takes_pure_as_eps_squared_over_two():
    session = Session(ZCDP(1.0))
    session.charge(ZCDP(0.25), "covariance")
    session.charge(PureDP(1.0), "a Laplace mean")  # 1^2/2 = 0.5
    assert session.spent.rho == pytest.approx(0.75) and session.remaining.rho == pytest.approx(0.25)
    assert [r["what"] for r in session.releases] == ["covariance", "a Laplace mean"]
    assert session.releases[1]["budget"] == {"notion": "pure", "eps": 1.0}
    with pytest.raises(BudgetExceeded):
        session.charge(PureDP(0.8), "0.32 of 0.25 left")
    with pytest.raises(BudgetExceeded):  # the float sqrt(0.5) is above sqrt(1/2): exactly, eps^2/2 > 0.25
        session.charge(PureDP(math.sqrt(0.5)), "a hair more than the rest")
    session.charge(PureDP(math.nextafter(math.sqrt(0.5), 0)), "the rest, rounded down")
    assert session.remaining is None and session.spent.rho == pytest.approx(1.0)


def test_pure_session_adds_eps_and_approx_session_adds_both():
    pure = Session(PureDP(2.0), privacy_unit="replace_one")
    pure.charge(PureDP(0.5), "a")
    pure.charge(PureDP(1.0), "b")
    assert pure.spent == PureDP(1.5) and pure.remaining.eps == pytest.approx(0.5)
    approx = Session(ApproxDP(2.0, 1e-6))
    approx.charge(PureDP(0.5), "pure: (0.5, 0)")
    assert approx.spent == PureDP(0.5) and approx.remaining == ApproxDP(1.5, 1e-6)
    approx.charge(ApproxDP(1.0, 4e-7), "approx")
    assert approx.spent == ApproxDP(1.5, 4e-7)
    assert approx.remaining.eps == pytest.approx(0.5) and approx.remaining.delta == pytest.approx(6e-7)
    with pytest.raises(BudgetExceeded):
        approx.charge(ApproxDP(0.1, 1e-6), "delta over")


@pytest.mark.parametrize("total, release", [(ZCDP(1.0), ApproxDP(0.5, 1e-6)), (PureDP(1.0), ZCDP(0.1)),
                                            (PureDP(1.0), ApproxDP(0.5, 1e-6)), (ApproxDP(1.0, 1e-6), ZCDP(0.1))])
def test_a_release_of_a_notion_the_session_cannot_take_spends_nothing(total, release, tmp_path):
    session = Session(total, path=tmp_path / "s.json", new=True)
    before = (tmp_path / "s.json").read_bytes()
    with pytest.raises(TypeError, match=f"cannot take a {type(release).__name__} release.*nothing was charged"):
        session.charge(release, "wrong notion")
    for bad in (0.5, "rho=0.1", None):
        with pytest.raises(TypeError, match="must be dpcov.ZCDP, PureDP or ApproxDP"):
            session.charge(bad, "not a budget")
    with pytest.raises(ValueError, match="what must say"):
        session.charge(PureDP(0.1), "")
    assert session.spent is None and (tmp_path / "s.json").read_bytes() == before


def test_budget_exceeded_spends_nothing_and_says_what_is_left(tmp_path):
    session = Session(ZCDP(1.0), path=tmp_path / "s.json", new=True)
    session.charge(ZCDP(0.7), "first")
    before = (tmp_path / "s.json").read_bytes()
    with pytest.raises(BudgetExceeded, match=r"second: charging 0.5-zCDP would exceed the session's total "
                                             r"1-zCDP .*0.3-zCDP is left \(spent 0.7-zCDP over 1 release\)"):
        session.charge(ZCDP(0.5), "second")
    assert (tmp_path / "s.json").read_bytes() == before and len(session.releases) == 1
    session.charge(ZCDP(0.3), "the rest")
    with pytest.raises(BudgetExceeded, match="nothing is left"):
        session.charge(ZCDP(1e-6), "one more")


def test_unknown_unit_and_non_budget_total_are_refused(tmp_path):
    with pytest.raises(ValueError, match="'add_remove'.*'replace_one'.*got 'per_person'"):
        Session(ZCDP(1.0), privacy_unit="per_person", path=tmp_path / "s.json", new=True)
    with pytest.raises(TypeError):
        Session(1.0)
    assert not (tmp_path / "s.json").exists()


def test_record_attaches_the_fits_sub_steps():
    session = Session(ZCDP(1.0))
    release = session.charge(ZCDP(0.5), "PCA")
    session.record(release, [("norm bound", ZCDP(0.05)), ("covariance", PureDP(0.9))])  # 0.05 + 0.405
    session.record(release, [("mean", ZCDP(0.04))])
    (entry,) = session.releases
    assert entry["steps"] == [{"what": "norm bound", "budget": {"notion": "zcdp", "rho": 0.05}},
                              {"what": "covariance", "budget": {"notion": "pure", "eps": 0.9}},
                              {"what": "mean", "budget": {"notion": "zcdp", "rho": 0.04}}]
    assert len(entry["id"]) == 32 and entry["id"] == release and entry["time"]
    with pytest.raises(ValueError, match="spend more than its charge"):
        session.record(release, [("too much", ZCDP(0.01))])
    with pytest.raises(ValueError, match="no release 'nope'"):
        session.record("nope", [])
    with pytest.raises(ValueError, match=r"a step is \(what: str, budget\)"):
        session.record(release, [ZCDP(0.01)])
    assert len(session.releases[0]["steps"]) == 3


def test_an_estimators_ledger_is_recorded_as_it_is(tmp_path):
    pytest.importorskip("sklearn")
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2000, 3)) / 4
    session = Session(ZCDP(1.0), path=tmp_path / "s.json", new=True)
    cov = dpcov.PrivateCovariance(budget=ZCDP(0.4), radius=1.0, clip=True, centering="assume_centered",
                                  mechanism="gauss", random_state=0)
    release = session.charge(cov.budget, "covariance of X")
    session.record(release, cov.fit(X).ledger_)
    assert [s["what"] for s in session.releases[0]["steps"]] == [what for what, _ in cov.ledger_]


def test_a_copy_is_the_same_session_and_memory_cannot_be_pickled(tmp_path):
    session = Session(ZCDP(1.0))
    assert copy.copy(session) is session and copy.deepcopy(session) is session
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(session)
    on_file = Session(ZCDP(1.0), path=tmp_path / "s.json", new=True)
    on_file.charge(ZCDP(0.5), "a")
    again = pickle.loads(pickle.dumps(on_file))
    again.charge(ZCDP(0.5), "b")
    assert on_file.remaining is None  # one budget, seen by both objects


def test_dpcov_exports_session():
    assert dpcov.Session is Session and "Session" in dpcov.__all__ and dpcov.BudgetExceeded is BudgetExceeded


# ---------------------------------------------------------------------------------------------------
# the ledger file: restart, lock, refusal


def test_a_restarted_process_resumes_what_was_spent(tmp_path):
    path = tmp_path / "s.json"
    Session(ZCDP(1.0), "replace_one", path, new=True)
    script = ("import sys; from dpcov import Session, ZCDP; "
              "Session(ZCDP(1.0), 'replace_one', sys.argv[1]).charge(ZCDP(0.4), 'from another process')")
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", script, str(path)], cwd=ROOT, capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0, done.stderr
    session = Session.open(path)
    assert (session.total, session.privacy_unit, session.path) == (ZCDP(1.0), "replace_one", path)
    assert session.spent.rho == pytest.approx(0.8) and len(session.releases) == 2
    with pytest.raises(BudgetExceeded, match="0.2-zCDP is left"):
        Session(ZCDP(1.0), "replace_one", path).charge(ZCDP(0.4), "a third")
    data = json.loads(path.read_text())
    assert (data["format"], data["version"], data["notion"], data["total"], data["privacy_unit"]) == (
        "dpcov-session", 2, "zcdp", {"notion": "zcdp", "rho": 1.0}, "replace_one")


RACE = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    from dpcov import BudgetExceeded, Session, ZCDP
    session = Session.open(sys.argv[1])
    while not Path(sys.argv[2]).exists():  # both processes start charging together
        time.sleep(0.001)
    granted = 0
    for _ in range(int(sys.argv[3])):
        try:
            session.charge(ZCDP(float(sys.argv[4])), "race")
            granted += 1
        except BudgetExceeded:
            pass
    Path(sys.argv[2] + f".done-{os.getpid()}").touch()  # then read the total once both have charged
    while len(list(Path(sys.argv[2]).parent.glob(Path(sys.argv[2]).name + ".done-*"))) < 2:
        time.sleep(0.001)
    print(granted, session.spent.rho if session.spent else 0.0)
""")


def race(path: Path, tmp_path: Path, tries: int, rho: float) -> list[tuple[int, float]]:
    go = tmp_path / "go"
    processes = [subprocess.Popen([sys.executable, "-c", RACE, str(path), str(go), str(tries), str(rho)], cwd=ROOT,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    go.touch()
    results = []
    for process in processes:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        granted, spent = out.split()
        results.append((int(granted), float(spent)))
    for done in tmp_path.glob("go.done-*"):
        done.unlink()
    return results


def test_two_processes_cannot_both_spend_the_last_share(tmp_path):
    path = tmp_path / "s.json"
    Session(ZCDP(1.0), path=path, new=True).charge(ZCDP(0.5), "before")
    results = race(path, tmp_path, tries=1, rho=0.3)
    assert sorted(granted for granted, _ in results) == [0, 1]
    assert Session.open(path).spent.rho == pytest.approx(0.8)
    # Many charges interleaved: no charge is lost or doubled (64 of 2^-6 fit in 1.0 exactly, and exactly 64 are
    # granted; 50 of the float 0.02 would not: each is a little above 1/50, and the comparison is exact).
    path = tmp_path / "many.json"
    Session(ZCDP(1.0), path=path, new=True)
    (tmp_path / "go").unlink()
    results = race(path, tmp_path, tries=40, rho=2.0**-6)
    assert sum(granted for granted, _ in results) == 64 and len(Session.open(path).releases) == 64
    assert all(spent == pytest.approx(1.0) for _, spent in results)  # both see the same total afterwards
    assert sorted(p.name for p in tmp_path.iterdir()) == ["go", "many.json", "many.json.lock", "s.json", "s.json.lock"]


@pytest.mark.parametrize("content", [b"", b"{not json", b"\xff\xfe", b"[]", b'{"format": "other"}',
                                     b'{"format": "dpcov-session", "version": 2}'])
def test_a_file_that_does_not_parse_is_refused_and_left_unchanged(content, tmp_path):
    path = tmp_path / "s.json"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=f"{path} is not a readable dpcov session file.*refusing"):
        Session(ZCDP(1.0), path=path)
    with pytest.raises(ValueError, match="not a readable dpcov session file"):
        Session.open(path)
    assert path.read_bytes() == content


def test_a_damaged_ledger_is_refused_even_mid_session(tmp_path):
    path = tmp_path / "s.json"
    session = Session(ZCDP(1.0), path=path, new=True)
    session.charge(ZCDP(0.5), "a")
    data = json.loads(path.read_text())
    data["releases"][0]["budget"] = {"notion": "zcdp", "rho": -1}
    path.write_text(json.dumps(data))
    before = path.read_bytes()
    with pytest.raises(ValueError, match="not a readable dpcov session file"):
        session.charge(ZCDP(0.1), "b")
    with pytest.raises(ValueError, match="not a readable"):
        session.spent
    data["releases"][0]["budget"] = {"notion": "zcdp", "rho": 2.0}  # more than the total: tampered
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="spend more than its total"):
        Session.open(path)
    path.unlink()
    with pytest.raises(ValueError, match="has disappeared; refusing to start its budget again"):
        session.charge(ZCDP(0.1), "c")
    assert not path.exists() and before


@pytest.mark.parametrize("budget, unit, holds", [
    (ZCDP(2.0), "add_remove", "zcdp session of total 1-zCDP, privacy unit 'add_remove'"),
    (PureDP(1.0), "add_remove", "zcdp session of total 1-zCDP"),
    (ZCDP(1.0), "replace_one", "privacy unit 'add_remove'; not 1-zCDP, 'replace_one'"),
])
def test_a_file_of_another_total_unit_or_notion_is_refused(budget, unit, holds, tmp_path):
    path = tmp_path / "s.json"
    Session(ZCDP(1.0), "add_remove", path, new=True).charge(ZCDP(0.25), "a")
    before = path.read_bytes()
    with pytest.raises(ValueError, match=holds.replace("(", r"\(").replace(")", r"\)")):
        Session(budget, unit, path)
    assert path.read_bytes() == before
    assert Session(ZCDP(1.0), "add_remove", path).spent == ZCDP(0.25)


# ---------------------------------------------------------------------------------------------------
# (eps, delta): converted once (Canonne, Kamath & Steinke 2020) and by basic composition

ORDERS = list(np.concatenate([np.linspace(1.001, 8, 1000), np.geomspace(8, 1e9, 1000)[1:]]))


@functools.lru_cache(maxsize=1)
def accounting():
    """Google's dp-accounting (the `test` extra), imported when a test here first needs it."""
    import dp_accounting
    from dp_accounting import rdp  # noqa: F401  (dp_accounting.rdp)
    return dp_accounting


def test_zcdp_eps_agrees_with_dp_accounting_and_beats_the_classic_conversion():
    for rho in (1e-5, 1e-3, 0.01, 0.1, 0.5, 1.0, 10.0, 100.0):
        for delta in (1e-12, 1e-6, 1e-3, 0.1):
            ours = zcdp_eps(rho, delta)
            accountant = accounting().rdp.RdpAccountant(orders=ORDERS)
            accountant.compose(accounting().ZCDpEvent(rho))
            theirs = accountant.get_epsilon(delta)
            # the same bound, ours minimised over every order instead of a grid: never above, and close
            assert ours <= theirs * (1 + 1e-12), (rho, delta, ours, theirs)
            assert theirs - ours <= 1e-3 * theirs + 1e-9, (rho, delta, ours, theirs)
            assert ours <= ZCDP(rho).to_approx_dp(delta).eps, (rho, delta)  # <= rho + 2 sqrt(rho ln(1/delta))
            if ours > 0:  # rounded up: the bound holds at ours, and delta is where it lands
                assert zcdp_delta(rho, ours) == pytest.approx(delta, rel=1e-6)
                assert zcdp_delta(rho, ours) <= delta * (1 + 1e-12)  # (compared in logs: rounding of exp)
    assert zcdp_eps(1e-8, 0.1) == 0.0 and zcdp_delta(1e-8, 0.0) <= 0.1  # tiny rho: (0, delta) already
    with pytest.raises(ValueError):
        zcdp_eps(1.0, 1.5)
    with pytest.raises(ValueError):
        zcdp_eps(-1.0, 1e-6)


def test_the_session_converts_once_beside_basic_composition():
    session = Session(ZCDP(1.0))
    assert session.as_approx_dp(1e-6) is None and session.basic_composition(1e-6) is None
    for _ in range(10):
        session.charge(ZCDP(0.05), "a tenth")
    once, basic = session.as_approx_dp(1e-6), session.basic_composition(1e-6)
    assert once.delta == 1e-6 and once.eps == pytest.approx(zcdp_eps(0.5, 1e-6))
    assert basic.delta == 1e-6 and basic.eps == pytest.approx(10 * zcdp_eps(0.05, 1e-7))
    assert once.eps < basic.eps / 2  # converting once is far tighter than converting each release
    # A pure release: eps^2/2 in the rho sum, or its eps beside the zCDP part's conversion, whichever is less.
    session.charge(PureDP(0.5), "pure")
    assert session.as_approx_dp(1e-6).eps == pytest.approx(
        min(zcdp_eps(0.5 + 0.125, 1e-6), zcdp_eps(0.5, 1e-6) + 0.5))
    only_pure = Session(ZCDP(10.0))
    only_pure.charge(PureDP(1.0), "one Laplace release")
    assert only_pure.as_approx_dp(1e-6) == ApproxDP(1.0, 1e-6)  # not zcdp_eps(0.5, 1e-6) = 5.2
    pure = Session(PureDP(3.0))
    pure.charge(PureDP(1.0), "a")
    pure.charge(PureDP(1.5), "b")
    assert pure.as_approx_dp(1e-6) == ApproxDP(2.5, 1e-6) == pure.basic_composition(1e-6)
    approx = Session(ApproxDP(3.0, 1e-5))
    approx.charge(ApproxDP(1.0, 2e-6), "a")
    approx.charge(PureDP(1.0), "b")
    assert approx.as_approx_dp(1e-6) == ApproxDP(2.0, 2e-6)


def test_report_shows_totals_both_routes_and_the_ledger():
    session = Session(ZCDP(1.0), privacy_unit="replace_one")
    release = session.charge(ZCDP(0.3), "covariance fit")
    session.record(release, [("norm bound", ZCDP(0.03))])
    text = session.report(delta=1e-5)
    for part in ("total      1-zCDP   privacy unit: replace_one", "spent      0.3-zCDP   (1 release)",
                 "remaining  0.7-zCDP", "at delta = 1e-05", "the whole total", "releases so far",
                 "basic composition", "covariance fit", "0.03-zCDP         norm bound", release[:8]):
        assert part in text, (part, text)
    assert f"{zcdp_eps(0.3, 1e-5):g}" in text


# ---------------------------------------------------------------------------------------------------
# dpcov session PATH


def test_the_command_prints_a_session_file(tmp_path, capsys):
    path = tmp_path / "s.json"
    Session(PureDP(2.0), path=path, new=True).charge(PureDP(0.5), "a histogram")
    assert main(["session", str(path), "--delta", "1e-8"]) == 0
    out = capsys.readouterr().out
    assert str(path) in out and "spent      0.5-DP" in out and "a histogram" in out and "at delta = 1e-08" in out
    done = subprocess.run([sys.executable, "-m", "dpcov.cli", "session", str(path)], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and "remaining  1.5-DP" in done.stdout


def test_the_command_refuses_a_missing_or_corrupt_file(tmp_path, capsys):
    assert main(["session", str(tmp_path / "none.json")]) == 2
    assert f"dpcov session: error: no session file at {tmp_path / 'none.json'}" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text("{")
    assert main(["session", str(tmp_path / "bad.json")]) == 2
    assert "is not a readable dpcov session file" in capsys.readouterr().err
    assert (tmp_path / "bad.json").read_text() == "{"
    with pytest.raises(SystemExit) as stop:
        main(["session", str(tmp_path / "bad.json"), "--delta", "2"])
    assert stop.value.code == 2 and "--delta must lie in (0, 1)" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------------
# issue 58: no reset by deleting or moving the file; each release's unit; the charge before any row check


def test_a_missing_file_starts_a_ledger_only_when_asked_and_a_moved_one_cannot_be_reset(tmp_path):
    path = tmp_path / "s.json"
    with pytest.raises(FileNotFoundError, match="pass new=True"):
        Session(ZCDP(1.0), path=path)
    session = Session(ZCDP(1.0), path=path, new=True)
    session.charge(ZCDP(0.9), "most of it")
    with pytest.raises(FileExistsError, match="exists: resume it"):
        Session(ZCDP(1.0), path=path, new=True)
    assert json.loads(path.read_text())["id"] == session.id and len(session.id) == 32
    path.rename(tmp_path / "moved.json")  # moved away: the object refuses, and no new ledger appears by itself
    with pytest.raises(ValueError, match="has disappeared"):
        session.charge(ZCDP(0.5), "after the move")
    with pytest.raises(FileNotFoundError):
        Session(ZCDP(1.0), path=path)
    fresh = Session(ZCDP(1.0), path=path, new=True)  # asked for: a new ledger, with an id of its own
    with pytest.raises(ValueError, match="holds another session"):
        session.charge(ZCDP(0.5), "on the new file")
    assert fresh.spent is None and fresh.id != session.id


def test_a_version_1_file_gets_an_id_when_opened(tmp_path):
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"format": "dpcov-session", "version": 1, "notion": "zcdp",
                                "total": {"notion": "zcdp", "rho": 1.0}, "privacy_unit": "add_remove",
                                "created": "then", "releases": []}))
    session = Session.open(path)
    session.charge(ZCDP(0.5), "a")
    data = json.loads(path.read_text())
    assert data["version"] == 2 and data["id"] == session.id and Session.open(path).spent == ZCDP(0.5)


def test_each_release_records_its_unit_and_the_total_bounds_every_units_guarantee():
    session = Session(ZCDP(4.0))
    session.charge(ZCDP(0.25), "rows")
    session.charge(ZCDP(0.25), "persons", rows_per_person=3)
    assert [r["unit"] for r in session.releases] == [{"kind": "row"}, {"kind": "person", "rows": 3}]
    # a row: 0.25 + the person release over a group of 2 (4 x 0.25); a person of <= 3 rows: 9 x 0.25 + 0.25
    assert session.guarantees() == {"a row": ZCDP(1.25), "a person (<= 3 rows)": ZCDP(2.5)}
    report = session.report()
    assert "guarantee per unit" in report and "a person (<= 3 rows)" in report and "(per person, <= 3 rows)" in report
    # 0.25 + 0.25 + 0.2 is far below 4, but a person would pay 2.5 + 9 x 0.2 = 4.3: refused, nothing charged
    with pytest.raises(BudgetExceeded, match="guarantee for a person \\(<= 3 rows\\) past the session's total"):
        session.charge(ZCDP(0.2), "more rows")
    session.charge(ZCDP(0.15), "fewer rows")  # 2.5 + 1.35 = 3.85
    assert len(session.releases) == 3
    with pytest.raises(ValueError, match="max_rows_per_person must be an integer >= 1"):
        session.charge(ZCDP(0.1), "bad unit", rows_per_person=0)


def test_a_restored_older_copy_of_the_file_is_refused(tmp_path):
    path = tmp_path / "s.json"
    session = Session(ZCDP(1.0), path=path, new=True)
    session.charge(ZCDP(0.5), "a")
    older = path.read_bytes()
    session.charge(ZCDP(0.4), "b")
    path.write_bytes(older)  # a backup put back: the same id, one release fewer
    with pytest.raises(ValueError, match="lacks 1 release\\(s\\) this object has seen"):
        session.charge(ZCDP(0.4), "c")


def test_a_version_1_ledger_filled_within_the_old_tolerance_still_opens_and_a_v1_swap_is_refused(tmp_path):
    path = tmp_path / "old.json"
    entries = [{"id": f"{i:032x}", "what": "w", "budget": {"notion": "zcdp", "rho": 0.1}, "time": "t", "steps": []}
               for i in range(10)]  # ten floats 0.1: 1.0 + 5.6e-17 exactly, within the old 1e-9
    v1 = {"format": "dpcov-session", "version": 1, "notion": "zcdp", "total": {"notion": "zcdp", "rho": 1.0},
          "privacy_unit": "add_remove", "created": "then", "releases": entries}
    path.write_text(json.dumps(v1))
    session = Session.open(path)
    assert len(session.releases) == 10
    with pytest.raises(BudgetExceeded):
        session.charge(ZCDP(1e-9), "one more")
    path.write_text(json.dumps(v1))  # a version-1 file put under the bound object
    with pytest.raises(ValueError, match="a ledger without an id"):
        session.charge(ZCDP(1e-9), "again")


def test_the_session_is_charged_before_any_row_is_checked():
    """A NaN (or a row outside the radius) is an error only after the fit's budget was charged: the signal is paid."""
    session = Session(ZCDP(1.0))
    X = np.random.default_rng(0).standard_normal((100, 3)) / 4
    X[7, 1] = np.nan
    for fit in (lambda: dpcov.PrivateCovariance(budget=ZCDP(0.3), radius=1.0, centering="assume_centered",
                                                session=session).fit(X),
                lambda: dpcov.PrivateRidge(budget=ZCDP(0.3), radius=1.0, centering="assume_centered",
                                           session=session).fit(X[:, :2], X[:, 2]),
                lambda: dpcov.PrivateCovariance(budget=ZCDP(0.3), radius=0.01, centering="assume_centered",
                                                session=session).fit(np.nan_to_num(X))):
        with pytest.raises(ValueError, match="NaN or inf: drop|rows have norm > radius"):
            fit()
    assert session.spent.rho == pytest.approx(0.9) and len(session.releases) == 3


def test_a_rows_guarantee_is_stated_even_when_only_persons_were_released_and_overflow_is_refused():
    session = Session(ZCDP(1.0))
    session.charge(ZCDP(0.3), "persons", rows_per_person=2)
    assert session.guarantees() == {"a row": ZCDP(1.2), "a person (<= 2 rows)": ZCDP(0.3)}  # 4 x 0.3 for a row
    assert "a row" in session.report()
    with pytest.raises(BudgetExceeded, match="guarantee for a row"):
        session.charge(ZCDP(0.01), "rows after persons")
    approx = Session(ApproxDP(1000.0, 0.5))
    approx.charge(ApproxDP(10.0, 1e-9), "rows")
    with pytest.raises(BudgetExceeded, match="a person \\(<= 100 rows\\)"):  # e^(99 x 10) overflows: no delta left
        approx.charge(PureDP(0.1), "persons of many rows", rows_per_person=100)
