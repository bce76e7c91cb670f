"""Check the package as a new user gets it: build the wheel, install it into a fresh virtual
environment, and from a temporary directory (no checkout on the path) run the first command, the private
table pipeline on the shipped example file, a short audit and an estimator fit. The wheel must install one
top-level name, dpcov, and the directory holds a user's own data.py, experiments.py, figures.py,
mechanisms.py, audits.py and conf/ (common names, which the package must not collide with). CI runs this
(.ci/run); it prints each command and its output.

    python scripts/check_wheel.py [--keep DIR]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIT = """
import numpy as np
from dpcov import PrivatePCA, ZCDP
X = np.random.default_rng(0).normal(size=(5000, 6)) * [3, 2, 1, 0.5, 0.5, 0.5] / 12
pca = PrivatePCA(2, budget=ZCDP(0.5), radius=1.0, centering="private", random_state=0).fit(X)
print(f"PrivatePCA: mechanism_={pca.mechanism_}, spent {pca.ledger_}")
print("components_:", np.round(pca.components_, 2).tolist())
from dpcov import ApproxDP, PrivateCovariance  # (eps, delta): the hardened mean's discrete Gaussian curve (mpmath)
cov = PrivateCovariance(budget=ApproxDP(1.0, 1e-6), radius=1.0, centering="private", random_state=0).fit(X)
print(f"PrivateCovariance (eps, delta): mechanism_={cov.mechanism_}, count_={cov.count_}")
import os, tempfile  # a session file: started only when asked (new=True), then resumed by a second object
from dpcov import Session
path = os.path.join(tempfile.mkdtemp(), "visits.dpsession")
session = Session(ZCDP(1.0), path=path, new=True)
PrivateCovariance(budget=ZCDP(0.3), radius=1.0, centering="assume_centered", session=session, random_state=0).fit(X)
print(f"Session: spent {Session.open(path).spent}, guarantees {session.guarantees()}")
"""
USER_FILES = {name: f"raise ImportError('the user\\'s own {name} was imported')\n"
              for name in ("data.py", "experiments.py", "figures.py", "mechanisms.py", "audits.py", "conf/__init__.py")}


def top_level_names(wheel: Path) -> set[str]:
    """The import names a wheel installs: its top-level folders and modules (not its .dist-info)."""
    with zipfile.ZipFile(wheel) as archive:
        tops = {name.split("/")[0] for name in archive.namelist()}
    return {top.removesuffix(".py") for top in tops if not top.endswith((".dist-info", ".data"))}


def step(title: str, command: list[str], cwd: Path, env: dict, expect: int = 0) -> str:
    print(f"\n$ {' '.join(command)}    ({title})", flush=True)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    output = done.stdout + done.stderr
    print(output.rstrip() + f"\n[{title}: exit {done.returncode}, {time.perf_counter() - start:.1f} s]", flush=True)
    if done.returncode != expect:
        sys.exit(f"check_wheel: {title} failed (exit {done.returncode})")
    return output


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keep", type=Path, help="work here (kept) instead of a temporary directory")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="dpcov-wheel-"))
    work.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    step("build the wheel", [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(work / "dist"),
                             str(ROOT)], ROOT, env)
    wheel = next((work / "dist").glob("dpcov-*.whl"))
    names = top_level_names(wheel)
    print(f"\n{wheel.name} installs the top-level names {sorted(names)}", flush=True)
    if names != {"dpcov"}:
        sys.exit(f"check_wheel: the wheel installs {sorted(names)}: it must install dpcov alone")
    venv = work / "venv"
    step("fresh virtual environment", [sys.executable, "-m", "venv", str(venv)], work, env)
    bin_dir = venv / "bin"
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    step("install the wheel", [str(bin_dir / "pip"), "install", "--quiet", str(wheel)], work, env)
    user = work / "user"  # the package alone, no checkout beside it; the user's own modules of common names
    for name, text in USER_FILES.items():
        (user / name).parent.mkdir(parents=True, exist_ok=True)
        (user / name).write_text(text)
    env["PYTHONPATH"] = str(user)  # the user's project on the path, in the commands and their worker processes
    step("help", ["dpcov", "--help"], user, env)
    out = step("first command", ["dpcov", "run", "experiment=synthetic_trace", "scale=smoke"], user, env)
    written = user / "outputs" / "synthetic_trace" / "smoke"
    missing = [f for f in ("results.csv", "summary.csv", "figure.png", "config.yaml") if not (written / f).is_file()]
    if missing or "results:" not in out:
        sys.exit(f"check_wheel: the first command did not write {missing} under {written}")
    step("a raw table, private end to end (the shipped example file)",
         ["dpcov", "run", "experiment=table_private", "scale=smoke"], user, env)
    step("audit", ["dpcov", "audit", "gauss", "--runs", "200", "--seconds", "30", "--n-jobs", "2", "--quiet"], user, env)
    step("estimator fit", [str(bin_dir / "python"), "-c", FIT], user, env)
    out = step("reproduce status (no checkout: the shipped times)", ["dpcov", "reproduce", "--status"], user, env)
    if "as in the committed run from nothing" not in out:
        sys.exit("check_wheel: reproduce --status did not answer from the shipped from-scratch times")
    out = step("the user's own data.py is theirs", [str(bin_dir / "python"), "-c", "import dpcov.data, data"], user,
               env, expect=1)
    if "the user's own data.py was imported" not in out:
        sys.exit("check_wheel: import data did not load the user's own data.py")
    print(f"\ncheck_wheel: the wheel {wheel.name} installs and runs from {user}", flush=True)


if __name__ == "__main__":
    main()
