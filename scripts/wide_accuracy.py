"""Wide data (issue 61): what PrivatePCA's default releases at d in the hundreds to thousands -- the variance its k
components capture over the most any k-dimensional subspace captures (1: the exact principal subspace), what auto
chose, and whether the forecast warned -- on an embedding-like synthetic set (column i scaled by i^-1/2, rows in the
unit ball) and on MNIST's 784 pixels (rows scaled into the unit ball by the public bound 255 sqrt(784)).

    python scripts/wide_accuracy.py                  # results/measurements/wide_accuracy.txt (auto, then gauss)
    python scripts/wide_accuracy.py --seeds 1 --d 500
"""
from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import dpcov  # noqa: E402
from dpcov.data import mnist  # noqa: E402
from dpcov.estimators import captured_variance_ratio  # noqa: E402

K = 10
BUDGETS = (0.1, 0.5, 2.0)  # rho (zCDP)


def embedding_rows(n: int, d: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * np.arange(1, d + 1) ** -0.5
    return X / np.linalg.norm(X, axis=1).max()


def mnist_rows() -> np.ndarray:
    images = mnist.load_train()["images"].reshape(60000, -1).astype(float)
    return images / (255 * np.sqrt(images.shape[1]))  # the public bound: every pixel at most 255


def run(name: str, X: np.ndarray, seeds: int, mechanism: str = "auto") -> list[str]:
    lines = []
    for rho in BUDGETS:
        ratios, chosen, warned = [], set(), 0
        for seed in range(seeds):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                pca = dpcov.PrivatePCA(K, budget=dpcov.ZCDP(rho), radius=1.0, centering="private",
                                       random_state=seed, mechanism=mechanism).fit(X)
            warned += any(issubclass(w.category, dpcov.UselessReleaseWarning) for w in caught)
            ratios.append(captured_variance_ratio(pca.components_, X))
            chosen.add(pca.mechanism_)
        lines.append(f"{name:<28} {X.shape[0]:>7} {X.shape[1]:>5} {rho:>5} {np.mean(ratios):>9.3f} "
                     f"{np.min(ratios):>6.3f}-{np.max(ratios):<6.3f} {warned:>2}/{seeds}  {','.join(sorted(chosen))}")
        print(lines[-1], flush=True)
    return lines


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", default="500,1000,2000")
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--no-mnist", action="store_true")
    parser.add_argument("--mechanisms", default="auto,gauss", help="auto (the default) and lines to compare it with")
    parser.add_argument("--write", default=str(ROOT / "results" / "measurements" / "wide_accuracy.txt"))
    args = parser.parse_args(argv)
    lines = [f"# Wide data (issue 61): python scripts/wide_accuracy.py --d {args.d} --n {args.n} --seeds {args.seeds}",
             f"# PrivatePCA({K}) at its defaults (auto, add/remove, hardened), radius 1, centering='private'; captured "
             f"variance over the exact top-{K} subspace's (1 = exact); warned: UselessReleaseWarning fits", "",
             f"{'data':<28} {'n':>7} {'d':>5} {'rho':>5} {'captured':>9} {'range':>13} {'warned':>5}  chosen"]
    for mechanism in args.mechanisms.split(","):
        lines.append(f"# mechanism={mechanism!r}")
        for d in [int(v) for v in args.d.split(",")]:
            lines += run("embedding-like (i^-1/2)", embedding_rows(args.n, d, 0), args.seeds, mechanism)
        if not args.no_mnist:
            lines += run("MNIST train, 784 pixels", mnist_rows(), args.seeds, mechanism)
    Path(args.write).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
