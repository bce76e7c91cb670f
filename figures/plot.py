"""summary.csv -> figure, in the papers' layouts: a grid of labelled panels ((a), (b), ...), one line per
mechanism (or per value of a varied parameter), log axes with the papers' ticks, the mean with a 95%
band (mean +- 1.96 sem), one style per mechanism (figures/style.py), a light dotted theory layer where
the mechanism declares a prediction (read through experiments/theory.py), hollow markers where a line
lies on top of another, and marked points where trials fell back.

``plot_summary`` draws one experiment's figure; ``render`` draws any list of ``Panel``s (composite
figures: figures/composite.py)."""
from __future__ import annotations

import functools
import math
import numbers
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from dpcov.experiments.theory import predicted_error, prediction_of, read_spectra, row_params

from .style import figure_styles, paper_name



@functools.cache
def pyplot():
    """matplotlib.pyplot on the Agg backend (files, no window), imported when the first figure is drawn:
    what draws nothing (``dpcov run --help``, a config error, ``dpcov reproduce --status``, a loky
    worker) starts without matplotlib's import (about half a second)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


PRETTY = {"rho": "ρ", "eps": "ε", "delta": "δ", "kappa": "κ", "name": "data"}
METRIC_LABELS = {"fro": r"Frobenius error $\|\tilde\Sigma - \Sigma\|_F$",
                 "fro_rel": r"relative error $\|\hat C - C\|_F / \|C\|_F$",
                 "l2": r"relative $\ell_2$ error $\|\Sigma^+ - U\|_2 / \|U\|_2$",
                 "l1": r"relative $\ell_1$ error $\|\Sigma^+ - U\|_1 / \|U\|_1$",
                 "mahalanobis": r"Mahalanobis error $\|\Sigma^{-1/2}\tilde\Sigma\Sigma^{-1/2} - I\|_F$"}
THEORY_METRICS = ("fro", "fro_rel", "mahalanobis")  # the metrics a prediction speaks to (mechanisms/predictions.py)
CAPTION_WIDTH = 44  # characters per line of a panel's caption (a panel is 4 inches wide)
FALLBACKS = "fallbacks"  # summary column: trials at a point whose release fell back (0 if absent)
SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def _value(v) -> str:
    return f"{v:g}" if isinstance(v, numbers.Number) else str(v)


def describe(param: str, value) -> str:
    return str(value) if param in ("label", "name") else f"{PRETTY.get(param, param)} = {_value(value)}"


@dataclass
class Panel:
    """One panel: summary rows, the x parameter, the metric and how lines are split."""

    frame: pd.DataFrame
    x: str
    metric: str
    lines: list = field(default_factory=list)  # parameters besides the label that split lines
    caption: str = ""
    xlabel: str | None = None
    ylabel: str | None = None
    logx: bool = True
    logy: bool = True
    lines_by_value_only: bool = False  # legend "sr = 0.1" instead of "DP-Thresholding, sr = 0.1"
    variants: dict = field(default_factory=dict)  # line name -> {"mechanism", "budget", "options"}
    spectra: pd.DataFrame | None = None  # experiments/theory.py: the data's eigenvalues per data point


# --- axes -------------------------------------------------------------------------------------------

def _power_label(base: int, exponent: int) -> str:
    return f"{base}{str(exponent).translate(SUPERSCRIPT)}"


def _is_power_of_two(v: float) -> bool:
    return v > 0 and float(math.log2(v)).is_integer()


def format_log_axis(axis, values, parameter: str) -> None:
    """Ticks as the papers print them: the grid's powers of two (2⁰ … 2⁵) when the grid is powers of
    two, powers of two for a dimension-like parameter (d, p: 2⁴ … 2⁹), decades otherwise (10⁻⁴ …);
    the grid values themselves when the range is too short for two such ticks."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

    values = sorted(v for v in values if v > 0)
    if not values:
        return
    low, high = values[0], values[-1]
    base = 2 if all(map(_is_power_of_two, values)) or parameter in ("d", "p", "N") else 10
    exponents = range(math.ceil(math.log(low, base) - 1e-9), math.floor(math.log(high, base) + 1e-9) + 1)
    if base == 2 and len(exponents) > 8:  # thin out: every other power
        exponents = [e for e in exponents if e % 2 == exponents[0] % 2]
    if len(exponents) >= 2:
        axis.set_major_locator(FixedLocator([float(base) ** e for e in exponents]))
        axis.set_major_formatter(FuncFormatter(lambda v, _: _power_label(base, round(math.log(v, base)))))
        axis.set_minor_locator(FixedLocator(values) if base == 2 else NullLocator())
        axis.set_minor_formatter(NullFormatter())
    else:  # a short range: label (at most 6 of) the grid values
        step = max(1, math.ceil(len(values) / 6))
        axis.set_major_locator(FixedLocator(values[::step]))
        axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        axis.set_minor_locator(NullLocator())


