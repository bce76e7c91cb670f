"""Name -> mechanism. The runner only ever goes through ``release``; it never names a mechanism.

Besides the built-in ``MECHANISMS``, a mechanism may live in the user's own module (a plug-in,
docs/api.md): a function ``fn(problem, accountant, rng, *, options...)`` decorated with
``@register_mechanism(notion=ZCDP, label=...)``, named by its dotted path ``"package.module:fn"``
(imported on first use), or by the short ``name=`` the decorator gives it (known in every process
that imported the module). The runner has its joblib or Dask workers import the plug-ins' modules
first, from where the parent found them (``plugin_modules``).
"""
from __future__ import annotations

import functools
import importlib
import inspect
import sys
from dataclasses import dataclass, replace
from types import SimpleNamespace
from pathlib import Path
from typing import Callable

import numpy as np

from . import adaptive, coinpress, emcov, gaussian, laplace, pipeline, regression, stable, thresholding, tukey
from .predictions import Prediction
from .privacy import NOTIONS, ApproxDP, PureDP, ZCDP, Accountant, Budget, budget_guaranteeing
from .exact_sums import ExactBandSums, exact_problem
from .neighbours import ADD_REMOVE
from .problem import BandSums, CovProblem
from .units import (COUNT_SHARE, check_count_share, check_privacy_unit, private_count, resized_drop,
                    selection_generators)
from .spectral import Spectral, as_matrix, clamp_eigenvalues


@dataclass(frozen=True)
class AuditNeeds:
    """What the privacy audits (audits/) must know to audit a mechanism, declared with it."""

    profile: str = "dp"  # "gaussian": a post-processed Gaussian mechanism (its exact mu-GDP profile); "dp": the claim's
    pairs: tuple = (("swap_values", 1000),)  # (family, n) neighbour pairs of the line audits; the first: the fast suite's
    options: tuple = ()  # (option, value) it needs to run in an audit at all, e.g. a clipping threshold
    search_pairs: tuple = ()  # (family, n) the black-box search starts from instead of the covariance pairs
    slow: bool = False  # black-box audited under -m slow only

    def __post_init__(self):
        if self.profile not in ("dp", "gaussian"):
            raise ValueError(f"audit profile must be 'dp' or 'gaussian', got {self.profile!r}")

    @property
    def run_options(self) -> dict:
        return dict(self.options)


@functools.lru_cache(maxsize=None)
def _keyword_options(fn: Callable) -> tuple[tuple[str, bool], ...]:
    """(name, required) of a mechanism function's keyword-only options, read once per function (inspect.signature
    on every release cost about 15 % of an audit's CPU)."""
    return tuple((p.name, p.default is p.empty) for p in inspect.signature(fn).parameters.values()
                 if p.kind is inspect.Parameter.KEYWORD_ONLY)


@dataclass(frozen=True)
class Mechanism:
    """Everything the suite knows about one mechanism, in one place: the runner, the theory overlays,
    the advisor, the figures' styles and the audits all read it from here."""

    name: str  # command-line name
    label: str  # name in the papers and on the figures
    notion: type  # privacy notion of its guarantee: ZCDP, PureDP or ApproxDP
    fn: Callable  # fn(problem, accountant, rng, **options) -> matrix or Spectral
    source: str
    check: Callable[[dict], None] | None = None  # option values no dataset makes valid -> ValueError
    plugin: bool = False  # defined outside this package (register_mechanism): its output is checked
    predict: Prediction | None = None  # its predicted error (mechanisms/predictions.py), where one is known
    audit: AuditNeeds = AuditNeeds()
    style: tuple[str, str] | None = None  # (colour, marker) on every figure; None: derived from the label
    needs: tuple[str, ...] = ()  # what it needs besides bounded rows, e.g. "raw rows", "a ridge task"
    # (option, value) pairs that make a release NOT private at the claimed budget: the papers' or their
    # code's calibrations kept to reproduce published figures ("as published"); the estimators refuse them
    not_private: tuple = ()
    # centred by subtracting a released mean from the rows (dpcov's estimators, centering="private"), not
    # by the second moment minus the mean's outer product: for mechanisms that adapt to the rows' own
    # norms (a private clipping radius), which the centred rows' smaller norms serve better
    centre_rows: bool = False
    # float noise on a float statistic: private on paper, not as executed (its low bits; docs/privacy.md). The
    # audit then rounds the low bits away and says so; with option numerics="hardened" (every additive built-in:
    # gauss, lap, separate, adaptive, ...) it checks them
    idealized: bool = True
    # None: private for add/remove neighbours through mechanisms/units.py's reduction (a released count, the rows
    # resized to it with zero rows: its replace-one proof on rows in the ball, zero rows included, then applies);
    # else why it cannot qualify (the estimators refuse privacy_unit="add_remove" with this reason)
    add_remove: str | None = None
    # (option, value) that makes it take the problem's radius as its rows' bound instead of releasing one of its
    # own (AdaptiveCov's PrivRadius): the estimators pass it after radius="private" released the bound
    own_radius: tuple | None = None
    # reads the rows clipped at levels m > 0 (their directions' sums): the estimators' exact sums then hold the
    # directions' products too, else only the rows' (one Gram product per band instead of two; issue 61). Plug-ins: True
    clips: bool = False
    # under add/remove with hardened numerics it reads the rows only through the exact sums at one clipping level
    # (released_sigma, released_eigen, the exact trace): the estimators then form that level's Gram products alone --
    # level 0's in the one pass for a line that never clips, or, for one that chooses its level privately
    # (AdaptiveCov), in a second pass after the choice (mechanisms/exact_sums.py ``level``, ``defer``; issue 61)
    exact_levels: bool = False
    # native add/remove (issue 59): it reads ``problem.neighbours`` and calibrates every step to it
    # (mechanisms/neighbours.py): under privacy_unit="add_remove" it then runs on every row, divided by the released
    # count, instead of the reduction
    native: bool = False
    # a plug-in's declared add/remove sensitivity of its main statistic (public facts -> float), which the ledger
    # prints (register_mechanism(add_remove="native", sensitivity=...))
    native_sensitivity: Callable | None = None

    def option_names(self) -> list[str]:
        return [name for name, _ in _keyword_options(self.fn)]

    def required_options(self) -> list[str]:
        """Options without a default (e.g. a clipping threshold): a caller must choose them."""
        return [name for name, required in _keyword_options(self.fn) if required]

    @property
    def runs_from_public_facts(self) -> bool:
        """Runs on any bounded rows with nothing to choose: what the advisor may rank."""
        return not self.needs and not self.required_options()


