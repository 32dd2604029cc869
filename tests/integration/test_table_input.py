"""Events read from a table of the user's own (var entity_state__events_table) instead of the landing folder, its
columns named otherwise and mapped with entity_state__events_columns: the same results as the folder input."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from .dbt_harness import EVENTS_TABLE_COLUMNS
from .test_article_example import run_article_split
from .test_property_splits import STEPS, rejects, run_example, stream, with_rejected_rows

EXAMPLES = int(os.environ.get("ENTITY_STATE_TABLE_PROPERTY_EXAMPLES", "3"))
T0 = datetime(2026, 5, 1, 8, 0, tzinfo=UTC)


@pytest.mark.parametrize("split", ["batch_case1", "batch_case2", "batch_case3"])
def test_article_split_from_an_events_table_gives_the_expected_view(project, split):
    project.use_events_table()
    run_article_split(project, split)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    phases=(Phase.explicit, Phase.generate),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(raw=stream, rejected=rejects, steps=st.lists(st.sampled_from(STEPS), min_size=5, max_size=5))
def test_any_split_of_an_events_table_equals_the_full_recompute(project, raw, rejected, steps):
    project.reset()
    project.use_events_table()
    run_example(project, with_rejected_rows(raw, rejected), steps)


def test_an_events_table_quarantines_by_the_same_rules_and_names_a_missing_column(project):
    table = project.use_events_table()
    rows = [
        dict(tenant_id="acme", entity_id="e-1", state_id="A", event_time=T0),
        dict(tenant_id="acme", entity_id=" ", state_id="A", event_time=T0),
        dict(tenant_id="acme", entity_id="e-2", state_id="A", event_time=None, event_time_text="half past eight"),
    ]
    project.land(rows, T0 + timedelta(days=1))
    # `--empty` first, on the new schema: it builds the tables empty, with no watermark, so the plain run then
    # applies every row of the table
    project.dbt("run", "--empty")
    project.dbt("run")

    rejected = project.query(
        f"select reject_reason, source_file_name, event_time_text from {project.schema}.events_rejected"
    )
    assert sorted((r["reject_reason"], r["event_time_text"]) for r in rejected) == [
        ("empty_entity_id", None),
        ("unparseable_event_time", "half past eight"),
    ]
    assert {r["source_file_name"] for r in rejected} == {table}
    assert [r["entity_id"] for r in project.query(f"select entity_id from {project.schema}.entity_state_current")] == [
        "e-1"
    ]

    wrong = {"entity_state__events_columns": {**EVENTS_TABLE_COLUMNS, "entity_id": "pallet_no"}}
    result = project.dbt("run", "--vars", json.dumps(wrong), expect_success=False)
    message = " ".join(str(r.message) for r in result.result if r.status == "error")
    assert "has no column for entity_id -> pallet_no" in message, message
    assert "entity_state__events_columns" in message, message
