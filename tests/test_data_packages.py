"""Data packages users already have: MNIST in torchvision's layout (data/mnist.py) and News
Commentary through Hugging Face ``datasets`` (data/news_hf.py), tested on small local copies."""
import gzip
import shutil

import numpy as np
import pandas as pd
import pytest

import dpcov.data.files as files
import dpcov.data.mnist as mnist_mod
import dpcov.data.news_hf as news_hf_mod
from dpcov.data.files import DataFile, DataFileError, sha256sum
from dpcov.data.mnist import TRAIN_IMAGES, TRAIN_LABELS, locate_mnist, mnist
from dpcov.data.news import hashed_counts, scale_rows
from dpcov.experiments.runner import run_experiment
from test_real_data import SHARED, tiny_mnist


@pytest.fixture
def dirs(tmp_path, monkeypatch):
    data, cache = tmp_path / "data", tmp_path / "cache"
    data.mkdir()
    monkeypatch.setenv("DPCOV_DATA", str(data))
    monkeypatch.setenv("DPCOV_CACHE", str(cache))
    monkeypatch.setattr(files, "_download", lambda file, target: "downloads disabled in tests")
    monkeypatch.setattr(mnist_mod, "_LOADED", {})
    monkeypatch.setattr(news_hf_mod, "_TEXTS", {})
    return data


def gunzip(source, target):
    target.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(source, "rb") as f, open(target, "wb") as out:
        shutil.copyfileobj(f, out)
    return target


# --- MNIST in torchvision's folder layout ------------------------------------------------------------
@pytest.mark.parametrize("compressed", [True, False])
def test_mnist_is_found_in_torchvision_layout(dirs, tmp_path, monkeypatch, compressed):
    images, labels = tiny_mnist(tmp_path / "staging", monkeypatch)
    raw = dirs / "MNIST" / "raw"
    specs = {}
    for spec in (mnist_mod.TRAIN_IMAGES, mnist_mod.TRAIN_LABELS):
        source = tmp_path / "staging" / spec.relative
        target = raw / (spec.name if compressed else spec.name[:-3])
        shutil.copy(source, target.parent.mkdir(parents=True, exist_ok=True) or target) if compressed \
            else gunzip(source, target)
        specs[spec.sha256] = sha256sum(target)
        monkeypatch.setattr(mnist_mod, "TRAIN_IMAGES" if "images" in spec.name else "TRAIN_LABELS",
                            DataFile("mnist", spec.name, spec.sha256))
    monkeypatch.setitem(mnist_mod.UNCOMPRESSED_SHA256, mnist_mod.TRAIN_IMAGES.sha256,
                        specs[mnist_mod.TRAIN_IMAGES.sha256])
    monkeypatch.setitem(mnist_mod.UNCOMPRESSED_SHA256, mnist_mod.TRAIN_LABELS.sha256,
                        specs[mnist_mod.TRAIN_LABELS.sha256])
    assert locate_mnist(mnist_mod.TRAIN_IMAGES).parent == raw
    data = mnist(0, -1, np.random.default_rng(0))
    np.testing.assert_array_equal(data.X, images.reshape(len(images), -1) / (255.0 * 28))
    if not compressed:  # a damaged copy is refused, not used
        (raw / "train-labels-idx1-ubyte").write_bytes(b"\x00" * 10)
        monkeypatch.setattr(mnist_mod, "_LOADED", {})
        with pytest.raises(DataFileError, match="train-labels-idx1-ubyte has SHA-256"):
            mnist(0, -1, np.random.default_rng(0))


def test_missing_mnist_error_mentions_the_torchvision_layout(dirs):
    with pytest.raises(DataFileError, match=r"MNIST/raw"):
        locate_mnist(DataFile("mnist", "absent-idx3-ubyte.gz", "0" * 64, (), mnist_mod._HOW))


@pytest.mark.skipif(not SHARED.is_dir(), reason=f"staged real data absent ({SHARED})")
def test_real_mnist_files_in_torchvision_layout_pass_their_checksums(tmp_path, monkeypatch):
    monkeypatch.setattr(files, "_download", lambda file, target: "downloads disabled in tests")
    raw = tmp_path / "MNIST" / "raw"
    raw.mkdir(parents=True)
    (raw / TRAIN_IMAGES.name).symlink_to(SHARED / "mnist" / TRAIN_IMAGES.name)
    gunzip(SHARED / "mnist" / TRAIN_LABELS.name, raw / TRAIN_LABELS.name[:-3])
    gunzip(SHARED / "mnist" / TRAIN_IMAGES.name, tmp_path / "other" / "MNIST" / "raw" / TRAIN_IMAGES.name[:-3])
    assert locate_mnist(TRAIN_IMAGES, tmp_path) == raw / TRAIN_IMAGES.name
    assert locate_mnist(TRAIN_LABELS, tmp_path) == raw / TRAIN_LABELS.name[:-3]  # the known raw checksum
    images = tmp_path / "other" / "MNIST" / "raw" / TRAIN_IMAGES.name[:-3]
    assert locate_mnist(TRAIN_IMAGES, tmp_path / "other") == images
    assert mnist_mod.read_idx(images, mnist_mod.IMAGES_MAGIC).shape == (60000, 28, 28)


