"""A run reads only the landing files its window can hold, however long the landing history grows; the input
contract that makes this safe (a batch is not stamped later than its file was written) is enforced."""

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
