"""A run reads only the landing files its window can hold, however long the landing history grows; the input
contract that makes this safe (a batch is not stamped later than its file was written) is enforced. The changes feed
likewise reads only the writes of entity_state_segments that its window's changes can depend on, and the bound of a
repair's read lists them all only when they may hold it."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests.reference import Event

from .dbt_harness import partitions_fetched_by_statement
from .state_assertions import assert_daily_matches_reference, assert_matches_reference

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


def _segments_files_of_first_write(project) -> list[Path]:
    rows = project.query(
        f"select distinct emitted_window, input_file_name() as path from {project.schema}.entity_state_segments"
    )
    first = min(r["emitted_window"] for r in rows)
    return [Path(urlparse(r["path"]).path) for r in rows if r["emitted_window"] == first]


def _run_with_segments_files_unreadable(project, files: list[Path], *models: str, expect_success: bool = True):
    """`dbt run -s MODELS` with `files` of entity_state_segments unreadable (a run that opened one would fail), then
    the files put back. Spark keeps the sizes of the files it listed, so the table's listing is refreshed after."""
    kept = {path: path.read_bytes() for path in files}
    for path in files:
        path.write_bytes(b"PAR1 no longer a parquet file")
    try:
        return project.dbt("run", "-s", *models, expect_success=expect_success)
    finally:
        for path, content in kept.items():
            path.write_bytes(content)
        project.query(f"refresh table {project.schema}.entity_state_segments")


def test_the_changes_feed_and_the_time_in_state_read_only_the_segments_writes_they_need(project):
    day0 = LONG_AGO.replace(hour=0, minute=0, second=0)

    def event(entity, state, at):
        return dict(tenant_id="acme", entity_id=entity, state_id=state, event_time=day0 + at)

    hour, day = timedelta(hours=1), timedelta(days=1)
    first_day = [event("e-1", "A", 0 * hour), event("e-1", "B", hour), event("e-2", "X", hour)]
    next_day = [event("e-1", "C", day + 10 * hour), event("e-1", "D", day + 11 * hour)]
    _land_written_at(project, first_day, day0 + 2 * hour)
    project.dbt("run")
    _land_written_at(project, next_day, day0 + day + 12 * hour)
    project.dbt("run")
    # segments' first write (its window ends at the first arrival) holds e-1's stay A alone
    first_write = _segments_files_of_first_write(project)
    assert first_write
    readers = ("entity_state_changes", "entity_state_daily_counted", "entity_state_daily")

    # A late event inside e-1's stay C. Its repair reaches the stays from C's start on, and the days recomputed
    # start on C's day; the stays involved were closed by events from then on, which arrived at most the event clock
    # skew (1 hour) earlier. The first write's window ended long before.
    inside_c = [event("e-1", "X", day + 10 * hour + timedelta(minutes=30))]
    project.land(inside_c, NOW - timedelta(minutes=2))
    project.dbt("run", "--exclude", *readers)
    _run_with_segments_files_unreadable(project, first_write, *readers)
    landed = (
        _applied(first_day, day0 + 2 * hour)
        + _applied(next_day, day0 + day + 12 * hour)
        + _applied(inside_c, NOW - timedelta(minutes=2))
    )
    assert_matches_reference(project, landed)
    assert_daily_matches_reference(project, landed, None)

    # a late event inside e-1's first stay: its repair retracts stay A, so the changes feed reads the first write
    inside_a = [event("e-1", "Y", timedelta(minutes=30))]
    project.land(inside_a, NOW - timedelta(minutes=1))
    project.dbt("run", "--exclude", *readers)
    result = _run_with_segments_files_unreadable(project, first_write, "entity_state_changes", expect_success=False)
    failures = " ".join(str(node.message) for node in result.result if node.status == "error")
    assert any(path.name in failures for path in first_write), failures
    project.dbt("run")
    landed += _applied(inside_a, NOW - timedelta(minutes=1))
    assert_matches_reference(project, landed)
    assert_daily_matches_reference(project, landed, None)


