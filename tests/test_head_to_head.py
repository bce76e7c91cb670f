"""scripts/head_to_head.py without the peers (they live in their own environment): dpcov's rows are
measured, each peer is reported as missing (never silently dropped), the sampler check finds dpcov's
Bingham draws at their exact moment, and the table and figure are written."""
import importlib.util
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
head_to_head = importlib.import_module("dpcov.commands.head_to_head")
SHARED = ROOT.parent / "shared" / "data"


def test_exact_moment_of_the_circle():
    assert head_to_head.exact_top_moment(1e-9) == pytest.approx(0.5)
    assert head_to_head.exact_top_moment(1e6) == pytest.approx(1.0, abs=1e-5)


def test_samplers_without_peers_report_them_missing():
    frame = head_to_head.measure_samplers((1.0, 50.0), 4000, None, 60)
    ours = frame[frame.sampler == "dpcov"]
    assert len(ours) == 2 and (ours.z.abs() < 4).all()
    assert set(frame[frame.sampler != "dpcov"].status) == {"missing"}


@pytest.mark.skipif(not (SHARED / "wine").is_dir(), reason=f"UCI wine not staged at {SHARED}")
def test_quick_run_without_peers(tmp_path, monkeypatch):
    monkeypatch.setenv("DPCOV_DATA", str(SHARED))
    head_to_head.main(["--quick", "--no-peers", "--out", str(tmp_path)])
    pca = pd.read_csv(tmp_path / "pca.csv")
    assert set(pca[pca.method.str.startswith("dpcov")].status) == {"ok"}
    assert set(pca[~pca.method.str.startswith("dpcov")].status) == {"missing"}
    assert pca.captured.dropna().between(0, 1 + 1e-9).all()
    assert (tmp_path / "table.md").read_text().count("missing") >= 3 and (tmp_path / "head_to_head.png").exists()
