"""A realistic three-release session on one table (issue 54, item 6): a covariance, a PCA and a ridge model of UCI
adult, each drawn from one zCDP session, reported in the session's own notion and as (eps, delta) -- converted once
for the whole session (Canonne, Kamath & Steinke 2020) -- against basic composition of the releases' own
conversions; then a fourth release that would overspend is refused.

    python scripts/session_report.py          # writes results/measurements/session.txt
"""
from __future__ import annotations

import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import dpcov  # noqa: E402
from dpcov.commands.head_to_head import pca_data, regression_data  # noqa: E402
from dpcov.mechanisms.privacy import zcdp_eps  # noqa: E402

OUT = ROOT / "results" / "measurements" / "session.txt"
DELTAS = (1e-5, 1e-6, 1e-9)


def main() -> None:
    X = pca_data("adult")
    Xr, y = regression_data("adult")
    lines = [f"# {__doc__.strip().splitlines()[0]}", "# python scripts/session_report.py", "",
             f"data: UCI adult, n = {len(X)} rows, d = {X.shape[1]} (PCA, covariance), {Xr.shape[1]} + 1 (ridge); rows "
             f"in the unit ball (dpcov head-to-head's public scaling)", ""]
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", dpcov.UselessReleaseWarning)
        session = dpcov.Session(dpcov.ZCDP(1.0), privacy_unit="add_remove", path=Path(tmp) / "adult.session.json",
                                new=True)
        common = dict(radius=1.0, centering="private", random_state=0, session=session)
        cov = dpcov.PrivateCovariance(budget=dpcov.ZCDP(0.3), **common).fit(X)
        pca = dpcov.PrivatePCA(5, budget=dpcov.PureDP(0.6), **common).fit(X)  # a pure-DP release: eps^2/2 = 0.18
        ridge = dpcov.PrivateRidge(budget=dpcov.ZCDP(0.4), **common).fit(Xr, y)
        lines += [f"releases: covariance ({cov.mechanism_}, 0.3-zCDP, error ||S~ - S||_F = "
                  f"{np.linalg.norm(cov.covariance_ - np.cov(X.T, bias=True)):.4g}), "
                  f"PCA k = 5 ({pca.mechanism_}, 0.6-DP = 0.18-zCDP, captured "
                  f"{dpcov.captured_variance_ratio(pca.components_, X):.3f}), ridge ({ridge.mechanism_}, 0.4-zCDP, "
                  f"R^2 {ridge.score(Xr, y):.3f})", ""]
        lines += [f"warned before releasing: {w.message}" for w in caught
                  if issubclass(w.category, dpcov.UselessReleaseWarning)] + [""]
        try:
            dpcov.PrivateCovariance(budget=dpcov.ZCDP(0.2), **common).fit(X)
            lines.append("a fourth release of 0.2-zCDP: NOT refused (a bug)")
        except dpcov.BudgetExceeded as refused:
            lines.append(f"a fourth release of 0.2-zCDP: refused, nothing spent: {refused}")
        lines += ["", "| delta | session in its notion | converted once (CKS) | basic composition | basic / once |",
                  "|---|---|---|---|---|"]
        for delta in DELTAS:
            once, basic = session.as_approx_dp(delta), session.basic_composition(delta)
            lines.append(f"| {delta:g} | {session.spent} | eps = {once.eps:.4f} | eps = {basic.eps:.4f} | "
                         f"{basic.eps / once.eps:.2f} |")
        lines += ["", "The whole total (1-zCDP) as the filter guarantees it, whatever budgets are chosen: "
                  + ", ".join(f"eps = {dpcov.Session(dpcov.ZCDP(1.0)).total.to_approx_dp(d).eps:.4f} (Bun-Steinke) / "
                              f"{zcdp_eps(1.0, d):.4f} (CKS) at delta = {d:g}" for d in DELTAS), "",
                  "The session's report (dpcov session PATH):", "", session.report(1e-6)]
    OUT.write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:16]))


if __name__ == "__main__":
    main()
