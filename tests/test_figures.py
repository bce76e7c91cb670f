"""Figures: one style per mechanism, the papers' layouts, readable axes, fallbacks marked, a gallery
that is not stale. Every committed figure is rebuilt here from its committed summary (not saved)."""
from __future__ import annotations

import functools
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from dpcov.experiments.config import Figure, load_yaml
from dpcov.figures import plot
from dpcov.figures.composite import FigureSpecError, build_composite, composite_panels, load_composites
from dpcov.figures.gallery import GALLERY, gallery
from dpcov.figures.style import STYLES, figure_styles, paper_name, style_for
from dpcov.mechanisms.registry import MECHANISMS

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"
from dpcov.commands.reproduce import TARGETS, experiment_of  # noqa: E402


def config_labels() -> set[str]:
    labels = set()
    for path in (ROOT / "conf" / "experiment").glob("*.yaml"):
        for variant in (load_yaml(path).get("variants") or {}).values():
            labels.add(variant["label"])
    return labels


def test_style_table_covers_every_mechanism_and_variant_label():
    for mechanism in MECHANISMS.values():
        assert mechanism.label in STYLES, f"no style for {mechanism.label!r} ({mechanism.name})"
    for label in config_labels():
        base = label.split(" (")[0]
        assert label in STYLES or base in STYLES, f"variant {label!r} has no curated style"
    keys = [s.key for s in STYLES.values()]
    assert len(keys) == len(set(keys)), "two mechanisms share a (colour, marker, line style)"


@pytest.mark.parametrize("label, base", [("AD (as published)", "AD"), ("IT-U (as published)", "IT-U"),
                                         ("G-16 (as published, not DP on these data)", "G-16"),
                                         ("EMCov (as published)", "EMCov"),
                                         ("DP-Thresholding (as published)", "DP-Thresholding")])
def test_as_published_variants_get_the_base_colour_dashed(label, base):
    style = style_for(label)
    assert (style.colour, style.marker, style.linestyle) == (STYLES[base].colour, STYLES[base].marker, "--")
    assert paper_name(label) == label


def test_paper_names_and_unknown_labels():
    assert paper_name("Zero") == "Zero Matrix"
    assert style_for("SeparateCov (ρ ⇒ (ε,1e-10))").linestyle == "-."
    assert style_for("my new line") == style_for("my new line")  # stable, even when not curated


def test_figure_styles_are_unique_even_for_colliding_labels():
    lines = [("a new line", ()), ("a new line 2", ()), ("GaussCov", ()), ("GaussCov", ()),
             ("X", (("sr", 0.1),)), ("X", (("sr", 0.2),))]
    styles = figure_styles(lines)
    assert len({s.key for s in styles.values()}) == len(styles) == 5
    assert styles[("GaussCov", ())] == STYLES["GaussCov"]


def every_committed_figure():
    """(name, target, metric) of every committed figure: each target's figure per metric. The metrics are read
    from the committed config.yaml (composing the 25 experiments here cost about 4 s per xdist worker at
    collection); each test composes its target's experiment when it runs (``committed_experiment``)."""
    cases = []
    for target in TARGETS:
        if (RESULTS / target.out / "summary.csv").exists():
            for metric in load_yaml(RESULTS / target.out / "config.yaml")["metrics"]:
                cases.append((f"{target.out}:{metric}", target, metric))
    return cases


@functools.lru_cache(maxsize=None)
def committed_experiment(target):
    return experiment_of(target, 1)


CASES = every_committed_figure()
# Drawing every figure takes about a minute: the fast suite draws one of each layout, -m slow all.
DRAWN_FAST = {"dong2022/fig2:fro", "dong2022/fig6:fro", "dong2022/fig5:fro", "wangxu/sparsity:l1",
              "amin2019/fig1a:fro_rel", "lecture/stable_mahalanobis:mahalanobis",
              "dong2022/fig3/figure", "amin2019/fig1/figure", "wangxu/layout/fig1_dp_l2"}


def drawn(cases, name):
    return [pytest.param(*c, marks=() if name(c) in DRAWN_FAST else pytest.mark.slow, id=name(c)) for c in cases]


