"""The results directory: results.csv (append-only, one row per grid point x trial x mechanism),
run.json (what must match to resume), config.yaml (the resolved config), summary.csv."""
from __future__ import annotations

import csv
import json
import os
import warnings
from pathlib import Path

import pandas as pd
import yaml

from .seeding import canonical


class ResultsStore:
    def __init__(self, output_dir: str | os.PathLike, fingerprint: dict):
        self.dir = Path(output_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.results = self.dir / "results.csv"
        self._check_fingerprint(fingerprint)
        self._columns: list[str] | None = None
        self._repair_partial_line()

    def _check_fingerprint(self, fingerprint: dict) -> None:
        path = self.dir / "run.json"
        if path.exists():
            stored = json.loads(path.read_text())
            if stored != json.loads(json.dumps(fingerprint)):
                diff = {k: (stored.get(k), fingerprint.get(k)) for k in set(stored) | set(fingerprint)
                        if stored.get(k) != json.loads(json.dumps(fingerprint.get(k)))}
                raise ValueError(
                    f"{self.dir} holds results of a different configuration {diff} (stored, now); "
                    f"pass another output_dir=... or delete that directory"
                )
        else:
            path.write_text(json.dumps(fingerprint, indent=1, sort_keys=True) + "\n")

    def _repair_partial_line(self) -> None:
        """An interrupted write can leave a last line without its newline: drop just that line."""
        if not self.results.exists() or self.results.stat().st_size == 0:
            return
        data = self.results.read_bytes()
        if not data.endswith(b"\n"):
            keep = data[: data.rfind(b"\n") + 1]
            warnings.warn(f"{self.results}: dropping an incomplete last line left by an interrupted run")
            self.results.write_bytes(keep)

    def load(self) -> pd.DataFrame:
        if not self.results.exists() or self.results.stat().st_size == 0:
            return pd.DataFrame()
        try:
            frame = pd.read_csv(self.results)
        except Exception as err:  # pandas raises several parser error types
            raise ValueError(f"{self.results} is not a readable results table ({err}); move it away "
                             f"to start over") from None
        if "mechanism" not in frame or "trial" not in frame:
            raise ValueError(f"{self.results} lacks the mechanism/trial columns; move it away to start over")
        return frame

    def done(self, param_names: list[str]) -> set[tuple]:
        """Keys (mechanism, trial, params...) of the rows already written."""
        frame = self.load()
        if frame.empty:
            return set()
        missing = [p for p in param_names if p not in frame]
        if missing:
            raise ValueError(f"{self.results} lacks parameter columns {missing}; use another output_dir")
        cols = frame[["mechanism", "trial", *param_names]].itertuples(index=False, name=None)
        return {tuple(canonical(v) for v in row) for row in cols}

    def append(self, rows: list[dict]) -> None:
        if not rows:
            return
        new_file = not self.results.exists() or self.results.stat().st_size == 0
        if self._columns is None:
            self._columns = list(rows[0]) if new_file else self._header()
        with open(self.results, "a", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=self._columns, extrasaction="raise")
            if new_file:
                writer.writeheader()
            writer.writerows(rows)
            handle.flush()
            os.fsync(handle.fileno())

    def _header(self) -> list[str]:
        with open(self.results, newline="") as handle:
            return next(csv.reader(handle))

    def write_config(self, resolved: dict) -> Path:
        path = self.dir / "config.yaml"
        path.write_text(yaml.safe_dump(resolved, sort_keys=False))
        return path
