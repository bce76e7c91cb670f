"""News Commentary through Hugging Face ``datasets`` (dataset ``news_hf``; optional extra:
``pip install -e '.[hf]'``), hashed and scaled exactly as data/news.py does.

Parameters: ``d`` and ``scaling`` as for ``news``, and where the text comes from:
- ``source``: a directory written by ``Dataset.save_to_disk`` / ``DatasetDict.save_to_disk``
  (relative paths are also looked up in the data directories, data/files.py), loaded with
  ``datasets.load_from_disk``; otherwise a hub dataset id, loaded with
  ``datasets.load_dataset(source, config, split=split)`` (needs the network the first time; the
  ``datasets`` cache serves later runs). ``Helsinki-NLP/news_commentary`` is OPUS's News Commentary
  (v16), sentence-aligned language pairs.
- ``config``: the hub configuration, e.g. ``de-en`` (null for a local copy).
- ``split``: e.g. ``train`` (a local DatasetDict is indexed by it; a local Dataset ignores it).
- ``field``: the text column, or ``column.key`` inside a dict column (``translation.en``).

Rows: one per distinct text (stripped; empty texts and texts without a token skipped; order of
first appearance) -- sentences, not the paper's articles (``news`` with the v16 file gives those).

Recorded with every result row: ``data_corpus`` (source, config, split, field),
``data_corpus_fingerprint`` (the ``datasets`` fingerprint of the split: a hub load's
``_fingerprint``, or for a local copy the one ``save_to_disk`` stored in its ``state.json`` -- so a
copy of a hub split records the hub's; ``load_from_disk`` itself derives a new one) and ``data_corpus_sha256`` (SHA-256
of the row texts, each followed by a newline: the same for every copy of the same text).
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from .files import DataFileError, cached_array, data_dirs
from .news import SCALINGS, VECTORIZER_OPTIONS, hashed_counts, scale_rows, vectorizer
from .registry_types import Data

PARSE_VERSION = 1
HUB_ID = "Helsinki-NLP/news_commentary"
_TEXTS: dict = {}  # (source, config, split, field, data dirs) -> (texts, fingerprint), per process


def _datasets():
    try:
        import datasets
    except ImportError:
        raise ImportError("dataset news_hf needs Hugging Face datasets: pip install -e '.[hf]' "
                          "(or pip install datasets)") from None
    return datasets


def local_copy(source: str, data_dir=None) -> Path | None:
    """The save_to_disk directory ``source`` names, if there is one."""
    given = Path(source).expanduser()
    candidates = [given] + ([] if given.is_absolute() else [d / given for d in data_dirs(data_dir)])
    return next((c for c in candidates if c.is_dir()), None)


def load_split(source: str, config, split: str, data_dir=None):
    """(``datasets.Dataset`` of ``split``, its fingerprint): from a local save_to_disk copy, else
    from the hub."""
    datasets = _datasets()
    local = local_copy(source, data_dir)
    if local is not None:
        try:
            loaded = datasets.load_from_disk(str(local))
        except (FileNotFoundError, ValueError) as err:
            raise DataFileError(f"{local} is not a directory written by save_to_disk ({err})") from None
        if isinstance(loaded, datasets.DatasetDict):
            if split not in loaded:
                raise ValueError(f"{local} has splits {sorted(loaded)}, not {split!r} (params.split=...)")
            loaded, local = loaded[split], local / split
        state = local / "state.json"
        fingerprint = json.loads(state.read_text()).get("_fingerprint") if state.is_file() else None
        return loaded, fingerprint or loaded._fingerprint
    try:
        loaded = datasets.load_dataset(source, config, split=split)
        return loaded, loaded._fingerprint
    except Exception as err:  # network, unknown id/config/split: the library raises many types
        raise DataFileError(
            f"cannot load {source!r} (config {config!r}, split {split!r}) from the Hugging Face hub "
            f"({type(err).__name__}: {err}). Offline? Where online, run  datasets.load_dataset({source!r}, "
            f"{config!r}, split={split!r}).save_to_disk(DIR)  and pass params.source=DIR") from None


def texts_of(split, field: str) -> list[str]:
    """The column ``field`` (``column`` or ``column.key``) as strings."""
    column, _, key = field.partition(".")
    if column not in split.column_names:
        raise ValueError(f"no column {column!r}; the dataset has {split.column_names} (params.field=...)")
    values = split[column]
    if not key:
        return [str(v) for v in values]
    if values and not (isinstance(values[0], dict) and key in values[0]):
        keys = sorted(values[0]) if isinstance(values[0], dict) else "none (not a dict column)"
        raise ValueError(f"column {column!r} has no key {key!r}; keys: {keys}")
    return [str(v[key]) for v in values]


def distinct_texts(texts) -> list[str]:
    """Stripped texts with at least one token, each once, in order of first appearance."""
    analyzer = vectorizer(2).build_analyzer()
    seen: dict[str, None] = {}
    for text in texts:
        text = text.strip()
        if text and text not in seen and analyzer(text):
            seen[text] = None
    return list(seen)


def text_sha256(texts: list[str]) -> str:
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode("utf-8") + b"\n")
    return digest.hexdigest()


def news_hf(d: int, scaling: str, source: str, config, split: str, field: str, rng: np.random.Generator,
            data_dir=None) -> Data:
    """News Commentary sentences from ``datasets``, hashed into d buckets and scaled (module
    docstring). ``rng`` is unused: the rows are the whole split."""
    numeric = isinstance(d, (int, float, np.integer, np.floating)) and not isinstance(d, bool)
    if not numeric or not float(d).is_integer() or d < 1:
        raise ValueError(f"d must be a positive integer, got {d!r}")
    if scaling not in SCALINGS:
        raise ValueError(f"scaling must be one of {SCALINGS}, got {scaling!r}")
    for name, value in (("source", source), ("split", split), ("field", field)):
        if not isinstance(value, str) or not value:
            raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    memo = (source, config, split, field, tuple(map(str, data_dirs(data_dir))))
    if memo not in _TEXTS:
        loaded, fingerprint = load_split(source, config, split, data_dir)
        _TEXTS.clear()
        _TEXTS[memo] = (distinct_texts(texts_of(loaded, field)), fingerprint)
    texts, fingerprint = _TEXTS[memo]
    if not texts:
        raise ValueError(f"{source!r} ({split}, {field}) holds no text with a token")
    digest = text_sha256(texts)
    key = {"sha256": digest, "d": int(d), "vectorizer": VECTORIZER_OPTIONS, "version": PARSE_VERSION}
    counts = cached_array("news-hf-counts", key, lambda: {"counts": hashed_counts(texts, int(d))})["counts"]
    info = {"corpus": f"hf:{source} ({config or 'no config'}, {split}, {field})",
            "corpus_fingerprint": fingerprint, "corpus_sha256": digest}
    return Data(scale_rows(counts, scaling), radius=1.0, info=info)
