"""The stored reference moments of the samplers' distribution tests (tests/pseudocode.py) are the
pseudocode's: a fresh draw agrees with them, and a changed case is refused until they are redrawn."""
import dataclasses

import numpy as np
import pytest
from pseudocode import REFERENCES, Z_LIMIT, max_z, stored


@pytest.mark.parametrize("name", REFERENCES)
def test_a_fresh_draw_of_the_pseudocode_agrees_with_the_stored_moments(name):
    assert max_z(REFERENCES[name].release, name, 300, 7) < Z_LIMIT


@pytest.mark.slow
@pytest.mark.parametrize("name", REFERENCES)
def test_a_large_fresh_draw_of_the_pseudocode_agrees_with_the_stored_moments_slow(name):
    assert max_z(REFERENCES[name].release, name, 5000, 8) < Z_LIMIT


def test_the_comparison_can_fail():
    """A sampler that ignores the spectrum (uniform on the sphere) is far from the concentrated case."""
    name = "projection: concentrated, adaptive etas"
    d = REFERENCES[name].C.shape[0]
    uniform = lambda rng: np.linalg.qr(rng.standard_normal((d, d)))[0]  # noqa: E731
    assert max_z(uniform, name, 300, 7) > 3 * Z_LIMIT


def test_a_changed_case_is_refused_until_redrawn(monkeypatch):
    name = "kt: d = 3"
    changed = dataclasses.replace(REFERENCES[name], etas=REFERENCES[name].etas * 1.01)
    monkeypatch.setitem(REFERENCES, name, changed)
    with pytest.raises(LookupError, match=r"as defined now \(etas\): python tests/pseudocode.py --update"):
        stored(name)
