"""What a run with nothing to change leaves alone: the views whose definition is unchanged (`kept_view`), the state
tables whose window is empty (the write plan's `is_window_empty`) and their watermarks (set only when they move), and
what it still replaces."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from tests.reference import Event

from .dbt_harness import failing_statement, statements_sent
from .state_assertions import assert_matches_reference

T0 = datetime(2026, 6, 1, 8, 0, tzinfo=UTC)
ARRIVAL = datetime(2026, 6, 2, tzinfo=UTC)
PARTITIONED = ("entity_state_segments", "events_rejected", "entity_state_batches", "entity_state_current_log")
# the time-in-state table is written whole, and only when the current table moved
WATERMARKED = (*PARTITIONED, "entity_state_daily_counted")
# the tables written one partition per window, whose emitted watermark a run reads from their rows only when a write
# was not recorded (emitted_watermark)
EMITTING = (*PARTITIONED, "entity_state_changes")
# the check of a window's landed files (assert_landing_files_complete)
FILES_CHECK = r"select\s+_metadata\.file_name"


def _definitions(project) -> dict[str, str | None]:
    """Each view of the schema with the definition digest it was created with, read as dbt reads it. The listing
    also shows the session's temporary views (a dbt-spark incremental model leaves its `__dbt_tmp`); they are not
    the schema's."""
    rows = project.query(f"show table extended in {project.schema} like '*'")
    found = {}
    for row in rows:
        if "Type: VIEW" in row["information"] and not row["isTemporary"]:
            digest = re.search(r"entity_state\.view_definition_md5=([0-9a-f]{32})", row["information"])
            found[row["tableName"]] = digest.group(1) if digest else None
    return found


def _created(project, view: str) -> str:
    rows = project.query(f"describe table extended {project.schema}.{view}")
    return next(row["data_type"] for row in rows if row["col_name"] == "Created Time")


def _partitions(project) -> dict[str, int]:
    return {table: len(project.query(f"show partitions {project.schema}.{table}")) for table in PARTITIONED}


def test_a_run_with_nothing_new_keeps_views_and_writes_no_partition_and_a_changed_view_is_replaced(project):
    landed: list[Event] = []
    project.land_moves(landed, T0, ARRIVAL, [("e-1", "A", 0), ("e-1", "B", 5), ("e-2", "X", 1)])
    project.dbt("run")
    definitions, partitions = _definitions(project), _partitions(project)
    assert definitions and None not in definitions.values(), definitions
    created = {view: _created(project, view) for view in definitions}

    # the run fails if it sets a state table's watermark or write intent again (it is the value the table holds),
    # builds the time-in-state table again (the view entity_state_daily counts the open stays on up to the query),
    # reads a table's rows for how far it emitted while every write was recorded, or checks the landed files of a
    # window that holds nothing new, or recreates the landing table (or asks the catalog for it) when it is as the
    # hook made it: refreshing it is enough; or asks the catalog when segments was built, which dbt's relation cache
    # already says
    watermarked, emitting = "|".join(WATERMARKED), "|".join(EMITTING)
    with (
        statements_sent() as sent,
        failing_statement(
            rf"(alter table \S*\.({watermarked}) set tblproperties|create table \S*entity_state_daily_counted"
            rf"|select unix_micros\(max\(\w+\)\) from \S*\.({emitting})\b"
            rf"|{FILES_CHECK}|drop table if exists \S*landing_events|show (tables|schemas)\b"
            r"|describe table extended \S*entity_state_segments\b)"
        ) as writes,
    ):
        project.dbt("run")
    assert not writes
    # the run asks the catalog for no table's properties (dbt's listing at the start of the run shows them), and for
    # the newest landed arrival once, though several models decide their windows from it (run_memo)
    assert _properties_read(sent) == {}
    assert len([sql for sql in sent if re.search(r"select unix_micros\(max\(.*\bfrom \S*landing_events", sql)]) == 1

    assert _definitions(project) == definitions
    assert {view: _created(project, view) for view in definitions} == created, "an unchanged view was recreated"
    assert _partitions(project) == partitions, "a run with nothing new added a partition"
    assert_matches_reference(project, landed)

    # a var that changes entity_state_view's SQL replaces that view, and only the views whose SQL it changes
    project.settings = {"entity_state__stale_after": "2 hours"}
    project.dbt("run")

    changed = {view for view, digest in _definitions(project).items() if digest != definitions[view]}
    assert "entity_state_view" in changed
    assert "stg_events" not in changed
    assert _created(project, "stg_events") == created["stg_events"]
    stale = project.query(f"select count(*) as n from {project.schema}.entity_state_view where is_stale")
    assert stale[0]["n"] == 2, "the replaced view does not count the silent entities as stale"

    # a batch is written with one `describe` of each state table: the columns its schema check reads; the current
    # table takes its open stays from the walk segments wrote, and walks nothing again. The quarantine, with no
    # rejected row in the window (found by the files check), checks its columns but writes nothing and adds no
    # partition
    project.land_moves(landed, T0, ARRIVAL.replace(hour=1), [("e-1", "C", 9), ("e-3", "X", 2)])
    partitions = _partitions(project)
    with statements_sent() as sent:
        project.dbt("run")
    for table in EMITTING:
        described = [sql for sql in sent if re.search(rf"describe (table )?extended \S*\.{table}\s*$", sql.strip())]
        assert len(described) == 1, (table, described)
    assert not [sql for sql in sent if re.search(r"insert into table \S*\.events_rejected\b", sql)]
    added = {table: count - partitions[table] for table, count in _partitions(project).items()}
    assert added == {
        "entity_state_segments": 1,
        "events_rejected": 0,
        "entity_state_batches": 1,
        "entity_state_current_log": 1,
    }, added
    _assert_reads_segments_walk(_current_write(sent))
    # a table's properties are asked of the catalog once its model wrote them, by the first model that reads them
    # after that (the current table's by the time-in-state table), and by no other. The window's files are checked
    # once.
    written_then_read = ("entity_state_segments", "events_rejected", "entity_state_batches", "entity_state_current_log")
    assert _properties_read(sent) == dict.fromkeys(written_then_read, 1)
    assert len([sql for sql in sent if re.search(FILES_CHECK, sql)]) == 1
    assert_matches_reference(project, landed)

    # a new batch is written as before; --full-refresh replaces every view, and the current table, built again from
    # every landed event, reads its open stays from segments' walk of them as well
    project.land_moves(landed, T0, ARRIVAL.replace(hour=2), [("e-1", "D", 11)])
    with statements_sent() as sent:
        project.dbt("run", "--full-refresh")
    _assert_reads_segments_walk(_current_write(sent))

    assert all(_created(project, view) != created[view] for view in definitions)
    assert_matches_reference(project, landed)


def _properties_read(sent: list[str]) -> dict[str, int]:
    """How many times the statements asked each table for its properties."""
    read: dict[str, int] = {}
    for sql in sent:
        for table in re.findall(r"show tblproperties \S*\.(\w+)", sql):
            read[table] = read.get(table, 0) + 1
    return read


def _current_write(sent: list[str]) -> str:
    """The statement that wrote entity_state_current_log: a new partition of it, or the table built aside."""
    writes = [
        sql
        for sql in sent
        if re.search(r"(insert into table|create table) \S*\.entity_state_current_log(__rebuild_\w+)?\b", sql)
    ]
    assert len(writes) == 1, writes
    return writes[0]


def _assert_reads_segments_walk(write: str) -> None:
    # open_stays_from_walked reads segments' partition of the walk; entity_state_islands numbers the walk's stays
    assert "walked_closed_stays" in write and "island_number" not in write, write
