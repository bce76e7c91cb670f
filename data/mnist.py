"""MNIST training images (LeCun, Cortes & Burges) for Dong, Liang & Yi 2022, Figures 4 and 6.

Rows are the 60000 training images flattened to d = 784 and scaled as in the paper (§6.2):
x = pixels / (255 * sqrt(784)) = pixels / (255 * 28), so every ||x|| <= 1 (the largest row norm of
the training set is 0.614; per digit 0.45 (digit 1) to 0.61 (digit 0)). The IDX files are parsed
with numpy and the parsed arrays are kept in the parse cache (``data.files.cached_array``), keyed
by the files' SHA-256, so only the first load decompresses them.

Where the files are found: ``<data dir>/mnist/<name>.gz`` (data/files.py's lookup order), or, so that
users who already have MNIST through torchvision need no second copy, torchvision's layout
``<root>/MNIST/raw/`` (``torchvision.datasets.MNIST(root)``) under any data directory -- the ``.gz``
files or their uncompressed copies; every file is checked against its SHA-256 either way.

IDX format (http://yann.lecun.com/exdb/mnist/): big-endian int32 magic 0x00 0x00 <type> <ndim>
(2051 = unsigned bytes, 3 dimensions: images; 2049 = unsigned bytes, 1 dimension: labels), then
ndim big-endian int32 sizes, then the data in C order.
"""
from __future__ import annotations

import gzip
import zlib
from pathlib import Path

import numpy as np

from .files import DataFile, cached_array, data_dirs, locate, verify
from .registry_types import Data

SCALE = 255.0 * 28.0  # 255 * sqrt(d): pixel values 0..255, d = 784, so ||x|| <= 1
IMAGES_MAGIC, LABELS_MAGIC = 2051, 2049
PARSE_VERSION = 1  # bump when the parsed arrays change meaning (invalidates the parse cache)

_HOW = ("MNIST: the four files from http://yann.lecun.com/exdb/mnist/ (or any byte-identical "
        "mirror) go in <data dir>/mnist/; a torchvision copy (<root>/MNIST/raw/) is used too if "
        "<root> is a data dir (e.g. data_dir=<root>).")
_MIRRORS = ("http://yann.lecun.com/exdb/mnist/", "https://ossci-datasets.s3.amazonaws.com/mnist/")


def _mnist_file(name: str, sha256: str) -> DataFile:
    return DataFile("mnist", name, sha256, tuple(base + name for base in _MIRRORS), _HOW)


# SHA-256 of the original files (md5s match LeCun's; see /work/shared/data/README.md).
TRAIN_IMAGES = _mnist_file("train-images-idx3-ubyte.gz",
                           "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609")
TRAIN_LABELS = _mnist_file("train-labels-idx1-ubyte.gz",
                           "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c")
TEST_IMAGES = _mnist_file("t10k-images-idx3-ubyte.gz",
                          "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6")
TEST_LABELS = _mnist_file("t10k-labels-idx1-ubyte.gz",
                          "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6")


# torchvision.datasets.MNIST(root) keeps the .gz files and their uncompressed copies in <root>/MNIST/raw/.
TORCHVISION_FOLDER = "MNIST/raw"
UNCOMPRESSED_SHA256 = {  # SHA-256 of the gunzipped file, by the .gz file's SHA-256
    TRAIN_IMAGES.sha256: "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
    TRAIN_LABELS.sha256: "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5",
}


def torchvision_copies(file: DataFile) -> list[DataFile]:
    """Where torchvision keeps ``file``: the .gz itself and, if its checksum is known, the
    uncompressed copy."""
    copies = [DataFile(TORCHVISION_FOLDER, file.name, file.sha256)]
    if file.sha256 in UNCOMPRESSED_SHA256 and file.name.endswith(".gz"):
        copies.append(DataFile(TORCHVISION_FOLDER, file.name[:-3], UNCOMPRESSED_SHA256[file.sha256]))
    return copies


def locate_mnist(file: DataFile, data_dir=None) -> Path:
    """``file`` in the usual layout or torchvision's, per data directory in lookup order; else
    ``locate`` (download into the cache, or the error naming every place looked)."""
    for directory in data_dirs(data_dir):
        for candidate in (file, *torchvision_copies(file)):
            if (directory / candidate.relative).is_file():
                return verify(directory / candidate.relative, candidate)
    return locate(file, data_dir)


class IDXError(ValueError):
    """An IDX file that cannot be parsed (bad magic, truncated, not gzip)."""


