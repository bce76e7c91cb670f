"""Name -> dataset loader. A loader takes its parameters as keywords plus ``rng`` (and ``data_dir``
when it reads files) and returns X or Data."""
from __future__ import annotations

import inspect
import typing
from dataclasses import dataclass, replace
from typing import Callable

from .gaussian import gaussian_kappa
from .mnist import mnist, subsamples
from .news import news
from .news_hf import news_hf
from .registry_types import Data
from .sparse import sparse_gaussian
from .synthetic import synthetic_zipf
from .table import table
from .uci import uci


LOADER_CONTEXT = ("rng", "data_dir")  # loader arguments that are not dataset parameters


@dataclass(frozen=True)
class Dataset:
    name: str
    loader: Callable  # loader(**params, rng) -> n x d array (rows in the `radius` ball) or Data
    radius: float = 1.0
    description: str = ""
    # resampled(params) -> True when the loader draws a random sample at these parameters that
    # should be fresh for every trial (e.g. MNIST subsamples, Dong Fig. 4); the runner then builds
    # the instance per trial from a generator keyed by the trial. None: one instance per grid point.
    resampled: Callable | None = None

    def param_names(self) -> list[str]:
        return [p for p in inspect.signature(self.loader).parameters if p not in LOADER_CONTEXT]

    def param_types(self) -> dict[str, type]:
        """Declared types of the dataset parameters (the loader's annotations)."""
        hints = typing.get_type_hints(self.loader)
        return {p: hints[p] for p in self.param_names() if p in hints}

    def load(self, params: dict, rng, data_dir=None) -> Data:
        """The loader's output as Data; ``data_dir`` goes to loaders of files (data/files.py)."""
        context = {"data_dir": data_dir} if "data_dir" in inspect.signature(self.loader).parameters else {}
        return as_data(self.loader(**params, rng=rng, **context), self)


DATASETS = {ds.name: ds for ds in [
    Dataset("synthetic_zipf", synthetic_zipf, 1.0,
            "X = ZU, centred, row norms 2^(k-N) in N Zipf(s) bins (Dong et al. §6.1)"),
    Dataset("sparse_gaussian", sparse_gaussian, 1.0,
            "x ~ N(0, U), U sparse (Wang & Xu §5), clipped to row_bound * sqrt(tr U)"),
    Dataset("mnist", mnist, 1.0,
            "MNIST training images, x = pixels/(255*28), d = 784; one digit or all; n-row subsample",
            resampled=subsamples),
    Dataset("news", news, 1.0,
            "News Commentary (v16, else a v8 sentence subset), hashed to d buckets, rows scaled unit|max"),
    Dataset("news_hf", news_hf, 1.0,
            "News Commentary via Hugging Face datasets (hub or save_to_disk copy), hashed as news"),
    Dataset("gaussian_kappa", gaussian_kappa, 1.0,
            "x ~ N(0, Sigma), cond(Sigma) = kappa, clipped to bound * sqrt(tr Sigma); raw rows kept"),
    Dataset("uci", uci, 1.0, "UCI wine | airfoil | adult (Amin et al. §4), min-max, rows / max norm"),
    Dataset("table", table, 1.0,
            "your own CSV/TSV/Parquet/.npy file: columns, standardisation, declared bound (clipped) or max"),
]}


def as_data(loaded, dataset: Dataset) -> Data:
    """A loader's output as Data, with the dataset's radius unless the loader set one."""
    if isinstance(loaded, Data):
        return loaded if loaded.radius is not None else replace(loaded, radius=dataset.radius)
    return Data(loaded, dataset.radius)


def get_dataset(name: str) -> Dataset:
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; known: {', '.join(sorted(DATASETS))}")
    return DATASETS[name]