# Audit needs shared by several rows.
_GAUSS_AUDIT = AuditNeeds("gaussian", (("swap_values", 1000), ("swap_vectors", 10), ("new_direction", 1000)))
_SPECTRAL_AUDIT = AuditNeeds("gaussian", (("swap_values", 1000), ("scale", 1000), ("swap_vectors", 10)))
_PURE_AUDIT = AuditNeeds("dp", (("swap_values", 1000), ("l1", 10), ("scale", 1000)))
_EM_AUDIT = AuditNeeds("dp", (("swap_values", 1000), ("scale", 1000)))
_CLIP = (("tau", 1.0),)
_PUBLISHED = (("calibration", "public_code"),)
# why the raw-row mechanisms do not take privacy_unit="add_remove": the reduction (mechanisms/units.py) resizes rows
# inside the problem's ball, and these read rows with no norm bound (or their band sums from a streamed table)
_RAW_ROWS = ("it reads raw rows with no norm bound, and the add/remove reduction (mechanisms/units.py) resizes rows "
             "inside the problem's ball; not implemented for raw rows")  # the as-published calibrations (not private at the claim)

def _with_release(default_mechanism: str):
    """mechanisms/pipeline.py's private_pipeline with this module's ``release`` handed in (the pipeline runs
    an inner mechanism by name; importing the registry there would be a cycle); its options are the
    pipeline's, with the inner mechanism's default for this notion."""
    def run(problem, accountant, rng, **options):
        return pipeline.private_pipeline(problem, accountant, rng, release, **{"mechanism": default_mechanism,
                                                                               **options})
    signature = inspect.signature(pipeline.private_pipeline)
    parameters = [p.replace(default=default_mechanism) if p.name == "mechanism" else p
                  for p in signature.parameters.values() if p.name != "release"]
    run.__signature__ = signature.replace(parameters=parameters)
    run.__doc__ = pipeline.private_pipeline.__doc__
    return run


_pipeline, _pipeline_pure = _with_release("gauss"), _with_release("lap")

