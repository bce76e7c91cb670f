"""Composite figures declared in conf/figures/*.yaml: panels from one or several committed summaries,
in the paper's grid, with (a), (b), ... sub-captions. A new composite figure is a YAML file:

    figures:
      - out: dong2022/fig3/figure          # under results/: writes .png and .pdf
        title: "Dong, Liang & Yi 2022, Fig. 3"
        paper: "Dong et al. 2022, Fig. 3"   # the gallery's reference
        verdict: "reproduced ..."           # the gallery's one-line verdict
        columns: 2                          # panels per row
        metric: fro                         # default: each summary's first metric
        theory: true                        # theory overlays (default true)
        panels:
          - summary: dong2022/fig3a         # results/<summary>/summary.csv
            x: N
            caption: "tr varies"            # after the automatic "(a)"
            where: {n: 50000}               # keep rows with these parameter values (a value or a list)
            labels: [DP-Thresholding]       # keep only these lines (labels); default all
            lines: sr                       # one line per value of this parameter (default: per label)
            xlabel / ylabel / logx / logy / metric   # optional, per panel
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from dpcov.experiments.config import load_yaml
from dpcov.experiments.theory import read_spectra

from .plot import Panel, build_figure, save

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf" / "figures"
RESULTS = ROOT / "results"

FIGURE_KEYS = {"out", "title", "paper", "verdict", "columns", "metric", "theory", "panels", "letters"}
PANEL_KEYS = {"summary", "x", "caption", "where", "labels", "lines", "xlabel", "ylabel", "logx", "logy",
              "metric"}


class FigureSpecError(ValueError):
    """A composite figure's YAML that cannot be drawn, with what to change."""


@dataclass(frozen=True)
class Composite:
    source: Path  # the YAML file
    spec: dict

    @property
    def out(self) -> str:
        return self.spec["out"]

    def png(self, results: Path = RESULTS) -> Path:
        return (results / self.out).with_suffix(".png")


def load_composites(directory: Path = CONF) -> list[Composite]:
    """Every figure of every conf/figures/*.yaml, validated."""
    composites = []
    for path in sorted(Path(directory).glob("*.yaml")):
        document = load_yaml(path) or {}
        if set(document) - {"figures"} or not isinstance(document.get("figures"), list):
            raise FigureSpecError(f"{path}: expected one key 'figures' with a list of figures")
        for spec in document["figures"]:
            composites.append(Composite(path, check_spec(spec, path)))
    outs = [c.out for c in composites]
    duplicated = sorted({o for o in outs if outs.count(o) > 1})
    if duplicated:
        raise FigureSpecError(f"composite figures share an output: {duplicated}")
    return composites


def _check_keys(mapping, known: set, required: tuple, where: str) -> None:
    """A figure's or panel's keys: a mapping, nothing unknown, every required key present."""
    if not isinstance(mapping, dict):
        raise FigureSpecError(f"{where}: must be a mapping, got {mapping!r}")
    unknown = sorted(set(mapping) - known)
    if unknown:
        raise FigureSpecError(f"{where}: unknown key(s) {unknown}; known: {sorted(known)}")
    for key in required:
        if key not in mapping:
            raise FigureSpecError(f"{where}: needs {key!r}")


def check_spec(spec: dict, path: Path) -> dict:
    where = f"{path.name}: figure {spec.get('out', '?')!r}" if isinstance(spec, dict) else path.name
    _check_keys(spec, FIGURE_KEYS, ("out", "panels"), where)
    if not isinstance(spec["panels"], list) or not spec["panels"]:
        raise FigureSpecError(f"{where}: panels must be a non-empty list")
    columns = spec.get("columns")
    if columns is not None and (isinstance(columns, bool) or not isinstance(columns, int) or columns < 1):
        raise FigureSpecError(f"{where}: columns must be an integer >= 1, got {columns!r}")
    for i, panel in enumerate(spec["panels"]):
        _check_keys(panel, PANEL_KEYS, ("summary", "x"), f"{where}, panel {i + 1}")
    return spec


def _summary(results: Path, name: str, cache: dict) -> tuple[pd.DataFrame, dict, pd.DataFrame | None]:
    if name not in cache:
        directory = results / name
        path = directory / "summary.csv"
        if not path.exists():
            raise FigureSpecError(f"no summary {path} (run: python scripts/reproduce.py {name.split('/')[-1]})")
        config = directory / "config.yaml"
        resolved = load_yaml(config) if config.exists() else {}
        variants = {k: {"mechanism": v["mechanism"], "budget": dict(v.get("budget") or {}),
                        "options": dict(v.get("options") or {})}
                    for k, v in (resolved.get("variants") or {}).items()}
        cache[name] = (pd.read_csv(path), variants, read_spectra(directory))
    return cache[name]


def _matches(column: pd.Series, wanted) -> pd.Series:
    wanted = wanted if isinstance(wanted, list) else [wanted]
    as_text = {str(w) for w in wanted}
    numeric = pd.to_numeric(column, errors="coerce")
    hits = column.astype(str).isin(as_text)
    numbers = [float(w) for w in wanted if isinstance(w, (int, float)) and not isinstance(w, bool)]
    return hits | numeric.isin(numbers) if numbers else hits


def composite_panels(composite: Composite, results: Path = RESULTS) -> list[Panel]:
    spec, cache, panels = composite.spec, {}, []
    for i, p in enumerate(spec["panels"]):
        where = f"{composite.source.name}: figure {composite.out!r}, panel {i + 1}"
        frame, variants, spectra = _summary(results, p["summary"], cache)
        for column in [p["x"], *(p.get("where") or {})] + ([p["lines"]] if p.get("lines") else []):
            if column not in frame.columns:
                raise FigureSpecError(f"{where}: {column!r} is not a column of {p['summary']}/summary.csv")
        for column, wanted in (p.get("where") or {}).items():
            frame = frame[_matches(frame[column], wanted)]
        if p.get("labels"):
            missing = sorted(set(p["labels"]) - set(frame.label))
            if missing:
                raise FigureSpecError(f"{where}: no line labelled {missing} in {p['summary']} "
                                      f"(labels: {sorted(set(frame.label))})")
            frame = frame[frame.label.isin(p["labels"])]
        if frame.empty:
            raise FigureSpecError(f"{where}: no rows left in {p['summary']} after 'where'")
        metric = p.get("metric") or spec.get("metric") or \
            next(c for c in frame.columns if c.startswith("err_") and c.endswith("_mean"))[4:-5]
        if f"err_{metric}_mean" not in frame.columns:
            raise FigureSpecError(f"{where}: {p['summary']} has no metric {metric!r}")
        lines = [p["lines"]] if p.get("lines") else []
        panels.append(Panel(frame, p["x"], metric, lines, p.get("caption", ""), p.get("xlabel"),
                            p.get("ylabel"), p.get("logx", True), p.get("logy", True),
                            lines_by_value_only=bool(lines) and frame.label.nunique() == 1,
                            variants=variants, spectra=spectra))
    return panels


def build_composite(composite: Composite, results: Path = RESULTS):
    """The composite's matplotlib figure (not saved)."""
    spec = composite.spec
    return build_figure(composite_panels(composite, results), spec.get("columns"), spec.get("title", ""),
                        theory=spec.get("theory", True), letters=spec.get("letters", True))


def render_composite(composite: Composite, results: Path = RESULTS):
    """Write results/<out>.png and .pdf."""
    return save(build_composite(composite, results), results / composite.out)