def target_panels(target, metric, experiment=None):
    from dpcov.experiments import theory

    experiment = committed_experiment(target) if experiment is None else experiment
    assert metric in experiment.metrics, (target.out, metric, experiment.metrics)  # config.yaml is not stale

    summary = pd.read_csv(RESULTS / target.out / "summary.csv")
    return plot.experiment_panels(experiment, summary, metric, theory.read_spectra(RESULTS / target.out))


@pytest.mark.parametrize("name, target, metric", CASES, ids=[c[0] for c in CASES])
def test_committed_figure_has_unique_styles(name, target, metric):
    panels, _ = target_panels(target, metric)
    styles = plot.line_styles(panels)
    assert len({s.key for s in styles.values()}) == len(styles), name


@pytest.mark.parametrize("name, target, metric", drawn(CASES, lambda c: c[0]))
def test_committed_figure_has_readable_ticks(name, target, metric):
    panels, columns = target_panels(target, metric)
    fig = plot.build_figure(panels, columns, "title")
    try:
        fig.canvas.draw()  # once: the three checks read the drawn figure
        assert plot.overlapping_tick_labels(fig, draw=False) == [], name
        assert plot.legend_clashes(fig, draw=False) == [], name  # the legend covers no panel, tick or axis label
        assert plot.caption_clashes(fig, draw=False) == [], name  # nor does a caption cover another
    finally:
        plt.close(fig)


def test_coinciding_lines_are_found_and_marked():
    a = pd.Series([1.0, 2.0, 4.0], index=[1, 2, 3])
    assert plot.coincide(a, a * 1.01) and not plot.coincide(a, a * 1.1)
    assert not plot.coincide(a.iloc[:1], a.iloc[:1])  # one shared point says nothing
    toy = toy_summary()
    summary = pd.concat([toy, toy[toy.mechanism == "gauss"].assign(mechanism="coinpress", label="CoinPress (t=1)")])
    panels, columns = plot.summary_panels(summary, Figure(x="n"), "fro", ["n", "d", "rho"])
    fig = plot.build_figure(panels, columns)
    try:
        texts = legend_texts(fig)
        assert "CoinPress (t=1): hollow where it lies on GaussCov" in texts
        hollow = [line for line in fig.axes[0].get_lines() if line.get_markerfacecolor() == "none"
                  and line.get_label() == "CoinPress (t=1)"]
        assert hollow and hollow[0].get_markersize() > 4
    finally:
        plt.close(fig)


def test_tight_layout_leaves_no_engine_and_the_same_pixels(tmp_path, monkeypatch):
    """plot.tight_layout: the figure keeps no layout engine (with one, every savefig drew the figure an extra
    time), and the file is the one matplotlib's own tight_layout gives."""
    def figure():
        fig, ax = plt.subplots(figsize=(3, 2))
        ax.plot([1, 2, 3], [1, 4, 9], label="a line")
        ax.set_xlabel("x"), ax.legend()
        return fig

    own = figure()
    own.tight_layout()
    assert own.get_layout_engine() is not None
    helper = figure()
    plot.tight_layout(helper)
    assert helper.get_layout_engine() is None
    draws = []
    monkeypatch.setattr(type(helper), "draw", lambda self, renderer, _draw=type(helper).draw: (draws.append(1),
                                                                                              _draw(self, renderer)))
    helper.savefig(tmp_path / "helper.png", dpi=50)
    assert len(draws) == 1
    own.savefig(tmp_path / "own.png", dpi=50)
    assert len(draws) == 3  # matplotlib's: a dry draw, then the drawing
    assert (tmp_path / "helper.png").read_bytes() == (tmp_path / "own.png").read_bytes()
    plt.close(own), plt.close(helper)


def test_theory_is_a_light_dotted_layer_not_a_dashed_line():
    panels, columns = plot.summary_panels(toy_summary(), Figure(x="n"), "fro", ["n", "d", "rho"])
    fig = plot.build_figure(panels, columns)
    try:
        theory = [line for line in fig.axes[0].get_lines() if line.get_alpha() is not None and line.get_alpha() < 0.5]
        assert theory and all(line.get_zorder() < 2 and line.get_marker() in ("None", None, "")
                              and line.get_dash_capstyle() == "round" for line in theory)
        assert "theory (light dotted):" in legend_texts(fig)
    finally:
        plt.close(fig)


