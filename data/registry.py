"""Name -> dataset loader. A loader takes its parameters as keywords plus ``rng`` and returns X."""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Callable

from .synthetic import synthetic_zipf


@dataclass(frozen=True)
class Dataset:
    name: str
    loader: Callable  # loader(**params, rng) -> n x d array with rows in the ball of radius `radius`
    radius: float = 1.0
    description: str = ""

    def param_names(self) -> list[str]:
        return [p for p in inspect.signature(self.loader).parameters if p != "rng"]


DATASETS = {ds.name: ds for ds in [
    Dataset("synthetic_zipf", synthetic_zipf, 1.0,
            "X = ZU, centred, row norms 2^(k-N) in N Zipf(s) bins (Dong et al. §6.1)"),
]}


def get_dataset(name: str) -> Dataset:
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; known: {', '.join(sorted(DATASETS))}")
    return DATASETS[name]
