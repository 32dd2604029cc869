"""`entity-state demo` works in its own folder and schema, deletes only files it wrote, refuses anything else.

dbt is replaced by a stand-in that records its calls: no Spark starts here (tests/integration/test_user_data_safety.py
runs the real demo).
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import ClassVar

import pyarrow as pa
import pytest

from entity_state.demo import DEFAULT_SCHEMA, DEMO_SCHEMA, MARKER, DemoFolder, DemoRefused, run_demo
from entity_state.landing import LANDED_SCHEMA

PROJECT_DIR = Path(__file__).resolve().parents[2]
NOON = datetime(2026, 3, 3, 12, 0, tzinfo=UTC)


COLUMNS = ["tenant_id", "entity_id", "state_id", "start_time", "end_time", "last_event_ts", "is_open", "is_stale"]
MINUTE = timedelta(minutes=1)
STAYS = SimpleNamespace(
    column_names=COLUMNS,
    rows=[  # agate rows: read by column name
        dict(zip(COLUMNS, ["acme", "e-1", "A", NOON, NOON + 12 * MINUTE, NOON, False, False], strict=True)),
        dict(
            zip(
                COLUMNS,
                ["acme", "e-1", "B", NOON + 12 * MINUTE, NOON + 900 * MINUTE, NOON + 20 * MINUTE, True, True],
                strict=True,
            )
        ),
    ],
)


class RecordingDbt:
    """Stands in for dbtRunner: every call succeeds and is recorded with the environment it saw; a `dbt show`
    returns two stays of acme/e-1."""

    calls: ClassVar[list[tuple[list[str], str | None, str | None]]] = []
    kept_alive: ClassVar[list[str | None]] = []

    def invoke(self, args):
        RecordingDbt.calls.append(
            (args, os.environ.get("ENTITY_STATE_LANDING_DIR"), os.environ.get("ENTITY_STATE_SCHEMA"))
        )
        RecordingDbt.kept_alive.append(os.environ.get("ENTITY_STATE_DRIVER_KEPT_ALIVE"))
        shown = SimpleNamespace(results=[SimpleNamespace(agate_table=STAYS)])
        return SimpleNamespace(success=True, result=shown)


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A state home in tmp_path, the environment's landing folder and schema pointing at the user's own, the
    project folder as working directory, and dbt replaced by RecordingDbt."""
    monkeypatch.chdir(PROJECT_DIR)
    monkeypatch.setenv("ENTITY_STATE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ENTITY_STATE_LANDING_DIR", str(tmp_path / "landed"))
    monkeypatch.setenv("ENTITY_STATE_SCHEMA", "entity_state")
    monkeypatch.setattr("dbt.cli.main.dbtRunner", RecordingDbt)
    RecordingDbt.calls = []
    RecordingDbt.kept_alive = []
    return tmp_path / "home"


def _files(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in folder.iterdir()}


def _table() -> pa.Table:
    return pa.table(
        {"tenant_id": ["acme"], "entity_id": ["e-1"], "state_id": ["A"], "event_time": [NOON]}
        | {"event_time_text": [None], "ingested_at": [None]},
        schema=LANDED_SCHEMA,
    )


def test_the_demo_lands_in_its_own_folder_and_schema_and_leaves_the_configured_ones(home, tmp_path, capsys):
    landed = tmp_path / "landed"
    landed.mkdir()
    (landed / "batch_mine.parquet").write_bytes(b"a batch somebody landed")
    assert run_demo(3, "acme", "e-1") == 0
    assert _files(landed) == {"batch_mine.parquet": b"a batch somebody landed"}
    demo = home.resolve() / "demo" / "landing"
    assert sorted(path.name.startswith("batch_") for path in demo.iterdir()) == [False, True, True, True]
    assert (demo / MARKER).is_file()
    assert [(args[0], landing, schema) for args, landing, schema in RecordingDbt.calls] == [
        ("run-operation", str(demo), DEMO_SCHEMA),
        ("build", str(demo), DEMO_SCHEMA),
        ("build", str(demo), DEMO_SCHEMA),
        ("build", str(demo), DEMO_SCHEMA),
        ("show", str(demo), DEMO_SCHEMA),
        ("show", str(demo), DEMO_SCHEMA),
    ]
    assert all("entity_state__stale_after" in " ".join(args) for args, _, _ in RecordingDbt.calls[1:])
    picture = home.resolve() / "demo" / "timeline.png"
    assert picture.read_bytes()[:4] == b"\x89PNG"
    assert os.environ["ENTITY_STATE_LANDING_DIR"] == str(landed)
    assert os.environ["ENTITY_STATE_SCHEMA"] == "entity_state"
    out = capsys.readouterr().out
    assert f"ignores ENTITY_STATE_LANDING_DIR={landed} and ENTITY_STATE_SCHEMA=entity_state" in out
    assert f"timeline picture of tenant acme: {picture}" in out
    # a second run starts from scratch: it deletes the three batches it wrote, and lands three new ones
    first = {path.name for path in demo.iterdir()}
    assert run_demo(3, "acme", "e-1") == 0
    assert len({path.name for path in demo.iterdir()} - first) == 3
    assert len(list(demo.iterdir())) == 4
    assert _files(landed) == {"batch_mine.parquet": b"a batch somebody landed"}


