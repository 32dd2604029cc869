"""Everyday use by a dbt team: the selectors (scheduled, state, audit), the per-batch warnings, source freshness,
`--empty`, and the checks that stop a run with a clear message (a state table changed by hand, an old var name, a
mistyped setting)."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

from tests.reference import Event

from .state_assertions import (
    assert_daily_matches_reference,
    assert_matches_reference,
    expected_stays,
    stays_from_changes,
    view_stays,
)

STATE_MODELS = {
    "entity_state_runs",
    "entity_state_segments",
    "entity_state_current",
    "entity_state_batches",
    "events_rejected",
    "entity_state_changes",
}
SCHEDULED_MODELS = STATE_MODELS | {
    "stg_landing_events",
    "stg_events",
    "entity_state_view",
    "events_late",
    "entity_state_daily",
    "entity_state_daily_counted",
}

# what `dbt run --selector state` runs: the state path, without the changes feed and the time in state
STATE_PATH_MODELS = STATE_MODELS - {"entity_state_changes"} | {"stg_landing_events", "entity_state_view"}


def _now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def _row(entity, state, event_time, **extra):
    return dict(tenant_id="acme", entity_id=entity, state_id=state, event_time=event_time, **extra)


def _statuses(result) -> dict[str, str]:
    """Status of each model and test a dbt command ran (project hooks left out)."""
    return {r.node.name: str(r.status) for r in result.result if r.node.resource_type in ("model", "test")}


def test_scheduled_build_runs_the_state_and_the_cheap_checks_and_audit_the_rest(project):
    start = _now() - timedelta(hours=2)
    project.land(
        [_row("e-1", "A", start), _row("e-1", "B", start + timedelta(minutes=4))], _now() - timedelta(minutes=30)
    )
    # 6 rows: 2 applied, 3 rejected (share 0.5 > 0.01), 1 late (older than e-1's event of the first batch: 1/6 > 0.05)
    bad_batch_at = _now() - timedelta(minutes=20)
    project.land(
        [
            _row("e-2", "X", start),
            _row("e-1", "C", start + timedelta(minutes=6)),
            _row("e-1", "Z", start + timedelta(minutes=1)),
            _row("", "X", start),
            _row("e-3", None, start),
            _row("e-4", "X", None, event_time_text="half past eight"),
        ],
        bad_batch_at,
    )

    scheduled = project.dbt("build", "--selector", "scheduled")
    statuses = _statuses(scheduled)
    assert {name for name, status in statuses.items() if status == "success"} == SCHEDULED_MODELS
    tests = {name: status for name, status in statuses.items() if name not in SCHEDULED_MODELS}
    # only the checks of entity_state_current (a row per entity), the one of entity_state_daily (a row per tenant,
    # state and day), and the per-batch warnings on recent batches: no staging column tests over all landed rows,
    # nothing over all closed stays, no audit
    assert {name for name in tests if "entity_state_current" not in name} == {
        "assert_time_in_state_days_are_valid",
        "batch_share_at_most_entity_state_batches_rows_rejected__max_rejected_share",
        "batch_share_at_most_entity_state_batches_rows_late__max_late_share",
        "warn_stale_entities_per_tenant",
    }
    current_key = "unique_combination_of_columns_entity_state_current_tenant_id__entity_id"
    for name in (current_key, "not_null_columns_entity_state_current", "assert_time_in_state_days_are_valid"):
        assert tests[name] == "pass", name

    # the bad batch warns on both shares; the failing rows are stored for whoever looks at the warning
    warned = {r.node.name: r for r in scheduled.result if str(r.status) == "warn"}
    shares = {"rows_rejected": 0.5, "rows_late": round(1 / 6, 4)}
    assert set(warned) == {
        f"batch_share_at_most_entity_state_batches_{column}__max_{column[5:]}_share" for column in shares
    }
    for column, share in shares.items():
        result = warned[f"batch_share_at_most_entity_state_batches_{column}__max_{column[5:]}_share"]
        assert result.failures == 1
        assert "batch_ingested_at > timestamp_micros(" in result.node.compiled_code  # recent batches only
        stored = project.query(f"select batch_ingested_at, rows_landed, share from {result.node.relation_name}")
        assert [tuple(row.values()) for row in stored] == [(bad_batch_at.replace(tzinfo=None), 6, share)]

    audit = project.dbt("build", "--selector", "audit")
    statuses = _statuses(audit)
    assert statuses["int_entity_state_recomputed"] == "success"
    assert statuses["assert_state_matches_full_recompute"] == "pass"
    assert statuses["not_null_columns_stg_landing_events"] == "pass"
    assert statuses["assert_every_landed_batch_is_counted"] == "pass"
    assert (
        statuses["unique_combination_of_columns_entity_state_segments_tenant_id__entity_id__start_time__state_id"]
        == "pass"
    )
    assert not set(statuses) & (SCHEDULED_MODELS | set(tests)), "audit ran a state model or a scheduled test"


def test_state_runs_between_scheduled_builds_and_the_next_build_catches_up(project):
    """`--selector state` keeps the view, the current table, the quarantine and the batch counts fresh; the changes
    feed and the time in state it leaves out follow from their own progress at the next scheduled build."""
    landed: list[Event] = []
    arrival = _now() - timedelta(hours=1)
    project.land_moves(landed, arrival - timedelta(hours=1), arrival, [("e-1", "A", 0), ("e-1", "B", 4)])
    project.dbt("build", "--selector", "scheduled")
    project.land_moves(
        landed, arrival - timedelta(hours=1), arrival + timedelta(minutes=5), [("e-1", "C", 9), ("e-2", "X", 2)]
    )
    state = project.dbt("run", "--selector", "state")
    assert {name for name, status in _statuses(state).items() if status == "success"} == STATE_PATH_MODELS
    # the view already shows the second batch; the feed has not followed it yet
    assert view_stays(project) == expected_stays(landed)
    changes = project.query(f"select * from {project.schema}.entity_state_changes")
    assert stays_from_changes(changes) != expected_stays(landed)[0]

    project.dbt("build", "--selector", "scheduled")
    assert_matches_reference(project, landed)
    assert_daily_matches_reference(project, landed)


def test_source_freshness_passes_on_fresh_landing_and_errors_on_a_stale_one(project):
    now = _now()
    stale = now - timedelta(days=10)  # older than error_after (72 hours); the file itself is written now
    project.land([_row("e-1", "A", stale)], stale)
    result = project.dbt("source", "freshness", expect_success=False)
    assert not result.success
    [stale_result] = [r for r in result.result if r.node.resource_type == "source"]
    assert str(stale_result.status) == "error"
    assert stale_result.max_loaded_at.replace(tzinfo=UTC) == stale

    project.land([_row("e-1", "B", now)], now - timedelta(minutes=5))
    # a file older than the error horizon is never opened: this one is not even Parquet
    unreadable = project.landing / "zz_unreadable.parquet"
    unreadable.write_bytes(b"not parquet")
    os.utime(unreadable, (stale.timestamp(), stale.timestamp()))
    result = project.dbt("source", "freshness")
    assert [str(r.status) for r in result.result if r.node.resource_type == "source"] == ["pass"]


def test_a_state_table_changed_by_hand_or_an_old_or_wrong_setting_stops_the_run_with_a_clear_message(
    project, monkeypatch
):
    for old, new in (
        ("entity_state_buckets", "Delta Lake"),
        ("entity_state__compact_after_windows", "Delta Lake"),
        ("entity_state__log_buckets", "Delta Lake"),
        ("entity_state_audit_recompute", "--selector audit"),
    ):
        result = project.dbt("run", "--vars", f"{{{old}: 8}}", expect_success=False)
        assert not result.success
        assert f"The var '{old}' is set" in str(result.exception) and new in str(result.exception), result.exception
    # read by the profile, which cannot stop a run: the on-run-start hook does, before any model
    monkeypatch.setenv("ENTITY_STATE_DRIVER_KEPT_ALIVE", "ture")
    result = project.dbt("run", expect_success=False)
    assert "ENTITY_STATE_DRIVER_KEPT_ALIVE must be true" in str(result.exception), result.exception
    monkeypatch.setenv("ENTITY_STATE_DRIVER_KEPT_ALIVE", "True")
    project.dbt("run", "-s", "stg_landing_events")

    landed: list[Event] = []
    arrival = _now() - timedelta(hours=1)
    project.land_moves(landed, arrival - timedelta(hours=1), arrival, [("e-1", "A", 0), ("e-1", "B", 4)])
    project.dbt("run")
    changed = ("entity_state_segments", "events_rejected")
    for table in changed:
        project.execute(f"alter table {project.schema}.{table} add columns (note string)")
    project.land_moves(landed, arrival - timedelta(hours=1), arrival + timedelta(minutes=1), [("e-1", "C", 6)])

    # dbt's own check (on_schema_change: fail) stops each before it writes; so it does for the quarantine, which has
    # no row to write in this window
    result = project.dbt("run", expect_success=False)
    errors = {r.node.name: r.message for r in result.result if str(r.status) == "error"}
    assert set(errors) == set(changed), errors
    for table in changed:
        assert "out of sync" in errors[table] and "full_refresh" in errors[table], errors[table]

    # the way out the message gives
    project.dbt("run", "--full-refresh", "-s", *changed)
    project.dbt("run")
    assert_matches_reference(project, landed)


def _state_rows(project) -> dict[str, list[str]]:
    return {
        table: sorted(map(repr, project.query(f"select * from {project.schema}.{table}")))
        for table in sorted(STATE_MODELS | {"entity_state_daily_counted"})
    }


def test_a_build_with_empty_checks_the_sql_and_a_plain_run_applies_what_landed(project):
    """`--empty` (dbt's check of every model's SQL on no rows) applies no landed event and keeps every table's rows
    (dbt's views show none until the next run); with --full-refresh it rebuilds the tables empty, as dbt does.
    Either way the next plain run applies everything landed, because each table's progress is its own rows. A state
    table dropped by hand is rebuilt the same way."""
    landed: list[Event] = []
    arrival = _now() - timedelta(hours=1)
    project.land_moves(landed, arrival - timedelta(hours=1), arrival, [("e-1", "A", 0), ("e-1", "B", 4)])
    # on a new schema the state tables are built, empty, and the first plain run walks every landed event
    project.dbt("build", "--empty", "--exclude", "test_type:unit")
    project.dbt("run")
    assert_matches_reference(project, landed)

    before = _state_rows(project)
    # e-1's A at minute 2 is late: a run that applied it would repair e-1
    project.land_moves(landed, arrival - timedelta(hours=1), arrival + timedelta(minutes=1), [("e-1", "A", 2)])
    project.dbt("build", "--empty", "--exclude", "test_type:unit")
    # the tables keep their rows; the views are dbt's, recreated on the empty queries until the next run
    assert _state_rows(project) == before
    project.dbt("run", "--empty", "--full-refresh")
    project.dbt("run")
    assert_matches_reference(project, landed)

    project.execute(f"drop table {project.schema}.entity_state_current")
    project.dbt("run")
    assert_matches_reference(project, landed)


def test_compiling_and_documenting_need_no_built_table(project):
    """`dbt compile`, `dbt ls` and `dbt docs generate` on a schema never built, with events landed: every model and
    data test compiles (no statement asks a missing table for its properties) and no state table is built."""
    project.land([_row("e-1", "A", _now() - timedelta(hours=1))], _now())
    project.dbt("compile")
    assert project.dbt("ls", "--resource-type", "model").result
    project.dbt("docs", "generate")
    assert not [name for name in STATE_MODELS if project.table_exists(name)]


def test_a_state_built_in_parquet_stops_the_run_with_the_upgrade_command_and_that_command_rebuilds_it(project):
    """A state an earlier version wrote in plain parquet: a run refuses it and names the one command that rebuilds
    the state from the landed history, which then equals the reference."""
    landed: list[Event] = []
    arrival = _now() - timedelta(hours=1)
    project.land_moves(landed, arrival - timedelta(hours=1), arrival, [("e-1", "A", 0), ("e-1", "B", 4)])
    project.dbt("run", "-s", "stg_landing_events")
    project.execute(
        f"create table {project.schema}.entity_state_segments using parquet as "
        "select 'acme' as tenant_id, 'e-1' as entity_id, 'A' as state_id, current_timestamp() as start_time"
    )
    result = project.dbt("run", expect_success=False)
    errors = {r.node.name: r.message for r in result.result if str(r.status) == "error"}
    assert "entity_state_segments" in errors, errors
    assert "not a Delta Lake table" in errors["entity_state_segments"], errors
    assert "dbt run --full-refresh" in errors["entity_state_segments"], errors

    project.dbt("run", "--full-refresh")
    assert_matches_reference(project, landed)