MECHANISMS = {m.name: m for m in [
    Mechanism("gauss", "GaussCov", ZCDP, gaussian.gauss_cov, "Dong et al. 2022 §3.1",
              predict=gaussian.GAUSS_PREDICTION, audit=_GAUSS_AUDIT, style=("tab:blue", "o"),
              native=True, exact_levels=True),
    Mechanism("separate", "SeparateCov", ZCDP, gaussian.separate_cov, "Dong et al. 2022 Alg. 1",
              predict=gaussian.SEPARATE_PREDICTION, audit=_SPECTRAL_AUDIT, style=("tab:orange", "s"),
              native=True, exact_levels=True),
    Mechanism("adaptive", "AdaptiveCov", ZCDP, adaptive.adaptive_cov, "Dong et al. 2022 Alg. 2",
              predict=adaptive.ADAPTIVE_PREDICTION,
              audit=AuditNeeds("dp", (("swap_values", 1000), ("new_direction", 1000))), style=("tab:green", "^"),
              centre_rows=True, own_radius=("radius", "known"),
              native=True, exact_levels=True, clips=True),
    Mechanism("clip_gauss", "ClipGaussCov", ZCDP, gaussian.clip_gauss_cov, "Dong et al. 2022 §5.1",
              audit=replace(_GAUSS_AUDIT, options=_CLIP), style=("#1f3b73", "o"),
              native=True, clips=True),
    Mechanism("clip_separate", "ClipSeparateCov", ZCDP, gaussian.clip_separate_cov, "Dong et al. 2022 §5.1",
              audit=replace(_SPECTRAL_AUDIT, options=_CLIP), style=("#a65c00", "s"),
              native=True, clips=True),
    Mechanism("projection", "Projection (App. E)", ZCDP, gaussian.projection_cov, "Dong et al. 2022 App. E",
              audit=_GAUSS_AUDIT, style=("tab:brown", "D"),
              native=True, exact_levels=True),
    Mechanism("coinpress", "CoinPress (t=1)", ZCDP, coinpress.coinpress_cov,
              "Biswas et al. 2020 (MVC), one iteration from Sigma; an extra line in Fig. 3",
              audit=_GAUSS_AUDIT, style=("tab:pink", "P")),
    # Spends nothing, so it meets every notion (PureDP is the strongest).
    Mechanism("zero", "Zero", PureDP, gaussian.zero_cov, "baseline: the zero matrix",
              predict=gaussian.ZERO_PREDICTION, style=("tab:gray", "x"),
              native=True),
    Mechanism("lap", "LapCov", PureDP, laplace.lap_cov, "Dong et al. 2022 App. I",
              predict=laplace.LAP_PREDICTION, audit=_PURE_AUDIT, style=("tab:cyan", "h"),
              native=True, exact_levels=True),
    Mechanism("separate_lap", "SeparateCov", PureDP, laplace.separate_lap_cov, "Dong et al. 2022 App. I",
              predict=laplace.SEPARATE_LAP_PREDICTION, audit=_PURE_AUDIT, style=("tab:orange", "s"),
              native=True, exact_levels=True),
    Mechanism("adaptive_lap", "AdaptiveCov", PureDP, adaptive.adaptive_cov, "Dong et al. 2022 App. I",
              predict=adaptive.ADAPTIVE_LAP_PREDICTION, audit=AuditNeeds("dp", (("swap_values", 1000), ("l1", 10))),
              style=("tab:green", "^"), centre_rows=True, own_radius=("radius", "known"),
              native=True, exact_levels=True, clips=True),
    Mechanism("emcov_pure", "EMCov", PureDP, emcov.iterative_adaptive,
              "Dong et al. 2022 App. J.2: Amin Alg. 1, eps/2 eigenvalues, Corollary 1 split",
              predict=emcov.AD_PREDICTION, audit=_EM_AUDIT, style=("tab:purple", "v"),
              not_private=_PUBLISHED,
              native=True),
    Mechanism("emcov", "EMCov", ZCDP, emcov.emcov_zcdp, "Dong et al. 2022 App. C (Amin et al. Alg. 1)",
              predict=emcov.EMCOV_PREDICTION, audit=_EM_AUDIT, style=("tab:purple", "v"),
              not_private=_PUBLISHED,
              native=True),
    Mechanism("itu", "IT-U", PureDP, emcov.iterative_uniform, "Amin et al. 2019 Alg. 1, uniform split",
              predict=emcov.ITU_PREDICTION, audit=_EM_AUDIT, style=("tab:olive", "v"),
              not_private=_PUBLISHED,
              native=True),
    Mechanism("ad", "AD", PureDP, emcov.iterative_adaptive, "Amin et al. 2019 Alg. 1, Corollary 1 split",
              predict=emcov.AD_PREDICTION, audit=_EM_AUDIT, style=("tab:red", "o"),
              not_private=_PUBLISHED,
              native=True),
    Mechanism("dp_threshold", "DP-Thresholding", ApproxDP, thresholding.dp_threshold, "Wang & Xu Alg. 1",
              audit=AuditNeeds("gaussian", (("dense", 1000),)), style=("tab:red", "s"),
              not_private=(("calibration", "as_written"),)),
    Mechanism("ldp_threshold", "LDP-Thresholding", ApproxDP, thresholding.ldp_threshold, "Wang & Xu Alg. 2",
              audit=AuditNeeds("gaussian", (("dense", 100_000),)), style=("tab:purple", "D"),
              not_private=(("calibration", "as_written"),)),
    Mechanism("gauss_approx", "Gaussian (ε,δ)", ApproxDP, thresholding.gauss_approx,
              "analytic Gaussian mechanism on Sigma (Wang & Xu §4.1 baseline; Amin et al.'s G)",
              predict=thresholding.GAUSS_APPROX_PREDICTION,
              audit=AuditNeeds("gaussian", (("dense", 1000), ("swap_vectors", 10))), style=("#4292c6", "d"),
              not_private=_PUBLISHED),
    Mechanism("kt", "KT", PureDP, emcov.kapralov_talwar, "Kapralov & Talwar 2013 (Amin et al. §4)",
              predict=emcov.KT_PREDICTION, audit=_EM_AUDIT, style=("tab:brown", "<")),
    Mechanism("laplace", "L", PureDP, laplace.amin_laplace_cov, "Amin et al. 2019 §4: entries Lap(2d/eps) on C",
              predict=laplace.AMIN_LAPLACE_PREDICTION, audit=_PURE_AUDIT, style=("black", "x"),
              native=True),
    Mechanism("output_perturbation", "Output pert.", PureDP, regression.output_perturbation,
              "Chaudhuri et al. 2011 output perturbation of the ridge model (Amin et al. App. C)",
              audit=AuditNeeds("dp", (("ridge", 10),), search_pairs=(("ridge", 10), ("ridge", 2))),
              style=("tab:pink", ">"), needs=("a ridge task",)),
    Mechanism("adassp", "AdaSSP", ZCDP, regression.adassp,
              "Wang 2018 Alg. 2: private sufficient statistics with a penalty sized to their noise",
              audit=AuditNeeds("dp", (("ridge", 10),), search_pairs=(("ridge", 10), ("ridge", 2))),
              style=("#2ca02c", "*"), needs=("a ridge task",), native=True),
    Mechanism("tukey", "TukeyEM", ApproxDP, tukey.tukey_em,
              "Amin, Joseph, Ribero & Vassilvitskii 2023 Alg. 1: a deep model among least-squares fits on disjoint "
              "parts (no bounds), behind propose-test-release",
              audit=AuditNeeds("dp", (("tukey", 4000),), search_pairs=(("tukey", 4000),)),
              style=("#8c564b", "*"), needs=("raw rows", "a ridge task"), native=True),
    Mechanism("stable_gsampling", "Stable + GSampling", ApproxDP, stable.stable_gsampling,
              "lecture notes: Brown-Hopkins-Smith 2023 stable covariance + Alabi et al. 2023 Alg. 1",
              check=stable.check_options, predict=stable.STABLE_PREDICTION,
              audit=AuditNeeds("dp", (("stable", 300_000),), options=(("on_fail", "zero"),),
                               search_pairs=(("stable", 300_000),), slow=True),
              style=("tab:red", "*"), needs=("raw rows",), add_remove=_RAW_ROWS),
    Mechanism("pipeline", "Private pipeline", ZCDP, _pipeline,
              "dpcov: Dong et al.'s PrivRadius (Lemma 9), a private mean, then the inner mechanism (issue 39)",
              audit=AuditNeeds("dp", (("swap_values", 1000), ("new_direction", 1000))),
              style=("tab:olive", "P"), needs=("the raw rows' band sums (dataset table, bound=private)",),
              add_remove=_RAW_ROWS, clips=True),
    Mechanism("pipeline_pure", "Private pipeline", PureDP, _pipeline_pure,
              "dpcov: Dong et al.'s PrivRadius (Lemma 9), a private mean, then the inner mechanism (issue 39)",
              audit=AuditNeeds("dp", (("swap_values", 1000), ("l1", 10))),
              style=("tab:olive", "P"), needs=("the raw rows' band sums (dataset table, bound=private)",),
              add_remove=_RAW_ROWS, clips=True),
]}


