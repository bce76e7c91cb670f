"""Real-data files: where they are looked up, checksum verification, download, and a parse cache.

Lookup order for a file ``<folder>/<name>`` (first hit wins):
  1. the experiment's ``data_dir`` (config key), 2. the ``DPCOV_DATA`` environment variable,
  3. ``../shared/data`` (beside the repository, or beside the working directory) when it exists,
  4. the user cache directory (``DPCOV_CACHE``, else ``$XDG_CACHE_HOME/dpcov``, else ``~/.cache/dpcov``).
A file that is nowhere is downloaded into the cache directory from its original public source
(when the network allows) and verified; a file whose SHA-256 does not match is rejected, not used.
A file with no known checksum (``sha256=None``) is accepted as found; its loader records the digest.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import urllib.request
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
DOWNLOAD_TIMEOUT = 30  # seconds per connection attempt


class DataFileError(FileNotFoundError):
    """A data file that is missing or corrupt, with where it was looked for and how to get it."""


@dataclass(frozen=True)
class DataFile:
    folder: str  # sub-directory of a data directory, e.g. "mnist"
    name: str  # file name, e.g. "train-images-idx3-ubyte.gz"
    sha256: str | None  # None: no checksum known -- accepted unverified (the caller records the digest)
    urls: tuple[str, ...] = ()  # original public sources, tried in order
    how_to_get: str = ""  # shown when the file cannot be found or fetched

    @property
    def relative(self) -> Path:
        return Path(self.folder) / self.name


def cache_dir() -> Path:
    if os.environ.get("DPCOV_CACHE"):
        return Path(os.environ["DPCOV_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "dpcov"


def data_dirs(data_dir: str | os.PathLike | None = None) -> list[Path]:
    """The directories searched, in order (duplicates removed)."""
    candidates = []
    if data_dir:
        candidates.append(Path(data_dir))
    if os.environ.get("DPCOV_DATA"):
        candidates.append(Path(os.environ["DPCOV_DATA"]))
    for shared in (REPO_ROOT.parent / "shared" / "data", Path.cwd().parent / "shared" / "data"):
        if shared.is_dir():
            candidates.append(shared)
    candidates.append(cache_dir())
    unique = []
    for c in candidates:
        if c.resolve() not in [u.resolve() for u in unique]:
            unique.append(c)
    return unique


def sha256sum(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def file_digest(path: Path) -> str:
    """sha256sum(path), kept in the cache directory per (resolved path, size, modification time in ns, inode):
    a table of many GB is read for its digest once, not on every run, until it changes. The cache only saves
    time: one that cannot be read or written is skipped."""
    stat = path.stat()
    key = json.dumps([str(path.resolve()), stat.st_size, stat.st_mtime_ns, stat.st_ino])
    entry = cache_dir() / "digests" / f"{hashlib.sha256(key.encode()).hexdigest()[:20]}.json"
    try:
        stored = json.loads(entry.read_text())
        if stored["key"] == key:
            return stored["sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    digest = sha256sum(path)
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=entry.parent, suffix=".json")
        with os.fdopen(fd, "w") as out:
            json.dump({"key": key, "sha256": digest}, out)
        os.replace(tmp, entry)
    except OSError:
        pass
    return digest


def verify(path: Path, file: DataFile) -> Path:
    if file.sha256 is None:  # no published checksum: accept; the loader records sha256sum(path)
        return path
    actual = sha256sum(path)
    if actual != file.sha256:
        raise DataFileError(
            f"{path} has SHA-256 {actual}, expected {file.sha256}: the file is corrupt, truncated or "
            f"a different version, so it is not used. Delete it and fetch it again. {file.how_to_get}"
        )
    return path


def _download(file: DataFile, target: Path) -> str | None:
    """Fetch ``file`` into ``target`` (verified); None on success, else why it failed."""
    reasons = []
    for url in file.urls:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{file.name}.")
        except OSError as err:
            return f"cannot write to {target.parent} ({err.strerror or err})"
        try:
            with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT) as resp:
                shutil.copyfileobj(resp, out)
            verify(Path(tmp), file)
            os.replace(tmp, target)
            print(f"downloaded {url} -> {target} (SHA-256 verified)", flush=True)
            return None
        except (OSError, DataFileError) as err:
            reasons.append(f"{url}: {err}")
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return "; ".join(reasons) or "no public source known"


def locate(file: DataFile, data_dir=None, download: bool = True) -> Path:
    """The verified path of ``file`` (see the module docstring for the lookup order)."""
    dirs = data_dirs(data_dir)
    for d in dirs:
        path = d / file.relative
        if path.is_file():
            return verify(path, file)
    target = cache_dir() / file.relative
    why = _download(file, target) if download else "download disabled"
    if why is None:
        return target
    looked = "\n".join(f"  {d / file.relative}" for d in dirs)
    raise DataFileError(
        f"data file {file.relative} not found. Looked in:\n{looked}\n"
        f"Download failed ({why}).\n"
        f"To fix: put the file in one of those places (or set data_dir=... / DPCOV_DATA). "
        f"{file.how_to_get}"
    )


_cache_warned: set[str] = set()  # unwritable cache directories already reported


def cached_array(kind: str, key: dict, build: Callable[[], dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """``build()`` once per ``key`` (include the source files' checksums), then from an .npz cache.
    The cache only saves time: one that cannot be read or written is reported once and skipped."""
    text = json.dumps({"kind": kind, **key}, sort_keys=True, default=str)
    path = cache_dir() / "parsed" / f"{kind}-{hashlib.sha256(text.encode()).hexdigest()[:20]}.npz"
    if path.is_file():
        try:
            with np.load(path, allow_pickle=False) as stored:
                return {k: stored[k] for k in stored.files}
        except (OSError, ValueError):  # a torn or stale cache entry: rebuild it
            try:
                path.unlink(missing_ok=True)
            except OSError:
                pass
    arrays = build()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".npz")
        try:
            with os.fdopen(fd, "wb") as out:
                np.savez(out, **arrays)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except OSError as err:
        if str(path.parent) not in _cache_warned:
            _cache_warned.add(str(path.parent))
            warnings.warn(f"parse cache {path.parent} is not writable ({err.strerror or err}); carrying on "
                          f"without it (set DPCOV_CACHE to a writable directory to parse the data only once)")
    return arrays
