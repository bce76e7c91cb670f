"""From a composed Hydra config to a validated ``Experiment`` (clear errors for every bad value)."""
from __future__ import annotations

import copy
import dataclasses
import difflib
import hashlib
import inspect
import itertools
from pathlib import Path
from dataclasses import dataclass, field

import yaml
from omegaconf import DictConfig, ListConfig, OmegaConf

from dpcov.data.registry import get_dataset
from dpcov.mechanisms.privacy import ApproxDP, PureDP, ZCDP
from dpcov.mechanisms.noise import NUMERICS
from dpcov.mechanisms.registry import check_options, get_mechanism
from dpcov.mechanisms.units import COUNT_SHARE, PRIVACY_UNITS, check_count_share

from .metrics import check_metrics
from .seeding import canonical

BUDGET_PARAMS = ("rho", "eps", "delta")
ADD_REMOVE_LABEL = " (add/remove)"  # appended to a line's label under privacy_unit=add_remove
SCALES = ("paper", "small", "smoke")
EXECUTORS = ("local", "dask")
# Keys a user may set on the command line without Hydra's "+": run.py adds "++" for them.
OPEN_KEYS = ("params.", "sweep.", "mechanism_options.", "variants.", "figure.", "trials_per_mechanism.")


class ConfigError(ValueError):
    """An experiment configuration that cannot run, with what to change."""


@dataclass(frozen=True)
class Figure:
    x: str
    panel: str | list | None = None  # a parameter, "label", or a list of them (a grid of panels)
    title: str = ""
    xlabel: str | None = None
    ylabel: str | None = None
    logx: bool = True
    logy: bool = True
    columns: int | None = None  # panels per row (a single panel parameter wraps after this many)
    theory: bool = True  # thin dashed predicted-error lines where experiments/theory.py has a closed form


@dataclass(frozen=True)
class Line:
    """One mechanism line of an experiment: a registered mechanism, or a variant of one (config
    ``variants``) with its own label, options and budget parameters (e.g. Amin's G-16 = the
    Gaussian mechanism with delta = 1e-16 on top of the grid point's eps)."""

    mechanism: str
    label: str
    options: dict
    budget: dict  # budget parameters that override the grid point's
    # "replace_one" (the papers' model, n public) or "add_remove" (a row's presence protected: release's
    # count, the rows resized to it; mechanisms/units.py)
    privacy_unit: str = "replace_one"

    def spec(self) -> dict:
        """What defines the line (run.json's variants): the unit only when it is not the papers' replace_one,
        so the records of every replace-one line stay as they were."""
        fields = {"mechanism": self.mechanism, "label": self.label, "options": self.options, "budget": self.budget}
        return fields if self.privacy_unit == "replace_one" else {**fields, "privacy_unit": self.privacy_unit}