def parse_idx(raw: bytes, expected_magic: int, source: str = "IDX data") -> np.ndarray:
    """The uint8 array of an uncompressed IDX byte string whose magic must be ``expected_magic``."""
    if len(raw) < 4:
        raise IDXError(f"{source}: {len(raw)} bytes, too short for an IDX header")
    magic = int.from_bytes(raw[:4], "big")
    if magic != expected_magic:
        raise IDXError(f"{source}: magic number {magic}, expected {expected_magic} "
                       f"({'images' if expected_magic == IMAGES_MAGIC else 'labels'})")
    ndim = magic & 0xFF
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise IDXError(f"{source}: truncated header ({len(raw)} bytes, need {header})")
    shape = tuple(int(v) for v in np.frombuffer(raw, dtype=">i4", count=ndim, offset=4))
    size = int(np.prod(shape, dtype=np.int64))
    if len(raw) - header != size:
        raise IDXError(f"{source}: header says shape {shape} ({size} bytes of data) but the file "
                       f"holds {len(raw) - header}: truncated or corrupt")
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(shape).copy()


def read_idx_gz(path: Path, expected_magic: int) -> np.ndarray:
    """Parse a gzip-compressed IDX file (clear errors for truncated or non-gzip files)."""
    try:
        with gzip.open(path, "rb") as f:
            raw = f.read()
    except (EOFError, gzip.BadGzipFile, zlib.error) as err:
        raise IDXError(f"{path}: not a complete gzip file ({err})") from None
    return parse_idx(raw, expected_magic, str(path))


def read_idx(path: Path, expected_magic: int) -> np.ndarray:
    """An IDX file, gzip-compressed (name ending .gz) or not (torchvision's extracted copies)."""
    if Path(path).suffix == ".gz":
        return read_idx_gz(path, expected_magic)
    return parse_idx(Path(path).read_bytes(), expected_magic, str(path))


def read_images_labels(images_path: Path, labels_path: Path) -> dict[str, np.ndarray]:
    """{"images": n x 784 uint8 (rows = flattened 28 x 28 images), "labels": n uint8}."""
    images = read_idx(images_path, IMAGES_MAGIC)
    labels = read_idx(labels_path, LABELS_MAGIC)
    if images.ndim != 3 or labels.ndim != 1 or len(images) != len(labels):
        raise IDXError(f"{images_path} has shape {images.shape} but {labels_path} has shape "
                       f"{labels.shape}: expected n x rows x cols images and n labels")
    if labels.size and labels.max() > 9:
        raise IDXError(f"{labels_path}: label {labels.max()} is not a digit 0..9")
    return {"images": images.reshape(len(images), -1), "labels": labels}


_LOADED: dict = {}


def load_train(data_dir=None) -> dict[str, np.ndarray]:
    """The training images and labels: located and verified (data/files.py), parsed once, cached."""
    images, labels = TRAIN_IMAGES, TRAIN_LABELS  # read at call time, so tests can swap the specs
    memo = (tuple(map(str, data_dirs(data_dir))), images.sha256, labels.sha256)
    if memo not in _LOADED:  # once per process: per-trial subsamples reload it in every trial
        paths = [locate_mnist(f, data_dir) for f in (images, labels)]
        key = {"images": images.sha256, "labels": labels.sha256, "version": PARSE_VERSION}
        _LOADED.clear()
        _LOADED[memo] = cached_array("mnist-train", key, lambda: read_images_labels(*paths))
    return _LOADED[memo]


def _check_int(name: str, value, low: int, high: int | None = None) -> int:
    numeric = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    if not numeric or not float(value).is_integer() or value < low or (high is not None and value > high):
        bound = f"in {low}..{high}" if high is not None else f">= {low}"
        raise ValueError(f"{name} must be an integer {bound}, got {value!r}")
    return int(value)


DIGIT_COUNTS = (5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949)  # training set


def subsamples(params: dict) -> bool:
    """Whether ``mnist(**params)`` draws a random subsample (then a fresh one per trial)."""
    available = 60000 if params["digit"] == -1 else DIGIT_COUNTS[params["digit"]]
    return 0 < params["n"] < available


def mnist(n: int, digit: int, rng: np.random.Generator, data_dir=None) -> Data:
    """MNIST training images as rows x = pixels / (255 * 28) (d = 784, ||x|| <= 1).

    digit: -1 for all digits, else only the rows of that digit (0..9).
    n: how many of those rows, drawn uniformly without replacement with ``rng``; n = 0, or n at
    least the number available, means all of them (in file order, rng unused).

    As in the paper (Fig. 4: random subsamples drawn per trial), the dataset is registered with
    ``resampled=subsamples``: the runner calls the loader once per trial with a generator keyed by
    the trial, and every mechanism of that trial sees the same subsample.
    """
    n = _check_int("n", n, 0)
    digit = _check_int("digit", digit, -1, 9)
    arrays = load_train(data_dir)
    images, labels = arrays["images"], arrays["labels"]
    rows = None if digit == -1 else np.flatnonzero(labels == digit)  # None: every row
    available = len(labels) if rows is None else len(rows)
    if available == 0:
        raise ValueError(f"no training images of digit {digit}")
    if 0 < n < available:
        rows = np.sort(rng.choice(available if rows is None else rows, size=n, replace=False))
    X = np.divide(images if rows is None else images[rows], SCALE, dtype=np.float64)
    return Data(X, radius=1.0, info={"digit": digit, "n_available": available})
