"""Every command the README shows runs as written.

Each line of the README's ```bash blocks is a command a user may paste. Every one is checked without starting
Spark: a `make` target must be one the Makefile defines (read from the Makefile, not with `make -n`, which still runs
recipe lines that call $(MAKE), such as test-cluster-ci's cluster start), an `entity-state` command must parse with
the CLI's own parser, a `dbt` command must parse with dbt's (its `--help`, after every option the line gives, fails
on an unknown command or option). The cheap ones also run for real, in a scratch folder: `make help`, `--help`, and
`entity-state load` of a small file.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from entity_state.cli import build_parser

PROJECT_DIR = Path(__file__).resolve().parents[2]
README = PROJECT_DIR / "README.md"
ENVIRONMENT_ASSIGNMENT = re.compile(r"^[A-Z_][A-Z0-9_]*=")


def readme_commands() -> list[str]:
    """The commands of the README's bash blocks, with continuation lines joined and comments dropped."""
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", README.read_text(), flags=re.DOTALL):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if words:
                commands.append(shlex.join(words))
    return commands


def _program_and_arguments(command: str) -> tuple[str, list[str]]:
    words = shlex.split(command)
    while words and ENVIRONMENT_ASSIGNMENT.match(words[0]):
        words.pop(0)
    return Path(words[0]).name, words[1:]


def test_the_readme_shows_commands():
    programs = {_program_and_arguments(c)[0] for c in readme_commands()}
    assert {"make", "entity-state", "dbt"} <= programs, programs


@pytest.mark.parametrize("command", readme_commands())
def test_a_readme_command_parses(command):
    program, arguments = _program_and_arguments(command)
    if program == "make":
        makefile = (PROJECT_DIR / "Makefile").read_text()
        targets = [word for word in arguments if not ENVIRONMENT_ASSIGNMENT.match(word) and not word.startswith("-")]
        for target in targets or ["help"]:
            assert re.search(rf"^{re.escape(target)}:", makefile, flags=re.MULTILINE), f"{command}: no target {target}"
    elif program == "entity-state":
        build_parser().parse_args(arguments)
    elif program == "dbt":
        checked = subprocess.run(
            [str(Path(sys.executable).with_name("dbt")), *arguments, "--help"],
            cwd=PROJECT_DIR,
            capture_output=True,
            text=True,
        )
        assert checked.returncode == 0, f"{command}: {checked.stdout[-2000:]}{checked.stderr[-2000:]}"
    elif program == "pyspark":
        # PySpark's own shell, on the conf folder `entity-state cluster up` writes for the default state home
        from entity_state.cluster import Settings

        assert not arguments and Path(sys.executable).with_name("pyspark").is_file(), command
        conf_dir = Settings.from_env({"ENTITY_STATE_HOME": str(PROJECT_DIR / ".local")}).conf_dir
        given = shlex.split(command)[0].removeprefix("SPARK_CONF_DIR=").replace("$PWD", str(PROJECT_DIR))
        assert Path(given) == conf_dir, command
    else:
        pytest.fail(f"the README shows `{command}`, which this test does not know how to check: teach it")


def test_the_cheap_readme_commands_run(tmp_path):
    shutil.copy(PROJECT_DIR / "data" / "demo" / "events.csv", tmp_path / "events.csv")
    environment = {**os.environ, "ENTITY_STATE_LANDING_DIR": str(tmp_path / "landing")}
    ran = []
    for command in readme_commands():
        program, arguments = _program_and_arguments(command)
        cheap = (program == "make" and arguments == ["help"]) or "--help" in arguments
        cheap = cheap or (program == "entity-state" and arguments[:1] == ["load"])
        if not cheap:
            continue
        executable = "make" if program == "make" else str(Path(sys.executable).with_name(program))
        cwd = PROJECT_DIR if program == "make" else tmp_path
        finished = subprocess.run([executable, *arguments], cwd=cwd, env=environment, capture_output=True, text=True)
        assert finished.returncode == 0, f"{command}: {finished.stdout[-2000:]}{finished.stderr[-2000:]}"
        ran.append(command)
    assert any("load" in command for command in ran), ran
