"""The project used as a local dbt package by another dbt project, reading that project's own events table: the
state models still get this project's write path (dbt-spark's incremental materialization on Delta Lake, with this
project's merge statement for the stays), and the view equals the reference."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import yaml
from dbt.cli.main import dbtRunner

from tests.reference import Event

from .dbt_harness import EVENTS_TABLE_COLUMNS, PROJECT_DIR
from .state_assertions import assert_matches_reference

T0 = datetime(2026, 6, 1, 8, 0, tzinfo=UTC)


def _consumer_project(folder: Path, events_table: str) -> Path:
    """A dbt project of a user's own: this project as a local package, the events table, one model on the view."""
    folder.mkdir()
    (folder / "models").mkdir()
    (folder / "dbt_project.yml").write_text(
        yaml.safe_dump(
            {
                "name": "pallet_analytics",
                "version": "1.0.0",
                "config-version": 2,
                "profile": "entity_state",
                "vars": {
                    "entity_state__events_table": events_table,
                    "entity_state__events_columns": EVENTS_TABLE_COLUMNS,
                },
            }
        )
    )
    (folder / "packages.yml").write_text(yaml.safe_dump({"packages": [{"local": str(PROJECT_DIR)}]}))
    (folder / "models" / "pallet_dwell.sql").write_text(
        "select tenant_id, entity_id, state_id, start_time, end_time, is_open\n"
        "from {{ ref('entity_state', 'entity_state_view') }}\n"
    )
    return folder


def _dbt(folder: Path, *args: str) -> None:
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        # its own target folder: the one the tests share (DBT_TARGET_PATH) holds this project's partial-parse file
        target = ["--target-path", str(folder / "target")] if args[0] != "deps" else []
        result = dbtRunner().invoke([*args, "--quiet", "--project-dir", str(folder), *target])
    finally:
        os.chdir(cwd)
    assert result.success, f"dbt {' '.join(args)} in the consumer project failed: {result.exception or result.result}"


def test_a_dbt_project_that_uses_this_one_as_a_package_gets_the_same_state(project, tmp_path):
    events_table = project.use_events_table()
    consumer = _consumer_project(tmp_path / "consumer", events_table)
    _dbt(consumer, "deps")

    landed: list[Event] = []
    project.land_moves(landed, T0, T0 + timedelta(days=1), [("e-1", "A", 0), ("e-1", "B", 5), ("e-2", "X", 1)])
    _dbt(consumer, "run")
    project.land_moves(landed, T0, T0 + timedelta(days=1, minutes=1), [("e-1", "C", 9), ("e-2", "Y", 3)])
    _dbt(consumer, "run")

    assert_matches_reference(project, landed)
    dwell = project.query(f"select count(*) as stays from {project.schema}.pallet_dwell")
    assert dwell == [{"stays": 5}]
    # this project's write path: the first run creates the Delta table, the second merges its window into it
    history = project.query(f"describe history {project.schema}.entity_state_segments")
    operations = [row["operation"] for row in sorted(history, key=lambda row: row["version"])]
    assert operations[0] in {"CREATE TABLE AS SELECT", "CREATE OR REPLACE TABLE AS SELECT"}, operations
    assert operations[-1] == "MERGE", operations
