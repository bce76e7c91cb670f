"""The dpcov command (dpcov/cli.py): every subcommand answers --help, unknown ones are refused, and
dpcov run's help lists every experiment. The wheel in a fresh environment: scripts/check_wheel.py (CI)."""
import subprocess
import sys

import pytest

from dpcov.cli import COMMANDS, main
from dpcov.experiments.config import experiment_names


def test_help_lists_every_subcommand(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert all(f"  {name}" in out for name in COMMANDS)
    assert main(["no-such-command"]) == 2 and "unknown subcommand 'no-such-command'" in capsys.readouterr().err


@pytest.mark.parametrize("name", [n for n in COMMANDS if n != "run"])
def test_every_subcommand_answers_help(name, capsys):
    with pytest.raises(SystemExit) as stop:
        main([name, "--help"])
    assert stop.value.code == 0 and capsys.readouterr().out.startswith(f"usage: dpcov {name}")


def test_run_help_names_every_experiment_and_no_argument_is_an_error(capsys):
    assert main(["run", "--help"]) == 0
    out = capsys.readouterr().out
    assert all(f"  {name} " in out for name in experiment_names()) and "output_dir=PATH" in out
    done = subprocess.run([sys.executable, "-m", "dpcov.cli", "run"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and done.stderr.startswith("usage: dpcov run experiment=NAME")


@pytest.mark.parametrize("argv", [["run", "experiment=synthetic_trace", "scale=smoke", "n_jobs=2"], ["--help"]])
def test_a_closed_pipe_ends_quietly(tmp_path, argv):
    """dpcov ... | head -1 (issue 55): the reader takes one line and closes the pipe; the command ends with no
    traceback, no joblib warning and no "Broken pipe" error, with status 0 or SIGPIPE's 141, its finished runs
    kept."""
    process = subprocess.Popen([sys.executable, "-m", "dpcov.cli", *argv], cwd=tmp_path, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    first = process.stdout.readline()
    process.stdout.close()
    stderr = process.stderr.read()
    assert process.wait(timeout=300) in (0, 141) and first
    assert stderr == "", stderr
    if argv[0] == "run":
        assert (tmp_path / "outputs" / "synthetic_trace" / "smoke" / "results.csv").is_file()
