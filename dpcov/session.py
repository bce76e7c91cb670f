"""One privacy budget per dataset, spent by every release and kept in one ledger (GUIDE.md §9; issue 54).

    session = dpcov.Session(dpcov.ZCDP(1.0), privacy_unit="add_remove", path="census.dpsession")
    release = session.charge(pca.budget, "PCA of the census")     # before the data are touched
    pca.fit(X)
    session.record(release, pca.ledger_)                         # the fit's sub-steps, in the same ledger
    print(session.report(delta=1e-6))

A session is a privacy filter: every release is charged before it runs and is refused (``BudgetExceeded``,
nothing spent) when it would take the running sum past the total. Composition is exact for the notion: a
zCDP session adds rho and takes an eps-DP release as eps^2/2 (Bun & Steinke 2016), a pure-DP session adds
eps, an (eps, delta) session adds both (basic composition). Stopping when the sum would pass the total is
valid even when each budget is chosen after seeing the earlier releases (fully adaptive composition:
Feldman & Zrnic 2021 for Renyi DP and so zCDP; Whitehouse, Ramdas, Rogers & Wu 2023; for pure eps, Rogers,
Roth, Ullman & Vadhan 2016). The session converts to (eps, delta) once, for all releases together
(Canonne, Kamath & Steinke 2020), beside basic composition for comparison.

With ``path=`` the ledger lives in a JSON file: every charge is a read-modify-write under an exclusive lock
(``fcntl.flock`` on ``<path>.lock``) that re-reads the file, so a restarted process resumes what was spent
and two processes cannot both spend the last share; the file is replaced atomically and durably (the file and
its directory fsynced), and one that does not parse is refused, never reset. A session cannot be reset by
deleting or moving its file: a missing file starts a new ledger only when asked (``new=True``), the file holds
the session's id, and an object whose file has gone, or holds another session's id, refuses to spend. Without a
path the ledger lives in this object only (a copy of it is the same session; it cannot be pickled to another
process).

Every comparison with the total is exact (the budgets' floats as rationals, issue 58): a charge is refused when
the exact sum of what was charged would pass the total, with no tolerance (ten charges of 0.1, each a float a
little above 1/10, pass a total of 1.0 by 5.6e-17 and the tenth is refused). Each release records its privacy unit
(a row, or a person with at most k rows), and ``report`` states the guarantee per unit (group privacy converts the
others), never the strongest one for all.
"""
from __future__ import annotations

import copy
import fcntl
from fractions import Fraction
import json
import math
import os
import tempfile
import threading
import uuid
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from .mechanisms.privacy import (_TOLERANCE, NOTIONS, ApproxDP, Budget, BudgetExceeded, PureDP, ZCDP, _cost,
                                 zcdp_eps)
from .mechanisms.units import check_privacy_unit, check_rows_per_person, group_cost


FORMAT = "dpcov-session"
VERSION = 2  # 2: the session's id, each release's unit
_NOTION_NAMES = {cls: name for name, cls in NOTIONS.items()}  # ZCDP -> "zcdp", PureDP -> "pure", ...


def budget_to_dict(budget: Budget) -> dict:
    """{"notion": "zcdp", "rho": 0.5}, {"notion": "pure", "eps": 1.0}, {"notion": "approx", "eps": .., "delta": ..}."""
    if isinstance(budget, ZCDP):
        return {"notion": "zcdp", "rho": budget.rho}
    if isinstance(budget, PureDP):
        return {"notion": "pure", "eps": budget.eps}
    if isinstance(budget, ApproxDP):
        return {"notion": "approx", "eps": budget.eps, "delta": budget.delta}
    raise TypeError(f"a privacy budget must be dpcov.ZCDP, PureDP or ApproxDP, got {budget!r}")


