"""No command of the project deletes data a user landed or stored: the demo keeps to its own folder and schema, and
the landing hook never drops a `landing_events` table it did not create."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from entity_state.demo import DEMO_SCHEMA, MARKER, run_demo

from .dbt_harness import PROJECT_DIR, DbtProject

T0 = datetime(2026, 3, 3, 8, 0, tzinfo=UTC)


def _files(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def test_the_demo_keeps_the_landed_files_and_the_schema_the_environment_names(project: DbtProject, monkeypatch):
    # what the environment points at (the session's landing folder and schema): two landed batches and a table
    landed: list = []
    project.land_moves(landed, T0, T0 + timedelta(hours=1), [("e-1", "A", 0), ("e-2", "B", 1)])
    project.land_moves(landed, T0, T0 + timedelta(hours=2), [("e-1", "C", 60)])
    before = _files(project.landing)
    project.execute(f"create schema if not exists {project.schema}")
    project.execute(f"create table {project.schema}.kept using parquet as select 'mine' as owner")
    environment = dict(os.environ)
    # the demo reads data/demo/events.csv and runs dbt from the project folder, in this process's Spark session
    monkeypatch.chdir(PROJECT_DIR)
    try:
        code = run_demo(1, "acme", "e-1")  # one batch: each `dbt build` takes minutes on a busy machine
        after_demo = dict(os.environ)
    finally:
        os.environ.clear()
        os.environ.update(environment)

    assert _files(project.landing) == before
    assert project.query(f"select owner from {project.schema}.kept") == [{"owner": "mine"}]
    assert code == 0
    assert after_demo == environment  # the demo put the landing folder and schema back itself
    demo = sorted(path.name for path in (project.home.resolve() / "demo" / "landing").iterdir())
    assert demo[0] == MARKER
    assert len(demo) == 2 and all(name.startswith("batch_") for name in demo[1:])
    timeline = project.query(
        f"select state_id, is_open from {DEMO_SCHEMA}.entity_state_view "
        "where tenant_id = 'acme' and entity_id = 'e-1' order by start_time"
    )
    assert timeline and timeline[-1]["is_open"]


@pytest.fixture
def schema_dropped_after(project: DbtProject) -> Iterator[DbtProject]:
    """The project, its schema dropped after the test: the next test's setup runs the landing hook before it resets
    the schema, and would stop at a `landing_events` this test left."""
    yield project
    project.reset()


@pytest.mark.parametrize(
    ("kind", "refusal"),
    [
        ("managed", "a managed table"),
        ("purging", "an external table that may delete its files in"),
        ("view", "a view"),
    ],
)
def test_the_landing_hook_never_drops_a_landing_events_it_did_not_create(
    schema_dropped_after, tmp_path, capsys, kind, refusal
):
    project = schema_dropped_after
    table = f"{project.schema}.landing_events"
    project.execute(f"create schema if not exists {project.schema}")
    if kind == "managed":
        project.execute(f"create table {table} using parquet as select 'mine' as owner")
    elif kind == "purging":
        # over the configured landing folder even, but a drop would delete its files on a Hive 3 metastore. The key
        # listed after the flag is one the listing's parser cannot split from the flag's value
        project.execute(
            f"create table {table} (owner string) using parquet location '{project.landing}' "
            "tblproperties ('external.table.purge' = 'true', 'f:x' = '1')"
        )
        project.execute(f"insert into {table} select 'mine'")
    else:
        project.execute(f"create view {table} as select 'mine' as owner")
    files = _files(project.table_location("landing_events")) if kind != "view" else {}
    result = project.dbt("run-operation", "create_landing_table", expect_success=False)
    assert not result.success
    message = capsys.readouterr().out  # dbt prints the error of a failed run-operation
    assert f"{table} exists and is {refusal}" in message
    assert "nothing was dropped" in message
    assert project.query(f"select owner from {table}") == [{"owner": "mine"}]
    if kind != "view":
        assert _files(project.table_location("landing_events")) == files


def test_the_landing_hook_replaces_its_own_table_and_refuses_a_foreign_external_one(
    schema_dropped_after, tmp_path, capsys
):
    project = schema_dropped_after
    project.land([dict(tenant_id="acme", entity_id="e-1", state_id="A", event_time=T0)], T0)
    before = _files(project.landing)
    # its own table follows ENTITY_STATE_LANDING_DIR to another folder
    project.dbt("run-operation", "create_landing_table")
    assert project.table_location("landing_events") == project.landing
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.environ["ENTITY_STATE_LANDING_DIR"] = str(elsewhere)
    try:
        project.dbt("run-operation", "create_landing_table")
        assert project.table_location("landing_events") == elsewhere
    finally:
        os.environ["ENTITY_STATE_LANDING_DIR"] = str(project.landing)
    assert _files(project.landing) == before
    # an external table somebody else made over another folder is not dropped
    project.execute(f"drop table {project.schema}.landing_events")
    project.execute(f"create table {project.schema}.landing_events (owner string) using parquet location '{elsewhere}'")
    result = project.dbt("run-operation", "create_landing_table", expect_success=False)
    assert not result.success
    assert "that this project did not create" in capsys.readouterr().out
    assert project.table_location("landing_events") == elsewhere
    # one over the landing folder without the property (as the hook made them before it set one) is replaced
    project.execute(f"drop table {project.schema}.landing_events")
    project.execute(
        f"create table {project.schema}.landing_events (tenant_id string) using parquet location '{project.landing}'"
    )
    project.dbt("run-operation", "create_landing_table")
    assert project.table_location("landing_events") == project.landing
    assert "event_time" in {row["col_name"] for row in project.query(f"describe {project.schema}.landing_events")}
    assert _files(project.landing) == before