PLUGINS: dict[str, Mechanism] = {}  # short names given by @register_mechanism(name=...) in this process
DECLARED: dict[str, Mechanism] = {}  # every plug-in decorated in this process, by its dotted path
_ATTRIBUTE = "__dpcov_mechanism__"  # where the decorator stores a function's Mechanism
_CONTEXT = ("problem", "accountant", "rng")  # a mechanism's positional arguments, in this order


def _notion(notion) -> type:
    if isinstance(notion, str) and notion.lower() in NOTIONS:
        return NOTIONS[notion.lower()]
    if notion in (ZCDP, PureDP, ApproxDP):
        return notion
    raise ValueError(f"notion must be ZCDP, PureDP or ApproxDP (or one of {sorted(NOTIONS)}), got {notion!r}")


def _prediction(predict) -> Prediction | None:
    if predict is None or isinstance(predict, Prediction):
        return predict
    if callable(predict):
        return Prediction(predict, kind="declared")
    raise TypeError(f"predict must be a Prediction or a function (facts, budget) -> float | None, got {predict!r}")


def _check_signature(fn: Callable) -> None:
    params = list(inspect.signature(fn).parameters.values())
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    others = [p.name for p in params if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    if len(positional) != len(_CONTEXT) or others:
        raise TypeError(f"a mechanism is fn(problem, accountant, rng, *, option=default, ...); "
                        f"{fn.__qualname__} takes ({', '.join(p.name for p in params)}): options must be "
                        f"keyword-only (after a bare *)")


def register_mechanism(*, notion, label: str | None = None, name: str | None = None, source: str = "",
                       predict=None, audit: AuditNeeds | None = None, style: tuple[str, str] | None = None,
                       needs: tuple[str, ...] = (), centre_rows: bool = False, idealized: bool = False,
                       add_remove: str | None = None, sensitivity: Callable | None = None):
    """Declare a function as a mechanism of privacy ``notion`` (ZCDP, PureDP or ApproxDP, or
    "zcdp" / "pure" / "approx"): release runs it at the largest budget of that notion implying the
    requested one, and it must spend that budget through the accountant it is given.

    The function is then known by its dotted path ``"module:function"`` everywhere, and by ``name``
    (optional, no ':' or '.') in processes that imported its module. Returns the function unchanged.

    What else the suite should know, declared here like the built-ins' rows: ``predict``, its
    predicted error (a ``Prediction``/``Bound`` of mechanisms/predictions.py, or a function
    ``(facts, budget) -> E||S~ - Sigma||_F`` or None) for the advisor and the figures' overlays;
    ``audit``, an ``AuditNeeds`` (profile, neighbour pairs, options the audits need); ``style``, its
    (colour, marker) on figures; ``needs``, what it needs besides bounded rows (e.g. ("raw rows",));
    ``centre_rows``, how dpcov's estimators centre for it (``Mechanism.centre_rows``); ``idealized``, that it
    is private on paper only (float noise on a float statistic): the audit then rounds its low bits away and
    says so. By default a plug-in claims to be private as executed, and ``dpcov audit`` checks its low bits:
    add noise through ``dpcov.mechanisms.noise`` (a 2^k grid and exact integer noise) to pass. ``add_remove``:
    None (the default) when its replace-one guarantee holds for any rows in the ball, zero rows included: the
    estimators then protect a row's presence through mechanisms/units.py; else why it cannot (they then refuse
    privacy_unit="add_remove" with that reason); or "native": it reads ``problem.neighbours``
    (mechanisms/neighbours.py) and calibrates every step to it, so under add/remove it runs on every row divided by the
    released count, at its add/remove sensitivity -- then ``sensitivity``, a function problem -> its main
    statistic's sensitivity under the problem's neighbours, is required (the ledger states it); it is given the public
    facts only (``radius``, ``n`` -- the released count --, ``d``, ``neighbours``), never the rows or their sums.
    """
    notion = _notion(notion)
    predict = _prediction(predict)
    if not isinstance(needs, (tuple, list)) or not all(isinstance(v, str) and v for v in needs):
        raise ValueError(f"needs must be a tuple of strings, e.g. ('raw rows',), got {needs!r}")
    if audit is not None and not isinstance(audit, AuditNeeds):
        raise TypeError(f"audit must be an AuditNeeds(...), got {audit!r}")
    if style is not None and (not isinstance(style, tuple) or len(style) != 2
                              or not all(isinstance(v, str) for v in style)):
        raise ValueError(f"style must be (colour, marker), e.g. ('tab:blue', 'o'), got {style!r}")
    if add_remove is not None and (not isinstance(add_remove, str) or not add_remove):
        raise ValueError(f"add_remove must be None, 'native' or why the mechanism cannot protect a row's presence, "
                         f"got {add_remove!r}")
    if add_remove == "native" and not callable(sensitivity):
        raise ValueError("add_remove='native' needs sensitivity=: a function problem -> the add/remove sensitivity "
                         "of the mechanism's statistic (e.g. lambda problem: problem.neighbours.covariance_l2("
                         "problem.radius, problem.n)), which the ledger states")
    if sensitivity is not None and add_remove != "native":
        raise ValueError("sensitivity= declares a native add/remove calibration: pass add_remove='native' with it")
    if name is not None and (not isinstance(name, str) or not name or set(name) & set(":. =,[]{}")):
        raise ValueError(f"name must be a non-empty string without ':', '.', spaces or brackets, got {name!r}")

    def decorate(fn: Callable) -> Callable:
        _check_signature(fn)
        path = f"{fn.__module__}:{fn.__qualname__}"
        mechanism = Mechanism(name or path, label or fn.__name__, notion, fn, source or path, plugin=True,
                              predict=predict, audit=audit or AuditNeeds(), style=style, needs=tuple(needs),
                              centre_rows=bool(centre_rows), idealized=bool(idealized),
                              add_remove=None if add_remove == "native" else add_remove,
                              native=add_remove == "native", native_sensitivity=sensitivity, clips=True)
        if name is not None:
            if name in MECHANISMS:
                raise ValueError(f"{name!r} is a built-in mechanism; give the plug-in another name")
            known = PLUGINS.get(name)
            if known is not None and f"{known.fn.__module__}:{known.fn.__qualname__}" != path:
                raise ValueError(f"plug-in name {name!r} is already taken by {known.source}")
            PLUGINS[name] = mechanism
        setattr(fn, _ATTRIBUTE, mechanism)
        DECLARED[path] = mechanism
        return fn

    return decorate


def _resolve_path(path: str) -> Mechanism:
    """The mechanism at ``"package.module:attribute"`` (imports the module)."""
    module_name, _, attribute = path.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"a plug-in mechanism is named 'package.module:function', got {path!r}")
    try:
        obj = importlib.import_module(module_name)
    except ImportError as err:
        raise ValueError(f"cannot import module {module_name!r} of plug-in mechanism {path!r} ({err}): "
                         f"put its directory on PYTHONPATH or pip install its package (worker processes "
                         f"need to import it too)") from None
    for part in attribute.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"plug-in mechanism {path!r}: module {module_name!r} has no {attribute!r}")
        obj = getattr(obj, part)
    mechanism = obj if isinstance(obj, Mechanism) else getattr(obj, _ATTRIBUTE, None)
    if not isinstance(mechanism, Mechanism):
        raise ValueError(f"{path!r} is not a mechanism: decorate it with "
                         f"@register_mechanism(notion=ZCDP, label=...) to declare its privacy notion")
    return replace(mechanism, name=path)


