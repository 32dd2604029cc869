"""A run reads only the landing files its window can hold, however long the landing history grows; the input
contract that makes this safe (a batch is not stamped later than its file was written) is enforced. The changes feed
likewise reads only the writes of entity_state_segments that its window's changes can depend on, and the bound of a
repair's read lists them all only when they may hold it."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

from tests.reference import Event

from .state_assertions import assert_matches_reference

NOW = datetime.now(UTC).replace(microsecond=0)
LONG_AGO = NOW - timedelta(days=3)


def _event(entity, state, minutes_after_long_ago):
    return dict(
        tenant_id="acme",
        entity_id=entity,
        state_id=state,
        event_time=LONG_AGO + timedelta(minutes=minutes_after_long_ago),
    )


def _land_written_at(project, rows, ingested_at):
    path = project.land(rows, ingested_at)
    os.utime(path, (ingested_at.timestamp(), ingested_at.timestamp()))
    return path


def _applied(rows, ingested_at):
    return [Event(r["tenant_id"], r["entity_id"], r["state_id"], r["event_time"], ingested_at) for r in rows]


def test_a_run_never_reads_a_landing_file_older_than_its_window(project):
    oldest = [_event("e-1", "A", 0), _event("e-2", "X", 1)]
    older = [_event("e-1", "B", 60), _event("e-2", "X", 61)]
    oldest_file = _land_written_at(project, oldest, LONG_AGO)
    _land_written_at(project, older, LONG_AGO + timedelta(hours=2))
    project.dbt("run")

    # The first file is now long processed. Made unreadable, it would fail any run that opened it; its
    # modification time is kept, as a file that was never touched again.
    oldest_file.write_bytes(b"PAR1 no longer a parquet file")
    os.utime(oldest_file, (LONG_AGO.timestamp(), LONG_AGO.timestamp()))
    newest = [_event("e-1", "C", 120), _event("e-2", "Y", 121), _event("e-3", "P", 122)]
    project.land(newest, NOW - timedelta(minutes=1))
    project.dbt("run")

    assert_matches_reference(
        project,
        _applied(oldest, LONG_AGO)
        + _applied(older, LONG_AGO + timedelta(hours=2))
        + _applied(newest, NOW - timedelta(minutes=1)),
    )


def test_a_repair_reads_the_landing_files_from_the_stay_its_late_event_falls_in(project):
    day = timedelta(days=1)
    first_day = [_event("e-1", "A", 0), _event("e-1", "B", 60), _event("e-2", "X", 1)]
    next_day = [_event("e-1", "C", 24 * 60 - 10), _event("e-1", "D", 24 * 60 - 5)]
    first_file = _land_written_at(project, first_day, LONG_AGO + timedelta(hours=2))
    _land_written_at(project, next_day, LONG_AGO + day)
    project.dbt("run")

    # e-1's stay C starts alone at its time, after B's last event: a late event inside C moves nothing before it,
    # so its repair needs the events from C's start on, which lie in files modified since then less both clock
    # skews (2 hours). The first file is older: made unreadable, it fails any run that opens it.
    first_file.write_bytes(b"PAR1 no longer a parquet file")
    os.utime(first_file, (LONG_AGO.timestamp(), LONG_AGO.timestamp()))
    inside_c = [_event("e-1", "X", 24 * 60 - 7)]
    project.land(inside_c, NOW - timedelta(minutes=2))
    project.dbt("run")
    assert_matches_reference(
        project,
        _applied(first_day, LONG_AGO + timedelta(hours=2))
        + _applied(next_day, LONG_AGO + day)
        + _applied(inside_c, NOW - timedelta(minutes=2)),
    )

    # a late event inside e-1's first stay: its repair walks all of e-1's events, so it reads the files since its
    # first event, the broken one too
    project.land([_event("e-1", "Y", 30)], NOW - timedelta(minutes=1))
    result = project.dbt("run", expect_success=False)
    failures = " ".join(str(node.message) for node in result.result if node.status == "error")
    assert first_file.name in failures and "not a Parquet file" in failures
