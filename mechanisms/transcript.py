"""Every privatised step's transcript, recorded and replayable: the check that no public value is computed from data
(GUIDE.md §10, issue 58).

Each step that releases something (a noisy statistic, a sparse-vector index, the count, a sampled vector) hands its
private statistic, its declared sensitivity and norm, its public parameters (scale, grid, shape, bound) and its
output to ``released``; outside a ``Transcript`` that is all it does (returns the output). Inside one:

- recording: the step is appended to the transcript;
- replaying (``Transcript(replay=recorded)``): the step returns the *recorded* output, not its own (its own draw
  still happens, so the generator advances as on the recorded run), and is appended with this run's statistic.

Run a fit on D recording, then on a neighbour D' replaying D's transcript: D' then sees exactly what D's releases
were. Privacy as executed asks that (1) every public value is the same on both runs -- each step's kind, label and
public parameters, hence every ledger line, warning, error and fitted attribute, which are post-processing of the
releases and public facts -- and (2) each step's statistic moves by at most its declared sensitivity (plus its
declared float-error slack) in its declared norm. ``differences`` lists where a pair breaks either. A public value
computed from the data, or a code path chosen by it, shows as a difference in (1) or in the fitted attributes.

``force``: outputs imposed by kind on both runs (e.g. the count held at n, above n or below n), whatever the draw.
"""
from __future__ import annotations

import contextvars
import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

_ACTIVE: contextvars.ContextVar = contextvars.ContextVar("dpcov_transcript", default=None)
NORMS = ("l1", "l2", "linf", "operator", "mahalanobis")


@dataclass
class Step:
    kind: str  # "count", "svt", "gaussian", "laplace", "sampler", ...
    what: str  # the step's label
    public: dict  # declared parameters: scale, grid, bound, shape, threshold, ... (compared exactly)
    sensitivity: float  # declared, in ``norm``
    norm: str
    slack: float  # the declared float error's share of the difference (public), in ``norm``
    statistic: np.ndarray
    output: object


@dataclass
class Transcript:
    replay: "Transcript | None" = None
    force: dict = field(default_factory=dict)  # kind -> output, or callable(statistic) -> output
    steps: list = field(default_factory=list)

    def __enter__(self) -> "Transcript":
        self._token = _ACTIVE.set(self)
        return self

    def __exit__(self, *exc) -> None:
        _ACTIVE.reset(self._token)


def released(kind: str, what: str, statistic, output, *, sensitivity: float, norm: str, slack: float = 0.0,
             **public):
    """The output a privatised step returns: its own (``output``), or inside a replaying ``Transcript`` the recorded
    run's. ``statistic``: the private input, or a callable of the returned output giving it (a sparse-vector step's
    answers up to the index it returns)."""
    tape = _ACTIVE.get()
    if tape is None:
        return output
    if norm not in NORMS:
        raise ValueError(f"norm must be one of {NORMS}, got {norm!r}")
    if kind in tape.force:
        forced = tape.force[kind]
        output = forced(statistic) if callable(forced) else forced
    if tape.replay is not None:
        index = len(tape.steps)
        if index >= len(tape.replay.steps):
            raise ReplayMismatch(f"step {index} ({kind}: {what}) was not on the recorded run")
        output = tape.replay.steps[index].output
    value = statistic(output) if callable(statistic) else statistic
    tape.steps.append(Step(kind, what, _frozen(public), float(sensitivity), norm, float(slack),
                           np.array(value, dtype=float, copy=True), _copied(output)))
    return output


class ReplayMismatch(AssertionError):
    """A replayed run asked for a step the recorded run did not take."""


def _frozen(public: dict) -> dict:
    return {key: (tuple(np.ravel(value).tolist()) if isinstance(value, np.ndarray) else value)
            for key, value in public.items()}


def _copied(output):
    return output.copy() if isinstance(output, np.ndarray) else output


def distance(a: np.ndarray, b: np.ndarray, norm: str) -> float:
    """||a - b|| in ``norm`` (operator: the spectral norm of a symmetric difference)."""
    if norm == "mahalanobis":  # d_M(A, B) = max of ||A^-1/2 B A^-1/2 - I||_F and the same with A, B swapped
        return max(_mahalanobis(a, b), _mahalanobis(b, a))
    diff = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if norm == "l1":
        return float(np.abs(diff).sum())
    if norm == "l2":
        return float(np.sqrt((diff * diff).sum()))
    if norm == "linf":
        return float(np.abs(diff).max(initial=0.0))
    return float(np.abs(np.linalg.eigvalsh((diff + diff.T) / 2)).max(initial=0.0))


def _mahalanobis(a: np.ndarray, b: np.ndarray) -> float:
    values, vectors = np.linalg.eigh((a + a.T) / 2)
    if values.min(initial=np.inf) <= 0:
        return math.inf
    root = vectors / np.sqrt(values)
    return float(np.linalg.norm(root.T @ b @ root - np.eye(len(a))))


def differences(recorded: Transcript, replayed: Transcript, tolerance: float = 0.0, rows: int = 1) -> list[str]:
    """Where the replayed run's transcript breaks privacy as executed against the recorded one's: a step more or
    fewer, a public parameter that differs, a statistic that moved by more than its sensitivity plus its slack
    (``tolerance``: relative, for idealized numerics' rounding; 0 for a proof as executed). ``rows``: how many rows
    the two datasets differ in (a person's k: group privacy allows each step k times its row sensitivity)."""
    problems = []
    if len(recorded.steps) != len(replayed.steps):
        problems.append(f"{len(recorded.steps)} steps on D, {len(replayed.steps)} on D'")
    for i, (a, b) in enumerate(zip(recorded.steps, replayed.steps)):
        where = f"step {i} ({a.kind}: {a.what})"
        for name in ("kind", "what", "public", "sensitivity", "norm", "slack"):
            if getattr(a, name) != getattr(b, name):
                problems.append(f"{where}: {name} differs: {getattr(a, name)!r} on D, {getattr(b, name)!r} on D'")
        if a.statistic.shape != b.statistic.shape:
            problems.append(f"{where}: statistic shape {a.statistic.shape} on D, {b.statistic.shape} on D'")
            continue
        moved = distance(a.statistic, b.statistic, a.norm)
        allowed = rows * (a.sensitivity + a.slack) * (1 + tolerance)
        if not moved <= allowed or not math.isfinite(moved):
            problems.append(f"{where}: the statistic moved by {moved:.6g} in {a.norm}, more than its sensitivity "
                            f"{a.sensitivity:.6g} + slack {a.slack:.3g}")
    return problems


def run_pair(fit_d: Callable[[], object], fit_d_prime: Callable[[], object], force: dict | None = None):
    """(recorded, replayed, result on D, result on D'): ``fit_d`` run recording, ``fit_d_prime`` replaying it.
    Each result is ("ok", value) or ("error", type name, message); warnings are the caller's to capture."""
    with Transcript(force=dict(force or {})) as recorded:
        result_d = _outcome(fit_d)
    with Transcript(replay=recorded, force=dict(force or {})) as replayed:
        result_d_prime = _outcome(fit_d_prime)
    return recorded, replayed, result_d, result_d_prime


def _outcome(fn):
    try:
        return ("ok", fn())
    except ReplayMismatch:
        raise
    except Exception as err:  # an error is an output too: compared by type and text
        return ("error", type(err).__name__, str(err))