def declared_plugins() -> list[Mechanism]:
    """The plug-ins decorated in this process (imported modules), each once."""
    return list(DECLARED.values())


def get_mechanism(name) -> Mechanism:
    """A built-in name, a plug-in's short name or dotted path, or a decorated function itself."""
    if isinstance(name, Mechanism):
        return name
    if callable(name) and isinstance(getattr(name, _ATTRIBUTE, None), Mechanism):
        return getattr(name, _ATTRIBUTE)
    if not isinstance(name, str):
        raise ValueError(f"a mechanism is a name (str) or a @register_mechanism function, got {name!r}")
    if name in MECHANISMS:
        return MECHANISMS[name]
    if name in PLUGINS:
        return PLUGINS[name]
    if ":" in name:
        return _resolve_path(name)
    raise ValueError(f"unknown mechanism {name!r}; known: {', '.join(sorted(MECHANISMS))}"
                     + "".join(f", {p}" for p in sorted(PLUGINS))
                     + "; a plug-in is named by its dotted path 'package.module:function' (a short name "
                       "given by @register_mechanism exists only in processes that imported its module)")


def _import_root(module_name: str) -> str | None:
    """The sys.path entry ``module_name`` was imported from (None: unknown, e.g. a namespace)."""
    file = getattr(sys.modules.get(module_name), "__file__", None)
    if not file:
        return None
    path = Path(file).resolve()
    depth = module_name.count(".") + (2 if path.stem == "__init__" else 1)
    return str(path.parents[depth - 1])


