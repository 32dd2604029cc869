"""Property test on Spark: random multi-tenant streams, random batch splits and random model-run orders.

Events are drawn with their batch independently of their time, so later batches often bring events older than those
already applied (late events that split, extend, prepend or join stays, or change the open one), some drawn events
arrive again in a later batch (late duplicates), and a few rows that cannot be applied (a key blank, an event time
after the arrival) land in some batches: the quarantine and the batch counts must hold each of them once (most
windows have none, and the quarantine writes nothing for those).

After every full `dbt run` the view must equal the independent reference over what has landed so far, and after a
final catch-up run it must equal the reference over everything; so must the time in state per day
(entity_state_daily), with staleness off or on (drawn). Each example runs dbt with one thread or two (drawn): with
two, the models that do not wait for each other run at the same time. Examples per run: ENTITY_STATE_PROPERTY_EXAMPLES
(default 12; every example runs dbt several times on Spark, about 40 s each here).
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from tests.reference import Event

from .dbt_harness import BUILD_ON_THE_STATE, failing_statement
from .state_assertions import assert_batches_reconcile, assert_daily_matches_reference, assert_matches_reference

BASE = datetime(2026, 5, 1, tzinfo=UTC)
EXAMPLES = int(os.environ.get("ENTITY_STATE_PROPERTY_EXAMPLES", "12"))
# the events are months old, so with staleness on every open stay is stale and counts up to its last event
STALE_AFTER = timedelta(minutes=5)
STEPS = (
    "run",
    "run",
    "segments_alone",
    "current_alone",
    "current_fails",
    "segments_fails",
    "partial_catch_up",
    "build",
)

# The batch counts and the current table without segments: they follow what segments has applied, and fail as any
# dbt model whose parents were never built when segments or the run manifest is missing. Drawn like the other steps;
# the tests below take it where it matters, after a segments merge that failed.
PARTIAL_CATCH_UP = ("run", "-s", "path:models/staging", "entity_state_batches", "entity_state_current")
PARTIAL_CATCH_UP_PARENTS = ("entity_state_segments", "entity_state_runs")
STEPS_AHEAD_OF_CURRENT = ["run", "current_alone", "segments_fails", "partial_catch_up", "run"]

stream = st.lists(
    st.tuples(
        st.sampled_from(["acme", "globex"]),
        st.sampled_from(["e-1", "e-2", "e-3"]),
        st.sampled_from(["A", "B", "C"]),
        st.integers(0, 10),  # minutes: a small range makes equal timestamps and late events common
        st.integers(0, 4),  # batch
    ),
    min_size=1,
    max_size=30,
)


# (index of a drawn event, batch it arrives again in)
repeats = st.lists(st.tuples(st.integers(0, 29), st.integers(0, 4)), max_size=4)

# rows the quarantine keeps, as raw tuples without their batch: a key blank, or an event time two days after its
# arrival. Not a null key or event time: a batch may hold this row alone, and a file with a column null in every row
# stops the run as a broken producer (assert_landing_files_complete)
REJECTED_ROWS = [
    ("", "e-1", "A", 3),
    ("acme", "  ", "B", 4),
    ("globex", "e-2", "", 5),
    ("acme", "e-3", "C", 3 * 24 * 60),
]
# (index of a row above, batch it lands in, among the batches of the drawn events, so that it adds no dbt run): most
# windows have none, so the quarantine writes nothing for them
rejects = st.lists(st.tuples(st.integers(0, len(REJECTED_ROWS) - 1), st.integers(0, 4)), max_size=2)


@pytest.mark.cluster
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    phases=(Phase.explicit, Phase.generate),  # shrinking would rerun Spark hundreds of times
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    raw=stream,
    repeated=repeats,
    rejected=rejects,
    steps=st.lists(st.sampled_from(STEPS), min_size=5, max_size=5),
    stale=st.booleans(),
    threads=st.sampled_from([1, 2]),
)
# the partial catch-up first, on a fresh schema (it fails), and again once a run built its parents; a batch of one
# row the quarantine keeps, after windows with none
@example(
    raw=[("acme", "e-1", "A", 0, 0), ("acme", "e-1", "B", 2, 1), ("acme", "e-1", "A", 1, 2), (*REJECTED_ROWS[0], 3)],
    repeated=[],
    rejected=[],
    steps=["partial_catch_up", "run", "partial_catch_up", "run", "run"],
    stale=False,
    threads=2,
)
def test_any_split_and_run_order_equals_the_full_recompute(project, raw, repeated, rejected, steps, stale, threads):
    project.reset()
    project.threads = threads
    raw = raw + [(*raw[index][:4], batch) for index, batch in repeated if index < len(raw)]
    run_example(project, with_rejected_rows(raw, rejected), steps, STALE_AFTER if stale else None)


def with_rejected_rows(raw, rejected):
    """The drawn events and the drawn rows the quarantine keeps, each in one of the events' batches."""
    batches = sorted({batch for *_, batch in raw})
    return raw + [(*REJECTED_ROWS[index], batches[batch % len(batches)]) for index, batch in rejected]


