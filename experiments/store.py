"""The results directory: results.csv (append-only, one row per grid point x trial x mechanism),
run.json (a record of what must match to resume; results.csv itself is checked row by row),
config.yaml (the resolved config), summary.csv, and .lock (one run at a time per directory)."""
from __future__ import annotations

import csv
import json
import os
import socket
import sys
import time
import warnings
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import yaml
from filelock import FileLock, Timeout

from .seeding import canonical

LOCK_WAIT = 10.0  # seconds a second run in the same output_dir waits for the first before stopping
TEXT_COLUMNS = {"experiment": str, "dataset": str, "mechanism": str, "label": str, "line": str,
                "budget": str, "spent": str, "released": str, "privacy_unit": str}


class OutputDirError(ValueError):
    """An output directory that cannot be used: not a directory, not writable, or in use."""


def row_keys(frame: pd.DataFrame, columns: list[str], source="the results") -> pd.Series:
    """Each row's key: its values in ``columns``, canonical (4, 4.0 and "4" are one value)."""
    missing = [c for c in columns if c not in frame]
    if missing:
        raise ValueError(f"{source} lacks columns {missing} (written by another experiment or an older "
                         f"dpcov); pass another output_dir=... or move that file away")
    rows = frame[columns].itertuples(index=False, name=None)
    return pd.Series([tuple(canonical(v) for v in row) for row in rows], index=frame.index, dtype=object)


class ResultsStore:
    def __init__(self, output_dir: str | os.PathLike, fingerprint: dict):
        self.dir = Path(output_dir)
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            probe = self.dir / ".write-test"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as err:
            raise OutputDirError(f"output_dir {self.dir} cannot be used ({err.strerror or err}); "
                                 f"pass a writable directory as output_dir=...") from None
        self.results = self.dir / "results.csv"
        self.fingerprint = json.loads(json.dumps(fingerprint))
        self._columns: list[str] | None = None
        self._lock = FileLock(self.dir / ".lock", thread_local=False)
        self._holder = self.dir / ".lock.holder"

    @contextmanager
    def locked(self, wait: float | None = None):
        """Hold the directory's lock (filelock; released by the OS if this process dies), then
        check run.json and repair a torn last line. A second run waits up to ``wait`` seconds for
        the first, then stops naming the holder (pid, host, start time, command)."""
        wait = LOCK_WAIT if wait is None else wait
        try:
            self._lock.acquire(timeout=0)
        except Timeout:
            print(f"{self.dir} is in use by {self.holder()}; waiting up to {wait:g}s", flush=True)
            try:
                self._lock.acquire(timeout=wait)
            except Timeout:
                raise OutputDirError(f"{self.dir} is in use by {self.holder()}: wait for that run to "
                                     f"finish, or pass another output_dir=...") from None
        try:
            self._write_atomic(self._holder, json.dumps(
                {"pid": os.getpid(), "host": socket.gethostname(),
                 "started": time.strftime("%Y-%m-%d %H:%M:%S"), "command": " ".join(sys.argv)}) + "\n")
            self._check_fingerprint()
            self._repair_partial_line()
            yield self
        finally:
            self._holder.unlink(missing_ok=True)
            self._lock.release()

    def holder(self) -> str:
        """Who holds the lock, from the holder file written beside it."""
        try:
            info = json.loads(self._holder.read_text())
            return (f"pid {info['pid']} on host {info['host']} (started {info['started']}: "
                    f"{info['command']})")
        except (OSError, ValueError, KeyError):
            return f"another run (lock file {self._lock.lock_file})"

    @staticmethod
    def _write_atomic(path: Path, text: str) -> None:
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)

    def _check_fingerprint(self) -> None:
        path = self.dir / "run.json"
        if path.exists():
            try:
                stored = json.loads(path.read_text())
            except ValueError:
                raise ValueError(f"{path} is not valid JSON (cut short by a crash?): delete it and re-run; "
                                 f"results.csv is checked row by row, so no result is lost") from None
            if stored != self.fingerprint:
                diff = {k: (stored.get(k), self.fingerprint.get(k)) for k in set(stored) | set(self.fingerprint)
                        if stored.get(k) != self.fingerprint.get(k)}
                raise ValueError(
                    f"{self.dir} holds results of a different configuration {diff} (stored, now); "
                    f"pass another output_dir=... or delete that directory"
                )
        else:
            self._write_atomic(path, json.dumps(self.fingerprint, indent=1, sort_keys=True) + "\n")

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
            frame = pd.read_csv(self.results, dtype=TEXT_COLUMNS, low_memory=False)
        except Exception as err:  # pandas raises several parser error types
            raise ValueError(f"{self.results} is not a readable results table ({err}); move it away "
                             f"to start over") from None
        if "mechanism" not in frame or "trial" not in frame:
            raise ValueError(f"{self.results} lacks the mechanism/trial columns; move it away to start over")
        return frame

    def done(self, columns: list[str]) -> set[tuple]:
        """The keys (values in ``columns``, canonical) of the rows already written."""
        frame = self.load()
        return set() if frame.empty else set(row_keys(frame, columns, self.results))

    def append(self, rows: list[dict]) -> None:
        if not rows:
            return
        new_file = not self.results.exists() or self.results.stat().st_size == 0
        if self._columns is None:
            self._columns = list(rows[0]) if new_file else self.header()
        with open(self.results, "a", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=self._columns, extrasaction="raise")
            if new_file:
                writer.writeheader()
            writer.writerows(rows)
            handle.flush()
            os.fsync(handle.fileno())

    def header(self) -> list[str]:
        if not self.results.exists() or self.results.stat().st_size == 0:
            return []
        with open(self.results, newline="") as handle:
            return next(csv.reader(handle), [])

    def write_config(self, resolved: dict) -> Path:
        path = self.dir / "config.yaml"
        self._write_atomic(path, yaml.safe_dump(resolved, sort_keys=False))
        return path