@dataclass(frozen=True)
class Experiment:
    name: str
    dataset: str
    params: dict  # fixed parameters
    sweep: dict  # parameter -> list of values (grid = product, in this order)
    mechanisms: list
    mechanism_options: dict
    metrics: list
    trials: int
    n_jobs: int
    seed: int
    output_dir: str
    figure: Figure
    clamp_eigenvalues: bool = True
    scale: str = "paper"
    paper_figure: str = ""
    data_dir: str | None = None  # where real-data files are looked for first (data/files.py)
    ridge_alpha: float | None = None  # ridge regularisation for the reg metrics (Amin §1.1)
    executor: str = "local"  # joblib backend for trials: local processes (loky) or a Dask cluster
    dask_scheduler: str | None = None  # Dask scheduler address; None: a LocalCluster on this machine
    variants: dict = field(default_factory=dict)  # name -> Line for names that are not mechanisms
    trials_per_mechanism: dict = field(default_factory=dict)  # name -> fewer trials (slow mechanisms)
    # Every line's privacy unit unless its variant sets one: "replace_one" (the papers' model, the committed
    # figures) or "add_remove" (release(privacy_unit="add_remove"): count_share of each budget on the count)
    privacy_unit: str = "replace_one"
    count_share: float = COUNT_SHARE
    resolved: dict = field(default_factory=dict, compare=False)  # the config as run (for config.yaml)

    def grid(self) -> list[dict]:
        """Every grid point as {parameter: value}, fixed parameters included."""
        names = list(self.sweep)
        return [{**self.params, **dict(zip(names, values))}
                for values in itertools.product(*(self.sweep[k] for k in names))]

    def param_names(self) -> list[str]:
        return list(self.params) + [k for k in self.sweep if k not in self.params]

    def trials_for(self, name: str) -> int:
        """Trials 0..k-1 run for line ``name``: ``trials``, or fewer if trials_per_mechanism says so."""
        return min(self.trials, self.trials_per_mechanism.get(name, self.trials))

    def total_runs(self) -> int:
        """Mechanism runs in the whole experiment: grid points x each line's trials."""
        return len(self.grid()) * sum(self.trials_for(m) for m in self.mechanisms)

    def line(self, name: str) -> Line:
        if name in self.variants:
            return self.variants[name]
        label = get_mechanism(name).label
        if self.privacy_unit == "add_remove":
            label += ADD_REMOVE_LABEL
        return Line(name, label, self.mechanism_options.get(name, {}), {}, self.privacy_unit)

    def release_unit(self, name: str) -> dict:
        """release's keyword arguments for line ``name``'s unit: none for the papers' replace_one (so its spec and
        records are those of every line committed before units existed), else privacy_unit and count_share."""
        unit = self.line(name).privacy_unit
        return {} if unit == "replace_one" else {"privacy_unit": unit, "count_share": self.count_share}

    def add_remove(self) -> bool:
        """Whether any line runs under add/remove neighbours (its problems must then hold their rows)."""
        return any(self.line(m).privacy_unit == "add_remove" for m in self.mechanisms)

    def budget(self, name: str, point: dict):
        """The privacy budget line ``name`` runs at, at grid point ``point``."""
        return budget_from_params({**point, **self.line(name).budget})

    def fingerprint(self) -> dict:
        """What must match for results in one output directory to be comparable (resume)."""
        fingerprint = {"seed": self.seed, "dataset": self.dataset, "params": sorted(self.param_names()),
                       "metrics": list(self.metrics), "mechanism_options": self.mechanism_options,
                       "clamp_eigenvalues": self.clamp_eigenvalues}
        if self.variants:
            fingerprint["variants"] = {k: v.spec() for k, v in self.variants.items()}
        if self.ridge_alpha is not None:
            fingerprint["ridge_alpha"] = self.ridge_alpha
        if self.privacy_unit != "replace_one":  # absent: the papers' unit (every run.json written before it)
            fingerprint["privacy_unit"] = self.privacy_unit
        if self.add_remove():
            fingerprint["count_share"] = self.count_share
        return fingerprint


def budget_from_params(point: dict):
    """rho -> rho-zCDP; eps -> eps-DP; eps and delta -> (eps, delta)-DP. delta may be the string
    "1/n" (Wang & Xu's delta = 1/n, with n the grid point's sample size)."""
    given = {k for k in BUDGET_PARAMS if k in point}
    if point.get("delta") == "1/n":
        if "n" not in point:
            raise ConfigError('delta = "1/n" needs a parameter n')
        point = {**point, "delta": 1 / point["n"]}
    try:
        if given == {"rho"}:
            return ZCDP(point["rho"])
        if given == {"eps"}:
            return PureDP(point["eps"])
        if given == {"eps", "delta"}:
            return ApproxDP(point["eps"], point["delta"])
    except (TypeError, ValueError) as err:
        raise ConfigError(f"invalid privacy budget in {point}: {err}") from None
    raise ConfigError(
        f"a grid point needs exactly one privacy budget: rho (zCDP), eps (pure DP) or eps and "
        f"delta ((eps, delta)-DP); got {sorted(given) or 'none'}"
    )


