"""Key-based seeding: every Generator derives from the root seed and a stable key, so a number never
depends on the order trials run in, the number of workers, or which other trials exist."""
from __future__ import annotations

import hashlib

import numpy as np


def canonical(value):
    """A parameter value in one canonical form (4, 4.0 and "4" from a CSV all become 4; a list becomes
    its text, as results.csv holds it; None, and the empty cell results.csv reads back for it, are None)."""
    if value is None or (isinstance(value, (float, np.floating)) and np.isnan(value)):
        return None
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return int(value) if float(value).is_integer() else float(value)
    if isinstance(value, (list, tuple)):  # e.g. a table's columns: hashable, and as results.csv writes it
        return str(list(value))
    return value


def _word(part) -> int:
    digest = hashlib.sha256(repr(canonical(part)).encode()).digest()
    return int.from_bytes(digest[:4], "little")


def generator(root_seed: int, *key) -> np.random.Generator:
    """An independent Generator for ``key`` (any tuple of str/int/float) under ``root_seed``."""
    words = [_word(part) for part in key]
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(root_seed, spawn_key=words)))


def params_key(params: dict) -> tuple:
    return tuple(f"{name}={canonical(params[name])!r}" for name in sorted(params))