def plugin_modules(names) -> list[tuple[str, str | None]]:
    """(module, the sys.path entry it came from) of the plug-ins among ``names``, for a worker
    process to import (``import_plugins``) before it runs them: short names exist only where their
    module was imported, and a worker's sys.path may predate the parent's. Plug-ins defined in
    ``__main__`` (a script or notebook) cannot be imported elsewhere and are left out."""
    modules = set()
    for name in names:
        if not isinstance(name, str) or (name not in PLUGINS and ":" not in name):
            continue
        module = get_mechanism(name).fn.__module__
        if module != "__main__":
            modules.add((module, _import_root(module)))
    return sorted(modules, key=str)


def import_plugins(modules) -> None:
    for module, root in modules:
        if root is not None and root not in sys.path:
            sys.path.append(root)
        importlib.import_module(module)


def _checked_output(mechanism: Mechanism, estimate, d: int):
    """A plug-in's release must be a finite symmetric d x d matrix (or Spectral): a clear error if not."""
    if isinstance(estimate, Spectral):
        vectors = np.asarray(estimate.vectors, dtype=float)
        if vectors.ndim != 2 or vectors.shape[0] != d or len(estimate.values) != vectors.shape[1] or \
                not np.allclose(vectors.T @ vectors, np.eye(vectors.shape[1]), atol=1e-8):
            raise ValueError(f"mechanism {mechanism.name!r} returned a Spectral whose vectors are not d x k with "
                             f"orthonormal columns (one value each): return the matrix instead")
        matrix = estimate.matrix()
    else:
        try:
            matrix = np.asarray(estimate, dtype=float)
        except (TypeError, ValueError):
            raise TypeError(f"mechanism {mechanism.name!r} returned {type(estimate).__name__}, "
                            f"expected a d x d matrix or a Spectral") from None
    if matrix.shape != (d, d):
        raise ValueError(f"mechanism {mechanism.name!r} returned shape {matrix.shape}, expected ({d}, {d})")
    if not np.all(np.isfinite(matrix)):
        raise ValueError(f"mechanism {mechanism.name!r} returned NaN or inf")
    magnitude = np.abs(matrix)  # np.allclose(matrix, matrix.T, rtol=1e-9, atol=...) without its overhead
    if not (np.abs(matrix - matrix.T) <= 1e-12 * max(1.0, float(magnitude.max())) + 1e-9 * magnitude.T).all():
        raise ValueError(f"mechanism {mechanism.name!r} returned a non-symmetric matrix")
    return estimate if isinstance(estimate, Spectral) else matrix


