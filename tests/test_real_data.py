"""Real-data loaders: MNIST (data/mnist.py) and News Commentary (data/news.py), Dong et al. Figs. 4-6.

Tiny IDX files and corpora are written into tmp_path and parsed back exactly; the data and cache
directories point at tmp_path (DPCOV_DATA, DPCOV_CACHE) and downloads are disabled, so nothing
here touches the network or the user's cache. Tests of the staged real files skip when
../shared/data is absent.
"""
from __future__ import annotations

import gzip
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dpcov.data.files as files
import dpcov.data.mnist as mnist_mod
import dpcov.data.news as news_mod
from dpcov.data.files import DataFile, DataFileError, data_dirs, locate, sha256sum
from dpcov.data.mnist import IDXError, mnist, parse_idx, read_idx_gz
from dpcov.data.news import hashed_counts, news, scale_rows, v8_sentences, v16_articles
from dpcov.data.registry import get_dataset
from dpcov.experiments.config import compose_experiment
from dpcov.experiments.runner import run_experiment
from test_experiments import STAGED_RUNS, check_smoke_run

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
needs_staged = pytest.mark.skipif(not SHARED.is_dir(), reason=f"staged real data absent ({SHARED})")

MNIST_DIGIT_COUNTS = [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]  # README §1
V8_ROWS = 8107  # distinct stripped sentences with at least one token in the 5 staged files


# --- fixtures ------------------------------------------------------------------------------------
@pytest.fixture
def dirs(tmp_path, monkeypatch):
    """Isolated data and cache directories; any download attempt fails at once."""
    data, cache = tmp_path / "data", tmp_path / "cache"
    data.mkdir()
    monkeypatch.setenv("DPCOV_DATA", str(data))
    monkeypatch.setenv("DPCOV_CACHE", str(cache))
    monkeypatch.setattr(files, "_download", lambda file, target: "downloads disabled in tests")
    monkeypatch.setattr(news_mod, "_announced", set())
    return data, cache


@pytest.fixture(scope="module")
def staged_cache(tmp_path_factory):
    """One parse cache for the tests that read the staged files (parse once per module)."""
    return tmp_path_factory.mktemp("staged-cache")


@pytest.fixture
def staged(staged_cache, tmp_path, monkeypatch):
    if not SHARED.is_dir():
        pytest.skip(f"staged real data absent ({SHARED})")
    monkeypatch.delenv("DPCOV_DATA", raising=False)
    monkeypatch.setenv("DPCOV_CACHE", str(staged_cache))
    monkeypatch.setattr(files, "_download", lambda file, target: "downloads disabled in tests")
    return SHARED


def write_idx(path: Path, array: np.ndarray, magic: int | None = None, cut: int = 0) -> Path:
    """An IDX file of uint8 ``array`` (gzip), optionally with another magic or ``cut`` bytes short."""
    array = np.asarray(array, dtype=np.uint8)
    magic = (0x0800 | array.ndim) if magic is None else magic
    raw = magic.to_bytes(4, "big") + b"".join(int(s).to_bytes(4, "big") for s in array.shape)
    raw += array.tobytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wb") as f:
        f.write(raw[:len(raw) - cut])
    return path


def tiny_mnist(data_dir: Path, monkeypatch, n: int = 40, seed: int = 0):
    """Write tiny train-images/labels IDX files and point data.mnist at them (their checksums)."""
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
    images[0] = 255  # an all-white image: norm exactly 1
    images[1] = 0  # a blank one
    labels = (np.arange(n) % 10).astype(np.uint8)
    folder = data_dir / "tiny_mnist"
    img = write_idx(folder / "train-images-idx3-ubyte.gz", images)
    lab = write_idx(folder / "train-labels-idx1-ubyte.gz", labels)
    monkeypatch.setattr(mnist_mod, "TRAIN_IMAGES", DataFile("tiny_mnist", img.name, sha256sum(img)))
    monkeypatch.setattr(mnist_mod, "TRAIN_LABELS", DataFile("tiny_mnist", lab.name, sha256sum(lab)))
    return images, labels


