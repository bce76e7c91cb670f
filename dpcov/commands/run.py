"""Run one experiment: dpcov run experiment=<name> [scale=paper|small|smoke] [overrides...]
Several (Hydra multirun): dpcov run -m experiment=<name> seed=1,2  (each job: its own output_dir)"""
import sys
import warnings

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import open_dict

from dpcov.experiments.config import (CONF_DIR, ConfigError, build_experiment, check_command_line, experiment_names,
                                job_output_dir, load_yaml, open_key_overrides)
from dpcov.commands import closed_pipe_exit
from dpcov.experiments.runner import Interrupted, run_experiment
from dpcov.figures.plot import draw

warnings.formatwarning = lambda message, *args, **kwargs: f"warning: {message}\n"  # one line each


@hydra.main(version_base=None, config_path=str(CONF_DIR), config_name="config")  # shipped as package data
def main(cfg) -> None:
    hydra_cfg = HydraConfig.get()
    overrides = list(hydra_cfg.overrides.task)
    if hydra_cfg.mode == RunMode.MULTIRUN:  # every job its own directory, named by its swept values
        with open_dict(cfg):
            cfg.output_dir = job_output_dir(cfg.output_dir, sys.argv[1:], overrides)
    try:
        experiment = build_experiment(cfg, overrides)
    except ConfigError as err:
        sys.exit(f"config error: {err}")
    try:
        out = run_experiment(experiment)  # runs and stores ...
        png, _ = draw(experiment, out)  # ... then the figures are drawn from the stored summary
    except Interrupted as stop:
        print(f"interrupted: {stop.kept} runs kept in {stop.results}; re-run the same command to resume",
              file=sys.stderr, flush=True)
        sys.exit(130)
    except BrokenPipeError:  # the reader of stdout went away: every finished run is kept
        closed_pipe_exit()
    except (ValueError, OSError) as err:  # bad data, files or directories: say what, without a traceback
        sys.exit(f"error: {err}")
    try:
        print(f"results: {out.results}\nsummary: {out.summary}\nfigure:  {png} (+ .pdf)\n"
              f"config:  {out.config}", flush=True)
    except BrokenPipeError:
        closed_pipe_exit()


OVERRIDES = """common overrides (any key of conf/config.yaml; docs/running.md has them all):
  scale=small|paper|smoke   the experiment's scale (paper: the paper's grid and 50 trials)
  trials=K  n_jobs=J  seed=S  mechanisms=[gauss,zero]  params.<name>=v  sweep.<name>=[...]
  output_dir=PATH           where results.csv, summary.csv, the figure and config.yaml go
                            (default: outputs/<experiment>/<scale> under the current directory)
  executor=dask [dask_scheduler=tcp://host:8786]   trials on a Dask cluster
  -m ... seed=1,2           Hydra multirun: one job (and output_dir) per value
  --hydra-help              Hydra's own help"""


def usage() -> str:
    lines = []
    for name in experiment_names():
        figure = (load_yaml(CONF_DIR / "experiment" / f"{name}.yaml") or {}).get("paper_figure") or ""
        lines.append(f"  {name:20s} {figure}")
    return ("usage: dpcov run experiment=NAME [overrides...]\n\nRun one experiment: its grid x trials x "
            "mechanisms in parallel, resumable; then draw its figure from the stored summary.\n\n"
            "experiments (conf/experiment/NAME.yaml):\n" + "\n".join(lines) + "\n\n" + OVERRIDES)


def cli(argv: list[str] | None = None) -> None:
    """``dpcov run ARGS`` (and ``python run.py ARGS``): Hydra reads sys.argv, so ARGS go there."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] in (["-h"], ["--help"]):
        print(usage())
        return
    if not argv:
        sys.exit(usage())  # on stderr, status 1: an experiment is needed
    argv = open_key_overrides(argv)
    try:
        check_command_line(argv)  # YAML syntax and unknown keys, before Hydra's tracebacks
    except ConfigError as err:
        sys.exit(f"config error: {err}")
    sys.argv = [sys.argv[0], *argv]
    try:
        main()
    except KeyboardInterrupt:  # before or after the runs (during a run: the message above)
        sys.exit("interrupted")


if __name__ == "__main__":
    cli()
