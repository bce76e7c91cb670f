"""News Commentary (WMT / statmt.org) as hashed bag-of-words rows: Dong, Liang & Yi 2022, Figure 5.

Corpus (first found wins):
- v16, the paper's: ``news_commentary/news-commentary-v16.en.gz`` (English monolingual,
  https://data.statmt.org/news-commentary/v16/training-monolingual/). Articles are separated by
  blank lines; every article with fewer than ``V16_MIN_TOKENS`` = 20 tokens (tokens as the
  vectoriser sees them, below) is dropped; the paper reports n = 15657. A file with no such
  article, or with fewer than ``V16_MIN_LINES`` lines, is refused as not being the corpus. No
  checksum of this file is known here, so it is accepted unverified and its SHA-256 is recorded in the results
  (``data_corpus_sha256``). It is only looked up, never downloaded during a run (no network
  timeout); fetch it once with ``python -c "from data.news import fetch_v16; fetch_v16()"``.
- otherwise the staged v8 subset: the English sides of news-commentary-v8.{cs,de,es,fr,ru}-en
  (WMT13, statmt.org), 5 x 5000 lines, one sentence per line, no article boundaries. One row per
  distinct sentence (lines stripped of surrounding white space; empty lines and lines without any
  token skipped; order of first appearance): 8107 rows. Sentences are far shorter than articles,
  so the figure this gives is NOT the paper's data (``data_corpus`` says which was used).

Vectorisation: ``sklearn.feature_extraction.text.HashingVectorizer(n_features=d,
alternate_sign=False, norm=None)``, all other options sklearn's defaults (lowercase, token_pattern
``(?u)\\b\\w\\w+\\b``, i.e. runs of >= 2 word characters, unigrams, signed 32-bit MurmurHash3 of the
token modulo d): each row holds the token counts per hash bucket (non-negative, so a row is zero
only if its text has no token). ``norm=None`` keeps the raw counts so that the two scalings differ:
- ``unit``: every row divided by its l2 norm (tr = 1; zero rows would be dropped);
- ``max``:  every row divided by the largest row norm (tr < 1; the longest row has norm 1).
The count matrix (before scaling) is kept in the parse cache (``data.files.cached_array``), keyed by
the corpus files' SHA-256 and d.
"""
from __future__ import annotations

import gzip
import re
from pathlib import Path

import numpy as np

from .files import DataFile, DataFileError, cached_array, locate, sha256sum
from .registry_types import Data

V16_URL = "https://data.statmt.org/news-commentary/v16/training-monolingual/news-commentary-v16.en.gz"
V16_MIN_TOKENS = 20
V16_MIN_LINES = 30_000  # >= 15657 articles, each >= 1 line + a blank separator: fewer lines, not the corpus
VECTORIZER_OPTIONS = {"alternate_sign": False, "norm": None}  # with n_features=d; rest: defaults
SCALINGS = ("unit", "max")
PARSE_VERSION = 2  # bump when the cached count matrices change meaning
V16_NAME = "news-commentary-v16"
V8_NAME = "news-commentary-v8-subset (5x5000 lines, sentence rows)"

V16 = DataFile(
    "news_commentary", "news-commentary-v16.en.gz", None, (V16_URL,),
    f"News Commentary v16 (the paper's corpus): download {V16_URL} into <data dir>/news_commentary/, "
    "or run  python -c \"from data.news import fetch_v16; fetch_v16()\".")

_V8_HOW = ("News Commentary v8 subset: the first 5000 lines of the English side of WMT13's "
           "news-commentary-v8.<xx>-en parallel corpora (statmt.org, training-parallel-nc-v8.tgz) "
           "go in <data dir>/news_commentary/ (see /work/shared/data/README.md).")
V8_FILES = tuple(DataFile("news_commentary", f"news-commentary-v8.{pair}-en.en", sha, (), _V8_HOW)
                 for pair, sha in [
    ("cs", "937c1aae4c1c6d52e709c655f438880385015a5d46c9d28ec2cd85672209e5dd"),
    ("de", "460ec18a2a253f14bb6ee17f4e6d7038037c659b5ca2bf99a2081d455c7c64f1"),
    ("es", "82f9294de63c7d3a219ab24358fbc2be1470427321bf9c2af78ed665cc8170e3"),
    ("fr", "5656469397730e4be4626ad1ddcd49d9ec037727fb496ea27e9ba463462e81b0"),
    ("ru", "dc3fa07919b0a346e1519afb34e9e90141d472a71c88e46062c9d8790c78374e"),
])

_announced: set[str] = set()  # corpora already announced by this process


def vectorizer(d: int):
    from sklearn.feature_extraction.text import HashingVectorizer

    return HashingVectorizer(n_features=d, **VECTORIZER_OPTIONS)


