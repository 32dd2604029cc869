"""Results must not depend on model order, on --select, on a failure between the two writes, or on empty runs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.reference import Event

from .dbt_harness import BUILD_ON_THE_STATE, InjectedFailure, failing_statement
from .state_assertions import assert_matches_reference, segments_rows, view_stays

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
ARRIVAL = datetime(2026, 3, 2, tzinfo=UTC)
# segments with the run manifest, which opens the window of new arrivals every model of a run reads
SEGMENTS_ALONE = ("entity_state_runs", "entity_state_segments")


def _batch(project, landed, ingested_minute, *events):
    project.land_moves(landed, T0, ARRIVAL + timedelta(minutes=ingested_minute), list(events))


def test_selecting_one_model_at_a_time_in_any_order_converges(project):
    landed: list[Event] = []
    _batch(project, landed, 1, ("e-1", "A", 0), ("e-1", "B", 5), ("e-2", "X", 1))
    # before segments ever ran: must not move
    project.dbt("run", "-s", "path:models/staging", "entity_state_current")
    project.dbt("run", "-s", *SEGMENTS_ALONE)
    _batch(project, landed, 2, ("e-1", "C", 9), ("e-2", "Y", 3))
    project.dbt("run", "-s", *SEGMENTS_ALONE)  # runs ahead of current twice
    project.dbt("run", "-s", *SEGMENTS_ALONE)
    project.dbt("run", "-s", "entity_state_current", "entity_state_view")
    assert_matches_reference(project, landed)

    _batch(project, landed, 3, ("e-1", "A", 12))
    project.dbt("run", "-s", "entity_state_current")  # alone again: nothing to catch up with yet
    project.dbt("run")
    assert_matches_reference(project, landed)


@pytest.mark.cluster
def test_failure_between_the_two_writes_is_repaired_by_a_plain_rerun(project):
    landed: list[Event] = []
    _batch(project, landed, 1, ("e-1", "A", 0), ("e-1", "A", 2))
    project.dbt("run")
    _batch(project, landed, 2, ("e-1", "B", 4), ("e-1", "C", 6), ("e-1", "C", 7))
    with failing_statement(r"merge into \S*entity_state_current\b") as hits:
        result = project.dbt("run", expect_success=False)
    assert hits and not result.success
    _batch(project, landed, 3, ("e-1", "A", 8))
    project.dbt("run")
    assert_matches_reference(project, landed)


def test_a_repair_interrupted_at_each_write_is_finished_by_a_plain_rerun(project):
    """A late event splits a closed stay; the run that repairs it fails at the segments merge, then at the current
    merge, then at the batch counts; each plain rerun finishes the repair, once."""
    landed: list[Event] = []
    _batch(project, landed, 1, ("e-1", "A", 0), ("e-1", "B", 10), ("e-1", "C", 20), ("e-2", "A", 0))
    project.dbt("run")
    for minute, failing in (
        (2, r"merge into \S*entity_state_segments\b"),
        (3, r"merge into \S*entity_state_current\b"),
        (4, r"insert into table \S*entity_state_batches\b"),
    ):
        _batch(project, landed, minute, ("e-1", "D", 3 + minute), ("e-2", "B", minute))
        with failing_statement(failing) as hits:
            assert not project.dbt("run", expect_success=False).success
        assert hits, f"the failure was not injected: {failing}"
        project.dbt("run")
        assert_matches_reference(project, landed)
    late = project.query(
        f"select state_id, applied_in_window_end_ingested_at is not null as is_applied "
        f"from {project.schema}.events_late"
    )
    assert late == [{"state_id": "D", "is_applied": True}] * 3


def test_dbt_retry_after_a_failed_current_write(project):
    landed: list[Event] = []
    _batch(project, landed, 1, ("e-1", "A", 0), ("e-1", "B", 4))
    project.dbt("run")
    _batch(project, landed, 2, ("e-1", "C", 5), ("e-1", "A", 6))
    with failing_statement(r"merge into \S*entity_state_current\b") as hits:
        # dbt retry reads what to run again from this run's run_results.json
        assert not project.dbt("run", expect_success=False, write_artifacts=True).success
    assert hits
    project.dbt("retry")
    assert_matches_reference(project, landed)


def test_a_run_with_no_new_events_changes_nothing(project):
    landed: list[Event] = []
    _batch(project, landed, 1, ("e-1", "A", 0), ("e-1", "B", 4), ("e-1", "C", 5))
    project.dbt("run")
    before_segments = segments_rows(project)
    before_current = project.query(f"select * from {project.schema}.entity_state_current")
    project.dbt("run")
    project.dbt("run", "-s", "entity_state_segments")
    assert segments_rows(project) == before_segments
    assert project.query(f"select * from {project.schema}.entity_state_current") == before_current
    assert_matches_reference(project, landed)


def test_late_event_repairs_history_and_full_refresh_gives_the_same_view(project):
    landed: list[Event] = []
    _batch(project, landed, 1, ("e-1", "A", 0), ("e-1", "B", 10))
    project.dbt("run")
    _batch(project, landed, 2, ("e-1", "C", 5), ("e-1", "B", 12))
    project.dbt("run")
    assert_matches_reference(project, landed)
    late = project.query(f"select state_id, event_time from {project.schema}.events_late")
    assert late == [{"state_id": "C", "event_time": (T0 + timedelta(minutes=5)).replace(tzinfo=None)}]

    # the late C at :05 splits the closed stay A (:00 to :10) and is listed as late
    closed, _ = view_stays(project)
    assert [(s.state_id, s.next_state_id) for s in closed] == [("A", "C"), ("C", "B")]
    incremental = view_stays(project)
    project.dbt("run", "--full-refresh")
    assert view_stays(project) == incremental
    assert_matches_reference(project, landed)


def test_a_late_event_before_the_current_table_is_first_built_is_repaired(project):
    """Segments run before the current table was ever built; a stay it wrote that a late event changes must be
    replaced, not written a second time beside the old one (found by the table-input property test)."""
    landed: list[Event] = []
    _batch(project, landed, 1, ("e-1", "A", 0), ("e-1", "B", 6))
    project.dbt("run", "-s", "path:models/staging", *SEGMENTS_ALONE)
    # C at :03 is older than B at :06 of the batch before: it splits the stay A that segments already wrote
    _batch(project, landed, 2, ("e-1", "C", 3))
    project.dbt("run", "-s", "path:models/staging", *SEGMENTS_ALONE)
    project.dbt(*BUILD_ON_THE_STATE)
    assert_matches_reference(project, landed)
    closed, _ = view_stays(project)
    assert [(s.state_id, s.next_state_id) for s in closed] == [("A", "C"), ("C", "B")]


def test_dbt_build_runs_the_data_tests_on_the_state(project):
    landed: list[Event] = []
    _batch(project, landed, 1, ("e-1", "A", 0), ("e-1", "B", 4), ("e-2", "A", 4), ("e-2", "B", 4))
    project.dbt("build")
    _batch(project, landed, 2, ("e-1", "C", 6), ("e-2", "C", 4), ("e-2", "C", 5))
    project.dbt(*BUILD_ON_THE_STATE)
    assert_matches_reference(project, landed)


def test_audit_test_fails_when_the_state_is_corrupted(project):
    landed: list[Event] = []
    _batch(project, landed, 1, ("e-1", "A", 0), ("e-1", "B", 4), ("e-1", "C", 6))
    project.dbt("run")
    # forge a wrong stay: the audit and the invariants must notice
    segments = f"{project.schema}.entity_state_segments"
    project.execute(f"update {segments} set next_state_id = 'Z' where state_id = 'B' and not is_open")
    # and a stay that lost its state: the null check names the column
    project.execute(f"update {segments} set state_id = null where state_id = 'A' and next_state_id = 'B'")
    # and a day of the time in state counted twice, and one long past with no state and negative seconds
    daily = f"{project.schema}.entity_state_daily_counted"
    project.execute(f"insert into {daily} select * from {daily} limit 1")
    project.execute(
        f"insert into {daily} select tenant_id, null, date'2000-01-01', -1.0d, stays_started, stays_ended, "
        f"entities_in_state, counted_at, counted_through_ingested_at, counted_stale_after from {daily} limit 1"
    )
    result = project.dbt("test", expect_success=False)
    failed = {r.node.name: r for r in result.result if r.status == "fail"}
    daily_check = failed["assert_time_in_state_days_are_valid"]
    assert {row["problems"] for row in project.query(daily_check.node.compiled_code)} == {
        "the day has several rows",
        "a key is null, seconds_in_state is out of range",
    }
    assert any(name.startswith("assert_state_matches_full_recompute") for name in failed), failed
    null_check = failed["not_null_columns_entity_state_segments"]
    assert null_check.failures == 1
    assert [row["null_columns"] for row in project.query(null_check.node.compiled_code)] == ["state_id"]
    assert not result.success


def test_injected_failure_is_reported_as_a_failure(project):
    """Guards the failure injection itself: if it stopped matching, the tests above would prove nothing."""
    _batch(project, [], 1, ("e-1", "A", 0))
    project.dbt("run")
    _batch(project, [], 2, ("e-1", "B", 1))
    with failing_statement(r"merge into \S*entity_state_current\b") as hits:
        result = project.dbt("run", expect_success=False)
    assert hits and not result.success
    assert any(isinstance(r, InjectedFailure) or "injected failure" in str(r.message) for r in result.result)


def _tables(project):
    return {
        name: sorted(map(repr, project.query(f"select * from {project.schema}.{name}")))
        for name in ("entity_state_segments", "entity_state_current", "entity_state_batches", "events_rejected")
    }


def test_a_failed_full_refresh_leaves_the_state_as_it_was(project):
    landed: list[Event] = []
    _batch(project, landed, 1, ("e-1", "A", 0), ("e-1", "B", 4), ("e-2", "X", 1))
    project.dbt("run")
    _batch(project, landed, 2, ("e-1", "C", 6), ("e-2", "Y", 3))
    project.dbt("run")
    before = _tables(project)

    # the refresh of segments fails: Delta's create or replace is one commit, so the old table stands
    with failing_statement(r"create or replace table \S*entity_state_segments\b") as hits:
        assert not project.dbt("run", "--full-refresh", expect_success=False).success
    assert hits
    assert _tables(project) == before
    assert_matches_reference(project, landed)

    # segments is rebuilt, then the refresh of current fails: a plain run carries on from there
    with failing_statement(r"create or replace table \S*entity_state_current\b") as hits:
        assert not project.dbt("run", "--full-refresh", expect_success=False).success
    assert hits
    assert_matches_reference(project, landed)
    _batch(project, landed, 3, ("e-1", "A", 8))
    project.dbt("run")
    assert_matches_reference(project, landed)