def test_a_repair_bound_lists_past_writes_of_segments_only_when_they_may_hold_it(project):
    if project.target != "local":
        pytest.skip("counts the partitions the in-process Spark fetches; on the cluster that is the server's JVM")

    def most_partitions_one_statement_fetched() -> int:
        with partitions_fetched_by_statement() as fetched:
            project.dbt("run")
        return max(partitions for _, partitions in fetched)

    # Past writes of segments, one partition per run: a statement that lists them all costs more the more runs
    # wrote it. The table's first write is ten days old, and empty partitions of windows that ended just after it
    # stand in for the writes since, as in the benchmark's "landed files" section.
    past_writes = 40
    built_at = LONG_AGO - timedelta(days=10)
    earliest = [_event("e-0", "Q", -10 * 24 * 60)]
    _land_written_at(project, earliest, built_at)
    project.dbt("run")
    built_micros = int(built_at.timestamp() * 1_000_000)
    specs = " ".join(
        f"partition (emitted_window = '{window:020d}_{0:020d}_{window:012x}')"
        for window in range(built_micros + 1, built_micros + past_writes + 1)
    )
    project.execute(f"alter table {project.schema}.entity_state_segments add if not exists {specs}")
    first = [_event("e-1", "A", 0), _event("e-2", "X", 1)]
    second = [_event("e-1", "B", 60), _event("e-2", "Y", 61), _event("e-3", "P", 62), _event("e-1", "C", 120)]
    _land_written_at(project, first, LONG_AGO)
    # this run finds the added partitions past the recorded watermarks, as writes of a run that stopped before
    # recording them, and reads them once; the runs after it are the ones measured
    project.dbt("run")

    # every window event is newer than its entity's stored last one, in one batch: no entity may be repaired
    _land_written_at(project, second, LONG_AGO + timedelta(hours=2))
    assert most_partitions_one_statement_fetched() < past_writes

    # A late event inside e-1's stay B: A (0-60) is a qualifying standing stay before it, in a write whose window
    # ended after the late event's time less the clock skew, so the bound is found without the past writes.
    inside_b = [_event("e-1", "X", 90)]
    project.land(inside_b, NOW - timedelta(minutes=1))
    assert most_partitions_one_statement_fetched() < past_writes

    # a late event before e-2's first: no stay of e-2 ends before it, so its repair walks all of e-2's events, from
    # the first start of its stays in any write, and every write is listed
    before_x = [_event("e-2", "W", 0)]
    project.land(before_x, NOW)
    assert most_partitions_one_statement_fetched() >= past_writes
    assert_matches_reference(
        project,
        _applied(earliest, built_at)
        + _applied(first, LONG_AGO)
        + _applied(second, LONG_AGO + timedelta(hours=2))
        + _applied(inside_b, NOW - timedelta(minutes=1))
        + _applied(before_x, NOW),
    )


def test_a_repair_bound_reads_a_young_segments_table_once(project):
    """A table whose writes all ended after the recent writes' cut: the recent read already read every write, so an
    entity left without a bound there needs no second read of them."""
    if project.target != "local":
        pytest.skip("counts the statements the in-process Spark fetches partitions for")
    first = [_event("e-1", "A", 0), _event("e-1", "B", 60), _event("e-2", "X", 1)]
    _land_written_at(project, first, LONG_AGO)
    project.dbt("run")

    # before e-2's first event: no stay of e-2 ends before it, so its entity has no bound in any write
    before_x = [_event("e-2", "W", 0)]
    project.land(before_x, NOW)
    with partitions_fetched_by_statement() as fetched:
        project.dbt("run")
    bound_queries = [statement for statement, _ in fetched if "entities_without_bound" in statement]
    assert len(bound_queries) == 1, f"{len(bound_queries)} reads of segments' writes for the repair bound"
    assert_matches_reference(project, _applied(first, LONG_AGO) + _applied(before_x, NOW))