def count_tokens(text: str) -> int:
    """Tokens as the vectoriser counts them (lowercased runs of >= 2 word characters)."""
    return len(vectorizer(2).build_analyzer()(text))


_BLANK = re.compile(r"\n[ \t\r\f\v]*\n")


def v16_articles(path: Path, min_tokens: int = V16_MIN_TOKENS) -> list[str]:
    """The articles of the v16 monolingual file (blank-line separated) with >= min_tokens tokens."""
    opener = gzip.open if Path(path).suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            text = f.read()
    except (OSError, EOFError, UnicodeDecodeError) as err:
        raise DataFileError(f"{path}: cannot read the News Commentary v16 file ({err}). "
                            f"{V16.how_to_get}") from None
    analyzer = vectorizer(2).build_analyzer()
    pieces = (p.strip() for p in _BLANK.split(text.replace("\r\n", "\n")))
    articles = [p for p in pieces if p and len(analyzer(p)) >= min_tokens]
    if not articles:
        raise DataFileError(f"{path}: no articles found (no blank-line separated text of >= {min_tokens} "
                            f"tokens): not the News Commentary v16 file. {V16.how_to_get}")
    lines = text.count("\n")
    if lines < V16_MIN_LINES:
        raise DataFileError(f"{path}: {lines} lines, too few lines to be the News Commentary v16 corpus "
                            f"(its 15657 articles need >= {V16_MIN_LINES}). {V16.how_to_get}")
    return articles


def v8_sentences(paths: list[Path]) -> list[str]:
    """Distinct sentences (stripped lines with at least one token) in order of first appearance."""
    analyzer = vectorizer(2).build_analyzer()
    seen: dict[str, None] = {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for line in f:
                sentence = line.strip()
                if sentence and sentence not in seen and analyzer(sentence):
                    seen[sentence] = None
    return list(seen)


def hashed_counts(documents: list[str], d: int) -> np.ndarray:
    """The n x d matrix of token counts per hash bucket (dense float64)."""
    return vectorizer(d).transform(documents).toarray()


def scale_rows(counts: np.ndarray, scaling: str) -> np.ndarray:
    """``unit``: rows / their l2 norms, zero rows dropped; ``max``: rows / the largest row norm."""
    norms = np.linalg.norm(counts, axis=1)
    if scaling == "unit":
        keep = norms > 0
        return counts[keep] / norms[keep, None]
    if scaling == "max":
        top = norms.max(initial=0.0)
        return counts / top if top > 0 else counts.copy()
    raise ValueError(f"scaling must be one of {SCALINGS}, got {scaling!r}")


def find_corpus(data_dir=None) -> tuple[str, list[Path], list[str]]:
    """(corpus name, its files, their SHA-256): v16 when present anywhere, else the v8 subset."""
    try:
        path = locate(V16, data_dir, download=False)
    except DataFileError:
        paths = [locate(f, data_dir) for f in V8_FILES]
        return V8_NAME, paths, [f.sha256 for f in V8_FILES]
    return V16_NAME, [path], [sha256sum(path)]


def fetch_v16(data_dir=None) -> Path:
    """Find or download the v16 file (into the cache directory); its path."""
    return locate(V16, data_dir, download=True)


def news(d: int, scaling: str, rng: np.random.Generator, data_dir=None) -> Data:
    """News Commentary rows hashed into d buckets and scaled (see the module docstring).

    ``rng`` is unused (the rows are the whole corpus); it is part of every loader's signature.
    """
    numeric = isinstance(d, (int, float, np.integer, np.floating)) and not isinstance(d, bool)
    if not numeric or not float(d).is_integer() or d < 1:
        raise ValueError(f"d must be a positive integer, got {d!r}")
    if scaling not in SCALINGS:
        raise ValueError(f"scaling must be one of {SCALINGS}, got {scaling!r}")
    d = int(d)
    name, paths, digests = find_corpus(data_dir)
    if name not in _announced:
        _announced.add(name)
        print(f"news: using {name} ({', '.join(str(p) for p in paths)})", flush=True)

    def build():
        docs = v16_articles(paths[0]) if name == V16_NAME else v8_sentences(paths)
        return {"counts": hashed_counts(docs, d)}

    key = {"corpus": name, "sha256": digests, "d": d, "vectorizer": VECTORIZER_OPTIONS,
           "min_tokens": V16_MIN_TOKENS, "version": PARSE_VERSION}
    counts = cached_array("news-counts", key, build)["counts"]
    info = {"corpus": name}
    if name == V16_NAME:
        info["corpus_sha256"] = digests[0]
    return Data(scale_rows(counts, scaling), radius=1.0, info=info)