def format_log_y(axis, low: float, high: float) -> None:
    """Decades, with 2 and 5 in between only when the range is under two decades."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter, NullLocator

    inside = math.floor(math.log10(high)) - math.ceil(math.log10(low)) + 1 if low > 0 else 10
    axis.set_major_locator(LogLocator(10, subs=(1.0,) if inside >= 2 else (1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(_y_label))
    axis.set_minor_locator(LogLocator(10, subs="auto") if inside < 2 else NullLocator())
    axis.set_minor_formatter(NullFormatter())


def _y_label(v: float, _=None) -> str:
    exponent = math.floor(math.log10(v) + 1e-9)
    mantissa = round(v / 10**exponent)
    if mantissa == 1:
        return _power_label(10, exponent)
    return f"{v:g}" if -3 <= exponent <= 3 else f"{mantissa}·{_power_label(10, exponent)}"


def overlapping_tick_labels(fig, draw: bool = True) -> list[tuple[str, str]]:
    """Pairs of visible tick labels whose boxes overlap, on any axis of ``fig`` (after drawing it;
    ``draw=False``: the caller drew it and has not changed it since)."""
    if draw:
        fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    clashes = []
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        for axis in (ax.xaxis, ax.yaxis):
            ticks = [t for t in axis.get_major_ticks() + axis.get_minor_ticks()
                     if t.label1.get_visible() and t.label1.get_text()]
            view = sorted(axis.get_view_interval())
            ticks = [t for t in ticks if view[0] * (1 - 1e-9) <= t.get_loc() <= view[1] * (1 + 1e-9)]
            boxes = [(t.label1.get_text(), t.label1.get_window_extent(renderer)) for t in ticks]
            for i, (text_a, a) in enumerate(boxes):
                for text_b, b in boxes[i + 1:]:
                    if a.overlaps(b) and a.width > 0 and b.width > 0:
                        clashes.append((text_a, text_b))
    return clashes


# --- theory ----------------------------------------------------------------------------------------

def _theory_line(panel: Panel, name: str, rows: pd.DataFrame) -> tuple[list, list, str] | None:
    """(x, predicted, legend text) for line ``name`` of a panel, or None without a closed form."""
    if panel.metric not in THEORY_METRICS:
        return None
    spec = panel.variants.get(name, {})
    if spec.get("options"):  # a variant with its own calibration: the closed form does not apply
        return None
    mechanism = spec.get("mechanism", name)
    prediction = prediction_of(mechanism)
    if prediction is None:
        return None
    xs, ys = [], []
    for row in rows.to_dict("records"):
        try:
            value = predicted_error(mechanism, row_params(row, panel.spectra, spec.get("budget")), panel.metric)
        except (ValueError, KeyError, TypeError):
            value = None
        if value is not None and np.isfinite(value):  # points without a closed form are left out
            xs.append(row[panel.x])
            ys.append(value)
    return (xs, ys, prediction.legend()) if xs else None


# --- drawing ------------------------------------------------------------------------------------------

def _line_keys(panel: Panel) -> list[tuple[str, str, tuple]]:
    """(mechanism name, label, values of panel.lines) of every line, in summary order."""
    keys = panel.frame[["mechanism", "label", *panel.lines]].drop_duplicates()
    return [(r[0], r[1], tuple(r[2:])) for r in keys.itertuples(index=False, name=None)]


def _panel_order(values: pd.Series) -> list:
    unique = list(dict.fromkeys(values))
    return sorted(unique) if all(isinstance(v, numbers.Number) for v in unique) else unique


def line_styles(panels: list[Panel]) -> dict:
    """(label, ((parameter, value), ...)) -> Style for every line of a figure's panels."""
    return figure_styles([(label, tuple(zip(p.lines, values))) for p in panels
                          for _, label, values in _line_keys(p)])