@pytest.mark.parametrize("composite", load_composites(), ids=lambda c: c.out)
def test_composite_figures_have_unique_styles(composite):
    panels = composite_panels(composite)
    styles = plot.line_styles(panels)
    assert len({s.key for s in styles.values()}) == len(styles)
    assert composite.png().exists(), f"{composite.out}.png is not committed: python scripts/reproduce.py --figures"


@pytest.mark.parametrize("composite", drawn([(c,) for c in load_composites()], lambda c: c[0].out))
def test_composite_figures_have_readable_ticks(composite):
    fig = build_composite(composite)
    try:
        fig.canvas.draw()  # once: the three checks read the drawn figure
        assert plot.overlapping_tick_labels(fig, draw=False) == []
        assert plot.legend_clashes(fig, draw=False) == [] and plot.caption_clashes(fig, draw=False) == []
    finally:
        plt.close(fig)


def composite(out):
    return next(c for c in load_composites() if c.out == out)


def test_composites_have_the_papers_panels_in_order():
    fig3 = composite_panels(composite("dong2022/fig3/figure"))
    assert [p.x for p in fig3] == ["N", "d", "n", "rho"]
    assert composite("dong2022/fig3/figure").spec["columns"] == 2
    fig7 = composite_panels(composite("dong2022/fig7/figure_paper"))
    assert [p.frame.n.unique().tolist() for p in fig7] == [[1000], [4000], [16000], [10000], [40000], [160000]]
    fig8 = composite_panels(composite("dong2022/fig8/figure"))
    assert [(p.x, p.frame.n.unique().tolist()) for p in fig8] == [
        ("N", [50000]), ("d", [50000]), ("eps", [50000]), ("N", [500000]), ("d", [500000]), ("eps", [500000])]
    amin = composite_panels(composite("amin2019/fig1/figure"))
    assert [p.frame.name.unique().tolist()[0] for p in amin] == ["wine", "airfoil", "adult"] * 2
    for out, label, metric in [("wangxu/layout/fig1_dp_l2", "DP-Thresholding", "l2"),
                               ("wangxu/layout/fig4_ldp_l1", "LDP-Thresholding", "l1")]:
        panels = composite_panels(composite(out))
        assert [p.lines for p in panels] == [["sr"], ["p"], ["eps"]]
        as_written = f"{label} (as published, not DP on these data)"  # the paper's calibration, dashed
        assert all(set(p.frame.label) == {label, as_written} and p.metric == metric and p.x == "n" for p in panels)


def test_experiment_figures_follow_the_sweep_order():
    target = next(t for t in TARGETS if t.out == "amin2019/fig1a")
    panels, columns = target_panels(target, "fro_rel")
    assert [p.caption for p in panels] == ["wine", "airfoil", "adult"] and columns == 3
    target = next(t for t in TARGETS if t.out == "dong2022/fig6")
    panels, columns = target_panels(target, "fro")
    assert len(panels) == 10 and columns == 5


def test_log_axis_ticks_as_in_the_papers():
    fig, axes = plt.subplots(1, 3)
    try:
        grids = [("N", [1, 2, 4, 8, 16, 32]), ("d", [10, 20, 30, 50, 70, 100, 200, 400, 800]),
                 ("n", [1000, 2000, 5000, 10000, 100000, 800000])]
        for ax, (name, grid) in zip(axes, grids):
            ax.plot(grid, grid)
            ax.set_xscale("log")
            plot.format_log_axis(ax.xaxis, grid, name)
        fig.canvas.draw()
        labels = [[t.get_text() for t in ax.get_xticklabels() if t.get_text()] for ax in axes]
        assert labels[0] == ["2⁰", "2¹", "2²", "2³", "2⁴", "2⁵"]
        assert labels[1] == ["2⁴", "2⁵", "2⁶", "2⁷", "2⁸", "2⁹"]
        assert labels[2] == ["10³", "10⁴", "10⁵"]
    finally:
        plt.close(fig)