# --- News Commentary through Hugging Face datasets ----------------------------------------------------
SENTENCES = ["The euro is a currency.", "Growth slowed in Europe.", "The euro is a currency.", "  ", "a",
             "Central banks raised rates again.", "Growth slowed in Europe and Asia."]


@pytest.fixture
def saved(tmp_path):
    datasets = pytest.importorskip("datasets", reason="the news_hf dataset needs pip install -e '.[hf]'")
    pairs = [{"de": f"Satz {i}", "en": s} for i, s in enumerate(SENTENCES)]
    split = datasets.Dataset.from_dict({"id": [str(i) for i in range(len(pairs))], "translation": pairs})
    path = tmp_path / "nc_de_en"
    datasets.DatasetDict({"train": split}).save_to_disk(str(path))
    return path, split._fingerprint


def expected_rows(d, scaling):
    kept = ["The euro is a currency.", "Growth slowed in Europe.", "Central banks raised rates again.",
            "Growth slowed in Europe and Asia."]  # distinct, stripped, with a token ("a" has none)
    return scale_rows(hashed_counts(kept, d), scaling)


@pytest.mark.parametrize("scaling", ["unit", "max"])
def test_news_hf_reads_a_local_save_to_disk_copy(dirs, saved, scaling):
    path, fingerprint = saved
    data = news_hf_mod.news_hf(16, scaling, str(path), None, "train", "translation.en", np.random.default_rng(0))
    np.testing.assert_array_equal(data.X, expected_rows(16, scaling))
    assert data.info["corpus_fingerprint"] == fingerprint  # save_to_disk keeps the split's fingerprint
    text = "".join(s + "\n" for s in ["The euro is a currency.", "Growth slowed in Europe.",
                                       "Central banks raised rates again.", "Growth slowed in Europe and Asia."])
    import hashlib
    assert data.info["corpus_sha256"] == hashlib.sha256(text.encode()).hexdigest()


def test_news_hf_bad_choices(dirs, saved):
    path = str(saved[0])
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=r"splits \['train'\], not 'test'"):
        news_hf_mod.news_hf(16, "unit", path, None, "test", "translation.en", rng)
    with pytest.raises(ValueError, match=r"no column 'text'; the dataset has \['id', 'translation'\]"):
        news_hf_mod.news_hf(16, "unit", path, None, "train", "text", rng)
    with pytest.raises(ValueError, match=r"no key 'fr'; keys: \['de', 'en'\]"):
        news_hf_mod.news_hf(16, "unit", path, None, "train", "translation.fr", rng)
    with pytest.raises(ValueError, match="scaling must be one of"):
        news_hf_mod.news_hf(16, "both", path, None, "train", "translation.en", rng)


def test_news_hf_runs_news_rho_and_records_the_fingerprint(dirs, saved, experiment):
    path, fingerprint = saved
    exp = experiment("news_rho", "dataset=news_hf", f"params.source={path}", "params.config=null",
                     "params.split=train", "params.field=translation.en", "sweep.d=[8]", "mechanisms=[gauss,zero]")
    rows = pd.read_csv(run_experiment(exp).results)
    assert set(rows.data_corpus_fingerprint) == {fingerprint} and rows.data_corpus_sha256.nunique() == 1
    assert set(rows.scaling) == {"unit", "max"}


def test_news_hf_from_the_hub_when_offline_says_what_to_do(dirs, monkeypatch):
    datasets = pytest.importorskip("datasets", reason="the news_hf dataset needs pip install -e '.[hf]'")

    def offline(*args, **kwargs):
        raise ConnectionError("no network")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(DataFileError, match=r"from the Hugging Face hub \(ConnectionError: no network\).*save_to_disk"):
        news_hf_mod.news_hf(16, "unit", news_hf_mod.HUB_ID, "de-en", "train", "translation.en",
                            np.random.default_rng(0))