def check_options(name, options: dict) -> None:
    mechanism = get_mechanism(name)
    known = mechanism.option_names() if options else []  # (inspect.signature: not on every release)
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ValueError(f"unknown option(s) {unknown} for mechanism {mechanism.name!r}; known: {known or 'none'}")
    if mechanism.check is not None:
        mechanism.check(options)


def release(name, problem: CovProblem, budget: Budget, rng: np.random.Generator, *,
            options: dict | None = None, clamp: bool = True, spectral: bool = False,
            privacy_unit: str = "replace_one", count_share: float = COUNT_SHARE
            ) -> tuple[np.ndarray | Spectral, Accountant]:
    """Run mechanism ``name`` on ``problem`` so that the output satisfies ``budget``.

    ``privacy_unit``: "replace_one" (the papers' model: ``problem.n`` is public) or "add_remove" (a row's presence
    is protected: ``count_share`` of the budget releases the count ñ, the rows are resized to ñ -- a random ñ of
    them, or all padded with zero rows -- and the mechanism runs on them with ñ public: mechanisms/units.py). The
    problem must then hold its rows (``CovProblem.from_rows(X, radius, rows=X)``); the returned accountant is of
    the budget's notion, with the count's line and the mechanism's.

    ``name``: a built-in name, a plug-in's dotted path or short name, or a @register_mechanism
    function. The mechanism gets the largest budget of its own notion that implies ``budget`` and
    spends it through the returned accountant. ``clamp`` projects the eigenvalues of the released
    estimate into [0, r^2] (post-processing, so free of privacy cost). ``spectral``: return the
    release as a ``Spectral`` (eigenvalues and eigenvectors; as the mechanism gave them when it
    releases factored, e.g. the k eigenvectors of a top-k release) instead of a d x d matrix.
    """
    mechanism = get_mechanism(name)
    if not isinstance(problem, CovProblem):
        raise TypeError(f"problem must be a CovProblem (CovProblem.from_rows(X, radius=...)), got "
                        f"{type(problem).__name__}")
    if not isinstance(budget, (ZCDP, PureDP, ApproxDP)):
        raise TypeError(f"budget must be ZCDP(rho), PureDP(eps) or ApproxDP(eps, delta), got {budget!r}")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator (np.random.default_rng(seed)), got {rng!r}")
    options = dict(options or {})
    check_options(mechanism, options)
    missing = [o for o in mechanism.required_options() if o not in options]
    if missing:
        raise ValueError(f"mechanism {mechanism.name!r} needs option(s) {missing} (no default), e.g. "
                         f"options={{{missing[0]!r}: ...}}")
    if problem.raw_only and "raw rows" not in mechanism.needs:
        raise ValueError(f"mechanism {mechanism.name!r} needs rows in a ball and their sums: this problem has raw rows "
                         f"only (CovProblem.from_raw_rows); build it with CovProblem.from_rows")
    if problem.neighbours.add_remove and not mechanism.native:  # its replace-one proof needs at most n public rows
        raise ValueError(f"mechanism {mechanism.name!r} is calibrated for replace-one neighbours only: it cannot run "
                         f"on a problem summed over every row at the released count (add/remove, "
                         f"mechanisms/neighbours.py); release(..., privacy_unit='add_remove') on the rows runs it "
                         f"through the reduction")
    if check_privacy_unit(privacy_unit) == "add_remove":
        if problem.neighbours.add_remove:
            raise ValueError("this problem is already at the released count (add/remove): release it with "
                             "privacy_unit='replace_one' (the default), or pass the rows' own problem")
        return _release_add_remove(mechanism, problem, budget, rng, options, clamp, spectral, count_share)
    accountant = Accountant(budget_guaranteeing(budget, mechanism.notion))
    estimate = mechanism.fn(problem, accountant, rng, **options)
    if mechanism.plugin:
        estimate = _checked_output(mechanism, estimate, problem.d)
    if isinstance(estimate, regression.RidgeRelease):
        return estimate, accountant
    if spectral:
        factored = estimate if isinstance(estimate, Spectral) else Spectral.of(np.asarray(estimate))
        if clamp:
            factored = Spectral(np.clip(factored.values, 0.0, problem.radius**2), factored.vectors)
        return factored, accountant
    if clamp:
        return clamp_eigenvalues(estimate, 0.0, problem.radius**2), accountant
    return as_matrix(estimate), accountant