def run_example(project, raw, steps, stale_after: timedelta | None = None) -> None:
    """Land the drawn events batch by batch, taking the drawn step after each, and compare with the reference."""
    if stale_after is not None:
        project.settings["entity_state__stale_after"] = f"{int(stale_after.total_seconds() // 60)} minutes"
    events = [
        Event(tenant, entity, state, BASE + timedelta(minutes=minute), BASE + timedelta(days=1, minutes=batch))
        for tenant, entity, state, minute, batch in raw
    ]
    landed: list[Event] = []
    for index, batch in enumerate(sorted({e.ingested_at for e in events})):
        rows = [e for e in events if e.ingested_at == batch]
        project.land([e.__dict__ for e in rows], batch)
        landed += rows
        step = steps[index]
        if step == "run":
            project.dbt("run")
            assert_matches_reference(project, landed)
            assert_batches_reconcile(project, landed)
            assert_daily_matches_reference(project, landed, stale_after)
        elif step == "build":
            project.dbt(*BUILD_ON_THE_STATE)
            assert_matches_reference(project, landed)
            assert_batches_reconcile(project, landed)
            assert_daily_matches_reference(project, landed, stale_after)
        elif step == "segments_alone":
            project.dbt("run", "-s", "path:models/staging", "entity_state_runs", "entity_state_segments")
        elif step == "current_alone":
            project.dbt("run", "-s", "path:models/staging", "entity_state_current")
        elif step == "partial_catch_up":
            if all(project.table_exists(table) for table in PARTIAL_CATCH_UP_PARENTS):
                project.dbt(*PARTIAL_CATCH_UP)
            else:
                assert not project.dbt(*PARTIAL_CATCH_UP, expect_success=False).success
        elif step == "current_fails":
            with failing_statement(r"(merge into|create or replace table) \S*entity_state_current\b"):
                project.dbt("run", expect_success=False)
        elif step == "segments_fails":
            with failing_statement(r"(merge into|create or replace table) \S*entity_state_segments\b"):
                project.dbt("run", expect_success=False)
    project.dbt("run")
    assert_matches_reference(project, events)
    assert_batches_reconcile(project, events)
    assert_daily_matches_reference(project, events, stale_after)


def test_a_failed_segments_merge_with_a_repair_then_the_counts_and_current_alone_converge(project):
    """e-2 is in B from minute 1; A at 5 closes that stay, a late B at 3 is repaired in the run whose segments merge
    fails; the batch counts and the current table then run alone, before segments has applied it."""
    raw = [
        ("acme", "e-2", "B", 1, 0),
        ("acme", "e-2", "A", 5, 1),
        ("acme", "e-2", "B", 3, 2),
        ("acme", "e-1", "A", 0, 3),
        ("acme", "e-1", "A", 1, 4),
    ]
    run_example(project, raw, STEPS_AHEAD_OF_CURRENT)


def test_a_repair_that_splits_a_stay_after_a_failed_merge_converges(project):
    """A at 0 and B at 2 make the stay A 0-2; a late B at 1 ends A at 1 in the run whose segments merge fails; X at 3
    then splits B's stay, repaired from the entity's first stay."""
    raw = [
        ("acme", "e-2", "A", 0, 0),
        ("acme", "e-2", "B", 2, 0),
        ("acme", "e-2", "B", 1, 1),
        ("acme", "e-2", "B", 5, 2),
        ("acme", "e-2", "X", 3, 3),
        ("acme", "e-1", "A", 0, 4),
    ]
    run_example(project, raw, STEPS_AHEAD_OF_CURRENT)
