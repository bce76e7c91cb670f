"""Run one experiment: python run.py experiment=<name> [scale=paper|small|smoke] [overrides...]"""
import sys

import hydra
from hydra.core.hydra_config import HydraConfig

from experiments.config import ConfigError, build_experiment, open_key_overrides
from experiments.runner import run_experiment

sys.argv = [sys.argv[0], *open_key_overrides(sys.argv[1:])]


@hydra.main(version_base=None, config_path="conf", config_name="config")
def main(cfg) -> None:
    try:
        experiment = build_experiment(cfg, HydraConfig.get().overrides.task)
    except ConfigError as err:
        sys.exit(f"config error: {err}")
    try:
        out = run_experiment(experiment)
    except (ValueError, FileNotFoundError) as err:  # bad data or files: say what, without a traceback
        sys.exit(f"error: {err}\n(finished trials are kept in {experiment.output_dir}/results.csv)")
    print(f"results: {out.results}\nsummary: {out.summary}\nfigure:  {out.figure_png} (+ .pdf)\n"
          f"config:  {out.config}")


if __name__ == "__main__":
    main()
