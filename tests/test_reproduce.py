"""scripts/reproduce.py: every target names a real experiment; committed figures count as complete."""
import importlib.util
import sys
from pathlib import Path

import pytest

from experiments.config import experiment_names

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("reproduce", ROOT / "scripts" / "reproduce.py")
reproduce = importlib.util.module_from_spec(spec)
sys.modules["reproduce"] = reproduce  # dataclasses look their module up
spec.loader.exec_module(reproduce)


def test_targets_cover_committed_results_and_known_experiments():
    names = set(experiment_names())
    assert {t.experiment for t in reproduce.TARGETS} <= names
    committed = {str(p.parent.relative_to(ROOT / "results")) for p in (ROOT / "results").glob("*/*/summary.csv")}
    assert committed <= {t.out for t in reproduce.TARGETS}


def test_a_committed_figure_is_complete_and_tables_render():
    target = next(t for t in reproduce.TARGETS if t.out == "dong2022/fig3a")
    done, total, seconds = reproduce.progress(target)
    assert done == total > 0 and seconds == 0
    text = reproduce.tables()
    assert text.startswith(reproduce.BEGIN) and text.endswith(reproduce.END)
    assert "### dong2022/fig3a" in text and "| N | " in text


def test_unknown_target_is_refused(capsys, monkeypatch):
    monkeypatch.setattr("sys.argv", ["reproduce.py", "nope"])
    with pytest.raises(SystemExit):
        reproduce.main()
    assert "unknown target 'nope'" in capsys.readouterr().err
