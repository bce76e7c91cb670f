"""What produced a committed line: its fingerprint is the line's seeded output on one small probe problem
(the upper triangle of the release, or the ridge weights, to 10 significant digits), computed with the
code of the day. A change to the mechanism's calibration, random-number use or post-processing changes
the fingerprint; a refactor that keeps every output does not (and rounding of the last bits by another
BLAS stays within the comparison's tolerance).

    results/<target>/lines.json: {line name: {"spec": line_spec, "fingerprint": [...] | "error: ..."}}

``scripts/reproduce.py`` writes it with every line it commits (a run, a --rerun, --add); ``--status``
reports a committed line whose fingerprint differs from today's code as stale, and a test fails while
one is.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import numpy as np

from dpcov.mechanisms.privacy import ApproxDP
from dpcov.mechanisms.problem import CovProblem
from dpcov.mechanisms.regression import RidgeTask
from dpcov.mechanisms.registry import get_mechanism, release

from .golden import BUDGETS, output_values
from .seeding import generator

LINES_FILE = "lines.json"
RTOL = 1e-6
DIGITS = 10


@lru_cache(maxsize=2)
def probe_problem(n: int = 400) -> CovProblem:
    """n Gaussian rows in d = 5 with unequal variances, scaled into the unit ball (raw rows kept, a ridge task)."""
    rng = generator(0, "fingerprint", "data", *(() if n == 400 else (n,)))  # the small probe's key predates n
    X = rng.standard_normal((n, 5)) * np.array([1.0, 0.8, 0.5, 0.3, 0.1])
    X /= np.linalg.norm(X, axis=1).max()
    return CovProblem.from_rows(X, radius=1.0, ridge=RidgeTask(4, 0.05), rows=X)


LARGE_PROBE = 400_000  # for a line that falls back on the small probe (stable_gsampling needs n this large)


def probe_budget(mechanism: str, overrides: dict | None = None):
    """The notion's probe budget with a line's budget overrides (e.g. a variant's delta) on top."""
    notion = get_mechanism(mechanism).notion
    base = BUDGETS[notion]
    overrides = overrides or {}
    if notion is ApproxDP or "delta" in overrides:
        return ApproxDP(float(overrides.get("eps", getattr(base, "eps", 1.0))),
                        float(overrides.get("delta", getattr(base, "delta", 1e-5))))
    return base


def fingerprint(spec: dict) -> list[float] | str:
    """The fingerprint of one line ({"mechanism", "options", "budget"}, as experiments.runner.line_spec);
    computed once per spec in a process (--status and a run's plan ask for the same lines again)."""
    return _fingerprint(json.dumps(spec, sort_keys=True))


@lru_cache(maxsize=None)
def _fingerprint(text: str) -> list[float] | str:
    spec = json.loads(text)
    budget = probe_budget(spec["mechanism"], spec.get("budget"))
    for n in (400, LARGE_PROBE):
        problem = probe_problem(n)
        try:
            unit = {k: spec[k] for k in ("privacy_unit", "count_share") if k in spec}  # an add_remove line's
            estimate, accountant = release(spec["mechanism"], problem, budget,
                                           generator(0, "fingerprint", spec["mechanism"]),
                                           options=spec.get("options") or {}, **unit)
        except (ValueError, ArithmeticError, RuntimeError) as err:
            outcome = f"error: {type(err).__name__}: {err}"
            continue
        if accountant.released != "ok":  # a fallback says nothing of the mechanism's own code
            outcome = f"fell back: {accountant.released}"
            continue
        return [float(f"{v:.{DIGITS}g}") for v in np.ravel(output_values(estimate, problem.d))]
    return outcome


def same(stored, current) -> bool:
    if isinstance(stored, str) or isinstance(current, str):
        return stored == current
    return len(stored) == len(current) and bool(np.allclose(stored, current, rtol=RTOL, atol=1e-12))


def read_lines(directory) -> dict:
    path = Path(directory) / LINES_FILE
    return json.loads(path.read_text()) if path.exists() else {}


def write_lines(directory, lines: dict) -> None:
    """One line of JSON per committed line (diffs stay readable)."""
    body = ",\n".join(f" {json.dumps(name)}: {json.dumps(entry, ensure_ascii=False, sort_keys=True)}"
                       for name, entry in sorted(lines.items()))
    (Path(directory) / LINES_FILE).write_text("{\n" + body + "\n}\n")


def stale_lines(directory, specs: dict[str, dict]) -> dict[str, str]:
    """Line -> why it is stale, for the committed lines of ``directory`` (``specs``: line -> spec today):
    no fingerprint recorded, another spec, or a fingerprint today's code does not give."""
    recorded = read_lines(directory)
    stale = {}
    for name, spec in specs.items():
        entry = recorded.get(name)
        if entry is None:
            stale[name] = "no fingerprint recorded"
        elif entry["spec"] != spec:
            stale[name] = f"committed as {entry['spec']}, configured now as {spec}"
        elif isinstance(entry["fingerprint"], str) and entry["fingerprint"].startswith("unknown"):
            stale[name] = entry["fingerprint"]
        elif not same(entry["fingerprint"], fingerprint(spec)):
            stale[name] = "its code has changed since it was committed (another output on the probe problem)"
    return stale