def open_key_overrides(argv: list[str]) -> list[str]:
    """Let ``params.d=100`` / ``sweep.n=[...]`` add keys that the experiment does not list yet."""
    return [f"++{a}" if a.startswith(OPEN_KEYS) else a for a in argv]


def _override_key(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~")


def _chosen_experiment(overrides) -> str | None:
    names = [o.split("=", 1)[1] for o in overrides if _override_key(o) == "experiment" and "=" in o]
    return names[-1] if names else None


def _plain(node):
    return OmegaConf.to_container(node, resolve=True) if isinstance(node, (DictConfig, ListConfig)) else node


def _overridden(overrides: list[str]) -> set[str]:
    return {o.split("=", 1)[0].lstrip("+~") for o in overrides}


def _apply_scale(cfg: dict, overrides: set[str]) -> dict:
    """Overlay ``scales[scale]`` onto the experiment, except keys the user set on the command line."""
    scale = cfg["scale"]
    if scale not in SCALES:
        raise ConfigError(f"scale must be one of {SCALES}, got {scale!r}")
    overlay = (cfg.get("scales") or {}).get(scale) if scale != "paper" else None
    if scale != "paper" and overlay is None:
        raise ConfigError(f"experiment {cfg['experiment_name']!r} defines no {scale!r} scale")
    for key, value in (overlay or {}).items():
        if isinstance(value, dict) and key in ("params", "sweep"):
            for sub, v in value.items():
                if f"{key}.{sub}" not in overrides and key not in overrides:
                    cfg[key][sub] = v
        elif key not in overrides:
            cfg[key] = value
    return cfg


def build_experiment(cfg, overrides: list[str] = ()) -> Experiment:
    """Validate a composed config; ``overrides`` are the command-line overrides (they win)."""
    raw = _plain(cfg)
    experiment_file = _chosen_experiment(overrides)
    if experiment_file is not None:
        check_experiment_file(experiment_file)
    known = top_keys()
    for key in raw:
        if key not in known:
            source = next((o for o in overrides if _override_key(o).split(".")[0] == key), None)
            where = f"the command line {source!r}" if source else "the config"
            raise ConfigError(f"unknown key {key!r} (from {where}){did_you_mean(key, known)}")
    overridden = _overridden(list(overrides))
    raw = _apply_scale(raw, overridden)
    name = raw.get("experiment_name")
    if not name:
        raise ConfigError("no experiment selected: run e.g.  dpcov run experiment=synthetic_trace")

    params = dict(raw.get("params") or {})
    sweep = {k: v for k, v in (raw.get("sweep") or {}).items() if v is not None}
    for key in list(sweep):
        if key in params and f"params.{key}" in overridden and f"sweep.{key}" not in overridden:
            print(f"note: params.{key}={params[key]} fixes {key}; its sweep is dropped")
            del sweep[key]
    for key, values in sweep.items():
        if not isinstance(values, list) or not values:
            raise ConfigError(f"sweep.{key} must be a non-empty list, got {values!r}")
        if len(set(map(canonical, values))) != len(values):
            raise ConfigError(f"sweep.{key} has repeated values: {values}")

    try:
        dataset = get_dataset(raw["dataset"])
    except ValueError as err:
        raise ConfigError(str(err)) from None
    names = set(params) | set(sweep)
    known = set(dataset.param_names()) | set(BUDGET_PARAMS)
    unknown = sorted(names - known)
    if unknown:
        raise ConfigError(f"unknown parameter(s) {unknown} for dataset {dataset.name!r}"
                          f"{did_you_mean(unknown[0], known)}")
    for point in _points(params, sweep):
        for key, kind in dataset.param_types().items():
            value = point.get(key)
            ok = (isinstance(value, int) and not isinstance(value, bool)) if kind is int else \
                (isinstance(value, (int, float)) and not isinstance(value, bool)) if kind is float else \
                isinstance(value, kind) if isinstance(kind, type) else True
            if key in point and not ok:
                raise ConfigError(f"parameter {key} of dataset {dataset.name!r} must be of type {kind.__name__}, "
                                  f"got {value!r}")
    missing = sorted(set(dataset.param_names()) - names)
    if missing:
        raise ConfigError(f"dataset {dataset.name!r} needs parameter(s) {missing} (set params.<name>=...)")

    mechanisms = raw.get("mechanisms")
    if not isinstance(mechanisms, list) or not mechanisms:
        raise ConfigError(f"mechanisms must be a non-empty list, got {mechanisms!r}")
    if len(set(mechanisms)) != len(mechanisms):
        raise ConfigError(f"mechanisms has repeated names: {mechanisms}")
    options = {k: dict(v or {}) for k, v in (raw.get("mechanism_options") or {}).items()}
    privacy_unit = _privacy_unit("privacy_unit", raw.get("privacy_unit", "replace_one"))
    variants = _variants(raw.get("variants") or {}, privacy_unit)
    numerics = raw.get("numerics", "idealized")
    if numerics not in NUMERICS:
        raise ConfigError(f"numerics must be one of {NUMERICS}, got {numerics!r}")
    if numerics == "hardened":  # every line whose mechanism has hardened numerics (mechanisms/noise.py)
        for mech in mechanisms:
            if mech in variants:
                line = variants[mech]
                if "numerics" in _option_names(line.mechanism):
                    variants[mech] = dataclasses.replace(line, options={"numerics": "hardened", **line.options})
            elif "numerics" in _option_names(mech):
                options[mech] = {"numerics": "hardened", **options.get(mech, {})}
    per_mechanism = dict(raw.get("trials_per_mechanism") or {})
    try:
        for mech in (*mechanisms, *per_mechanism):
            if mech not in variants:
                get_mechanism(mech)
        for mech, opts in options.items():
            check_options(mech, opts or {})
        check_metrics(raw.get("metrics") or [])
    except ValueError as err:
        raise ConfigError(str(err)) from None
    if not raw.get("metrics"):
        raise ConfigError("metrics must name at least one metric")
    ridge_alpha = raw.get("ridge_alpha")
    if ridge_alpha is not None and (isinstance(ridge_alpha, bool) or not isinstance(ridge_alpha, (int, float))
                                    or not ridge_alpha > 0):
        raise ConfigError(f"ridge_alpha must be a number > 0, got {ridge_alpha!r}")
    if {"reg", "reg_w"} & set(raw["metrics"]) and ridge_alpha is None:
        raise ConfigError("metrics reg/reg_w evaluate ridge models: set ridge_alpha (e.g. ridge_alpha=0.001)")

    for key, low in (("trials", 1), ("seed", 0)):
        _require_int(key, raw[key], low)
    for mech, count in per_mechanism.items():
        _require_int(f"trials_per_mechanism.{mech}", count, 1)
    if isinstance(raw["n_jobs"], bool) or not isinstance(raw["n_jobs"], int) or raw["n_jobs"] == 0:
        raise ConfigError(f"n_jobs must be a non-zero integer (-1: all cores), got {raw['n_jobs']!r}")
    if raw.get("executor", "local") not in EXECUTORS:
        raise ConfigError(f"executor must be one of {EXECUTORS}, got {raw.get('executor')!r}")
    if raw.get("dask_scheduler") is not None and raw.get("executor") != "dask":
        raise ConfigError("dask_scheduler is only used with executor=dask")
    if not isinstance(raw["clamp_eigenvalues"], bool):
        raise ConfigError(f"clamp_eigenvalues must be true or false, got {raw['clamp_eigenvalues']!r}")

    output_dir = raw.get("output_dir")
    if not isinstance(output_dir, str) or not output_dir.strip():
        raise ConfigError(f"output_dir must name a directory, got {output_dir!r} "
                          f"(default: outputs/<experiment>/<scale>)")
    if Path(output_dir).exists() and not Path(output_dir).is_dir():
        raise ConfigError(f"output_dir {output_dir} is a file, not a directory: pass another output_dir=...")

    fig = dict(raw.get("figure") or {})
    for key in fig:
        if key not in FIGURE_KEYS:
            raise ConfigError(f"unknown key 'figure.{key}'{did_you_mean(key, FIGURE_KEYS)}")
    figure = Figure(**fig)
    panels = [figure.panel] if isinstance(figure.panel, str) else list(figure.panel or [])
    if figure.columns is not None:
        _require_int("figure.columns", figure.columns, 1)
    for axis in (figure.x, *panels):
        if axis is not None and axis not in names and axis != "label":
            raise ConfigError(f"figure axis {axis!r} is not a parameter of this experiment")

    experiment = Experiment(
        name=name, dataset=dataset.name, params=params, sweep=sweep, mechanisms=list(mechanisms),
        mechanism_options=options,
        metrics=list(raw["metrics"]), trials=raw["trials"], n_jobs=raw["n_jobs"], seed=raw["seed"],
        output_dir=str(raw["output_dir"]), figure=figure, clamp_eigenvalues=raw["clamp_eigenvalues"],
        scale=raw["scale"], paper_figure=raw.get("paper_figure", ""),
        data_dir=raw.get("data_dir"), ridge_alpha=ridge_alpha, executor=raw.get("executor", "local"),
        dask_scheduler=raw.get("dask_scheduler"),
        variants={k: v for k, v in variants.items() if k in mechanisms}, resolved=raw,
        trials_per_mechanism={k: v for k, v in per_mechanism.items() if k in mechanisms},
        privacy_unit=privacy_unit,
    )
    count_share = raw.get("count_share")
    if count_share is not None:
        if not experiment.add_remove():
            raise ConfigError(f"count_share={count_share!r} is the count's share of the budget under "
                              f"privacy_unit=add_remove; every line here is replace_one (n public, nothing spent on "
                              f"it): set privacy_unit=add_remove or drop count_share")
        try:
            count_share = check_count_share(count_share)
        except ValueError as err:
            raise ConfigError(f"{err} (the share of each line's budget spent on the row count under "
                              f"privacy_unit=add_remove; default {COUNT_SHARE})") from None
        experiment = dataclasses.replace(experiment, count_share=count_share)
    for point in experiment.grid():
        for name in experiment.mechanisms:
            experiment.budget(name, point)
    for name in experiment.mechanisms:
        line = experiment.line(name)
        missing = [o for o in required_options(line.mechanism) if o not in line.options]
        if missing:
            where = f"variants.{name}.options" if name in experiment.variants else f"mechanism_options.{name}"
            raise ConfigError(f"mechanism {line.mechanism!r} needs option(s) {missing}: set "
                              f"{' '.join(f'{where}.{o}=...' for o in missing)}")
    return experiment


def required_options(mechanism: str) -> list[str]:
    """Options a mechanism cannot run without: its keyword-only parameters without a default."""
    params = inspect.signature(get_mechanism(mechanism).fn).parameters.values()
    return [p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is p.empty]


def did_you_mean(key: str, known) -> str:
    close = difflib.get_close_matches(key, sorted(known), n=1)
    return f"; did you mean {close[0]!r}?" if close else f"; known: {', '.join(sorted(known))}"


def _require_int(key: str, value, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ConfigError(f"{key} must be an integer >= {low}, got {value!r}")


def _points(params: dict, sweep: dict):
    """Every grid point (fixed parameters and each swept value) -- for type checks."""
    names = list(sweep)
    for values in itertools.product(*(sweep[k] for k in names)):
        yield {**params, **dict(zip(names, values))}


VARIANT_KEYS = {"mechanism", "label", "options", "budget", "privacy_unit"}


def _privacy_unit(key: str, value) -> str:
    if value not in PRIVACY_UNITS:
        raise ConfigError(f"{key} must be one of {PRIVACY_UNITS} -- replace_one: the papers' model (n public, a "
                          f"row's content protected; the committed figures), add_remove: a row's presence "
                          f"protected (the count released with count_share of the budget) -- got {value!r}")
    return value


def _variants(raw: dict, privacy_unit: str = "replace_one") -> dict[str, Line]:
    """Validate ``variants: {name: {mechanism, label, options, budget, privacy_unit}}``. A variant without its
    own privacy_unit takes the experiment's (``privacy_unit``); under add_remove its label says so."""
    variants = {}
    for name, spec in raw.items():
        spec = dict(spec or {})
        unknown = sorted(set(spec) - VARIANT_KEYS)
        if unknown or "mechanism" not in spec:
            raise ConfigError(f"variant {name!r} needs 'mechanism' and may set {sorted(VARIANT_KEYS)}; "
                              f"got {sorted(spec)}")
        try:
            mechanism = get_mechanism(spec["mechanism"])
            check_options(mechanism.name, spec.get("options") or {})
        except ValueError as err:
            raise ConfigError(f"variant {name!r}: {err}") from None
        budget = dict(spec.get("budget") or {})
        if set(budget) - set(BUDGET_PARAMS):
            raise ConfigError(f"variant {name!r}: budget may set {BUDGET_PARAMS}, got {sorted(budget)}")
        unit = _privacy_unit(f"variants.{name}.privacy_unit", spec.get("privacy_unit", privacy_unit))
        if "label" in spec:
            label = str(spec["label"]) + (ADD_REMOVE_LABEL if "privacy_unit" not in spec and unit == "add_remove"
                                          else "")
        else:
            label = name if unit == "replace_one" else mechanism.label + ADD_REMOVE_LABEL
        variants[name] = Line(mechanism.name, label, dict(spec.get("options") or {}), budget, unit)
    return variants


CONF_DIR = Path(__file__).resolve().parents[1] / "conf"
def _option_names(mechanism: str) -> list[str]:
    try:
        return get_mechanism(mechanism).option_names()
    except ValueError as err:
        raise ConfigError(str(err)) from None
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's safe loader where built: ~10x faster
FIGURE_KEYS = tuple(f.name for f in dataclasses.fields(Figure))


def load_yaml(path: Path):
    """A YAML file's content; a syntax error becomes one line naming the file and the place."""
    try:
        return yaml.load(path.read_text(), Loader=SAFE_LOADER)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        what = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise ConfigError(f"{path}: YAML syntax error{where} ({what}); fix the file") from None


def top_keys() -> tuple[str, ...]:
    """Every key an experiment may set: the keys of conf/config.yaml."""
    return tuple(k for k in load_yaml(CONF_DIR / "config.yaml") or {} if k not in ("defaults", "hydra"))


def check_experiment_file(name: str) -> None:
    """Refuse unknown keys in conf/experiment/<name>.yaml (top level, figure, scales.<scale>), naming
    the file and the key; a YAML syntax error names the file and line."""
    path = CONF_DIR / "experiment" / f"{name}.yaml"
    if not path.is_file():
        return  # Hydra reports a missing experiment with the list of known ones
    content = load_yaml(path) or {}
    if not isinstance(content, dict):
        raise ConfigError(f"{path}: expected a mapping of config keys, got {type(content).__name__}")

    def check(keys, known, prefix=""):
        for key in keys:
            if key not in known:
                raise ConfigError(f"{path}: unknown key {prefix + str(key)!r}{did_you_mean(str(key), known)}")

    known = top_keys()
    check(content, (*known, "defaults"))
    check(content.get("figure") or {}, FIGURE_KEYS, "figure.")
    scales = content.get("scales") or {}
    check(scales, SCALES, "scales.")
    for scale, overlay in scales.items():
        check(overlay or {}, [k for k in known if k not in ("scales", "experiment_name")], f"scales.{scale}.")
        check((overlay or {}).get("figure") or {}, FIGURE_KEYS, f"scales.{scale}.figure.")


def check_command_line(argv: list[str]) -> None:
    """Before Hydra composes anything: YAML syntax of the config files named, and unknown top-level
    keys (``trails=3``, ``+trails=3``, ``+mechanism=[gauss]``) with a suggestion."""
    known = top_keys()  # also: a YAML syntax error in conf/config.yaml
    for arg in argv:
        if arg.startswith("-") or "=" not in arg:
            continue  # Hydra's flags (-m, --cfg job, ...)
        key, value = _override_key(arg), arg.split("=", 1)[1]
        top = key.split(".")[0].split("/")[0]
        if top == "hydra":
            continue
        if top == "experiment":
            for name in value.split(","):  # a multirun sweep lists several
                check_experiment_file(name.strip())
        elif top not in known:
            raise ConfigError(f"unknown key {top!r} (command line {arg!r}){did_you_mean(top, known)}")


def compose_experiment(overrides: list[str]) -> Experiment:
    """The Experiment that ``python run.py <overrides>`` would run (for tests and scripts).

    Hydra's composition takes about 0.15 s, and the same experiment is composed again and again with
    only ``output_dir`` changed (``dpcov reproduce`` composes each target several times; tests give each
    run its own directory): the config composed without a plain ``output_dir=PATH`` is kept (per set of
    overrides and content of the conf/ files), and a copy gets the directory as Hydra sets an override."""
    overrides = open_key_overrides(list(overrides))
    check_command_line(overrides)
    rest, output_dir = _split_output_dir(overrides)
    key = (str(CONF_DIR), _conf_stamp(), tuple(rest))
    if key not in _COMPOSED:
        if len(_COMPOSED) >= 256:
            _COMPOSED.pop(next(iter(_COMPOSED)))
        _COMPOSED[key] = _hydra_compose(rest)
    cfg = copy.deepcopy(_COMPOSED[key])
    if output_dir is not None:
        OmegaConf.update(cfg, "output_dir", output_dir, merge=True)  # as Hydra applies output_dir=PATH
    return build_experiment(cfg, overrides)


_COMPOSED: dict[tuple, DictConfig] = {}  # compose_experiment's composed configs, without output_dir


def _hydra_compose(overrides: list[str]) -> DictConfig:
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        return compose(config_name="config", overrides=overrides)


def _conf_stamp() -> bytes:
    """A digest of the conf/ files as they are now (names and contents, ~1 ms): an edit composes afresh."""
    digest = hashlib.blake2b(digest_size=16)
    for path in sorted(CONF_DIR.rglob("*.yaml")):
        digest.update(str(path).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.digest()


def _split_output_dir(overrides: list[str]) -> tuple[list[str], str | None]:
    """(the other overrides, the directory) when ``overrides`` set output_dir once, plainly (a string
    without interpolation, as Hydra's override parser reads it); else (``overrides``, None)."""
    mine = [o for o in overrides if _override_key(o) == "output_dir"]
    if len(mine) != 1 or not mine[0].startswith("output_dir="):
        return overrides, None
    from hydra.core.override_parser.overrides_parser import OverridesParser

    value = OverridesParser.create().parse_overrides(mine)[0].value()
    if not isinstance(value, str) or "${" in value:
        return overrides, None
    return [o for o in overrides if o is not mine[0]], value


def experiment_names() -> list[str]:
    return sorted(p.stem for p in (CONF_DIR / "experiment").glob("*.yaml"))


def job_output_dir(output_dir: str, argv: list[str], job_overrides: list[str]) -> str:
    """A multirun job's output directory: ``output_dir`` plus a subdirectory named by the job's
    values of the swept keys, e.g. ``-m seed=1,2`` -> ``<output_dir>/seed=1`` and ``.../seed=2``
    (sweeping output_dir itself already separates the jobs)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    command = parser.parse_overrides([a for a in argv if "=" in a and not a.startswith("-")])
    swept = {o.key_or_group for o in command if o.is_sweep_override()} - {"output_dir"}
    job = [o for o in parser.parse_overrides(list(job_overrides)) if o.key_or_group in swept]
    name = ",".join(f"{o.key_or_group}={o.get_value_element_as_str()}" for o in job)
    return str(Path(output_dir) / name.replace("/", "_")) if name else output_dir