def render(panels: list[Panel], stem: Path, columns: int | None = None, title: str = "",
           theory: bool = True, letters: bool = True) -> tuple[Path, Path]:
    """Draw ``panels`` in a grid (``columns`` per row) and write ``stem``.png and .pdf."""
    return save(build_figure(panels, columns, title, theory, letters), stem)


def save(fig, stem: Path) -> tuple[Path, Path]:
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    png, pdf = stem.with_suffix(".png"), stem.with_suffix(".pdf")
    fig.savefig(png, dpi=130)
    fig.savefig(pdf, metadata={"CreationDate": None, "ModDate": None})
    pyplot().close(fig)
    return png, pdf


def build_figure(panels: list[Panel], columns: int | None = None, title: str = "", theory: bool = True,
                 letters: bool = True):
    """The matplotlib figure of ``panels`` (not saved; the caller closes it)."""
    from matplotlib.lines import Line2D

    columns = min(columns or len(panels), len(panels))
    rows = -(-len(panels) // columns)
    fig, axes = pyplot().subplots(rows, columns, figsize=(max(4.0 * columns, 6.0), 3.5 * rows + 0.3), squeeze=False)
    for ax in axes.flat[len(panels):]:  # a last row that is not full
        ax.set_visible(False)
    styles = line_styles(panels)
    handles: dict[str, object] = {}
    theory_handles: dict[str, list] = {}  # legend text -> [handle, {whether it lies on the measured line}]
    notes: dict[str, tuple] = {}  # line -> (hollow handle, lines it lies on): drawn on top of one another
    fell_back = False
    for index, (ax, panel) in enumerate(zip(axes.flat, panels)):
        mean = panel.frame[f"err_{panel.metric}_mean"]
        sem = panel.frame[f"err_{panel.metric}_sem"].fillna(0)
        frame = panel.frame.assign(_mean=mean, _low=mean - 1.96 * sem, _high=mean + 1.96 * sem,
                                   _fallbacks=panel.frame[FALLBACKS].fillna(0) if FALLBACKS in panel.frame else 0)
        extremes, predicted = [], []  # measured means; theory values (they may leave the axes)
        drawn_lines: list[tuple[str, pd.Series]] = []  # (legend text, mean by x) of this panel's lines
        for name, label, values in _line_keys(panel):
            mask = (frame.mechanism == name) & (frame.label == label)
            for param, value in zip(panel.lines, values):
                mask &= frame[param].astype(str) == str(value)
            line = frame[mask].sort_values(panel.x)
            style = styles[(label, tuple(zip(panel.lines, values)))]
            text = paper_name(label)
            if panel.lines:
                described = ", ".join(describe(p, v) for p, v in zip(panel.lines, values))
                text = described if panel.lines_by_value_only else f"{text}, {described}"
            means = pd.Series(line["_mean"].to_numpy(), index=line[panel.x].to_numpy())
            under = [other for other, other_means in drawn_lines if coincide(means, other_means)]
            look = dict(color=style.colour, marker=style.marker, linestyle=style.linestyle)
            if not under:
                handle, = ax.plot(line[panel.x], line["_mean"], ms=4, lw=1.4, label=text, **look)
            else:  # on top of earlier lines: a hollow marker, larger for each line under it
                hollow = dict(ms=4 + 3.5 * len(under), markerfacecolor="none", markeredgewidth=1.2)
                ax.plot(line[panel.x], line["_mean"], lw=1.0, label=text, zorder=3, **look, **hollow)
                notes.setdefault(text, (Line2D([], [], lw=1.0, **look, **hollow), []))
                notes[text][1].extend(u for u in under if u not in notes[text][1])
                handle = Line2D([], [], ms=4, lw=1.4, **look)  # the legend shows its usual look
            drawn_lines.append((text, means))
            if not panel.lines:  # lines by parameter value get the panel's own legend
                handles.setdefault(text, handle)
            low = line["_low"].where(line["_low"] > 0, line["_mean"] / 10) if panel.logy else line["_low"]
            ax.fill_between(line[panel.x], low, line["_high"], alpha=0.15, color=style.colour, lw=0)
            extremes += [line["_mean"].min(), line["_mean"].max()]
            flagged = line[line["_fallbacks"] > 0]
            if len(flagged):
                fell_back = True
                ax.plot(flagged[panel.x], flagged["_mean"], linestyle="none", marker="o", ms=9,
                        markerfacecolor="none", markeredgecolor="black", markeredgewidth=1.2)
            prediction = _theory_line(panel, name, line) if theory and not panel.lines else None
            if prediction is not None:
                xs, ys, kind = prediction
                # theory: a light, wide dotted band under the data (never dashed: dashes are "as published")
                handle, = ax.plot(xs, ys, color=style.colour, linestyle=THEORY_LINESTYLE, lw=2.2, alpha=0.4,
                                  dash_capstyle="round", zorder=1)
                entry = theory_handles.setdefault(f"{paper_name(label)}: {kind}", [handle, set()])
                entry[1].add(coincide(pd.Series(ys, index=xs), means))
                predicted += [min(ys), max(ys)]
        if panel.logx:
            ax.set_xscale("log")
            format_log_axis(ax.xaxis, panel.frame[panel.x].unique(), panel.x)
        else:
            ax.set_xticks(sorted(panel.frame[panel.x].unique()))
        if panel.logy:
            ax.set_yscale("log")
            positive = [v for v in extremes if v > 0]
            low, high = (min(positive), max(positive)) if positive else (1e-3, 1)
            if high / low < 1.05:  # a flat panel: don't magnify rounding noise
                low, high = low / 2, high * 2
            # theory lines widen the view by at most 3x beyond the measured ones (a prediction far off
            # the data, e.g. before the clamp, runs off the panel instead of squashing the data)
            theory_low = min([v for v in predicted if v > 0], default=low)
            theory_high = max(predicted, default=high)
            low, high = max(min(low, theory_low), low / 3), min(max(high, theory_high), high * 3)
            ax.set_ylim(low / 1.25, high * 1.25)
            format_log_y(ax.yaxis, low, high)
        xlabel = panel.xlabel or PRETTY.get(panel.x, panel.x)
        caption = panel.caption
        if letters and len(panels) > 1:
            caption = f"({chr(ord('a') + index)}) {caption}".strip()
        caption = textwrap.fill(caption, CAPTION_WIDTH)  # a long caption wraps under its own panel
        ax.set_xlabel(f"{xlabel}\n{caption}" if caption else xlabel)
        if index % columns == 0:
            ax.set_ylabel(panel.ylabel or METRIC_LABELS.get(panel.metric, f"error ({panel.metric})"))
        ax.grid(True, which="major", alpha=0.3)
        if panel.lines:
            ax.legend(fontsize=6, loc="best")
    legend = dict(handles)
    legend.update({f"{text}: hollow where it lies on {' / '.join(under)}": handle
                   for text, (handle, under) in notes.items()})
    if theory_handles:  # the theory layer under its own heading
        legend["theory (light dotted):"] = Line2D([], [], linestyle="none")
        where = {frozenset({True}): " (on the measured line)", frozenset({True, False}): " (on the measured line in places)"}
        legend.update({text + where.get(frozenset(on_line), ""): handle
                       for text, (handle, on_line) in theory_handles.items()})
    if fell_back:
        legend["○ trials fell back (no release) at this point"] = Line2D(
            [], [], linestyle="none", marker="o", ms=9, markerfacecolor="none", markeredgecolor="black")
    if title:
        fig.suptitle(title, fontsize=10)
    place_legend(fig, legend, max(2, columns * 2))
    return fig


THEORY_LINESTYLE = (0, (0.3, 2.2))  # round dots (as-published lines are dashed)


def coincide(a: pd.Series, b: pd.Series, tolerance: float = 0.02) -> bool:
    """Whether two lines (value by x) lie on top of each other: at least two shared x, each within
    ``tolerance`` relative to the larger value."""
    shared = a.index.intersection(b.index)
    if len(shared) < 2:
        return False
    x, y = a.loc[shared].to_numpy(dtype=float), b.loc[shared].to_numpy(dtype=float)
    scale = np.maximum(np.abs(x), np.abs(y))
    return bool(np.all(np.abs(x - y) <= tolerance * np.where(scale > 0, scale, 1)))


def tight_layout(fig, **kwargs) -> None:
    """``fig.tight_layout`` once, as a layout step: matplotlib leaves a placeholder layout engine behind,
    which would cost every ``savefig`` an extra dry draw of the whole figure (same pixels either way)."""
    fig.tight_layout(**kwargs)
    fig.set_layout_engine(None)


def place_legend(fig, legend: dict, most_columns: int) -> None:
    """The figure's legend below the panels, in as many columns as fit the figure's width, and the
    panels laid out above it from its measured height: it never covers a panel or an axis label."""
    if not legend:
        tight_layout(fig)
        return
    renderer = fig.canvas.get_renderer()
    for ncol in range(max(1, min(len(legend), most_columns)), 0, -1):
        box = fig.legend(legend.values(), legend.keys(), loc="lower center", bbox_to_anchor=(0.5, 0.0),
                         ncol=ncol, fontsize=7, frameon=False)
        extent = box.get_window_extent(renderer)
        if extent.width <= 0.98 * fig.bbox.width or ncol == 1:
            break
        box.remove()
    # the figure grows by the legend's height, so the panels keep their size
    legend_inches = extent.height / fig.dpi + 0.1
    fig.set_figheight(fig.get_figheight() + legend_inches)
    tight_layout(fig, rect=(0, legend_inches / fig.get_figheight(), 1, 1))


def caption_clashes(fig, draw: bool = True) -> list[str]:
    """Panels' x labels (with their captions) that overlap another's or leave the figure (after drawing;
    ``draw`` as in ``overlapping_tick_labels``)."""
    if draw:
        fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = [(ax.get_xlabel().replace("\n", " "), ax.xaxis.label.get_window_extent(renderer))
             for ax in fig.axes if ax.get_visible() and ax.get_xlabel()]
    clashes = [f"{a} / {b}" for i, (a, box_a) in enumerate(boxes) for b, box_b in boxes[i + 1:] if box_a.overlaps(box_b)]
    clashes += [f"{a}: outside the figure" for a, box in boxes if box.x0 < -1 or box.x1 > fig.bbox.width + 1]
    return clashes


def legend_clashes(fig, draw: bool = True) -> list[str]:
    """Axes whose labels, ticks or panel overlap the figure's legend (after drawing; ``draw`` as in
    ``overlapping_tick_labels``)."""
    if draw:
        fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    clashes = []
    for box in fig.legends:
        extent = box.get_window_extent(renderer)
        for ax in fig.axes:
            if ax.get_visible() and ax.get_tightbbox(renderer).overlaps(extent):
                clashes.append(ax.get_xlabel().replace("\n", " "))
    return clashes


def experiment_variants(experiment) -> dict:
    """Line name -> {"mechanism", "budget", "options"} of an experiment's variants."""
    if experiment is None:
        return {}
    return {name: {"mechanism": line.mechanism, "budget": dict(line.budget), "options": dict(line.options)}
            for name, line in experiment.variants.items()}


def summary_panels(summary: pd.DataFrame, figure, metric: str, params=(), variants=None,
                   spectra=None, order: dict | None = None) -> tuple[list[Panel], int]:
    """An experiment's panels: one per value of ``figure.panel`` (a parameter, "label", or a list of
    them: a grid with the last one across), in the sweep's order; returns (panels, columns)."""
    by = [figure.panel] if isinstance(figure.panel, str) else list(figure.panel or [])
    if by:
        values = [(order or {}).get(p) or _panel_order(summary[p]) for p in by]
        present = set(summary[by].drop_duplicates().itertuples(index=False, name=None))
        keys = [k for k in _product(values) if k in present]
    else:
        keys = [None]
    columns = summary[by[-1]].nunique() if len(by) > 1 else len(keys)
    columns = min(columns, figure.columns or columns)
    panels = []
    for key in keys:
        part = summary if key is None else summary[(summary[by] == pd.Series(key, index=by)).all(axis=1)]
        lines = [p for p in params if p not in (figure.x, *by) and part[p].nunique() > 1]
        caption = ", ".join(describe(p, v) for p, v in zip(by, key)) if key is not None else ""
        panels.append(Panel(part, figure.x, metric, lines, caption, figure.xlabel, figure.ylabel,
                            figure.logx, figure.logy, variants=variants or {}, spectra=spectra))
    return panels, columns


def _product(values: list[list]) -> list[tuple]:
    keys = [()]
    for options in values:
        keys = [k + (v,) for k in keys for v in options]
    return keys


def experiment_panels(experiment, summary: pd.DataFrame, metric: str, spectra: pd.DataFrame | None = None):
    """(panels, columns) of an experiment's own figure for ``metric``."""
    order = {k: list(v) for k, v in experiment.sweep.items()}
    return summary_panels(summary, experiment.figure, metric, experiment.param_names(),
                          experiment_variants(experiment), spectra, order)


def plot_summary(summary: pd.DataFrame, figure, metric: str, stem: Path, title: str = "",
                 params: list[str] = (), experiment=None, spectra: pd.DataFrame | None = None):
    """Draw ``metric`` (e.g. "fro") against ``figure.x``; returns the PNG and PDF paths.

    One panel per value of ``figure.panel``; one line per mechanism and per value of any other
    parameter in ``params`` that varies. ``experiment`` (optional) gives the variants' mechanisms and
    budgets (theory overlays) and the sweep's panel order; ``spectra`` the data's eigenvalues
    (theory.SPECTRUM_FILE; read from the figure's directory when not given)."""
    if spectra is None:
        spectra = read_spectra(Path(stem).parent)
    order = {k: list(v) for k, v in experiment.sweep.items()} if experiment is not None else None
    panels, columns = summary_panels(summary, figure, metric, params, experiment_variants(experiment),
                                     spectra, order)
    # figure.theory (default on) turns the overlays off where a config sets it false
    return render(panels, stem, columns, title, theory=getattr(figure, "theory", True))


def write_figures(experiment, summary: pd.DataFrame, directory: Path):
    """figure.png/.pdf (the first metric) and figure_<metric>.png/.pdf for the others, from an
    experiment's summary (and the spectrum.csv beside it, if any); returns the first metric's
    (png, pdf), or (None, None) for an empty summary."""
    png = pdf = None
    if summary.empty:
        return png, pdf
    for metric in reversed(experiment.metrics):  # figure.png: the first metric; others by name
        stem = "figure" if metric == experiment.metrics[0] else f"figure_{metric}"
        png, pdf = plot_summary(summary, experiment.figure, metric, Path(directory) / stem,
                                title=experiment.figure.title or experiment.paper_figure,
                                params=experiment.param_names(), experiment=experiment)
    return png, pdf


def draw(experiment, outputs) -> tuple[Path | None, Path | None]:
    """The figures of a finished run (``experiments.runner.run_experiment``'s outputs), from its files."""
    return write_figures(experiment, pd.read_csv(outputs.summary), outputs.directory)
