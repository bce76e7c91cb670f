"""One style per mechanism, everywhere: label -> (colour, marker, line style), and the papers' names.

Rules (applied by ``style_for``):
- a label in ``STYLES`` gets its entry: the (colour, marker) its mechanism declares in the registry
  (``Mechanism.style``, or ``register_mechanism(..., style=...)`` for a plug-in), or a configured
  line's below;
- "<base> (as published...)" gets the base's colour and marker with a dashed line (the figure-matching
  calibration of another issue, e.g. "AD (as published)", "G-16 (as published, not DP on these data)");
- any other "<base> (...)" (e.g. "SeparateCov (ρ ⇒ (ε,1e-10))") gets the base's colour and marker
  with a dash-dot line;
- anything else gets a style derived from the label (stable across runs, but not curated).
``figure_styles`` then makes the styles of one figure's lines unique, whatever their labels.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, replace

from dpcov.mechanisms.registry import MECHANISMS, declared_plugins


@dataclass(frozen=True)
class Style:
    colour: str
    marker: str
    linestyle: str = "-"

    @property
    def key(self) -> tuple:
        return self.colour, self.marker, self.linestyle


def _declared_styles() -> dict[str, Style]:
    """Each registered mechanism's declared (colour, marker), by label (labels shared by two notions,
    e.g. SeparateCov under zCDP and pure DP, declare one look)."""
    styles = {}
    for mechanism in MECHANISMS.values():
        if mechanism.style is not None:
            style = Style(*mechanism.style)
            if styles.setdefault(mechanism.label, style) != style:
                raise ValueError(f"label {mechanism.label!r} is declared with two styles in the registry")
    return styles


# Lines that are configured, not registered: Amin et al.'s Gaussian baselines G-x (variants of
# gauss_approx at delta = 1e-x in conf/experiment/amin_*.yaml).
CONFIGURED_STYLES = {"G-16": Style("#08306b", "d"), "G-10": Style("#2171b5", "p"), "G-3": Style("#6baed6", "*")}
STYLES = {**_declared_styles(), **CONFIGURED_STYLES}
# The papers' names where ours differ (legend text).
PAPER_NAMES = {"Zero": "Zero Matrix"}

AS_PUBLISHED = re.compile(r"^(?P<base>.+?)\s*\((?P<note>as published.*)\)$")
DERIVED = re.compile(r"^(?P<base>.+?)\s*\((?P<note>.*)\)$")
_FALLBACK_COLOURS = ["#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd", "#e6550d",
                     "#31a354", "#756bb1", "#636363"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "h", "<", ">", "p", "*", "d", "8", "H"]
LINESTYLES = ["-", "--", "-.", ":"]
# Lines of one mechanism that differ by a parameter value (Wang & Xu: one line per sr / p / ε).
VALUE_COLOURS = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666"]


def base_label(label: str) -> str:
    """The mechanism a variant label derives from ("AD (as published)" -> "AD"); else the label."""
    match = DERIVED.match(label)
    return match["base"] if match and match["base"] in STYLES else label


def style_for(label: str) -> Style:
    if label in STYLES:
        return STYLES[label]
    for plugin in declared_plugins():  # a plug-in's declared look (its module imported in this process)
        if plugin.label == label and plugin.style is not None:
            return Style(*plugin.style)
    published, derived = AS_PUBLISHED.match(label), DERIVED.match(label)
    if published and published["base"] in STYLES:
        return replace(style_for(published["base"]), linestyle="--")
    if derived and derived["base"] in STYLES:
        return replace(style_for(derived["base"]), linestyle="-.")
    digest = int(hashlib.sha1(label.encode()).hexdigest(), 16)
    return Style(_FALLBACK_COLOURS[digest % len(_FALLBACK_COLOURS)], MARKERS[digest // 7 % len(MARKERS)])


def paper_name(label: str) -> str:
    """The legend text: the paper's name of the mechanism, the variant's note kept."""
    base = base_label(label)
    return PAPER_NAMES.get(base, base) + label[len(base):] if base in PAPER_NAMES else label


def figure_styles(lines: list[tuple[str, tuple]]) -> dict[tuple[str, tuple], Style]:
    """Styles for one figure's lines, each (label, ((parameter, value), ...) of the other varied
    parameters, empty for a plain mechanism line): a
    mechanism's own style; lines that differ by a parameter value get a colour and marker per value
    and a line style per mechanism; remaining clashes get the next unused marker."""
    lines = list(dict.fromkeys(lines))  # the same line in several panels keeps one style
    labels = list(dict.fromkeys(label for label, _ in lines))
    # values are ((parameter, value), ...): the k-th value of a parameter gets the k-th value style
    values = {}
    for _, value in lines:
        if value:
            values.setdefault(tuple(p for p, _ in value), [])
            if value not in values[tuple(p for p, _ in value)]:
                values[tuple(p for p, _ in value)].append(value)
    styles, used = {}, set()
    for label, value in lines:
        style = style_for(label)
        if value:  # a colour and marker per value; a line style per mechanism if there are several
            i = values[tuple(p for p, _ in value)].index(value)
            style = Style(VALUE_COLOURS[i % len(VALUE_COLOURS)], MARKERS[i % len(MARKERS)],
                          LINESTYLES[labels.index(label) % len(LINESTYLES)])
        step = 0
        while style.key in used:
            style = replace(style, marker=MARKERS[(MARKERS.index(style.marker) + 1) % len(MARKERS)]
                            if style.marker in MARKERS else MARKERS[step % len(MARKERS)])
            step += 1
            if step > len(MARKERS):
                style = replace(style, linestyle=LINESTYLES[step % len(LINESTYLES)])
        used.add(style.key)
        styles[(label, value)] = style
    return styles