def _rows_sums(problem: CovProblem, kind):
    """The sums of ``problem.rows`` (``BandSums`` or ``ExactBandSums``), made once per problem and shared by every
    release on it (the rows are fixed; each trial only divides by its own released count)."""
    key = f"add_remove {kind.__name__}"
    if key not in problem.shared:
        problem.shared[key] = kind(problem.radius).add(problem.rows)
    return problem.shared[key]


REDUCTION_ROUTE = "add/remove by the reduction: rows resized to the released count, replace-one calibration"


def native_route(mechanism: Mechanism, problem: CovProblem) -> str:
    """The ledger's line for a native add/remove release: a plug-in's declared sensitivity (``native_sensitivity``,
    from the public facts only), refused unless a positive finite number; each built-in step prints its own."""
    if mechanism.native_sensitivity is None:
        return "native add/remove: every row, / the released count"
    public = SimpleNamespace(radius=problem.radius, n=problem.n, d=problem.d, neighbours=problem.neighbours)
    value = mechanism.native_sensitivity(public)  # public facts only: the ledger prints it
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)) or not np.isfinite(value) \
            or value <= 0:
        raise ValueError(f"mechanism {mechanism.name!r}: its declared add/remove sensitivity must be a positive finite "
                         f"number, got {value!r}")
    return f"native add/remove: every row, / the released count; declared sensitivity {float(value):.6g}"


def _release_add_remove(mechanism: Mechanism, problem: CovProblem, budget: Budget, rng: np.random.Generator,
                        options: dict, clamp: bool, spectral: bool, count_share: float):
    """release under add/remove neighbours (mechanisms/units.py): the count, the rows resized to it, the mechanism
    at the rest of the budget with the released count public. Basic composition in one accountant."""
    if mechanism.add_remove is not None:
        raise ValueError(f"mechanism {mechanism.name!r} cannot protect a row's presence (privacy_unit='add_remove'): "
                         f"{mechanism.add_remove}")
    if problem.rows is None:
        raise ValueError("release(privacy_unit='add_remove') resizes the rows to the released count: build the "
                         "problem with its rows, CovProblem.from_rows(X, radius, rows=X)")
    check_count_share(count_share)
    accountant = Accountant(budget)
    selection, = selection_generators(rng, 1)  # before the count: the resize's keys depend on the row index alone
    n_public = private_count(problem.n, budget.scaled(count_share), accountant, rng)
    hardened = options.get("numerics") == "hardened"
    if mechanism.native:  # every row, divided by ñ, each step at its add/remove sensitivity (mechanisms/neighbours.py)
        if problem.raw_only:  # rows with no bound (TukeyEM): every row, the released count public
            resized = replace(problem, n=n_public, neighbours=ADD_REMOVE)
        elif hardened:  # exact sums: no float error grows with the private row count (mechanisms/exact_sums.py)
            resized = exact_problem(_rows_sums(problem, ExactBandSums), n_public, problem.ridge)
        else:
            resized = _rows_sums(problem, BandSums).problem(ridge=problem.ridge, n_public=n_public, native=True)
        if mechanism.plugin or mechanism.needs:
            resized = replace(resized, rows=problem.rows)
        route = native_route(mechanism, resized)
    else:
        drop = resized_drop(np.arange(problem.n), n_public, selection)
        if hardened or problem.band_sums is None:  # every sum rebuilt: within its bounds
            kept = np.delete(problem.rows, drop, axis=0)
            resized = BandSums(problem.radius).add(kept).problem(ridge=problem.ridge, rows=kept, n_public=n_public)
        else:  # idealized: from the problem's own sums, the dropped rows' subtracted (O(dropped d^2), not O(n d^2));
            # the rows themselves only for a mechanism that may read them (a plug-in; the built-ins read them hardened)
            kept = np.delete(problem.rows, drop, axis=0) if mechanism.plugin or mechanism.needs else None
            resized = problem.resized(n_public, problem.rows[drop], rows=kept)
        route = REDUCTION_ROUTE
    rest = budget.scaled(1 - count_share)
    estimate, inner = release(mechanism, resized, rest, rng, options=options, clamp=clamp, spectral=spectral)
    accountant.spend(rest, f"{mechanism.label} (spent nothing)")
    accountant.ledger[-1:] = [(f"{what} [{route}]", b) for what, b in inner.ledger] or \
        [(f"{what} [{route}]", b) for what, b in accountant.ledger[-1:]]
    accountant.released = inner.released
    return estimate, accountant
