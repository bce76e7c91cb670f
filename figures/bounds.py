"""Dong et al. 2022, Fig. 1: the known worst-case bounds (tr = 1) as functions of d at a fixed n,
computed in closed form (no data, no runs)."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .plot import format_log_axis, pyplot, save, tight_layout
from .style import style_for

STEM = "dong2022/fig1/figure"  # under results/
N = 10_000


def worst_case_bounds(d, n: float) -> dict[str, np.ndarray]:
    """The curves of Dong et al. Fig. 1 (error of Sigma = X^T X / n, rows in the unit ball, O~ with the
    privacy parameter and polylog factors dropped), capped at 1 (the zero matrix's error):
    upper bounds GaussCov d/n, EMCov (Amin) d^3/4/sqrt n + sqrt d/n, SeparateCov d^1/4/sqrt n + sqrt d/n;
    lower bounds sqrt d/n (mean estimation) and d/n for d < sqrt n (Kasiviswanathan et al.)."""
    d = np.asarray(d, dtype=float)
    cap = lambda v: np.minimum(v, 1.0)  # noqa: E731
    return {
        "GaussCov upper: $d/n$": cap(d / n),
        r"EMCov upper: $d^{3/4}/\sqrt{n} + \sqrt{d}/n$": cap(d**0.75 / math.sqrt(n) + np.sqrt(d) / n),
        r"SeparateCov upper: $d^{1/4}/\sqrt{n} + \sqrt{d}/n$": cap(d**0.25 / math.sqrt(n) + np.sqrt(d) / n),
        r"lower bound: $\sqrt{d}/n$, and $d/n$ for $d < \sqrt{n}$": cap(np.where(d < math.sqrt(n), d / n,
                                                                                  np.sqrt(d) / n)),
    }


def plot_bounds(stem: Path, n: int = N) -> tuple[Path, Path]:
    d = np.logspace(0, np.log10(float(n) ** 2.5), 400)
    curves = worst_case_bounds(d, n)
    looks = {"GaussCov": style_for("GaussCov"), "EMCov": style_for("EMCov"),
             "SeparateCov": style_for("SeparateCov")}
    fig, ax = pyplot().subplots(figsize=(6.4, 5.0))
    for name, values in curves.items():
        mechanism = name.split()[0]
        if mechanism in looks:
            ax.plot(d, values, color=looks[mechanism].colour, lw=1.8, label=name)
        else:
            ax.fill_between(d, 1e-12, values, color="0.85", label=f"impossible ({name})")
    ax.axhline(1.0, color=style_for("Zero").colour, lw=1.2, linestyle=":", label="Zero Matrix: error ≤ tr = 1")
    for where, text in ((np.sqrt(n), "d = √n"), (n, "d = n"), (float(n) ** 2, "d = n²")):
        ax.axvline(where, color="0.5", lw=0.6, linestyle=":")
        ax.text(where * 1.2, 1.6, text, fontsize=7, color="0.3")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(1e-5, 3)
    ax.set_xlim(d[0], d[-1])
    format_log_axis(ax.xaxis, [1.0, float(d[-1])], "n")
    ax.set_xlabel(f"d (n = {n:,} rows, tr = 1; Õ with ρ and polylog factors dropped)")
    ax.set_ylabel(r"worst-case error $\|\tilde\Sigma - \Sigma\|_F$")
    ax.set_title("Dong, Liang & Yi 2022, Fig. 1: known worst-case bounds", fontsize=10)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    ax.grid(True, which="major", alpha=0.3)
    tight_layout(fig)
    return save(fig, stem)
