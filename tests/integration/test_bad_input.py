"""Bad input: every landed row is applied or quarantined with a reason; a malformed file stops the run before
anything is written, with a message naming the file and the column."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from entity_state.landing import LANDED_SCHEMA
from tests.reference import Event

from .dbt_harness import BUILD_ON_THE_STATE
from .state_assertions import assert_matches_reference

T0 = datetime(2026, 5, 1, 8, 0, tzinfo=UTC)
ARRIVAL = datetime(2026, 5, 2, tzinfo=UTC)


def _event(entity, state, minute, tenant="acme", **extra):
    return dict(tenant_id=tenant, entity_id=entity, state_id=state, event_time=T0 + timedelta(minutes=minute), **extra)


def _applied(rows, ingested_at):
    return [Event(r["tenant_id"], r["entity_id"], r["state_id"], r["event_time"], ingested_at) for r in rows]


def test_rows_that_cannot_be_applied_are_quarantined_with_a_reason(project):
    good = [_event("e-1", "A", 0), _event("e-1", "B", 5), _event(" e-2 ", " X ", 1)]
    bad = [
        dict(_event("e-9", "A", 0), tenant_id=None),
        dict(_event("e-9", "A", 0), tenant_id="  "),
        dict(_event("e-9", "A", 0), entity_id=None),
        dict(_event("e-9", "A", 0), entity_id=""),
        dict(_event("e-9", "A", 0), state_id=None),
        dict(_event("e-9", "A", 0), state_id=" "),
        dict(_event("e-9", "A", 0), event_time=None, event_time_text="half past eight"),
        dict(_event("e-9", "A", 0), event_time=None),
        # an event cannot arrive before it happened: later than its arrival by more than the allowed 60 minutes
        dict(_event("e-9", "A", 0), event_time=ARRIVAL + timedelta(minutes=60, microseconds=1)),
    ]
    # as late after its arrival as the skew allows: applied
    good.append(dict(_event("e-3", "P", 0), event_time=ARRIVAL + timedelta(minutes=60)))
    first = project.land(good + bad, ARRIVAL)
    project.dbt(*BUILD_ON_THE_STATE)

    rejected = project.query(
        f"select reject_reason, source_file_name, event_time_text from {project.schema}.events_rejected"
    )
    assert sorted(r["reject_reason"] for r in rejected) == sorted(
        [
            "null_tenant_id",
            "empty_tenant_id",
            "null_entity_id",
            "empty_entity_id",
            "null_state_id",
            "empty_state_id",
            "unparseable_event_time",
            "null_event_time",
            "event_time_after_arrival",
        ]
    )
    assert {r["source_file_name"] for r in rejected} == {first.name}
    assert [r["event_time_text"] for r in rejected if r["reject_reason"] == "unparseable_event_time"] == [
        "half past eight"
    ]
    assert_matches_reference(project, _applied(good, ARRIVAL))

    # a rerun adds nothing to the quarantine; a later window's row it keeps is found by the run's check of the
    # landed files (the quarantine writes nothing for a window without one), whatever its reason
    project.dbt("run")
    more = [_event("e-1", "C", 9)]
    unparseable = dict(_event("e-9", "A", 0), event_time=None, event_time_text="nine-ish")
    later = project.land([*more, unparseable], ARRIVAL + timedelta(minutes=1))
    project.dbt("run")
    rejected = project.query(f"select reject_reason, source_file_name from {project.schema}.events_rejected")
    assert len(rejected) == len(bad) + 1
    assert {"reject_reason": "unparseable_event_time", "source_file_name": later.name} in rejected
    assert_matches_reference(project, _applied(good, ARRIVAL) + _applied(more, ARRIVAL + timedelta(minutes=1)))


def test_a_batch_stamped_at_or_below_what_was_counted_fails_the_data_test_with_its_file(project):
    project.land([_event("e-1", "A", 0)], ARRIVAL + timedelta(hours=1))
    project.dbt("run")
    project.dbt("test", "-s", "assert_every_landed_batch_is_counted")

    # stamped before the batch already counted: no run will read it
    early = project.land([_event("e-1", "B", 5), _event("e-2", "X", 6)], ARRIVAL)
    result = project.dbt("test", "-s", "assert_every_landed_batch_is_counted", "--store-failures", expect_success=False)

    assert not result.success, "the data test did not notice the batch that no run will read"
    failures = project.query(f"select * from {project.schema}_dbt_test__audit.assert_every_landed_batch_is_counted")
    assert [(r["source_files"], r["rows_landed"], r["rows_counted"]) for r in failures] == [(early.name, 2, 0)]


HOSTILE = [
    "it's",
    'say "hi"',
    "a; drop table entity_state_segments; --",
    "') or ('1'='1",
    "${var}",
    "{{ 7 * 7 }}",
    "back\\slash",
    "Zürich → 東京 🚚",
    "x" * 5000,
]


def test_hostile_strings_are_data_not_sql(project):
    rows = [_event(text, text, minute, tenant=text) for minute, text in enumerate(HOSTILE)]
    rows += [_event("e-1", text, minute) for minute, text in enumerate(HOSTILE)]
    project.land(rows, ARRIVAL)
    project.dbt(*BUILD_ON_THE_STATE)
    assert_matches_reference(project, _applied(rows, ARRIVAL))


def _state(project):
    return (
        sorted(map(repr, project.query(f"select * from {project.schema}.entity_state_segments"))),
        sorted(map(repr, project.query(f"select * from {project.schema}.entity_state_current"))),
        sorted(map(repr, project.query(f"select * from {project.schema}.events_rejected"))),
    )


def _missing_tenant_column(path):
    pq.write_table(pa.table({"entity_id": ["e-1"], "state_id": ["Z"], "event_time": [T0 + timedelta(hours=1)]}), path)
    return "tenant_id"


def _state_as_number(path):
    table = pa.table(
        {"tenant_id": ["acme"], "entity_id": ["e-1"], "state_id": [7], "event_time": [T0 + timedelta(hours=1)]}
    )
    pq.write_table(table, path)
    return "state_id"


def _not_parquet(path):
    path.write_bytes(b"PAR1 this is not a parquet file")
    return None


def _stamped_later_than_written(path):
    # ingested_at a day after the file was written: beyond the allowed clock skew
    # (var entity_state__landing_clock_skew_minutes)
    tomorrow = datetime.now(UTC) + timedelta(days=1)
    row = {**_event("e-1", "Z", 60), "event_time_text": None, "ingested_at": tomorrow}
    pq.write_table(pa.table({name: [value] for name, value in row.items()}, schema=LANDED_SCHEMA), path)
    return "ingested_at"


@pytest.mark.parametrize(
    "write_bad_file", [_missing_tenant_column, _state_as_number, _not_parquet, _stamped_later_than_written]
)
def test_a_malformed_file_fails_the_run_by_name_and_leaves_the_state_unchanged(project, write_bad_file):
    landed = [_event("e-1", "A", 0), _event("e-1", "B", 5)]
    project.land(landed, ARRIVAL)
    project.dbt("run")
    before = _state(project)

    bad_file = project.landing / "from_another_system.parquet"
    column = write_bad_file(bad_file)
    result = project.dbt("run", expect_success=False)

    assert not result.success
    messages = " ".join(str(r.message) for r in result.result if r.status == "error") if result.result else ""
    messages += str(result.exception or "")
    assert bad_file.name in messages, messages
    if column:
        assert column in messages, messages
    assert _state(project) == before

    # the documented way out: move the file away, rerun
    bad_file.unlink()
    later = [_event("e-1", "C", 9)]
    project.land(later, ARRIVAL + timedelta(minutes=5))
    project.dbt("run")
    assert_matches_reference(project, _applied(landed, ARRIVAL) + _applied(later, ARRIVAL + timedelta(minutes=5)))


def test_each_batch_accounts_for_every_landed_row(project):
    first = [_event("e-1", "A", 0), _event("e-1", "B", 5)]
    project.land(first, ARRIVAL)
    project.dbt("run")
    second = [
        _event("e-1", "B", 5),  # repeats the entity's latest event: duplicate
        _event("e-1", "A", 1),  # older than what e-1 applied: late
        _event("e-1", "A", 1),  # the same late event twice in one batch: one late, one duplicate
        _event("e-1", "C", 9),
        _event("e-1", "C", 9),  # duplicate within the batch
        dict(_event("e-1", "D", 10), state_id=""),  # rejected
    ]
    project.land(second, ARRIVAL + timedelta(minutes=1))
    project.dbt(*BUILD_ON_THE_STATE)

    rows = project.query(
        f"select * from {project.schema}.entity_state_batches order by batch_ingested_at",
    )
    counts = [
        {key: row[key] for key in ("rows_landed", "rows_applied", "rows_duplicate", "rows_rejected", "rows_late")}
        for row in rows
    ]
    assert counts == [
        dict(rows_landed=2, rows_applied=2, rows_duplicate=0, rows_rejected=0, rows_late=0),
        dict(rows_landed=6, rows_applied=1, rows_duplicate=3, rows_rejected=1, rows_late=1),
    ]
    assert [(row["entities_touched"], row["stays_closed"]) for row in rows] == [(1, 1), (1, 1)]
