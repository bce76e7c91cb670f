"""The Python API of docs/api.md: its examples run as doctests, and the short path works without Hydra."""
import doctest
from pathlib import Path

import numpy as np
import pytest

from dpcov.mechanisms import CovProblem, ZCDP, release

ROOT = Path(__file__).resolve().parents[1]


def test_docs_api_examples_run(monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr("sys.path", list(__import__("sys").path))  # the doc adds docs/examples
    result = doctest.testfile(str(ROOT / "docs" / "api.md"), module_relative=False, verbose=False,
                              optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 20 and result.failed == 0


@pytest.mark.parametrize("call, override", [
    (lambda problem: release("gaus", problem, ZCDP(0.1), np.random.default_rng(0)), "mechanisms=[gauss,gaus]"),
    (lambda problem: release("gauss", problem, ZCDP(0), np.random.default_rng(0)), "sweep.rho=[0]"),
    (lambda problem: release("clip_gauss", problem, ZCDP(0.1), np.random.default_rng(0), options={"tau": 1, "t": 2}),
     "mechanism_options.clip_gauss={tau: 1, t: 2}"),
])
def test_bad_input_gets_the_command_lines_errors(experiment, call, override):
    """The API and the config share their validators: the same message, whichever way one comes in."""
    problem = CovProblem.from_rows(np.eye(3) / 2)
    with pytest.raises(ValueError) as api:
        call(problem)
    with pytest.raises(ValueError) as config:
        experiment("synthetic_rho", "sweep.rho=[0.1]", "mechanisms=[gauss,clip_gauss]", override)
    assert str(api.value) in str(config.value)
