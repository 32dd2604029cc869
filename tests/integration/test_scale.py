"""Scale edge cases on the local profile's default driver memory: one entity with a million events in one batch,
and a batch touching a million entities. Correctness is checked; time is for the benchmark, not for this test."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.reference import Event

from .state_assertions import assert_matches_reference

T0 = datetime(2026, 6, 1, tzinfo=UTC)
ARRIVAL = datetime(2026, 6, 2, tzinfo=UTC)
MILLION = 1_000_000


def test_one_entity_with_a_million_events_in_one_batch(project):
    states = ("A", "B", "C")
    # ten events per stay: nine heartbeats after each change; the batch arrives out of order
    rows = [
        dict(
            tenant_id="acme",
            entity_id="busy",
            state_id=states[(second // 10) % 3],
            event_time=T0 + timedelta(seconds=second),
        )
        for second in reversed(range(MILLION))
    ]
    project.land(rows, ARRIVAL)
    project.dbt("run")

    assert_matches_reference(project, [Event(**row, ingested_at=ARRIVAL) for row in rows])


def test_a_batch_touching_a_million_entities(project):
    entities = [f"pallet-{number:07d}" for number in range(MILLION)]
    project.land(
        [dict(tenant_id="acme", entity_id=entity, state_id="dock", event_time=T0) for entity in entities], ARRIVAL
    )
    project.dbt("run")
    moved_at = T0 + timedelta(hours=1)
    project.land(
        [dict(tenant_id="acme", entity_id=entity, state_id="truck", event_time=moved_at) for entity in entities],
        ARRIVAL + timedelta(hours=1),
    )
    project.dbt("run")

    schema = project.schema
    [closed] = project.query(
        f"select count(*) as stays, count(distinct entity_id) as entities, "
        f"min(start_time) = max(start_time) and min(end_time) = max(end_time) as same_times, "
        f"sum(case when state_id = 'dock' and next_state_id = 'truck' then 1 else 0 end) as dock_to_truck "
        f"from {schema}.entity_state_segments where not is_open"
    )
    assert closed == dict(stays=MILLION, entities=MILLION, same_times=True, dock_to_truck=MILLION)
    [opened] = project.query(
        f"select count(*) as rows, count(distinct entity_id) as entities, "
        f"sum(case when state_id = 'truck' then 1 else 0 end) as in_truck from {schema}.entity_state_current"
    )
    assert opened == dict(rows=MILLION, entities=MILLION, in_truck=MILLION)
    [view] = project.query(f"select count(*) as rows from {schema}.entity_state_view")
    assert view == dict(rows=2 * MILLION)
