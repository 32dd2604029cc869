"""The `entity-state` command line: every --help names its defaults, `sql` finds the project, `load` shows progress
only where it should."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import ClassVar

import pytest

from entity_state import cli, landing
from entity_state.cluster import Settings

PROJECT_DIR = Path(__file__).resolve().parents[2]
SUBCOMMANDS = ["load", "generate", "sql", "demo", "driver-archive", "cluster", "clean"]
# Defaults computed at run time, which argparse cannot show: each help says what happens instead.
COMPUTED_DEFAULTS = {
    "load": ["--ingested-at", "(default: now)", "(default: $ENTITY_STATE_LANDING_DIR, else data/landing/events)"],
    "generate": ["(default: all)", "(default: $ENTITY_STATE_LANDING_DIR, else data/landing/events)"],
    "sql": ["ENTITY_STATE_TARGET (local)", "ENTITY_STATE_SCHEMA (entity_state)", "ENTITY_STATE_HOME (.local)"],
    "demo": [],
    "driver-archive": ["$ENTITY_STATE_DRIVER_ARCHIVE, default $ENTITY_STATE_HOME/jvm/spark-driver.jsa"],
    "cluster": [],
    "clean": [],
}


def _help(command: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as exit_info:
        cli.main([*command, "--help"])
    assert exit_info.value.code == 0
    return " ".join(capsys.readouterr().out.split())


def _subparser(name: str) -> argparse.ArgumentParser:
    commands = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return commands.choices[name]


def test_the_top_level_help_lists_every_subcommand(capsys):
    text = _help([], capsys)
    assert all(name in text for name in SUBCOMMANDS)


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_each_subcommands_help_names_its_defaults(command, capsys):
    text = _help([command], capsys)
    for action in _subparser(command)._actions:
        if action.option_strings and action.default not in (None, False, argparse.SUPPRESS):
            assert f"{action.option_strings[-1]} " in text
            assert f"(default: {action.default})" in text, f"{command} {action.option_strings[-1]}"
    for expected in COMPUTED_DEFAULTS[command]:
        assert expected in text


def test_the_cluster_help_names_the_defaults_of_its_settings(capsys, monkeypatch):
    for name in [name for name in os.environ if name.startswith("ENTITY_STATE_")]:
        monkeypatch.delenv(name)
    settings = Settings.from_env()
    text = _help(["cluster"], capsys)
    for variable, value in [
        ("ENTITY_STATE_METASTORE_PORT", settings.metastore_port),
        ("ENTITY_STATE_MASTER_PORT", settings.master_port),
        ("ENTITY_STATE_MASTER_UI_PORT", settings.master_ui_port),
        ("ENTITY_STATE_WORKER_UI_PORT", settings.worker_ui_port),
        ("ENTITY_STATE_THRIFT_PORT", settings.thrift_port),
        ("ENTITY_STATE_WORKER_CORES", settings.worker_cores),
        ("ENTITY_STATE_WORKER_MEMORY", settings.worker_memory),
        ("ENTITY_STATE_EXECUTOR_MEMORY", settings.executor_memory),
        ("ENTITY_STATE_CLUSTER_TIMEOUT", f"{settings.timeout:g} seconds"),
    ]:
        assert f"{variable} ({value})" in text


class FakeRunner:
    calls: ClassVar[list[tuple[list[str], Path]]] = []
    success: ClassVar[bool] = True

    def invoke(self, arguments: list[str]) -> SimpleNamespace:
        FakeRunner.calls.append((arguments, Path.cwd()))
        return SimpleNamespace(success=FakeRunner.success)


@pytest.fixture
def fake_dbt(monkeypatch):
    import dbt.cli.main

    monkeypatch.setattr(dbt.cli.main, "dbtRunner", FakeRunner)
    FakeRunner.calls, FakeRunner.success = [], True
    return FakeRunner


def _option(arguments: list[str], name: str) -> str:
    return arguments[arguments.index(name) + 1]


def test_sql_runs_dbt_show_from_the_project_root_with_its_profiles(fake_dbt, monkeypatch):
    monkeypatch.chdir(PROJECT_DIR / "models" / "marts")
    query = "select * from {{ ref('entity_state_view') }}"
    assert cli.main(["sql", query, "--limit", "-1", "--output", "json"]) == 0
    [(arguments, cwd)] = fake_dbt.calls
    assert cwd == PROJECT_DIR
    assert arguments[:3] == ["show", "--inline", query]
    assert _option(arguments, "--limit") == "-1"
    assert _option(arguments, "--output") == "json"
    assert _option(arguments, "--project-dir") == str(PROJECT_DIR)
    assert _option(arguments, "--profiles-dir") == str(PROJECT_DIR / "profiles")


def test_sql_defaults_and_failure_exit_code(fake_dbt, monkeypatch):
    monkeypatch.chdir(PROJECT_DIR)
    fake_dbt.success = False
    assert cli.main(["sql", "select 1"]) == 1
    [(arguments, _)] = fake_dbt.calls
    assert _option(arguments, "--limit") == "100"
    assert _option(arguments, "--output") == "text"


def test_sql_outside_the_project_says_so(fake_dbt, monkeypatch, tmp_path, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["sql", "select 1"]) == 1
    assert "not inside the entity_state dbt project" in capsys.readouterr().err
    assert fake_dbt.calls == []


def test_driver_archive_outside_the_project_or_turned_off_says_so_and_starts_no_spark(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(
        "entity_state.driver_archive.write_driver_archive", lambda *_: pytest.fail("the archive was written")
    )
    monkeypatch.chdir(tmp_path)
    assert cli.main(["driver-archive"]) == 1
    assert "not inside the entity_state dbt project" in capsys.readouterr().err
    monkeypatch.chdir(PROJECT_DIR)
    monkeypatch.setenv("ENTITY_STATE_DRIVER_ARCHIVE", "")
    assert cli.main(["driver-archive"]) == 2
    assert "ENTITY_STATE_DRIVER_ARCHIVE is empty, which turns the archive off" in capsys.readouterr().err


@pytest.fixture
def small_inputs_are_large(monkeypatch, tmp_path):
    """Progress bars from 3 rows on, and a CSV of 3 events."""
    monkeypatch.setattr(landing, "PROGRESS_MIN_ROWS", 3)
    monkeypatch.setattr(landing, "PROGRESS_MIN_CSV_BYTES", 10)
    path = tmp_path / "events.csv"
    path.write_text(
        "tenant_id,entity_id,state_id,event_time\n"
        "acme,e-1,A,2026-03-03T08:00:00Z\nacme,e-1,B,2026-03-03T09:00:00Z\nacme,e-2,A,1772524800\n"
    )
    return path


@pytest.mark.parametrize(("tty", "quiet", "shown"), [(True, False, True), (True, True, False), (False, False, False)])
def test_load_shows_progress_on_a_terminal_unless_quiet(
    small_inputs_are_large, tmp_path, capsys, monkeypatch, tty, quiet, shown
):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: tty)
    arguments = ["load", str(small_inputs_are_large), "--landing-dir", str(tmp_path / "landing")]
    assert cli.main([*arguments, *(["--quiet"] if quiet else [])]) == 0
    err = capsys.readouterr().err
    assert ("events.csv: event times" in err and "land" in err) == shown
    assert ("events.csv: read" in err) == shown


def test_no_progress_below_a_million_rows(tmp_path, capsys):
    path = tmp_path / "events.csv"
    path.write_text("tenant_id,entity_id,state_id,event_time\nacme,e-1,A,2026-03-03T08:00:00Z\n")
    landing.load_files([path], directory=tmp_path / "landing", progress=True)
    assert capsys.readouterr().err == ""
