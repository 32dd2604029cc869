"""The questions people ask of stays: is_stale and duration_seconds in entity_state_view, and the macro as_of,
checked against the same computed in Python from the landed events (tests/reference.py's recompute).

One `dbt run` with `entity_state__stale_after: '2 hours'`, then one `dbt compile --inline` that renders as_of at
several moments (one query), read back through the test's own connection.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from tests.reference import Event, recompute

from .state_assertions import _ts, assert_daily_matches_reference

STALE_AFTER = timedelta(hours=2)
VARS = json.dumps({"entity_state__stale_after": "2 hours"})


def _moves() -> list[tuple[str, str, int]]:
    return [
        ("went-silent", "A", 0),
        ("went-silent", "A", 60),
        ("went-silent", "B", 120),  # open in B, last heard 3 hours ago: stale
        ("moving", "A", 0),
        ("moving", "B", 250),  # open in B, last heard 50 minutes ago
        ("tied", "A", 0),
        ("tied", "B", 30),  # B and C at one timestamp: a zero-length stay in B
        ("tied", "C", 30),
        ("new", "A", 299),
    ]


def _expected_as_of(reference, moment: datetime) -> dict[tuple[str, str], tuple]:
    """Each entity's (state_id, start_time, last_event_ts, is_stale) at `moment`: the stay with
    start_time <= moment < end_time, or the open stay once it has started."""
    holding = [s for s in reference.closed if s.start_time <= moment < s.end_time]
    holding += [s for s in reference.open if s.start_time <= moment]
    expected = {}
    for stay in holding:
        key = (stay.tenant_id, stay.entity_id)
        assert key not in expected, f"two stays hold at {moment}: the reference breaks the half-open rule"
        expected[key] = (stay.state_id, stay.start_time, stay.last_event_ts, moment - STALE_AFTER > stay.last_event_ts)
    return expected


@pytest.mark.cluster
def test_staleness_duration_and_as_of_match_the_events(project):
    now = datetime.now(UTC).replace(microsecond=0)
    first_event_at = now - timedelta(hours=5)
    landed: list[Event] = []
    project.land_moves(landed, first_event_at, now - timedelta(minutes=1), _moves())
    project.dbt("run", "--vars", VARS)
    reference = recompute(landed)

    # the view: is_stale and duration_seconds against the query's own clock
    rows = project.query(f"select *, current_timestamp() as queried_at from {project.schema}.entity_state_view")
    assert len(rows) == len(reference.closed) + len(reference.open)
    for row in rows:
        start, last, queried_at = _ts(row["start_time"]), _ts(row["last_event_ts"]), _ts(row["queried_at"])
        stale = row["is_open"] and last < queried_at - STALE_AFTER
        end = _ts(row["end_time"]) if not row["is_open"] else (last if stale else queried_at)
        assert row["is_stale"] is stale, row
        assert row["duration_seconds"] == pytest.approx((end - start).total_seconds(), abs=1e-6), row
    stale_entities = {r["entity_id"] for r in rows if r["is_stale"]}
    assert stale_entities == {"went-silent", "tied"}
    zero_length = [r for r in rows if r["entity_id"] == "tied" and r["state_id"] == "B"]
    assert [r["duration_seconds"] for r in zero_length] == [0.0]

    # as_of at a few moments, in one compiled query: before the first event, at a zero-length tie, exactly at a
    # boundary, in between, and after the last event (where everything has gone stale)
    moments = [first_event_at + timedelta(minutes=m) for m in (-1, 30, 120, 200, 450)]
    sql = "\nunion all\n".join(
        f"select {i} as moment_index, * from "
        f"{{{{ entity_state.as_of(\"timestamp'{moment.strftime('%Y-%m-%d %H:%M:%S')}'\") }}}} as s{i}"
        for i, moment in enumerate(moments)
    )
    compiled = project.dbt("compile", "--inline", sql, "--vars", VARS).result.results[0].node.compiled_code
    got: dict[int, dict] = {i: {} for i in range(len(moments))}
    for row in project.query(compiled):
        key = (row["tenant_id"], row["entity_id"])
        assert key not in got[row["moment_index"]], f"{key} twice at {moments[row['moment_index']]}"
        got[row["moment_index"]][key] = (
            row["state_id"],
            _ts(row["start_time"]),
            _ts(row["last_event_ts"]),
            row["is_stale"],
        )
    for i, moment in enumerate(moments):
        assert got[i] == _expected_as_of(reference, moment), f"as_of {moment}"
    assert got[0] == {}
    assert got[1][("acme", "tied")][0] == "C"  # the zero-length stay in B never holds
    assert got[2][("acme", "went-silent")][0] == "B"  # at the boundary, the new stay holds


@pytest.mark.cluster
def test_daily_recomputes_the_days_a_later_run_changes(project):
    """entity_state_daily after a second run equals the computation from scratch, where that run changed days
    before its own: a stale entity that reports again (its silent days now count), an entity first seen with events
    from days ago, and stays closed days after they started. Staleness on, stays over several midnights."""
    now = datetime.now(UTC).replace(microsecond=0)
    days_ago = now - timedelta(days=5)
    landed: list[Event] = []
    project.settings = {"entity_state__stale_after": "2 hours"}
    minutes_per_day = 24 * 60
    project.land_moves(
        landed,
        days_ago,
        now - timedelta(minutes=10),
        [
            ("back-again", "A", 0),
            ("back-again", "A", minutes_per_day),  # then silent for four days: stale, counted to here
            ("closes-later", "A", 30),
            ("closes-later", "A", 4 * minutes_per_day + 60),
        ],
    )
    project.dbt("run")
    assert_daily_matches_reference(project, landed, STALE_AFTER)
    before = {
        (r["state_id"], r["utc_date"]): r for r in project.query(f"select * from {project.schema}.entity_state_daily")
    }

    project.land_moves(
        landed,
        days_ago,
        now - timedelta(minutes=5),
        [
            ("back-again", "A", 5 * minutes_per_day - 20),  # the same stay goes on: its silent days count again
            ("closes-later", "B", 2 * minutes_per_day),  # an event for a day long past: A closes three days ago
            ("first-seen", "C", 3 * minutes_per_day + 7),  # a new entity whose first event is two days old
        ],
    )
    project.dbt("run")
    assert_daily_matches_reference(project, landed, STALE_AFTER)
    after = {
        (r["state_id"], r["utc_date"]): r for r in project.query(f"select * from {project.schema}.entity_state_daily")
    }

    # the second run did change days before its own (without them the comparison above would prove nothing new)
    def counts(row):
        return None if row is None else (row["seconds_in_state"], row["stays_started"], row["entities_in_state"])

    old_days = [key for key in after if key[1] < (now - timedelta(days=1)).date()]
    assert any(counts(before.get(key)) != counts(after[key]) for key in old_days)