def test_the_demo_s_dbt_calls_share_a_driver_started_for_many_runs_unless_the_environment_says_otherwise(
    home, monkeypatch
):
    monkeypatch.delenv("ENTITY_STATE_DRIVER_KEPT_ALIVE", raising=False)
    assert run_demo(3, "acme", "e-1") == 0
    assert RecordingDbt.kept_alive == ["true"] * len(RecordingDbt.calls)
    assert "ENTITY_STATE_DRIVER_KEPT_ALIVE" not in os.environ
    RecordingDbt.kept_alive = []
    monkeypatch.setenv("ENTITY_STATE_DRIVER_KEPT_ALIVE", "false")
    assert run_demo(3, "acme", "e-1") == 0
    assert set(RecordingDbt.kept_alive) == {"false"}


def test_a_demo_folder_without_the_marker_is_refused_and_left_as_it_is(home, capsys):
    demo = home / "demo" / "landing"
    demo.mkdir(parents=True)
    (demo / "batch_1.parquet").write_bytes(b"landed by hand")
    assert run_demo(3, "acme", "e-1") == 2
    error = capsys.readouterr().err
    assert f"{demo.resolve()} exists but is not the demo's folder" in error
    assert "batch_1.parquet" in error
    assert _files(demo) == {"batch_1.parquet": b"landed by hand"}
    assert RecordingDbt.calls == []


def test_an_empty_folder_without_the_marker_is_refused_too(home, capsys):
    demo = home / "demo" / "landing"
    demo.mkdir(parents=True)
    assert run_demo(3, "acme", "e-1") == 2
    assert "is not the demo's folder" in capsys.readouterr().err
    assert list(demo.iterdir()) == []
    assert RecordingDbt.calls == []


def test_files_the_demo_did_not_write_are_refused_and_nothing_is_deleted(home, capsys):
    demo = home.resolve() / "demo" / "landing"
    own = DemoFolder.claim(demo).land(_table(), NOON).path
    (demo / "events_from_production.parquet").write_bytes(b"the only copy")
    (demo / ".hidden").write_bytes(b"hidden")
    before = _files(demo)
    assert run_demo(3, "acme", "e-1") == 2
    error = capsys.readouterr().err
    assert f"{demo} holds files the demo did not write" in error
    assert "events_from_production.parquet (not written by the demo)" in error
    assert ".hidden (not written by the demo)" in error
    assert own.name not in error
    assert _files(demo) == before
    assert RecordingDbt.calls == []


def test_a_file_changed_since_the_demo_wrote_it_is_refused(tmp_path):
    demo = tmp_path / "demo"
    path = DemoFolder.claim(demo).land(_table(), NOON).path
    path.write_bytes(b"replaced by the user")
    with pytest.raises(DemoRefused, match=rf"{path.name} \(changed since the demo wrote it\)"):
        DemoFolder.claim(demo)
    assert path.read_bytes() == b"replaced by the user"


def test_starting_over_deletes_only_the_demo_s_own_batches_and_leftovers(tmp_path):
    demo = tmp_path / "demo"
    folder = DemoFolder.claim(demo)
    folder.land(_table(), NOON)
    folder.land(_table(), NOON)
    # what a demo killed mid-batch leaves: a name recorded without its digest, and write_atomically's temporary file
    folder.batches["batch_20260303T120000000000_0123abcd.parquet"] = None
    folder._save()
    (demo / "batch_20260303T120000000000_0123abcd.parquet").write_bytes(b"half")
    (demo / ".batch_20260303T120000000000_0123abcd.parquet.89abcdef.tmp").write_bytes(b"half")
    assert len(list(demo.iterdir())) == 5
    DemoFolder.claim(demo)
    assert [path.name for path in demo.iterdir()] == [MARKER]


def test_a_landing_folder_around_or_inside_the_demo_s_is_refused(home, monkeypatch, capsys):
    for landing in (home / "demo", home / "demo" / "landing" / "events", home):
        monkeypatch.setenv("ENTITY_STATE_LANDING_DIR", str(landing))
        assert run_demo(3, "acme", "e-1") == 2
        assert "lie one inside the other" in capsys.readouterr().err
    assert not home.exists()
    assert RecordingDbt.calls == []


@pytest.mark.parametrize(
    ("built", "schema_set", "documented"),
    [
        ({DEMO_SCHEMA}, False, DEMO_SCHEMA),
        ({DEMO_SCHEMA, DEFAULT_SCHEMA}, False, None),
        (set(), False, None),
        ({DEMO_SCHEMA}, True, "entity_state"),
    ],
)
def test_docs_document_the_demo_only_while_the_default_schema_was_never_built(
    home, monkeypatch, capsys, built, schema_set, documented
):
    from entity_state.cli import main

    (home / "warehouse" / f"{DEFAULT_SCHEMA}.db").mkdir(parents=True)  # a `dbt compile` alone creates it
    for schema in built:
        (home / "warehouse" / f"{schema}.db" / "entity_state_segments").mkdir(parents=True)
    if not schema_set:
        monkeypatch.delenv("ENTITY_STATE_SCHEMA")
    assert main(["docs", "--serve", "--port", "8123"]) == 0
    commands = [call[0][:2] for call in RecordingDbt.calls]
    assert commands == [["docs", "generate"], ["docs", "serve"]]
    assert {call[2] for call in RecordingDbt.calls} == {documented}
    if documented == DEMO_SCHEMA:
        assert {call[1] for call in RecordingDbt.calls} == {str(home / "demo" / "landing")}
        assert f"documenting the demo's state (schema {DEMO_SCHEMA})" in capsys.readouterr().out
    assert os.environ.get("ENTITY_STATE_SCHEMA") == ("entity_state" if schema_set else None)


def test_the_default_schema_is_the_profile_s():
    assert (
        f"env_var('ENTITY_STATE_SCHEMA', '{DEFAULT_SCHEMA}')" in (PROJECT_DIR / "profiles" / "profiles.yml").read_text()
    )
