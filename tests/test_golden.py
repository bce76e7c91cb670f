"""Golden numbers (experiments/golden.py): a change to any mechanism's seeded output must be
deliberate -- regenerate with  python -m experiments.golden --update  and explain it in the commit."""
import pandas as pd

from dpcov.experiments.golden import GOLDEN, differences, golden_rows


def test_every_mechanism_matches_its_golden_numbers():
    problems = differences(golden_rows(), pd.read_csv(GOLDEN))
    assert not problems, "mechanism outputs changed:\n" + "\n".join(problems)


def test_the_comparison_can_fail():
    stored = pd.read_csv(GOLDEN)
    changed = stored.copy()
    changed.loc[changed.mechanism == "gauss", "v0"] *= 1 + 1e-6
    assert differences(changed, stored) == [f"gauss.v0: golden {stored.loc[stored.mechanism == 'gauss', 'v0'].item()!r}, "
                                           f"now {changed.loc[changed.mechanism == 'gauss', 'v0'].item()!r}"]
    assert "only in the golden file" in differences(stored[stored.mechanism != "zero"], stored)[0]
