"""Audit a mechanism's privacy claim black-box: pair search, learned attack, confirmation on fresh runs.

    dpcov audit NAME [--budget rho=0.5 | eps=1 | eps=1,delta=1e-5] [--options JSON]
                                 [--seconds 240] [--alpha 0.05] [--confirmations 3] [--gaussian]
                                 [--n-jobs -1] [--seed 0] [--runs N] [--factors 1,0.67] [--white-box]
                                 [--privacy-unit replace_one | add_remove]

NAME: a registered mechanism, a configured line of the audit registry (e.g. g16, ad_published), or a
plug-in ('package.module:function', its directory on PYTHONPATH). The mechanism is only ever run through
``mechanisms.registry.release``. The audit (audits/blackbox.py) searches neighbouring datasets, trains
a classifier to tell their releases apart, chooses the event and the point of the claim's privacy
profile on selection runs and confirms it on fresh runs. Events see the whole transcript: the released numbers and
the exact text of every ledger line, the fallback reason and the output's kind (a text one dataset gives and the
other never does is flagged). It prints the worst pair, the event and the lower bound against the claim. The
confidence (1 - alpha) covers the whole search: a mechanism that meets its claim is flagged at most at rate alpha.

Two verdicts. A mechanism that claims to be private as executed (a plug-in that does not declare
``idealized=True``, a built-in with numerics "hardened") is audited twice in one run: as executed (its releases'
low bits, a precision stage on a dyadic/non-dyadic pair: float noise on a float statistic leaks there) and on
paper (its calibration: the search, on releases with the low bits rounded away). A finding in one does not end
the other; the time budget is split (the low bits 15 %, the calibration the rest; when the low bits' event is
one-sided -- seen on one dataset, never on the other -- they take up to half, confirming it in rounds until its bound
exceeds the claim) and one alpha covers both. The report ends with one line per verdict; a mechanism declared
idealized gets the one on paper. Exit status: 0 both hold; 1 the calibration exceeds its claim (whatever the low
bits say); 3 only the low bits leak; 2 a bad name or option.

--gaussian: the mechanism is a post-processed Gaussian mechanism, audited against its exact mu-GDP
profile (more power; registered Gaussian lines use it by default). --runs N fixes the runs per dataset
(identical numbers for any --n-jobs) instead of sizing them by the time budget. --factors (registered
lines): also audit the under-noised copies (noise x c); --white-box: the noise fit against the
paper's formula (registered lines). --privacy-unit: the neighbours the claim is for. replace_one (the default for
registered mechanisms and plug-ins, the papers' model: pairs of equal n); add_remove (a row's presence: pairs of n
and n + 1 rows too, zero rows where only n differs included, and every replace-one pair; a mechanism runs through
release(privacy_unit="add_remove"), the released count then its add/remove route (native, or the rows resized), unless it protects a row's
presence itself -- audits.blackbox.claims_unit, e.g. dpcov.audited:covariance_zcdp_add_remove, whose default unit
is then add_remove). The claimed budget is the same under either unit.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys


from dpcov.audits import lines
from dpcov.audits.blackbox import SWEEP_BUDGETS, own_unit, verdicts
from dpcov.experiments.config import budget_from_params
from dpcov.mechanisms.registry import get_mechanism


def parse_budget(text: str):
    """rho=0.5 | eps=1 | eps=1,delta=1e-5 -> a budget (the experiments' rule: experiments.config)."""
    point = {}
    for part in filter(None, text.split(",")):
        key, _, value = part.partition("=")
        if not value:
            raise SystemExit(f"--budget: expected key=value, got {part!r}")
        try:
            point[key.strip()] = float(value)
        except ValueError:
            raise SystemExit(f"--budget: {key.strip()} must be a number, got {value!r}") from None
    return budget_from_params(point)


def _registered_line(name: str):
    try:
        return lines.audit_line(name)
    except KeyError:
        return None


def _audit(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name")
    parser.add_argument("--options", default=None, help="mechanism options as JSON")
    parser.add_argument("--budget", default=None, help="claimed budget (default: the line's, or rho=0.5, eps=1 "
                                                       "or eps=1,delta=1e-5 by the mechanism's notion)")
    parser.add_argument("--seconds", type=float, default=240.0, help="time budget of the audit (default 240)")
    parser.add_argument("--alpha", type=float, default=0.05, help="1 - confidence of the whole search")
    parser.add_argument("--confirmations", type=int, default=3, help="pairs confirmed at most (Bonferroni)")
    parser.add_argument("--gaussian", action="store_true", help="audit against the exact Gaussian profile")
    parser.add_argument("--n-jobs", type=int, default=-1, help="worker processes (default: all cores)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--runs", type=int, default=None, help="fixed runs per dataset (instead of --seconds)")
    parser.add_argument("--factors", default="1", help="noise factors c to audit (registered lines)")
    parser.add_argument("--white-box", action="store_true", help="also fit the noise (registered lines)")
    parser.add_argument("--privacy-unit", choices=("replace_one", "add_remove"), default=None,
                        help="neighbours of the claim (default: replace_one, or the unit a plug-in protects itself)")
    parser.add_argument("--quiet", action="store_true", help="print only the result")
    args = parser.parse_args(argv)
    if not args.seconds > 0:
        parser.error(f"--seconds must be > 0, got {args.seconds:g}")
    if not 0 < args.alpha < 1:
        parser.error(f"--alpha must be in (0, 1), got {args.alpha:g}")
    if args.confirmations < 1:
        parser.error(f"--confirmations must be >= 1, got {args.confirmations}")
    if args.runs is not None and args.runs < 10:
        parser.error(f"--runs must be >= 10, got {args.runs}")

    mechanism = get_mechanism(args.name)  # a clear error for an unknown name or a broken plug-in
    line = _registered_line(args.name)
    try:
        options = json.loads(args.options) if args.options else None
    except json.JSONDecodeError as err:
        parser.error(f"--options must be a JSON object, e.g. '{{\"gamma\": 0.5}}' ({err})")
    if options is not None and not isinstance(options, dict):
        parser.error(f"--options must be a JSON object, got {args.options!r}")
    if line is None:
        budget = parse_budget(args.budget) if args.budget else lines.DEFAULT_BUDGETS[mechanism.notion]
        line = lines.line_for(args.name, args.name, options or {}, budget, "command line")
        line = dataclasses.replace(line, profile="gaussian" if args.gaussian else "dp")
    else:
        line = dataclasses.replace(line, options={**line.options, **(options or {})})
        if args.budget:
            line = dataclasses.replace(line, budget=parse_budget(args.budget))
        if args.gaussian:
            line = dataclasses.replace(line, profile="gaussian")
    factors = [float(c) for c in args.factors.split(",")]
    if any(c != 1 for c in factors) and mechanism.plugin:
        raise SystemExit("--factors: under-noised copies exist for registered mechanisms only")
    log = None if args.quiet else (lambda text: print("  " + text, flush=True))
    unit = args.privacy_unit or own_unit(mechanism) or "replace_one"
    print(f"{args.name} ({mechanism.label}), options {line.options}, claim {line.budget}, privacy unit {unit}")
    # the claim at every budget: without --budget a registered mechanism or plug-in is audited at its
    # notion's default budget and at a small and a large one (SWEEP_BUDGETS); a configured line at its own
    budgets = None if (args.budget or line.source.endswith("variants") or line.source.endswith("mechanism_options")) \
        else list(SWEEP_BUDGETS[mechanism.notion])
    status = 0
    for c in factors:
        if c != 1:
            print(f"copy with noise x {c:g}:")
        reports = lines.search(line, c, seconds=args.seconds, seed=args.seed, n_jobs=args.n_jobs, alpha=args.alpha,
                               confirmations=args.confirmations, runs=args.runs, log=log, budgets=budgets,
                               privacy_unit=unit)
        for report in reports:
            print(report.describe(), flush=True)
        for text in verdict_lines(f"{args.name}{f' x{c:g}' if c != 1 else ''} ({unit})", reports, args.alpha):
            print(text, flush=True)
        if c == 1:
            status = verdicts(reports)["exit_status"]
    if args.white_box and line.calibration is not None:
        for c in factors:
            for result in lines.calibrate(line, 300, c, seed=args.seed):
                print(("LOW     " if result.caught else "ok      ") + result.describe(), flush=True)
    return status


def verdict_lines(title: str, reports: list, alpha: float) -> list[str]:
    """The report's last lines, one per verdict: on paper (the calibration) and, for a mechanism that claims to be
    private as executed, the low bits."""
    found = verdicts(reports)
    confidence = f" (confidence {1 - alpha:.0%} over the whole audit)"
    paper = found["paper"]
    on_paper = (f"EXCEEDS its claim at {paper.claim.budget}" if paper is not None else
                f"no evidence against its claim at {', '.join(str(r.claim.budget) for r in reports)}")
    if not found["as executed"]:  # declared idealized: one verdict, on paper
        return [f"==> {title}: {on_paper}{confidence} [on paper: the calibration, low bits rounded away]"]
    low = found["low bits"]
    audited = [str(r.claim.budget) for r in reports if r.low_bits_audited]
    as_executed = (f"EXCEEDS its claim at {low.claim.budget}: the low bits leak (round the statistic to a grid and "
                   f"add exact noise: dpcov.mechanisms.noise)" if low is not None else
                   f"no evidence against its claim at {', '.join(audited)}")
    return [f"==> {title} on paper (the calibration, low bits rounded away): {on_paper}{confidence}",
            f"==> {title} as executed (the low bits): {as_executed}{confidence}"]


def main(argv: list[str] | None = None) -> int:
    """The exit status: 0 no evidence against the claim (on paper and, unless declared idealized, as executed);
    1 the calibration exceeds its claim, whatever the low bits say; 3 only the low bits leak (the calibration
    holds); 2 a bad name or option."""
    try:
        return _audit(argv)
    except (ValueError, TypeError) as err:  # unknown mechanism or option, a plug-in that does not import, ...
        print(f"dpcov audit: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