def budget_from_dict(data) -> Budget:
    if not isinstance(data, dict) or data.get("notion") not in NOTIONS:
        raise ValueError(f"not a budget: {data!r}")
    fields = {key: value for key, value in data.items() if key != "notion"}
    try:
        return NOTIONS[data["notion"]](**fields)
    except TypeError as err:  # missing or extra fields, or a value that is not a number
        raise ValueError(f"not a budget: {data!r} ({err})") from None


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class Session:
    """One privacy budget for one dataset, spent by every release (estimators' fits) and recorded in one ledger.

    ``budget``: the total, ``ZCDP``, ``PureDP`` or ``ApproxDP``; a zCDP session also takes eps-DP releases
    (as eps^2/2), an (eps, delta) one eps-DP releases (as (eps, 0)), a pure one only eps-DP releases.
    ``privacy_unit``: "add_remove" or "replace_one", the neighbours every release must protect.
    ``path``: where the ledger lives (JSON; created if absent, else resumed, and then its notion, total and
    unit must be these). ``Session.open(path)`` resumes a file with the file's own budget and unit.

    A release is charged before its data are touched (``charge``); one that would take the sum past the total
    raises ``BudgetExceeded``, spends nothing and says what is left. Stopping there is a privacy filter, valid
    for budgets chosen adaptively after earlier results (Feldman & Zrnic 2021; Whitehouse, Ramdas, Rogers &
    Wu 2023). ``as_approx_dp(delta)`` converts what was spent once (Canonne, Kamath & Steinke 2020);
    ``basic_composition(delta)`` converts each release on its own and adds them up, for comparison.
    """

    def __init__(self, budget: Budget, privacy_unit: str = "add_remove", path=None, new: bool = False):
        budget_to_dict(budget)  # a budget, or TypeError
        self.total = budget
        self.privacy_unit = check_privacy_unit(privacy_unit)
        self.notion = type(budget)
        self._limit = _cost(budget, self.notion)
        self._memory: list[dict] = []  # the ledger when there is no path
        self._thread_lock = threading.Lock()
        self.path = None if path is None else Path(path)
        self.id = uuid.uuid4().hex  # in memory; a file's session takes the file's id
        self._seen: set[str] = set()  # the release ids this object has read or written: the file must keep them
        if self.path is not None:
            if self.path.is_dir():
                raise ValueError(f"session path {self.path} is a directory, not a session file")
            if new:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            elif not self.path.exists():
                raise FileNotFoundError(f"no session file at {self.path}: pass new=True to start a new ledger "
                                        f"there (a missing file is never taken for an empty ledger: deleting or "
                                        f"moving it must not reset the budget)")
            with self._locked():
                if self.path.exists():
                    if new:
                        raise FileExistsError(f"session file {self.path} exists: resume it (leave new= unset) or "
                                              f"choose another path for a new ledger")
                    data = _parse(self.path, self.path.read_bytes())
                    if data["id"] is None:  # a version 1 file: its id from now on (its sums as they were written)
                        data.update(id=self.id, version=VERSION, filled_by_version_1=True)
                        self._write(data)
                    self.id = data["id"]
                    self._check_matches(data)
                elif not new:  # removed between the check above and the lock
                    raise FileNotFoundError(f"no session file at {self.path}: pass new=True to start a new ledger")
                else:
                    self._write({"format": FORMAT, "version": VERSION, "id": self.id,
                                 "notion": _NOTION_NAMES[self.notion], "total": budget_to_dict(budget),
                                 "privacy_unit": self.privacy_unit, "created": _now(), "releases": []})

    @classmethod
    def open(cls, path) -> "Session":
        """Resume the session file ``path`` with its own budget and unit (FileNotFoundError if there is none;
        ValueError if it is not a session file)."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"no session file at {path}")
        data = _parse(path, path.read_bytes())
        return cls(budget_from_dict(data["total"]), data["privacy_unit"], path)

    # -- the ledger ---------------------------------------------------------------------------------

    @property
    def releases(self) -> list[dict]:
        """Every release, oldest first: {"id", "what", "budget" (as in the file), "time", "steps"}."""
        return copy.deepcopy(self._releases())

    @property
    def spent(self) -> Budget | None:
        """The sum of every release, in the session's notion (None before the first); re-read from the file."""
        return self._as_budget(self._spent_of(self._releases()))

    @property
    def remaining(self) -> Budget | None:
        """What is left of the total, in the session's notion (None when nothing is)."""
        spent = self._spent_of(self._releases())
        return self._as_budget(tuple(lim - s for lim, s in zip(self._limit, spent)))

    def charge(self, budget: Budget, what: str, rows_per_person: int | None = None) -> str:
        """Charge a release of ``budget`` before it touches the data; the id of its ledger entry (uuid4 hex).

        BudgetExceeded (nothing spent) when it would take the sum past the total; TypeError for a budget the
        session's notion cannot take (an (eps, delta) release in a zCDP or pure session, a zCDP one in a pure
        or (eps, delta) session) and ValueError for an empty ``what``: nothing spent either. ``rows_per_person``: the
        release protects a person with at most that many rows (its unit; None: a row)."""
        self._cost(budget)
        if not isinstance(what, str) or not what.strip():
            raise ValueError(f"what must say what the release is (a non-empty string), got {what!r}")
        unit = {"kind": "row"} if rows_per_person is None else \
            {"kind": "person", "rows": check_rows_per_person(rows_per_person)}
        entry = {"id": uuid.uuid4().hex, "what": what, "budget": budget_to_dict(budget), "unit": unit,
                 "time": _now(), "steps": []}

        def add(releases: list[dict]) -> None:
            spent = self._spent_of(releases)
            where = f" ({self.path})" if self.path is not None else ""
            if _passes(_exact_sum([entry] + releases, self.notion), self._limit):
                left = self._as_budget(tuple(lim - s for lim, s in zip(self._limit, spent)))
                raise BudgetExceeded(
                    f"{what}: charging {budget} would exceed the session's total {self.total}{where}: "
                    f"{'nothing is left' if left is None else f'{left} is left'} "
                    f"(spent {self._as_budget(spent) or 'nothing'} over "
                    f"{len(releases)} release{'s' * (len(releases) != 1)}); nothing was charged")
            for k, total in _unit_sums(releases + [entry], self.notion).items():  # the total bounds every unit
                if _passes(total, self._limit):
                    raise BudgetExceeded(
                        f"{what}: charging {budget} would take the guarantee for {_unit_name(k)} past the session's "
                        f"total {self.total}{where} (group privacy converts the releases of other units); nothing "
                        f"was charged")
            releases.append(entry)

        self._update(add)
        return entry["id"]

    def record(self, release_id: str, steps) -> None:
        """Attach a release's sub-steps, ``[(what, budget), ...]`` (an estimator's ``ledger_``), to its entry.

        Steps are what the release spent inside its charge: where they compose in the release's notion, they
        must not add up to more than it (ValueError). Calling again adds more steps."""
        rows = []
        for step in steps:
            if not (isinstance(step, (tuple, list)) and len(step) == 2 and isinstance(step[0], str)):
                raise ValueError(f"a step is (what: str, budget), got {step!r}")
            rows.append({"what": step[0], "budget": budget_to_dict(step[1])})

        def attach(releases: list[dict]) -> None:
            entry = next((r for r in releases if r["id"] == release_id), None)
            if entry is None:
                raise ValueError(f"no release {release_id!r} in this session"
                                 + (f" ({self.path})" if self.path is not None else ""))
            charged = budget_from_dict(entry["budget"])
            try:  # a consistency check of the record (the charge itself was compared exactly): the steps are the
                # accountant's float shares of the charge, whose sum may pass it by rounding (privacy._TOLERANCE)
                limit = _cost(charged, type(charged))
                over = any(float(t) > lim * (1 + _TOLERANCE)
                           for t, lim in zip(_exact_sum(entry["steps"] + rows, type(charged)), limit))
            except TypeError:  # steps of another notion (a zCDP mechanism inside an (eps, delta) release)
                over = False
            if over:
                raise ValueError(f"the steps of release {entry['what']!r} spend more than its charge {charged}")
            entry["steps"].extend(rows)

        self._update(attach)

    # -- (eps, delta) -------------------------------------------------------------------------------

    def as_approx_dp(self, delta: float) -> ApproxDP | None:
        """What every release so far guarantees together, as (eps, delta)-DP, converted once (None before the
        first release). A zCDP session: its rho by Canonne, Kamath & Steinke 2020 (``zcdp_eps``; tighter than
        rho + 2 sqrt(rho ln(1/delta))), or, when smaller, its zCDP releases' rho so converted plus its pure
        releases' eps (at every Renyi order an eps-DP release costs at most eps: Mironov 2017; the sum then
        converts as above): both are valid, so is the smaller. A pure session: its eps as (eps, 0), stated at
        ``delta``. An (eps, delta) session: its sums (basic composition; at ``delta`` when every release was
        pure). For budgets fixed in advance; for budgets chosen after earlier results the filter guarantees
        the total (``report`` shows its conversion too)."""
        delta = ApproxDP(1.0, delta).delta
        return _together([budget_from_dict(entry["budget"]) for entry in self._releases()], self.notion, delta)

    def basic_composition(self, delta: float) -> ApproxDP | None:
        """For comparison: each release converted on its own at delta / (number of releases) (a zCDP release by
        ``zcdp_eps``; a pure one is (eps, 0); an (eps, delta) one is itself), then the eps and deltas added
        (the deltas add up to at most ``delta``; the result is stated at ``delta``). None before the first."""
        delta = ApproxDP(1.0, delta).delta
        return _basic([budget_from_dict(entry["budget"]) for entry in self._releases()], delta)

    def guarantees(self) -> dict:
        """What the releases so far guarantee per privacy unit, in the session's notion: {"a row": budget,
        "a person (<= k rows)": budget, ...}: a row's always, and each person unit a release named. The filter holds the
        total for each unit a release names: person-level releases alone may leave a row's guarantee above the total
        (stated here), and a row-level release is then refused. A row-level release costs a person with
        at most k rows its group-privacy cost (``units.group_cost``); a person-level release costs any person its own
        budget (it drops each person's rows beyond its own k, so it protects a person whatever their rows), and a row
        its group cost over 2 persons (a row added to a person changes that person: the old removed, the new
        added)."""
        return {_unit_name(k): self._as_budget(tuple(float(v) for v in total))
                for k, total in _unit_sums(self._releases(), self.notion, row=True).items()}

    def report(self, delta: float = 1e-6) -> str:
        """Human-readable: the total, spent, remaining, the guarantee per unit, both (eps, delta) routes, and the
        ledger."""
        delta = ApproxDP(1.0, delta).delta
        releases = self._releases()
        spent = self._as_budget(self._spent_of(releases))
        left = self._as_budget(tuple(lim - s for lim, s in zip(self._limit, self._spent_of(releases))))
        lines = [f"session{f' {self.path}' if self.path is not None else ' (in memory)'}",
                 f"  total      {self.total}   privacy unit: {self.privacy_unit}",
                 f"  spent      {spent or 'nothing'}   ({len(releases)} release{'s' * (len(releases) != 1)})",
                 f"  remaining  {left or 'nothing'}"]
        if any(_unit_rows(entry) is not None for entry in releases):  # units differ: each one's own guarantee
            lines += ["  guarantee per unit (group privacy converts the others' releases):"]
            lines += [f"    {unit:<22} {budget or 'nothing'}" for unit, budget in self.guarantees().items()]
        budgets = [budget_from_dict(entry["budget"]) for entry in releases]  # one reading of the file
        lines += [f"  as (eps, delta)-DP at delta = {delta:g}:",
                  f"    the whole total      {_together([self.total], self.notion, delta)}   (what the filter "
                  f"guarantees each unit once all is spent, whatever budgets are chosen)"]
        if releases:
            lines += [f"    releases so far      {_together(budgets, self.notion, delta)}   (converted once, "
                      f"together)",
                      f"    basic composition    {_basic(budgets, delta)}   (each release on its own"
                      + (f" at delta/{len(releases)}" if self.notion is ZCDP else "") + ", then added)"]
            lines.append("  ledger:")
            for entry in releases:
                per = "" if _unit_rows(entry) is None else f"  (per person, <= {_unit_rows(entry)} rows)"
                lines.append(f"    {entry['time']}  {budget_from_dict(entry['budget'])!s:<16}  {entry['what']}"
                             f"{per}  [{entry['id'][:8]}]")
                lines += [f"        {budget_from_dict(step['budget'])!s:<16}  {step['what']}"
                          for step in entry["steps"]]
        return "\n".join(lines)

    def __repr__(self):
        return f"Session({self.total!r}, privacy_unit={self.privacy_unit!r}, path={self.path!r})"

    # A copy is the same session (a copied object must not start a second budget); another process reaches
    # a session only through its file.
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        if self.path is None:
            raise TypeError("an in-memory dpcov.Session cannot be pickled (another process would spend a budget "
                            "of its own): give it path= and open the file there")
        return (Session.open, (str(self.path),))

    # -- internals ----------------------------------------------------------------------------------

    def _cost(self, budget) -> tuple[float, ...]:
        budget_to_dict(budget)  # a budget, or TypeError
        try:
            return _cost(budget, self.notion)
        except TypeError:
            raise TypeError(f"a {self.notion.__name__} session ({self.total}) cannot take a "
                            f"{type(budget).__name__} release ({budget}); nothing was charged") from None

    def _spent_of(self, releases: list[dict]) -> tuple[float, ...]:
        return tuple(float(v) for v in _exact_sum(releases, self.notion))  # the exact sum, rounded once

    def _as_budget(self, values: tuple[float, ...]) -> Budget | None:
        if values[0] <= _TOLERANCE * self._limit[0]:
            return None
        if self.notion is ApproxDP and values[1] <= 0:
            return PureDP(values[0])
        return self.notion(*values)

    def _releases(self) -> list[dict]:
        if self.path is None:
            return self._memory
        data = self._read()  # whole files only (atomic replace): no lock needed to read
        self._check_matches(data)
        self._seen.update(entry["id"] for entry in data["releases"])
        return data["releases"]

    def _update(self, change) -> None:
        """Apply ``change(releases)`` (which may raise: then nothing is written) under the lock, to the ledger
        as it is now (re-read from the file inside the lock)."""
        with self._thread_lock:
            if self.path is None:
                releases = copy.deepcopy(self._memory)
                change(releases)
                self._memory[:] = releases
                return
            with self._locked():
                data = self._read()
                self._check_matches(data)
                change(data["releases"])
                self._write(data)
                self._seen.update(entry["id"] for entry in data["releases"])

    @contextmanager
    def _locked(self):
        fd = os.open(f"{self.path}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock; the lock file stays (removing it would race)

    def _read(self) -> dict:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            raise ValueError(f"session file {self.path} has disappeared; refusing to start its budget "
                             f"again (restore the file)") from None
        return _parse(self.path, raw)

    def _write(self, data: dict) -> None:
        text = json.dumps(data, indent=1) + "\n"
        fd, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as out:
                out.write(text)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        directory = os.open(self.path.parent, os.O_RDONLY)  # the rename itself durable
        try:
            os.fsync(directory)
        finally:
            os.close(directory)

    def _check_matches(self, data: dict) -> None:
        if data["id"] != self.id:
            held = "a ledger without an id (version 1)" if data["id"] is None else f"id {data['id'][:8]}"
            raise ValueError(f"session file {self.path} holds another session ({held}, not this object's "
                             f"{self.id[:8]}): the file was replaced or started again; refusing to spend (restore "
                             f"the file, or Session.open the new one)")
        missing = self._seen - {entry["id"] for entry in data["releases"]}
        if missing:  # a ledger only grows: an older copy put back would spend again what was spent
            raise ValueError(f"session file {self.path} lacks {len(missing)} release(s) this object has seen (restored "
                             f"from an older copy?); refusing to spend: restore the newest file")
        held = budget_from_dict(data["total"])
        if held != self.total or data["privacy_unit"] != self.privacy_unit:
            raise ValueError(f"session file {self.path} holds a {data['notion']} session of total {held}, "
                             f"privacy unit {data['privacy_unit']!r}; not {self.total}, {self.privacy_unit!r} "
                             f"(use Session.open to resume it as it is; the file is left unchanged)")


def _exact(values) -> tuple:
    return tuple(Fraction(v) for v in values)


def _exact_cost(budget: Budget, notion: type) -> tuple:
    """``privacy._cost`` in rationals: an eps-DP release in a zCDP session costs exactly eps^2 / 2 of its float eps
    (never the float product, which can round down)."""
    _cost(budget, notion)  # TypeError for a pair that does not compose
    if notion is ZCDP and isinstance(budget, PureDP):
        return (Fraction(budget.eps) ** 2 / 2,)
    return _exact(_cost(budget, notion))


def _passes(exact_sum: tuple, limit: tuple) -> bool:
    """Whether an exact sum passes the limit in any component (the limit's floats taken exactly)."""
    return any(s > Fraction(lim) for s, lim in zip(exact_sum, limit))


def _exact_sum(entries: list[dict], notion: type) -> tuple:
    """The exact sum (rationals: every float as it is) of the entries' costs in ``notion``: compared with the
    total's exact value, it can only refuse where the floats' sum would pass it (no tolerance)."""
    total = None
    for entry in entries:
        cost = _exact_cost(budget_from_dict(entry["budget"]), notion)
        total = cost if total is None else tuple(t + c for t, c in zip(total, cost))
    return total if total is not None else (Fraction(0),) * (2 if notion is ApproxDP else 1)


def _unit_rows(entry: dict) -> int | None:
    """The rows per person of a release's unit (None: a row; a file written before units: a row)."""
    unit = entry.get("unit", {"kind": "row"})
    return None if unit["kind"] == "row" else int(unit["rows"])


def _group_of(entry: dict, k: int | None) -> int:
    """Over how many of its own units a release's guarantee is taken for a unit of ``k`` rows per person (None: a
    row): a row-level release for a person of k rows, k (group privacy); a person-level release for a row, 2 (a row
    added to a person changes that person: the old removed, the new added); else 1 (a person-level release drops each
    person's rows beyond its own k, so it protects any person)."""
    own = _unit_rows(entry)
    if own is None:
        return 1 if k is None else k
    return 2 if k is None else 1


def _unit_cost(entry: dict, k: int | None, notion: type) -> tuple:
    """A release's exact cost in ``notion`` for a unit of ``k`` rows per person: group privacy over ``_group_of``
    (m^2 rho, m eps, (m eps, m e^((m-1) eps) delta)), never rounded down."""
    budget, m = budget_from_dict(entry["budget"]), _group_of(entry, k)
    cost = _exact_cost(budget, notion)
    if m == 1:
        return cost
    if notion is ZCDP:
        return (cost[0] * m * m,)
    if notion is PureDP:
        return (cost[0] * m,)
    try:
        delta = Fraction(group_cost(budget, m).delta) * (1 + Fraction(1, 2**50)) if cost[1] else Fraction(0)
    except OverflowError:  # e^((m-1) eps) beyond float64: no delta below 1 is left
        delta = Fraction(1)
    return (cost[0] * m, delta)  # the float exp and products are within 2^-50 relative: rounded up


def _unit_sums(entries: list[dict], notion: type, row: bool = False) -> dict:
    """{unit k (None: a row): the exact sum of every release's cost for that unit}, for each unit a release names
    (``row``: a row's too, named or not)."""
    units = sorted({_unit_rows(entry) for entry in entries} | ({None} if row and entries else set()),
                   key=lambda k: (k is not None, k or 0))
    return {k: tuple(sum(values) for values in zip(*(_unit_cost(entry, k, notion) for entry in entries)))
            for k in units}


def _unit_name(k: int | None) -> str:
    return "a row" if k is None else f"a person (<= {k} rows)"


def _together(budgets: list[Budget], notion: type, delta: float) -> ApproxDP | None:
    """``Session.as_approx_dp`` of releases of these budgets (None if there are none)."""
    if not budgets:
        return None
    if notion is ZCDP:
        rho = sum(_cost(b, ZCDP)[0] for b in budgets)
        zcdp_rho = sum(b.rho for b in budgets if isinstance(b, ZCDP))
        pure_eps = sum(b.eps for b in budgets if isinstance(b, PureDP))
        split = (zcdp_eps(zcdp_rho, delta) if zcdp_rho > 0 else 0.0) + pure_eps
        return ApproxDP(max(min(zcdp_eps(rho, delta), split), math.ulp(0.0)), delta)
    if notion is PureDP:
        return ApproxDP(sum(b.eps for b in budgets), delta)
    eps = sum(b.eps for b in budgets)
    deltas = sum(b.delta for b in budgets if isinstance(b, ApproxDP))
    return ApproxDP(eps, deltas if deltas > 0 else delta)


def _basic(budgets: list[Budget], delta: float) -> ApproxDP | None:
    """``Session.basic_composition`` of releases of these budgets (None if there are none)."""
    if not budgets:
        return None
    share = delta / len(budgets)
    eps, deltas = 0.0, 0.0
    for budget in budgets:
        if isinstance(budget, ZCDP):
            eps, deltas = eps + zcdp_eps(budget.rho, share), deltas + share
        elif isinstance(budget, PureDP):
            eps += budget.eps
        else:
            eps, deltas = eps + budget.eps, deltas + budget.delta
    return ApproxDP(max(eps, math.ulp(0.0)), max(deltas, delta))


def _parse(path: Path, raw: bytes) -> dict:
    """The file's content, checked whole; ValueError naming the file otherwise (it is never reset)."""
    def refuse(why: str):
        return ValueError(f"{path} is not a readable dpcov session file ({why}); refusing it rather than "
                          f"starting its budget again: restore or move it")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise refuse(f"not JSON: {err}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise refuse(f"no \"format\": \"{FORMAT}\"")
    if data.get("version") not in (1, VERSION):
        raise refuse(f"version {data.get('version')!r}; this dpcov reads versions 1 and {VERSION}")
    try:
        notion = NOTIONS[data["notion"]]
        total = budget_from_dict(data["total"])
        if type(total) is not notion:
            raise ValueError(f"its total {total} is not of its notion {data['notion']!r}")
        check_privacy_unit(data["privacy_unit"])
        releases = data["releases"]
        if not isinstance(releases, list):
            raise ValueError("releases is not a list")
        for entry in releases:
            if not (isinstance(entry, dict) and all(isinstance(entry.get(k), str) for k in ("id", "what", "time"))
                    and isinstance(entry.get("steps"), list)):
                raise ValueError(f"a release lacks an id, what, time or steps: {entry!r}")
            _cost(budget_from_dict(entry["budget"]), notion)
            for step in entry["steps"]:
                if not (isinstance(step, dict) and isinstance(step.get("what"), str)):
                    raise ValueError(f"a step lacks what: {step!r}")
                budget_from_dict(step.get("budget"))
        if data["version"] == 1:  # written before sessions had ids: it gets one when first opened (Session)
            data.setdefault("id", None)
        elif not isinstance(data.get("id"), str):
            raise ValueError("it holds no session id")
        for entry in releases:
            if entry.get("unit", {"kind": "row"}) != {"kind": "row"}:
                check_rows_per_person(entry["unit"]["rows"])
        if data["version"] == 1 or data.get("filled_by_version_1"):  # under the old relative tolerance 1e-9: read
            # as it was written (a new charge is still compared exactly)
            if any(float(s) > lim * (1 + _TOLERANCE) for s, lim in zip(_exact_sum(releases, notion),
                                                                       _cost(total, notion))):
                raise ValueError(f"its releases spend more than its total {total}")
        elif _passes(_exact_sum(releases, notion), _cost(total, notion)):
            raise ValueError(f"its releases spend more than its total {total}")
    except (KeyError, TypeError, ValueError) as err:
        raise refuse(f"{type(err).__name__}: {err}") from None
    return data
