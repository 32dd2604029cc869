"""Read the state tables back and compare them with the reference recompute."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.reference import ClosedStay, DayInState, Event, OpenStay, is_rejected, recompute, time_in_state_per_day

from .dbt_harness import DbtProject


def _ts(value: datetime | None) -> datetime | None:
    return None if value is None else value.replace(tzinfo=UTC)


def view_stays(project: DbtProject) -> tuple[list[ClosedStay], list[OpenStay]]:
    rows = project.query(f"select * from {project.schema}.entity_state_view")
    closed = sorted(
        (
            ClosedStay(
                r["tenant_id"],
                r["entity_id"],
                r["state_id"],
                r["next_state_id"],
                _ts(r["start_time"]),
                _ts(r["end_time"]),
                _ts(r["last_event_ts"]),
            )
            for r in rows
            if not r["is_open"]
        ),
        key=repr,
    )
    opened = sorted(
        (
            OpenStay(r["tenant_id"], r["entity_id"], r["state_id"], _ts(r["start_time"]), _ts(r["last_event_ts"]))
            for r in rows
            if r["is_open"]
        ),
        key=repr,
    )
    return closed, opened


def expected_stays(events: list[Event]) -> tuple[list[ClosedStay], list[OpenStay]]:
    reference = recompute(events)
    return sorted(reference.closed, key=repr), sorted(reference.open, key=repr)


def segments_rows(project: DbtProject) -> list[tuple]:
    rows = project.query(
        f"select tenant_id, entity_id, state_id, next_state_id, start_time, end_time, last_event_ts "
        f"from {project.schema}.entity_state_segments where not is_open"
    )
    return sorted(tuple(r.values()) for r in rows)


def stays_from_changes(rows: list[dict]) -> list[ClosedStay]:
    """What a consumer of entity_state_changes holds after applying its rows in order: per commit of segments,
    retract, then add. `rows` are the table's rows, with timestamps as datetimes or ISO text."""
    held: set[ClosedStay] = set()
    for window in sorted({r["stays_version"] for r in rows}):
        changes = [r for r in rows if r["stays_version"] == window]
        for kind in ("retracted", "added"):
            for r in (r for r in changes if r["change_kind"] == kind):
                stay = ClosedStay(
                    r["tenant_id"],
                    r["entity_id"],
                    r["state_id"],
                    r["next_state_id"],
                    _as_utc(r["start_time"]),
                    _as_utc(r["end_time"]),
                    _as_utc(r["last_event_ts"]),
                )
                if kind == "retracted":
                    assert stay in held, f"{window} retracts a stay nobody was given: {stay}"
                    held.remove(stay)
                else:
                    assert stay not in held, f"{window} adds a stay that is already held: {stay}"
                    held.add(stay)
    return sorted(held, key=repr)


def _as_utc(value: datetime | str) -> datetime:
    return (datetime.fromisoformat(value) if isinstance(value, str) else value).replace(tzinfo=UTC)


def assert_matches_reference(project: DbtProject, events: list[Event]) -> None:
    got, want = view_stays(project), expected_stays(events)
    assert got[0] == want[0], f"closed stays differ:\n got  {got[0]}\n want {want[0]}"
    assert got[1] == want[1], f"open stays differ:\n got  {got[1]}\n want {want[1]}"
    # after a whole run the current table holds segments' open stays, one per entity
    columns = "tenant_id, entity_id, state_id, start_time, last_event_ts, watermark_ingested_at"
    current = project.query(f"select {columns} from {project.schema}.entity_state_current")
    open_stays = project.query(f"select {columns} from {project.schema}.entity_state_segments where is_open")
    assert sorted(map(repr, current)) == sorted(map(repr, open_stays)), (
        "entity_state_current is not segments' open stays"
    )
    # a consumer applying the changes feed in order holds what the view shows (once a run has built the feed: a
    # test that selects only some models may not have)
    if project.query(f"show tables in {project.schema} like 'entity_state_changes'"):
        changes = project.query(f"select * from {project.schema}.entity_state_changes")
        assert stays_from_changes(changes) == want[0], "entity_state_changes does not rebuild the closed stays"


def assert_batches_reconcile(project: DbtProject, landed: list[Event]) -> None:
    """Every landed row is counted once in entity_state_batches, and each batch's counts add up."""
    rows = project.query(f"select * from {project.schema}.entity_state_batches")
    for row in rows:
        parts = row["rows_applied"] + row["rows_duplicate"] + row["rows_rejected"] + row["rows_late"]
        assert row["rows_landed"] == parts, row
    per_batch = {_ts(r["batch_ingested_at"]): r["rows_landed"] for r in rows}
    expected: dict[datetime, int] = {}
    for event in landed:
        expected[event.ingested_at] = expected.get(event.ingested_at, 0) + 1
    assert per_batch == expected
    # which events move the state does not depend on the split; a repeat of an old event arriving in a later run
    # counts as late rather than as a duplicate, so late can only grow against the all-at-once reference
    reference = recompute(landed)
    distinct_valid = {
        (e.tenant_id.strip(" "), e.entity_id.strip(" "), e.state_id.strip(" "), e.event_time)
        for e in landed
        if not is_rejected(e)
    }
    assert sum(r["rows_applied"] for r in rows) == len(distinct_valid) - len(reference.late)
    assert sum(r["rows_late"] for r in rows) >= len(reference.late)
    # every row that cannot be applied is in the quarantine once, and counted with its batch
    rejected = sum(1 for e in landed if is_rejected(e))
    quarantined = project.query(f"select count(*) as n from {project.schema}.events_rejected")[0]["n"]
    assert (sum(r["rows_rejected"] for r in rows), quarantined) == (rejected, rejected)


def assert_daily_matches_reference(
    project: DbtProject, events: list[Event], stale_after: timedelta | None = None
) -> None:
    """entity_state_daily equals the reference's time in state per day, at the moment its newest rows were measured:
    the days a run kept from earlier runs must be what a computation from scratch gives now."""
    rows = project.query(f"select * from {project.schema}.entity_state_daily")
    if not rows:
        assert not recompute(events).open, "entity_state_daily is empty while stays exist"
        return
    measured_at = max(_ts(r["measured_at"]) for r in rows)
    got = {
        (r["tenant_id"], r["state_id"], r["utc_date"]): DayInState(
            r["seconds_in_state"], r["stays_started"], r["stays_ended"], r["entities_in_state"]
        )
        for r in rows
    }
    assert len(got) == len(rows), "entity_state_daily holds a (tenant, state, day) twice"
    want = time_in_state_per_day(recompute(events), measured_at, stale_after)
    assert got.keys() == want.keys(), (
        f"days differ: only in the table {sorted(got.keys() - want.keys())[:5]}, "
        f"only in the reference {sorted(want.keys() - got.keys())[:5]} (first 5 of each)"
    )
    for key, expected in want.items():
        found = got[key]
        assert found.seconds_in_state == pytest.approx(expected.seconds_in_state, abs=1e-6), (key, found, expected)
        assert (found.stays_started, found.stays_ended, found.entities_in_state) == (
            expected.stays_started,
            expected.stays_ended,
            expected.entities_in_state,
        ), (key, found, expected)
