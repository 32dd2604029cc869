"""No command of the project deletes data a user landed or stored: the demo keeps to its own folder and schema."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

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
