"""``dpcov``: one command for the suite (a console entry point of the package).

    dpcov run experiment=synthetic_trace [scale=smoke] [overrides...]   one experiment
    dpcov SUBCOMMAND --help                                             what each one takes

Each subcommand takes exactly the arguments of its module in dpcov/commands/ (``python run.py`` and
``python scripts/<name>.py`` are the same in a checkout). Outputs go under the current directory (or
``output_dir=`` / ``--out``); in a checkout, the commands that read committed results use its results/.
"""
from __future__ import annotations

import importlib
import sys

from dpcov.commands import closed_pipe_exit

# name -> (module in dpcov.commands, function taking argv, what it does)
COMMANDS = {
    "run": ("run", "cli", "run one experiment: experiment=NAME [scale=small|paper|smoke] [Hydra overrides]; "
                          "writes results.csv, summary.csv and the figure under outputs/ (or output_dir=)"),
    "reproduce": ("reproduce", "main", "regenerate the papers' figures at paper scale (resumable), show what is "
                                       "complete (--status), compare a regeneration (--compare DIR)"),
    "audit": ("audit", "main", "audit a mechanism's privacy claim black-box: NAME is a registered mechanism, "
                               "an audit line or a plug-in 'package.module:function'"),
    "advise": ("advise", "main", "which mechanism to use: predicted errors from public facts (n, d, radius, "
                                 "budget), ranked, with the nearest committed measurement"),
    "benchmark": ("benchmark", "main", "time each mechanism's release against an eigendecomposition of the same size"),
    "head-to-head": ("head_to_head", "main", "dpcov's estimators against diffprivlib and OpenDP on real data "
                                             "(peers in their own interpreter: --peers-python)"),
    "table": ("table", "main", "print a summary.csv as a markdown table (rows: x values, columns: mechanisms)"),
    "session": ("session", "main", "show a privacy session file (dpcov.Session): total, spent, remaining, "
                                   "(eps, delta) and every release"),
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = [f"  {name:<{width}}  {what}" for name, (_, _, what) in COMMANDS.items()]
    return ("usage: dpcov SUBCOMMAND [ARGS...]   (dpcov SUBCOMMAND --help: its arguments)\n\n"
            "Differentially private covariance estimation: experiments, paper figures, audits.\n\n"
            "subcommands:\n" + "\n".join(lines) + "\n\nexample: dpcov run experiment=synthetic_trace scale=smoke")


def main(argv: list[str] | None = None) -> int:
    """``dpcov ARGS``: the subcommand's status; a reader that closed stdout (``dpcov ... | head``) ends it quietly."""
    try:
        status = _dispatch(argv)
        sys.stdout.flush()  # a closed pipe shows here at the latest, not in the interpreter's last flush
    except BrokenPipeError:
        closed_pipe_exit()
    return status


def _dispatch(argv: list[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage())
        return 0
    if argv[0] == "--version":
        from importlib.metadata import version
        print(f"dpcov {version('dpcov')}")
        return 0
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"dpcov: unknown subcommand {name!r}\n\n{usage()}", file=sys.stderr)
        return 2
    module, function, _ = COMMANDS[name]
    sys.argv[0] = f"dpcov {name}"  # argparse's usage line names the subcommand
    try:
        status = getattr(importlib.import_module(f"dpcov.commands.{module}"), function)(rest)
    except FileNotFoundError as err:  # a missing data file says where it looked and how to get it
        print(f"dpcov {name}: error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"dpcov {name}: interrupted", file=sys.stderr)
        return 130
    return status if isinstance(status, int) else 0


if __name__ == "__main__":
    sys.exit(main())