# --- IDX parsing ---------------------------------------------------------------------------------
def test_idx_round_trip_is_exact(tmp_path):
    rng = np.random.default_rng(1)
    images = rng.integers(0, 256, size=(7, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, size=7, dtype=np.uint8)
    got_images = read_idx_gz(write_idx(tmp_path / "i.gz", images), 2051)
    got_labels = read_idx_gz(write_idx(tmp_path / "l.gz", labels), 2049)
    assert got_images.dtype == np.uint8 and got_images.shape == (7, 28, 28)
    np.testing.assert_array_equal(got_images, images)
    np.testing.assert_array_equal(got_labels, labels)


def test_idx_shape_comes_from_the_header():
    array = np.arange(30, dtype=np.uint8).reshape(3, 2, 5)
    raw = (2051).to_bytes(4, "big") + b"".join(s.to_bytes(4, "big") for s in (3, 2, 5)) + array.tobytes()
    np.testing.assert_array_equal(parse_idx(raw, 2051), array)


@pytest.mark.parametrize("expected, written, message", [
    (2051, 2049, "magic number 2049, expected 2051"),
    (2049, 2051, "magic number 2051, expected 2049"),
])
def test_idx_wrong_magic_is_rejected(tmp_path, expected, written, message):
    shape = (2, 28, 28) if written == 2051 else (2,)
    path = write_idx(tmp_path / "x.gz", np.zeros(shape), magic=written)
    with pytest.raises(IDXError, match=message):
        read_idx_gz(path, expected)


def test_idx_truncated_data_is_rejected(tmp_path):
    path = write_idx(tmp_path / "x.gz", np.zeros((3, 28, 28)), cut=100)
    with pytest.raises(IDXError, match=r"shape \(3, 28, 28\).*truncated"):
        read_idx_gz(path, 2051)
    with pytest.raises(IDXError, match="truncated header"):
        parse_idx((2051).to_bytes(4, "big") + b"\0\0\0\3", 2051)


@pytest.mark.parametrize("damage", ["cut", "not_gzip"])
def test_broken_gzip_is_rejected(tmp_path, damage):
    path = write_idx(tmp_path / "x.gz", np.zeros((3, 28, 28)))
    raw = path.read_bytes()
    path.write_bytes(raw[:len(raw) // 2] if damage == "cut" else b"plain text, not gzip")
    with pytest.raises(IDXError, match="not a complete gzip file"):
        read_idx_gz(path, 2051)


# --- the MNIST loader on tiny files --------------------------------------------------------------
def test_mnist_rows_are_pixels_over_255_times_28(dirs, monkeypatch):
    images, labels = tiny_mnist(dirs[0], monkeypatch)
    data = mnist(0, -1, np.random.default_rng(0))
    assert data.X.shape == (40, 784) and data.X.dtype == np.float64 and data.radius == 1.0
    np.testing.assert_array_equal(data.X, images.reshape(40, 784).astype(float) / (255 * 28))
    assert data.info == {"digit": -1, "n_available": 40}
    norms = np.linalg.norm(data.X, axis=1)
    assert norms.max() <= 1 + 1e-12 and norms[0] == pytest.approx(1.0, abs=1e-12) and norms[1] == 0


def test_mnist_digit_selects_only_that_digit(dirs, monkeypatch):
    images, labels = tiny_mnist(dirs[0], monkeypatch)
    for digit in (0, 3, 9):
        data = mnist(0, digit, np.random.default_rng(0))
        rows = np.flatnonzero(labels == digit)
        np.testing.assert_array_equal(data.X, images[rows].reshape(len(rows), -1) / (255 * 28))
        assert data.info == {"digit": digit, "n_available": 4}


def test_mnist_subsample_without_replacement_from_rng(dirs, monkeypatch):
    images, _ = tiny_mnist(dirs[0], monkeypatch)
    flat = images.reshape(40, -1) / (255 * 28)
    a = mnist(15, -1, np.random.default_rng(5)).X
    b = mnist(15, -1, np.random.default_rng(5)).X
    c = mnist(15, -1, np.random.default_rng(6)).X
    assert a.shape == (15, 784)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    # every row is a distinct row of the file (images are distinct: random pixels)
    matches = [np.flatnonzero((flat == row).all(axis=1)) for row in a]
    assert all(len(m) == 1 for m in matches) and len({int(m[0]) for m in matches}) == 15


@pytest.mark.parametrize("n", [0, 40, 41, 10**6])
def test_mnist_n_zero_or_at_least_available_means_all_rows(dirs, monkeypatch, n):
    images, _ = tiny_mnist(dirs[0], monkeypatch)
    np.testing.assert_array_equal(mnist(n, -1, np.random.default_rng(0)).X,
                                  images.reshape(40, -1) / (255 * 28))


@pytest.mark.parametrize("n, digit, name", [(-1, -1, "n"), (2.5, -1, "n"), ("10", -1, "n"),
                                            (True, -1, "n"), (0, 10, "digit"), (0, -2, "digit"),
                                            (0, 1.5, "digit")])
def test_mnist_bad_parameters(dirs, n, digit, name):
    with pytest.raises(ValueError, match=rf"^{name} must be an integer"):
        mnist(n, digit, np.random.default_rng(0))


def test_mnist_cached_second_load_does_not_parse(dirs, monkeypatch):
    tiny_mnist(dirs[0], monkeypatch)
    first = mnist(0, -1, np.random.default_rng(0)).X
    assert list((dirs[1] / "parsed").glob("mnist-train-*.npz"))

    def boom(*args):
        raise AssertionError("parsed again")

    monkeypatch.setattr(mnist_mod, "read_images_labels", boom)
    np.testing.assert_array_equal(mnist(0, -1, np.random.default_rng(0)).X, first)
    # other files (other checksums) are a different cache entry: parsed again
    tiny_mnist(dirs[0], monkeypatch, seed=1)
    with pytest.raises(AssertionError, match="parsed again"):
        mnist(0, -1, np.random.default_rng(0))


def test_mnist_bad_checksum_is_rejected(dirs, monkeypatch):
    tiny_mnist(dirs[0], monkeypatch)
    wrong = DataFile("tiny_mnist", "train-images-idx3-ubyte.gz", "0" * 64)
    monkeypatch.setattr(mnist_mod, "TRAIN_IMAGES", wrong)
    with pytest.raises(DataFileError, match=r"has SHA-256 [0-9a-f]{64}, expected 0{64}.*not used"):
        mnist(0, -1, np.random.default_rng(0))


def test_missing_file_names_the_file_and_every_place_looked(dirs, monkeypatch, tmp_path):
    spec = DataFile("nowhere", "train-images-idx3-ubyte.gz", "0" * 64, (), "HOW-TO-GET-IT")
    monkeypatch.setattr(mnist_mod, "TRAIN_IMAGES", spec)
    extra = tmp_path / "extra"
    with pytest.raises(DataFileError) as err:
        mnist(0, -1, np.random.default_rng(0), data_dir=extra)
    message = str(err.value)
    assert "nowhere/train-images-idx3-ubyte.gz not found" in message
    looked = data_dirs(extra)
    assert extra in looked and dirs[0] in looked and dirs[1] in looked
    for d in looked:
        assert str(d / "nowhere" / "train-images-idx3-ubyte.gz") in message
    assert "downloads disabled in tests" in message and "HOW-TO-GET-IT" in message


def test_mnist_file_specs_name_the_original_sources():
    for spec in (mnist_mod.TRAIN_IMAGES, mnist_mod.TRAIN_LABELS, mnist_mod.TEST_IMAGES,
                 mnist_mod.TEST_LABELS):
        assert spec.folder == "mnist" and re.fullmatch(r"[0-9a-f]{64}", spec.sha256)
        assert spec.urls[0] == f"http://yann.lecun.com/exdb/mnist/{spec.name}"
        assert len(spec.urls) >= 2


# --- News Commentary on tiny corpora -------------------------------------------------------------
TINY_V8 = [
    ["SAN FRANCISCO – It has never been easy.", "", "Gold at $10,000?", "1.", "Gold at $10,000?"],
    ["  Gold at $10,000?  ", "Second file, new sentence.", "----"],
    ["It has never been easy."],
    ["SAN FRANCISCO – It has never been easy.", "Third new sentence here"],
    ["", "Last one, a unique line."],
]
TINY_V8_ROWS = ["SAN FRANCISCO – It has never been easy.", "Gold at $10,000?",
                "Second file, new sentence.", "It has never been easy.", "Third new sentence here",
                "Last one, a unique line."]


def tiny_v8(data_dir: Path, monkeypatch) -> list[Path]:
    folder = data_dir / "tiny_news"
    folder.mkdir(parents=True, exist_ok=True)
    paths, specs = [], []
    for pair, lines in zip("cs de es fr ru".split(), TINY_V8):
        path = folder / f"news-commentary-v8.{pair}-en.en"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(path)
        specs.append(DataFile("tiny_news", path.name, sha256sum(path)))
    monkeypatch.setattr(news_mod, "V8_FILES", tuple(specs))
    monkeypatch.setattr(news_mod, "V16", DataFile("tiny_news", "news-commentary-v16.en.gz", None))
    monkeypatch.setattr(news_mod, "V16_MIN_LINES", 1)  # the tiny v16 below stands in for the corpus
    return paths


def article(words: int, tag: str) -> str:
    """An article of ``words`` tokens over two lines."""
    tokens = [f"{tag}{i % 7}" for i in range(words)]
    return " ".join(tokens[: words // 2]) + "\n" + " ".join(tokens[words // 2:])


def tiny_v16(data_dir: Path) -> tuple[Path, list[str]]:
    long_a, long_b, long_c = article(20, "alpha"), article(45, "beta"), article(300, "gamma")
    short = article(19, "delta")  # 19 tokens: dropped
    text = "\n\n".join([long_a, short, long_b]) + "\n \n\n" + long_c + "\n\n\n" + "x y z\n"
    path = data_dir / "tiny_news" / "news-commentary-v16.en.gz"
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write(text)
    return path, [long_a, long_b, long_c]


def test_v8_rows_are_distinct_sentences_in_order_of_first_appearance(dirs, monkeypatch):
    assert v8_sentences(tiny_v8(dirs[0], monkeypatch)) == TINY_V8_ROWS


def test_hashing_matches_documented_encoding():
    """Counts per bucket abs(murmurhash3_32(token, seed 0, signed)) % d of the lowercased tokens
    of >= 2 word characters (HashingVectorizer, alternate_sign=False, norm=None)."""
    from sklearn.utils import murmurhash3_32

    docs = ["The cat and THE dog; a cat!", "Éclair 42 x 42 42"]
    d = 8
    expected = np.zeros((2, d))
    for row, doc in enumerate(docs):
        for token in re.findall(r"(?u)\b\w\w+\b", doc.lower()):
            expected[row, abs(murmurhash3_32(token, seed=0, positive=False)) % d] += 1
    np.testing.assert_array_equal(hashed_counts(docs, d), expected)
    assert expected.sum() == 6 + 4  # "a" and "x" are not tokens


def test_scaling_unit_and_max():
    counts = np.array([[3.0, 4.0, 0.0], [0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [6.0, 8.0, 0.0]])
    unit = scale_rows(counts, "unit")
    np.testing.assert_allclose(unit, [[0.6, 0.8, 0], [1, 0, 0], [0.6, 0.8, 0]])  # zero row dropped
    top = scale_rows(counts, "max")
    np.testing.assert_allclose(top, counts / 10)
    with pytest.raises(ValueError, match="scaling must be one of"):
        scale_rows(counts, "l1")


@pytest.mark.parametrize("d", [4, 16, 64])
def test_news_v8_fallback_rows_and_scaling_invariants(dirs, monkeypatch, capsys, d):
    tiny_v8(dirs[0], monkeypatch)
    unit = news(d, "unit", np.random.default_rng(0))
    top = news(d, "max", np.random.default_rng(0))
    assert "news: using news-commentary-v8-subset" in capsys.readouterr().out
    assert unit.info == top.info == {"corpus": news_mod.V8_NAME} and unit.radius == 1.0
    counts = hashed_counts(TINY_V8_ROWS, d)
    assert unit.X.shape == top.X.shape == (len(TINY_V8_ROWS), d)
    np.testing.assert_allclose(np.linalg.norm(unit.X, axis=1), 1.0, rtol=1e-12)
    norms = np.linalg.norm(top.X, axis=1)
    assert norms.max() == pytest.approx(1.0, rel=1e-12) and np.all(norms <= 1 + 1e-12)
    np.testing.assert_allclose(top.X, counts / np.linalg.norm(counts, axis=1).max(), rtol=1e-12)
    assert np.mean(norms**2) < 1  # tr < 1 for "max"


def test_news_uses_v16_when_present_and_records_its_checksum(dirs, monkeypatch, capsys):
    tiny_v8(dirs[0], monkeypatch)
    path, articles = tiny_v16(dirs[0])
    assert v16_articles(path) == articles
    data = news(32, "unit", np.random.default_rng(0))
    assert "news: using news-commentary-v16" in capsys.readouterr().out
    assert data.info == {"corpus": "news-commentary-v16", "corpus_sha256": sha256sum(path)}
    counts = hashed_counts(articles, 32)
    np.testing.assert_allclose(data.X, counts / np.linalg.norm(counts, axis=1)[:, None], rtol=1e-12)


def test_v16_lookup_never_downloads(dirs, monkeypatch):
    tiny_v8(dirs[0], monkeypatch)
    calls = []
    monkeypatch.setattr(files, "_download", lambda file, target: calls.append(file.name) or "offline")
    news(8, "unit", np.random.default_rng(0))
    assert calls == []  # v16 absent: looked up without download, then the (present) v8 files


def test_news_bad_checksum_and_missing_file(dirs, monkeypatch):
    paths = tiny_v8(dirs[0], monkeypatch)
    specs = list(news_mod.V8_FILES)
    specs[2] = DataFile("tiny_news", paths[2].name, "f" * 64)
    monkeypatch.setattr(news_mod, "V8_FILES", tuple(specs))
    with pytest.raises(DataFileError, match=rf"{paths[2].name} has SHA-256 .*expected f{{64}}"):
        news(8, "unit", np.random.default_rng(0))
    specs[2] = DataFile("tiny_news", "news-commentary-v8.xx-en.en", "f" * 64)
    monkeypatch.setattr(news_mod, "V8_FILES", tuple(specs))
    with pytest.raises(DataFileError) as err:
        news(8, "unit", np.random.default_rng(0))
    for d in data_dirs():
        assert str(d / "tiny_news" / "news-commentary-v8.xx-en.en") in str(err.value)


def test_news_cached_second_load_does_not_vectorise(dirs, monkeypatch):
    tiny_v8(dirs[0], monkeypatch)
    first = news(16, "max", np.random.default_rng(0)).X

    def boom(*args):
        raise AssertionError("vectorised again")

    monkeypatch.setattr(news_mod, "hashed_counts", boom)
    np.testing.assert_array_equal(news(16, "max", np.random.default_rng(0)).X, first)
    np.testing.assert_allclose(np.linalg.norm(news(16, "unit", None).X, axis=1), 1.0)  # same entry
    with pytest.raises(AssertionError, match="vectorised again"):
        news(17, "max", np.random.default_rng(0))  # another d: another entry


@pytest.mark.parametrize("d, scaling, message", [(0, "unit", "d must be"), (2.5, "unit", "d must be"),
                                                 ("8", "unit", "d must be"),
                                                 (8, "l2", "scaling must be one of")])
def test_news_bad_parameters(dirs, d, scaling, message):
    with pytest.raises(ValueError, match=message):
        news(d, scaling, None)


def test_registry_parameters():
    assert get_dataset("mnist").param_names() == ["n", "digit"]
    assert get_dataset("news").param_names() == ["d", "scaling"]


# --- the staged real files -----------------------------------------------------------------------
@needs_staged
def test_staged_files_pass_their_checksums(staged):
    for spec in (mnist_mod.TRAIN_IMAGES, mnist_mod.TRAIN_LABELS, mnist_mod.TEST_IMAGES,
                 mnist_mod.TEST_LABELS, *news_mod.V8_FILES):
        path = locate(spec, data_dir=staged, download=False)
        assert path == staged / spec.relative and sha256sum(path) == spec.sha256


@needs_staged
def test_staged_mnist_shapes_and_digit_counts(staged):
    train = mnist_mod.load_train(staged)
    assert train["images"].shape == (60000, 784) and train["images"].dtype == np.uint8
    np.testing.assert_array_equal(np.bincount(train["labels"], minlength=10), MNIST_DIGIT_COUNTS)
    test_images = read_idx_gz(locate(mnist_mod.TEST_IMAGES, staged), 2051)
    test_labels = read_idx_gz(locate(mnist_mod.TEST_LABELS, staged), 2049)
    assert test_images.shape == (10000, 28, 28) and test_labels.shape == (10000,)
    data = mnist(0, -1, np.random.default_rng(0), data_dir=staged)
    assert data.X.shape == (60000, 784)
    assert 0.5 <= np.linalg.norm(data.X, axis=1).max() <= 1  # rad(X) = 0.614: radius: known fits
    for digit, count in enumerate(MNIST_DIGIT_COUNTS):
        assert mnist(0, digit, None, data_dir=staged).info["n_available"] == count
    assert mnist(6000, -1, np.random.default_rng(0), data_dir=staged).X.shape == (6000, 784)


@needs_staged
def test_staged_news_v8_subset(staged, monkeypatch):
    monkeypatch.setattr(news_mod, "V16", DataFile("absent_for_this_test", "v16.en.gz", None))
    for scaling in ("unit", "max"):
        data = news(32, scaling, None, data_dir=staged)
        assert data.X.shape == (V8_ROWS, 32) and data.info == {"corpus": news_mod.V8_NAME}
        assert np.linalg.norm(data.X, axis=1).max() == pytest.approx(1.0, rel=1e-12)


@needs_staged
@pytest.mark.parametrize("name", STAGED_RUNS)  # test_experiments.py leaves them here when the data are staged
def test_smoke_runs_on_staged_data(staged, tmp_path, name):
    exp = compose_experiment([f"experiment={name}", "scale=smoke", "n_jobs=1",
                              f"output_dir={tmp_path / name}"])
    out = run_experiment(exp)
    check_smoke_run(exp, out)  # test_experiments.py's checks of every experiment's smoke run (it leaves these here)
    results = pd.read_csv(out.results)
    assert len(results) == len(exp.grid()) * exp.trials * len(exp.mechanisms)
    assert np.isfinite(results.err_fro).all()  # (the figures: drawn and checked by check_smoke_run)
    zero = results[results.mechanism == "zero"]
    assert (zero.err_fro <= zero.data_trace + 1e-12).all()
    if name == "news_rho":
        assert results.data_corpus.str.startswith("news-commentary-v").all()
        unit = results[results.scaling == "unit"]
        np.testing.assert_allclose(unit.data_trace, 1.0, rtol=1e-9)
        assert (results[results.scaling == "max"].data_trace < 1).all()
    else:
        assert (results.data_trace < 1).all() and "data_n_available" in results
        if name == "mnist_digits":
            counts = results.groupby("digit").data_n_available.first()
            assert all(counts[k] == MNIST_DIGIT_COUNTS[k] for k in counts.index)
