"""Issue 58's two leaks measured from the public API, on whichever dpcov this interpreter imports (run it with the
old code's environment and the new one's; --combine puts the two runs side by side):

1. band counts by the two summation paths: BandSums(1).add(X).counts against BandSums(1).add_columns(X.T).counts,
   X = 20000 rows of norm 1/2 (uniform directions times 0.5, data seed 0), d = 20;
2. AdaptiveCov's released radius with the count held: P(r~ = r) on D (n rows of norm 1/2) and on D' = D plus one
   row, count held at n (D' then drops a row) and at n + 3 (neither drops one);
3. the default estimator (mechanism="auto", which picks adaptive here) at n = 33000: the event {count_ = n,
   r~ = r} on D and D', as P(count noise = 0 resp. -1) (the count's exact noise law, units.count_noise) times
   P(r~ = r | count held at n) (seeds; Clopper-Pearson intervals), and the implied
   delta >= P(E | D') - e^eps P(E | D);
4. persons, k = 2: D = persons of two rows, D' = D with one person given a third row (dropped by the fit):
   P(r~ = r/2), the count held at the n rows left (and drawn);
5. the ledger text: D = rows of norms 0.45 and 0.2 (bands 1, 2), D' = D with its last row at norm 0.9 (band 0,
   empty on D), mechanism="adaptive", radius="known", hardened numerics, the same seed on both: seeds whose ledger
   texts agree, and the AdaptiveCov SVT's float-error term on each.

How the count is held and r~ read: with dpcov.mechanisms.transcript (the new code), Transcript(force={"count": n})
around the fit, r~ = r 2^-(k-1) from the "PrivRadius: SVT" step's output k; without it (the old code),
dpcov.estimators.private_count wrapped (it still draws and spends, then returns n) and r~ = r 2^-m0 from
dpcov.mechanisms.adaptive.private_radius_exponent's return m0, wrapped. On the new code both are read and must agree.

    python scripts/observables.py --json /tmp/obs_after.json            # the full run (~ a few minutes on 2 cores)
    python scripts/observables.py --quick                               # fewer seeds
    python scripts/observables.py --combine /tmp/obs_before.json /tmp/obs_after.json

Every fit is seeded (random_state = seed); data from np.random.default_rng(data seed); BLAS at one thread.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import hashlib
import json
import math
import platform
import re
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

import dpcov
import dpcov.estimators as est_module
import dpcov.mechanisms
import dpcov.mechanisms.adaptive as adaptive
from dpcov.mechanisms.problem import BandSums
from dpcov.mechanisms.units import COUNT_SHARE, count_noise

try:  # the code after issue 58's fix; the old code (95e4815) has no transcript
    from dpcov.mechanisms.transcript import Transcript
except ImportError:
    Transcript = None

# --- the measured cases (public facts only; printed with the results) ---------------------------------------------
CASES = {
    "1": {"n": 20000, "d": 20, "norm": 0.5, "radius": 1.0, "data_seed": 0},
    # the issue's item 2 without its budget: first at the default estimator's (the threshold of PrivRadius's SVT
    # then lies between the two paths' band-0 counts at n = 33000), then on item 1's rows at a zCDP budget whose
    # threshold lies between them at n = 20000
    "2": [{"n": 33000, "d": 20, "budget": ["approx", 1.0, 1e-6], "data_seed": 0},
          {"n": 20000, "d": 20, "budget": ["zcdp", 0.05], "data_seed": 0}],
    "3": {"n": 33000, "d": 20, "budget": ["approx", 1.0, 1e-6], "data_seed": 0, "mechanism": "auto"},
    # PrivRadius's threshold at the row budget (0.5, 1.8e-7) lies near the old add path's band 0 at n = 80000 rows
    # (40000 persons), near the streamed pass's band 0 (every path's, in the new code) at n = 60000
    "4": [{"n": 80000, "d": 20, "k": 2, "budget": ["approx", 1.0, 1e-6], "data_seed": 0},
          {"n": 60000, "d": 20, "k": 2, "budget": ["approx", 1.0, 1e-6], "data_seed": 0}],
    "5": {"n": 2000, "d": 5, "norms": [0.45, 0.2], "moved_norm": 0.9, "budget": ["approx", 1.0, 1e-6],
          "data_seed": 5},
}
DP, PDP = "D'", "persons D'"  # the neighbours' keys
SEEDS = {"full": {"2": 150, "3": 3000, "4": 150, "5": 20}, "quick": {"2": 20, "3": 100, "4": 20, "5": 5}}


def make_budget(spec):
    kind, *args = spec
    return {"approx": dpcov.ApproxDP, "zcdp": dpcov.ZCDP, "pure": dpcov.PureDP}[kind](*args)


def sphere_rows(n: int, d: int, norm: float, seed: int) -> np.ndarray:
    """n rows of norm ``norm`` (up to rounding): standard normal directions normalised, times ``norm``. The first m
    rows of n > m are the m rows (numpy fills row by row)."""
    g = np.random.default_rng(seed).standard_normal((n, d))
    return g / np.linalg.norm(g, axis=1, keepdims=True) * norm


def has_transcript() -> bool:
    return Transcript is not None


@contextlib.contextmanager
def observed(count: int | None):
    """Holds the released count at ``count`` (None: drawn) and records PrivRadius's m0 (r~ = r 2^-m0) of the fit
    run inside: seen["m0"] (the wrapped private_radius_exponent's returns), and on the new code seen["tape_m0"]
    (from the transcript) and seen["count_out"] (the count step's outputs)."""
    seen = {"m0": [], "count_drawn": []}
    original_radius = adaptive.private_radius_exponent

    def radius_exponent(*args, **kwargs):
        m0 = original_radius(*args, **kwargs)
        seen["m0"].append(int(m0))
        return m0

    adaptive.private_radius_exponent = radius_exponent
    try:
        if has_transcript():
            with Transcript(force={} if count is None else {"count": int(count)}) as tape:
                yield seen
            seen["tape_m0"] = [int(s.output) - 1 for s in tape.steps if s.kind == "svt" and s.what == "PrivRadius: SVT"]
            seen["count_out"] = [int(s.output) for s in tape.steps if s.kind == "count"]
            if seen["tape_m0"] != seen["m0"]:
                raise AssertionError(f"transcript's r~ {seen['tape_m0']} against private_radius_exponent's "
                                     f"{seen['m0']}")
        else:
            original_count = est_module.private_count
            if count is not None:
                def held(n, *args, **kwargs):  # draws and spends as the fit would, then releases ``count``
                    seen["count_drawn"].append(int(original_count(n, *args, **kwargs)))
                    return int(count)
                est_module.private_count = held
            try:
                yield seen
            finally:
                est_module.private_count = original_count
    finally:
        adaptive.private_radius_exponent = original_radius


def fit_radius(data_key, seeds, count, budget_spec, mechanism, persons_k=None):
    """One worker's share: per seed, (m0, count_, mechanism_) of a fit of the dataset ``data_key`` with the count
    held at ``count`` (None: drawn)."""
    from threadpoolctl import threadpool_limits
    X, persons = dataset(*data_key)
    out = []
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # UselessReleaseWarning and the like: not what is measured
        for seed in seeds:
            options = {} if persons_k is None else {"max_rows_per_person": persons_k}
            est = dpcov.PrivateCovariance(mechanism=mechanism, budget=make_budget(budget_spec), radius=1.0,
                                          centering="assume_centered", random_state=int(seed), **options)
            with observed(count) as seen:
                est.fit(X, **({} if persons is None else {"persons": persons}))
            if len(seen["m0"]) != 1:
                raise AssertionError(f"PrivRadius ran {len(seen['m0'])} times in one fit (seed {seed})")
            out.append((seen["m0"][0], int(est.count_), str(est.mechanism_)))
    return out


def dataset(kind, n, d, seed, extra):
    """("D" | "D'" | "persons D" | "persons D'", n, d, data seed, k): the rows (and persons' ids)."""
    rows = sphere_rows(n + 1, d, 0.5, seed)
    if kind == "D":
        return rows[:n], None
    if kind == "D'":
        return rows, None
    ids = np.arange(n) // extra
    if kind == "persons D":
        return rows[:n], ids
    return rows, np.r_[ids, 0]  # person 0 gets a third row


def run_seeds(jobs, data_key, n_seeds, count, budget_spec, mechanism, persons_k=None):
    seeds = np.arange(n_seeds)
    chunks = [c for c in np.array_split(seeds, max(1, jobs * 4)) if len(c)]
    if jobs > 1:
        from joblib import Parallel, delayed
        parts = Parallel(n_jobs=jobs)(delayed(fit_radius)(data_key, c.tolist(), count, budget_spec, mechanism,
                                                          persons_k) for c in chunks)
    else:
        parts = [fit_radius(data_key, c.tolist(), count, budget_spec, mechanism, persons_k) for c in chunks]
    return [r for part in parts for r in part]


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    from scipy.stats import beta
    a = (1 - level) / 2
    lo = 0.0 if k == 0 else float(beta.ppf(a, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(1 - a, k + 1, n - k))
    return lo, hi


def noise_pmf(kind: str, scale: float, zs) -> list[float]:
    """P(Z = z) of the count's noise, normalised numerically over |z| <= 60 scale (+ 10)."""
    half = int(math.ceil(60 * scale)) + 10
    grid = np.arange(-half, half + 1, dtype=float)
    if kind == "discrete Laplace":
        weight = lambda z: np.exp(-np.abs(z) / scale)  # noqa: E731
    elif kind == "discrete Gaussian":
        weight = lambda z: np.exp(-np.square(z) / (2 * scale**2))  # noqa: E731
    else:
        raise ValueError(f"unknown noise {kind!r}")
    total = float(weight(grid).sum())
    return [float(weight(np.array([float(z)]))[0]) / total for z in zs]


# --- the five measurements -----------------------------------------------------------------------------------------
def item1():
    c = CASES["1"]
    X = sphere_rows(c["n"], c["d"], c["norm"], c["data_seed"])
    by_add = BandSums(c["radius"]).add(X).counts
    sums = BandSums(c["radius"])
    sums.add_columns(X.T)
    by_columns = sums.counts
    exact_above = int((np.linalg.norm(X, axis=1) > c["norm"]).sum())  # numpy's own norms, for reference
    return {"add": {int(k): int(v) for k, v in sorted(by_add.items())},
            "add_columns": {int(k): int(v) for k, v in sorted(by_columns.items())},
            "numpy_norm_above_half": exact_above}


def item2(jobs, n_seeds):
    results = []
    for c in CASES["2"]:
        n, d = c["n"], c["d"]
        row = {"case": c, "seeds": n_seeds, "by_count": {}}
        for offset in (0, 3):
            cell = {}
            for kind in ("D", "D'"):
                recs = run_seeds(jobs, (kind, n, d, c["data_seed"], 0), n_seeds, n + offset, c["budget"], "adaptive")
                assert all(r[1] == n + offset for r in recs)
                cell[kind] = {"r~=r": sum(r[0] == 0 for r in recs), "m0_histogram": histogram(r[0] for r in recs)}
            row["by_count"][f"n+{offset}"] = cell
        results.append(row)
    return results


def item3(jobs, n_seeds):
    c = CASES["3"]
    n, d = c["n"], c["d"]
    budget = make_budget(c["budget"])
    share = dpcov.PrivateCovariance().get_params().get("count_share", COUNT_SHARE)
    kind, scale = count_noise(budget.scaled(share))
    p0, pm1 = noise_pmf(kind, scale, (0, -1))
    if kind == "discrete Laplace":  # the closed form, as a check of the numerical normalisation
        q = math.exp(-1 / scale)
        assert abs(p0 - (1 - q) / (1 + q)) < 1e-12 * p0 and abs(pm1 - (1 - q) / (1 + q) * q) < 1e-12 * pm1
    out = {"case": c, "seeds": n_seeds, "count_share": share, "count_noise": [kind, float(scale)],
           "P(Z=0)": p0, "P(Z=-1)": pm1, "eps": budget.eps}
    # the ledger's count line names the same noise
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        X, _ = dataset("D", n, d, c["data_seed"], 0)
        est = dpcov.PrivateCovariance(mechanism="auto", budget=budget, radius=1.0, centering="assume_centered",
                                      random_state=0).fit(X)
    count_line = next(text for text, _ in est.ledger_ if text.startswith("count"))
    out["ledger_count_line"] = count_line
    out["ledger_names_same_noise"] = f"{kind} of scale {scale:.4g}" in count_line
    for name, noise_p in (("D", p0), ("D'", pm1)):
        recs = run_seeds(jobs, (name, n, d, c["data_seed"], 0), n_seeds, n, c["budget"], "auto")
        hits = sum(r[0] == 0 for r in recs)
        lo, hi = clopper_pearson(hits, len(recs))
        out[name] = {"r~=r": hits, "of": len(recs), "cp95": [lo, hi], "P(E)": noise_p * hits / len(recs),
                     "P(E) cp95": [noise_p * lo, noise_p * hi], "mechanisms": sorted({r[2] for r in recs})}
    e = math.exp(budget.eps)
    out["delta_point"] = out["D'"]["P(E)"] - e * out["D"]["P(E)"]
    # each end one-sided 97.5 %: >= 95 % jointly (union bound)
    out["delta_lower95"] = out["D'"]["P(E) cp95"][0] - e * out["D"]["P(E) cp95"][1]
    return out


def item4(jobs, n_seeds):
    return [item4_case(c, jobs, n_seeds) for c in CASES["4"]]


def item4_case(c, jobs, n_seeds):
    n, d, k = c["n"], c["d"], c["k"]
    out = {"case": c, "seeds": n_seeds}
    for label, count in (("count held at n", n), ("count drawn", None)):
        cell = {}
        for kind in ("persons D", "persons D'"):
            recs = run_seeds(jobs, (kind, n, d, c["data_seed"], k), n_seeds, count, c["budget"], "adaptive", k)
            hits = sum(r[0] == 1 for r in recs)
            cell[kind] = {"r~=r/2": hits, "of": len(recs), "cp95": list(clopper_pearson(hits, len(recs))),
                          "m0_histogram": histogram(r[0] for r in recs)}
        a, b = cell["persons D"]["r~=r/2"], cell["persons D'"]["r~=r/2"]
        cell["log ratio"] = math.log(a / b) if a and b else (math.inf if a or b else 0.0)
        low_d, high_dp = cell["persons D"]["cp95"][0], cell[PDP]["cp95"][1]  # one-sided 97.5 % each
        cell["log ratio lower95"] = math.log(low_d / high_dp) if low_d > 0 else -math.inf
        out[label] = cell
    # the radius step's eps per row (the ledger), and what group privacy over k rows allows it per person
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        X, ids = dataset("persons D", n, d, c["data_seed"], k)
        est = dpcov.PrivateCovariance(mechanism="adaptive", budget=make_budget(c["budget"]), radius=1.0,
                                      centering="assume_centered", random_state=0, max_rows_per_person=k)
        est.fit(X, persons=ids)
    step = next(b for text, b in est.ledger_ if "PrivRadius: SVT" in text)
    out["radius_step_eps_per_row"] = float(step.eps)
    out["radius_step_eps_per_person"] = float(step.eps) * k
    return out


def item5(n_seeds):
    from threadpoolctl import threadpool_limits
    c = CASES["5"]
    n, d = c["n"], c["d"]
    g = np.random.default_rng(c["data_seed"]).standard_normal((n + 1, d))
    units = g / np.linalg.norm(g, axis=1, keepdims=True)
    norms = np.where(np.arange(n) < n // 2, c["norms"][0], c["norms"][1])
    D = units[:n] * norms[:, None]
    D_prime = D.copy()
    D_prime[-1] = units[n] * c["moved_norm"]
    pattern = re.compile(r"AdaptiveCov: SVT .*?sensitivity 1 \+ (\S+) \(float error\)")
    same, same_term, terms, differing = 0, 0, {"D": set(), "D'": set()}, []
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in range(n_seeds):
            texts = {}
            for name, X in (("D", D), ("D'", D_prime)):
                est = dpcov.PrivateCovariance(mechanism="adaptive", budget=make_budget(c["budget"]), radius=1.0,
                                              centering="assume_centered", mechanism_options={"radius": "known"},
                                              random_state=seed).fit(X)
                texts[name] = [text for text, _ in est.ledger_]
                found = [m.group(1) for m in map(pattern.search, texts[name]) if m]
                terms[name].update(found)
                texts[name + " term"] = found
            same += texts["D"] == texts["D'"]
            same_term += texts["D term"] == texts["D' term"]
            if texts["D"] != texts["D'"] and len(differing) < 3:
                differing.append({"seed": seed, "lines": [[a, b] for a, b in zip(texts["D"], texts["D'"]) if a != b]})
    return {"case": c, "seeds": n_seeds, "ledger identical": same, "SVT float-error term identical": same_term,
            "terms on D": sorted(terms["D"]), "terms on D'": sorted(terms["D'"]), "first differing": differing}


def histogram(values) -> dict:
    values = list(values)
    return {int(v): values.count(v) for v in sorted(set(values))}


# --- provenance and printing ---------------------------------------------------------------------------------------
def provenance() -> dict:
    root = Path(dpcov.__file__).resolve().parent.parent

    def git(*args):
        try:
            return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout
        except (OSError, subprocess.CalledProcessError):
            return ""
    files = {}  # the importable code: the packages' .py files (pyproject's package-dir), each file's sha1
    for folder in ("dpcov", "mechanisms", "data"):
        for path in sorted((root / folder).rglob("*.py")):
            files[str(path.relative_to(root))] = hashlib.sha1(path.read_bytes()).hexdigest()
    code = hashlib.sha1(json.dumps(files, sort_keys=True).encode())
    changed = [line[3:] for line in git("status", "--porcelain", "--untracked-files=no").splitlines()]
    return {"dpcov": dpcov.__file__, "dpcov.mechanisms": dpcov.mechanisms.__file__, "tree": str(root),
            "commit": git("rev-parse", "HEAD").strip(), "uncommitted": changed, "code_sha1": code.hexdigest(),
            "code_files": files,
            "uncommitted_diff_sha1": hashlib.sha1(git("diff", "HEAD").encode()).hexdigest() if changed else None,
            "transcript": has_transcript(), "python": platform.python_version(), "numpy": np.__version__,
            "machine": platform.machine(), "date": datetime.datetime.now().isoformat(timespec="seconds")}


def fmt_counts(counts: dict) -> str:
    return ", ".join(f"band {k}: {v}" for k, v in counts.items())


def report(res: dict) -> str:
    p = res["provenance"]
    lines = [f"dpcov from {p['dpcov']} (mechanisms: {p['dpcov.mechanisms']}); commit {p['commit'][:12]}"
             + (f" + uncommitted {', '.join(p['uncommitted'])} (diff sha1 {p['uncommitted_diff_sha1'][:12]})"
                if p["uncommitted"] else "") + f"; transcript module: {'yes' if p['transcript'] else 'no'}",
             f"{res['mode']} run, n_jobs={res['jobs']}, {p['date']}, python {p['python']}, numpy {p['numpy']}; "
             f"seconds per item: {', '.join(f'{k}: {v:.0f}' for k, v in res['seconds'].items())}",
             f"the packages' code (dpcov/, mechanisms/, data/ *.py) sha1 {p['code_sha1'][:12]} at the start, "
             + ("the same at the end" if res["code_unchanged"] else
                f"{res['provenance_end']['code_sha1'][:12]} at the end: edited during the run: "
                f"{', '.join(res['code_edited'])}; of those, imported by this run: "
                f"{', '.join(res['loaded_code_edited']) or 'none'}")
             + f"; commit at the end {res['provenance_end']['commit'][:12]}", ""]
    r1 = res["1"]
    lines += [f"1. band counts, {CASES['1']['n']} rows of norm 1/2, d = {CASES['1']['d']}, radius 1:",
              f"   add:         {fmt_counts(r1['add'])}", f"   add_columns: {fmt_counts(r1['add_columns'])}",
              f"   (np.linalg.norm > 1/2: {r1['numpy_norm_above_half']} rows)", ""]
    lines.append("2. AdaptiveCov, radius 1, count held; seeds with r~ = r (PrivRadius m0 = 0):")
    for row in res["2"]:
        c = row["case"]
        lines.append(f"   n = {c['n']}, d = {c['d']}, budget {c['budget']}, {row['seeds']} seeds each:")
        for held, cell in row["by_count"].items():
            lines.append(f"     count = {held}: D {cell['D']['r~=r']}/{row['seeds']}, D' {cell[DP]['r~=r']}"
                         f"/{row['seeds']}   (m0 histograms D {cell['D']['m0_histogram']}, D' "
                         f"{cell[DP]['m0_histogram']})")
    r3 = res["3"]
    lines += ["", f"3. default estimator (mechanism='auto' -> {r3['D']['mechanisms']} on D, {r3[DP]['mechanisms']} "
              f"on D'), n = {r3['case']['n']}, d = {r3['case']['d']}, {r3['case']['budget']}:",
              f"   count noise {r3['count_noise'][0]} of scale {r3['count_noise'][1]:.6g} (count_share "
              f"{r3['count_share']}; the ledger says so: {r3['ledger_names_same_noise']}): "
              f"P(Z = 0) = {r3['P(Z=0)']:.6g}, "
              f"P(Z = -1) = {r3['P(Z=-1)']:.6g}"]
    for name in ("D", "D'"):
        cell = r3[name]
        lines.append(f"   {name:2s} P(r~ = r | count = n) = {cell['r~=r']}/{cell['of']} = "
                     f"{cell['r~=r'] / cell['of']:.4f} "
                     f"[{cell['cp95'][0]:.4f}, {cell['cp95'][1]:.4f}];  P(E) = {cell['P(E)']:.3e} "
                     f"[{cell['P(E) cp95'][0]:.3e}, {cell['P(E) cp95'][1]:.3e}]")
    lines += [f"   delta >= P(E|D') - e^{r3['eps']:g} P(E|D) = {r3['delta_point']:.3e} (point); "
              f"{r3['delta_lower95']:.3e} "
              f"(CP ends: lower on D', upper on D)", ""]
    lines.append("4. persons: rows of norm 1/2 in persons of k, D' = one person with a third row; seeds with r~ = r/2:")
    for r4 in res["4"]:
        lines.append(f"  k = {r4['case']['k']}, n = {r4['case']['n']} rows, d = {r4['case']['d']}, "
                     f"{r4['case']['budget']}, "
                     f"{r4['seeds']} seeds each:")
        lines += item4_lines(r4)
    r5 = res["5"]
    lines += [f"   PrivRadius's eps: {res['4'][0]['radius_step_eps_per_row']:.4g} per row, "
              f"{res['4'][0]['radius_step_eps_per_person']:.4g} per person (k rows)", ""]
    lines += [f"5. ledger, D = {r5['case']['n']} rows of norms {r5['case']['norms']}, D' = last row at norm "
              f"{r5['case']['moved_norm']}; adaptive, radius known, hardened, the same seed on both:",
              f"   ledger text identical in {r5['ledger identical']} of {r5['seeds']} seeds; "
              f"AdaptiveCov SVT's float-error "
              f"term identical in {r5['SVT float-error term identical']} of {r5['seeds']}",
              f"   float-error terms: D {r5['terms on D']}, D' {r5['terms on ' + DP]}"]
    for diff in r5["first differing"]:
        for a, b in diff["lines"][:2]:
            lines.append(f"   seed {diff['seed']}: D  {a}\n   {' ' * len(str(diff['seed']))}       D' {b}")
    return "\n".join(lines)


def item4_lines(r4) -> list[str]:
    lines = []
    for label in ("count held at n", "count drawn"):
        cell = r4[label]
        a, b = cell["persons D"], cell[PDP]
        lines.append(f"   {label:15s}: D {a['r~=r/2']}/{a['of']} [{a['cp95'][0]:.3f}, {a['cp95'][1]:.3f}], "
                     f"D' {b['r~=r/2']}/{b['of']} [{b['cp95'][0]:.3f}, {b['cp95'][1]:.3f}]; ln(D/D') = "
                     f"{cell['log ratio']:.2f} (>= {cell['log ratio lower95']:.2f} by the CP ends)  "
                     f"(m0: D {a['m0_histogram']}, "
                     f"D' {b['m0_histogram']})")
    return lines


def combine(before: dict, after: dict) -> str:
    def two(fn):
        return fn(before), fn(after)

    rows = []
    b, a = two(lambda r: (r["1"]["add"].get("0", r["1"]["add"].get(0)),
                          r["1"]["add_columns"].get("0", r["1"]["add_columns"].get(0))))
    rows.append(("1  band 0, add vs add_columns", f"{b[0]} vs {b[1]}", f"{a[0]} vs {a[1]}"))
    for i, case in enumerate(before["2"]):
        for held in ("n+0", "n+3"):
            f = lambda r: r["2"][i]["by_count"][held]  # noqa: E731
            b, a = two(f)
            s = case["seeds"]
            rows.append((f"2  r~=r, D vs D', n={case['case']['n']} {case['case']['budget'][0]}, "
                         f"count {held.replace('+0', '')}",
                         f"{b['D']['r~=r']}/{s} vs {b[DP]['r~=r']}/{s}",
                         f"{a['D']['r~=r']}/{after['2'][i]['seeds']} vs {a[DP]['r~=r']}/{after['2'][i]['seeds']}"))
    b, a = two(lambda r: r["3"])
    for name in ("D", "D'"):
        rows.append((f"3  P(r~=r | count=n) on {name}", f"{b[name]['r~=r']}/{b[name]['of']}",
                     f"{a[name]['r~=r']}/{a[name]['of']}"))
        rows.append((f"3  P(E) on {name}", f"{b[name]['P(E)']:.2e}", f"{a[name]['P(E)']:.2e}"))
    rows.append(("3  delta >= (point)", f"{b['delta_point']:.2e}", f"{a['delta_point']:.2e}"))
    rows.append(("3  delta >= (95 % CP ends)", f"{b['delta_lower95']:.2e}", f"{a['delta_lower95']:.2e}"))
    for i, case in enumerate(before["4"]):
        for label in ("count held at n", "count drawn"):
            b, a = two(lambda r: r["4"][i][label])  # noqa: B023
            rows.append((f"4  r~=r/2, D vs D', n={case['case']['n']}, {label}",
                         f"{b['persons D']['r~=r/2']}/{b['persons D']['of']} vs {b[PDP]['r~=r/2']}/{b[PDP]['of']}",
                         f"{a['persons D']['r~=r/2']}/{a['persons D']['of']} vs {a[PDP]['r~=r/2']}/{a[PDP]['of']}"))
    b, a = two(lambda r: r["5"])
    rows.append(("5  ledger identical (seeds)", f"{b['ledger identical']}/{b['seeds']}",
                 f"{a['ledger identical']}/{a['seeds']}"))
    rows.append(("5  SVT float-error term identical", f"{b['SVT float-error term identical']}/{b['seeds']}",
                 f"{a['SVT float-error term identical']}/{a['seeds']}"))
    def span(terms):
        values = sorted(terms, key=float)
        return "none" if not values else values[0] if len(values) == 1 else f"{values[0]}..{values[-1]}"
    rows.append(("5  float-error terms D | D' (range)", f"{span(b['terms on D'])} | {span(b['terms on ' + DP])}",
                 f"{span(a['terms on D'])} | {span(a['terms on ' + DP])}"))
    width = max(len(r[0]) for r in rows) + 2
    wb = max(len(r[1]) for r in rows) + 2
    out = [f"{'':{width}s}{'before':{wb}s}after", *(f"{r[0]:{width}s}{r[1]:{wb}s}{r[2]}" for r in rows)]
    return "\n".join(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer seeds (items 2-5)")
    parser.add_argument("--jobs", type=int, default=2, help="joblib processes for the seeded fits (default 2)")
    parser.add_argument("--json", type=Path, help="also write the results here (for --combine)")
    parser.add_argument("--only", default="12345", help="the items to run, e.g. 15 (default all)")
    parser.add_argument("--combine", nargs=2, type=Path, metavar=("BEFORE", "AFTER"),
                        help="print the before/after table of two --json files and exit")
    args = parser.parse_args(argv)
    if args.combine:
        before, after = (json.loads(p.read_text()) for p in args.combine)
        print(combine(before, after))
        return 0
    from threadpoolctl import threadpool_limits
    threadpool_limits(1)
    mode = "quick" if args.quick else "full"
    seeds = SEEDS[mode]
    res = {"mode": mode, "jobs": args.jobs, "provenance": provenance(), "cases": CASES, "seconds": {}}
    steps = {"1": item1, "2": lambda: item2(args.jobs, seeds["2"]), "3": lambda: item3(args.jobs, seeds["3"]),
             "4": lambda: item4(args.jobs, seeds["4"]), "5": lambda: item5(seeds["5"])}
    for key in args.only:
        start = time.time()
        res[key] = steps[key]()
        res["seconds"][key] = time.time() - start
        print(f"[item {key}: {res['seconds'][key]:.0f} s]", file=sys.stderr, flush=True)
    end = provenance()
    res["provenance_end"] = end
    start = res["provenance"]["code_files"]
    loaded = {str(Path(m.__file__).resolve().relative_to(Path(res["provenance"]["tree"])))
              for name, m in list(sys.modules.items())
              if (name == "dpcov" or name.startswith("dpcov.")) and getattr(m, "__file__", None)}
    res["code_edited"] = sorted(f for f in set(start) | set(end["code_files"])
                                if start.get(f) != end["code_files"].get(f))
    res["loaded_code_edited"] = sorted(set(res["code_edited"]) & loaded)
    res["code_unchanged"] = not res["code_edited"]
    if args.json:
        args.json.write_text(json.dumps(res, indent=1, default=str))
    if set(args.only) >= set("12345"):
        print(report(res))
    else:
        print(json.dumps({k: res[k] for k in args.only}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