def toy_summary(fallbacks=None):
    rows = []
    for mechanism, label, scale in [("gauss", "GaussCov", 1.0), ("zero", "Zero", 3.0)]:
        for n in (1000, 10000, 100000):
            rows.append({"experiment": "t", "dataset": "synthetic_zipf", "mechanism": mechanism, "label": label,
                         "n": n, "d": 10, "N": 1, "s": 3, "rho": 0.1, "err_fro_mean": scale / n**0.5,
                         "err_fro_sem": 0.0, "err_fro_count": 5})
    frame = pd.DataFrame(rows)
    if fallbacks is not None:
        frame["fallbacks"] = fallbacks
    return frame


def legend_texts(fig):
    return [t.get_text() for legend in fig.legends for t in legend.get_texts()]


def test_fallbacks_are_marked_and_explained(tmp_path):
    figure = Figure(x="n")
    for fallbacks, marked in [(None, False), ([0] * 6, False), ([0, 2, 0, 0, 0, 0], True)]:
        panels, columns = plot.summary_panels(toy_summary(fallbacks), figure, "fro", ["n", "d", "rho"])
        fig = plot.build_figure(panels, columns)
        try:
            texts = legend_texts(fig)
            assert any("fell back" in t for t in texts) == marked
            hollow = [line for line in fig.axes[0].lines if line.get_markerfacecolor() == "none"]
            assert len(hollow) == int(marked)
            if marked:
                assert list(hollow[0].get_xdata()) == [10000]
            assert "Zero Matrix" in texts and "GaussCov" in texts
            assert any("GaussCov: predicted" in t for t in texts)  # the theory overlay is on by default
        finally:
            plt.close(fig)
    fig = plot.build_figure(panels, columns, theory=False)
    assert not any("predicted" in t for t in legend_texts(fig))
    plt.close(fig)


def test_theory_overlay_is_the_closed_form():
    from dpcov.mechanisms.predictions import expected_frobenius_sgw

    panels, _ = plot.summary_panels(toy_summary(), Figure(x="n"), "fro", ["n", "d", "rho"])
    xs, ys, _ = plot._theory_line(panels[0], "gauss", panels[0].frame[panels[0].frame.mechanism == "gauss"])
    assert ys == [pytest.approx(expected_frobenius_sgw(10) / (np.sqrt(0.1) * n)) for n in xs]


def test_composite_specs_give_clear_errors(tmp_path):
    def load(text):
        (tmp_path / "x.yaml").write_text(text)
        return load_composites(tmp_path)

    with pytest.raises(FigureSpecError, match="unknown key"):
        load("figures:\n  - {out: a/b, panels: [{summary: dong2022/fig3a, x: N}], colour: red}\n")
    with pytest.raises(FigureSpecError, match="needs 'x'"):
        load("figures:\n  - {out: a/b, panels: [{summary: dong2022/fig3a}]}\n")
    bad = load("figures:\n  - {out: a/b, panels: [{summary: dong2022/fig3a, x: N, labels: [Nope]}]}\n")[0]
    with pytest.raises(FigureSpecError, match="no line labelled"):
        composite_panels(bad)
    bad = load("figures:\n  - {out: a/b, panels: [{summary: nowhere/x, x: N}]}\n")[0]
    with pytest.raises(FigureSpecError, match="no summary"):
        composite_panels(bad)


def test_gallery_is_not_stale_and_shows_every_committed_figure():
    from dpcov.figures.bounds import STEM

    expected = gallery(TARGETS, load_composites(), RESULTS, f"results/{STEM}")
    assert GALLERY.read_text() == expected, "GALLERY.md is stale: python scripts/reproduce.py --tables"
    for png in RESULTS.rglob("figure*.png"):
        if "partial" in png.parts:
            continue
        assert f"]({png.relative_to(ROOT).as_posix()})" in expected, f"{png} is not in the gallery"
    for c in load_composites():
        assert f"](results/{c.out}.png)" in expected, f"{c.out} is not in the gallery"
    readme = (ROOT / "README.md").read_text().splitlines()[:30]
    assert any("GALLERY.md" in line for line in readme), "README's first screen must link GALLERY.md"


def test_dong_fig1_is_drawn_from_the_formulas(tmp_path):
    from dpcov.figures.bounds import plot_bounds

    png, pdf = plot_bounds(tmp_path / "fig1")
    assert png.exists() and pdf.exists()
