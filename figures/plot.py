"""summary.csv -> figure: one panel per value of the panel parameter, one line per mechanism,
log-log axes, the mean with a 95% band (mean +- 1.96 sem), as in Dong et al.'s figures."""
from __future__ import annotations

import numbers
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

STYLE = {  # consistent colours across figures; unknown labels get matplotlib's cycle
    "EMCov": "tab:purple", "GaussCov": "tab:blue", "SeparateCov": "tab:orange",
    "AdaptiveCov": "tab:green", "Zero": "tab:gray", "Stable + GSampling": "tab:red",
}
PRETTY = {"rho": "ρ", "eps": "ε", "delta": "δ"}
METRIC_LABELS = {"fro": r"Frobenius error $\|\tilde\Sigma - \Sigma\|_F$",
                 "fro_rel": r"relative error $\|\hat C - C\|_F / \|C\|_F$",
                 "l2": r"relative $\ell_2$ error $\|\Sigma^+ - U\|_2 / \|U\|_2$",
                 "l1": r"relative $\ell_1$ error $\|\Sigma^+ - U\|_1 / \|U\|_1$"}


def _value(v) -> str:
    return f"{v:g}" if isinstance(v, numbers.Number) else str(v)


def plot_summary(summary: pd.DataFrame, figure, metric: str, stem: Path, title: str = "",
                 params: list[str] = ()):
    """Draw ``metric`` (e.g. "fro") against ``figure.x``; returns the PNG and PDF paths.

    One panel per value of ``figure.panel`` (a parameter, "label" for one panel per mechanism, or a
    list of them: a grid with the last one across);
    one line per mechanism and per value of any other parameter in ``params`` that varies."""
    mean, sem = summary[f"err_{metric}_mean"], summary[f"err_{metric}_sem"]
    frame = summary.assign(_mean=mean, _low=(mean - 1.96 * sem), _high=(mean + 1.96 * sem))
    by = [figure.panel] if isinstance(figure.panel, str) else list(figure.panel or [])
    panels = sorted(frame[by].drop_duplicates().itertuples(index=False, name=None)) if by else [None]
    columns = frame[by[-1]].nunique() if len(by) > 1 else len(panels)  # a grid: last parameter across
    columns = min(columns, figure.columns or columns)
    rows = -(-len(panels) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 3.6 * rows), squeeze=False)
    for ax in axes.flat[len(panels):]:  # a last row that is not full
        ax.set_visible(False)
    for ax, panel in zip(axes.flat, panels):
        part = frame if panel is None else frame[(frame[by] == pd.Series(panel, index=by)).all(axis=1)]
        others = [p for p in params if p not in (figure.x, *by) and part[p].nunique() > 1]
        for key, line in part.groupby(["label", *others], sort=False):
            key = key if isinstance(key, tuple) else (key,)
            label = ", ".join([str(key[0])] + [f"{PRETTY.get(p, p)}={_value(v)}" for p, v in zip(others, key[1:])])
            line = line.sort_values(figure.x)
            colour = STYLE.get(label) if not others else None
            ax.plot(line[figure.x], line["_mean"], marker="o", ms=3, label=label, color=colour)
            low = line["_low"].where(line["_low"] > 0, line["_mean"] / 10) if figure.logy else line["_low"]
            ax.fill_between(line[figure.x], low, line["_high"], alpha=0.2, color=colour)
        if figure.logx:
            ax.set_xscale("log")
        if figure.logy:
            ax.set_yscale("log")
            low, high = part["_mean"].min(), part["_mean"].max()
            if low > 0 and high / low < 1.05:  # a flat panel: don't magnify rounding noise
                ax.set_ylim(low / 2, high * 2)
        ax.set_xlabel(figure.xlabel or PRETTY.get(figure.x, figure.x))
        ax.set_ylabel(figure.ylabel or METRIC_LABELS.get(metric, f"error ({metric})"))
        ticks = sorted(part[figure.x].unique())
        if len(ticks) <= 10:  # label the grid values themselves, as the papers do
            ax.set_xticks(ticks, [f"{t:g}" for t in ticks], fontsize=7)
            ax.xaxis.set_minor_locator(plt.NullLocator())
        if panel is not None:
            ax.set_title(", ".join(str(v) if p == "label" else f"{PRETTY.get(p, p)} = {_value(v)}"
                                   for p, v in zip(by, panel)))
        ax.grid(True, which="major", alpha=0.3)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    axes[0][0].legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    png, pdf = stem.with_suffix(".png"), stem.with_suffix(".pdf")
    fig.savefig(png, dpi=130)
    fig.savefig(pdf)
    plt.close(fig)
    return png, pdf
