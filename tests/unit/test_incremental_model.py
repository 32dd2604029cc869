"""The incremental design, as modelled in Python, equals the full recompute for any split and any run order."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.reference import Event, recompute
from tests.unit.incremental_model import Warehouse

BASE = datetime(2026, 1, 1, tzinfo=UTC)
STEPS = (
    "run",
    "segments",
    "current",
    "current_then_segments",
    "segments_fails_before_watermark",
    "current_fails_before_watermark",
    "compaction_stops_before_its_drop",
    "full_refresh",
)

events_strategy = st.lists(
    st.tuples(
        st.sampled_from(["t1", "t2"]),
        st.sampled_from(["e1", "e2", "e3"]),
        st.sampled_from(["A", "B", "C"]),
        st.integers(0, 8),
        st.integers(0, 5),
    ),
    max_size=40,
)


def as_events(raw) -> list[Event]:
    return [Event(t, e, s, BASE + timedelta(minutes=m), BASE + timedelta(days=1, minutes=b)) for t, e, s, m, b in raw]


def _take_step(warehouse: Warehouse, step: str) -> None:
    if step == "run":
        warehouse.run_segments()
        warehouse.run_current()
    elif step == "segments":
        warehouse.run_segments()
    elif step == "current":
        warehouse.run_current()
    elif step == "current_then_segments":
        warehouse.run_current()
        warehouse.run_segments()
    elif step == "segments_fails_before_watermark":
        warehouse.run_segments(fail_before_watermark=True)
    elif step == "current_fails_before_watermark":
        warehouse.run_segments()
        warehouse.run_current(fail_before_watermark=True)
    elif step == "compaction_stops_before_its_drop":
        warehouse.run_segments()
        warehouse.run_current(fail_before_drop=True)
    elif step == "full_refresh":
        warehouse.run_segments(full_refresh=True)
        warehouse.run_current(full_refresh=True)


def key(view):
    closed, opened = view
    return sorted(closed, key=repr), sorted(opened, key=repr)


def expected(events):
    reference = recompute(events)
    return sorted(reference.closed, key=repr), sorted(reference.open, key=repr)


@settings(max_examples=3000, deadline=None)
@given(events_strategy, st.lists(st.sampled_from(STEPS), min_size=6, max_size=6), st.integers(1, 3))
def test_any_split_and_order_equals_the_full_recompute(raw, steps, compact_after_windows):
    """Any split, any order of the two models' runs, writes of either that stop before their watermark, and a log
    of open stays compacted every `compact_after_windows` windows (a compaction stopped before its drop included)."""
    events = as_events(raw)
    warehouse = Warehouse(compact_after_windows=compact_after_windows)
    batches = sorted({e.ingested_at for e in events})
    for index, batch in enumerate(batches):
        warehouse.landed += [e for e in events if e.ingested_at == batch]
        step = steps[index % len(steps)]
        _take_step(warehouse, step)
        # after a step that ran both models, with the log's write or its drop stopped or not, the view is right
        if step in ("run", "current_fails_before_watermark", "compaction_stops_before_its_drop"):
            assert key(warehouse.view()) == expected(warehouse.landed)
    warehouse.run_segments()
    warehouse.run_current()
    assert key(warehouse.view()) == expected(events)


def test_a_repair_never_starts_at_a_time_the_stay_before_it_also_had_an_event():
    """B's stay starts at minute 1, where A's stay also had an event. A late event at minute 2 must not start its
    repair at minute 1 (it would split A's events there into a stay of their own): it walks from minute 0. Random
    streams seldom draw this shape."""
    raw = [
        ("t1", "e1", "A", 0, 0),
        ("t1", "e1", "A", 1, 0),
        ("t1", "e1", "B", 1, 0),
        ("t1", "e1", "B", 3, 0),
        ("t1", "e1", "C", 2, 1),
    ]
    events = as_events(raw)
    warehouse = Warehouse()
    for batch in sorted({e.ingested_at for e in events}):
        warehouse.landed += [e for e in events if e.ingested_at == batch]
        warehouse.run_segments()
        warehouse.run_current()
        assert key(warehouse.view()) == expected(warehouse.landed)


def _run_steps(raw, steps) -> None:
    """Land `raw` batch by batch, take one of `steps` after each, then run both models and compare."""
    events = as_events(raw)
    warehouse = Warehouse()
    for batch, step in zip(sorted({e.ingested_at for e in events}), steps, strict=True):
        warehouse.landed += [e for e in events if e.ingested_at == batch]
        _take_step(warehouse, step)
    warehouse.run_segments()
    warehouse.run_current()
    assert key(warehouse.view()) == expected(events)


def test_a_repair_reads_the_stays_of_a_repair_written_ahead_of_the_stored_row():
    """A segments write walks A at 5 (closing B's stay from 1) and a late B at 3, and fails before its watermark;
    current then applies only A at 5. e2's stay B 1-5 is then only in a repair current has not caught up with, so
    it does not stand, and the next repair (of B at 3 again) must still read from B at 1, not from the stored open
    stay's start."""
    raw = [("t1", "e2", "B", 1, 0), ("t1", "e2", "A", 5, 1), ("t1", "e2", "B", 3, 2), ("t1", "e1", "A", 0, 3)]
    _run_steps(raw, ["run", "current", "segments_fails_before_watermark", "current"])


def test_a_repair_ignores_standing_stays_that_a_repair_written_ahead_replaces():
    """A at 0 and B at 2 make the stay A 0-2. A segments write walks a late B at 1 (A's stay now ends at 1) and B at
    5, and fails before its watermark; current applies B at 1 only. A 0-2 still stands for the stored row, though the
    row has applied B at 1. The repair of X at 3 must not start at its end, 2 (B has an event at 1 and 2): it reads
    from the entity's first stay."""
    raw = [
        ("t1", "e2", "A", 0, 0),
        ("t1", "e2", "B", 2, 0),
        ("t1", "e2", "B", 1, 1),
        ("t1", "e2", "B", 5, 2),
        ("t1", "e2", "X", 3, 3),
        ("t1", "e1", "A", 0, 4),
    ]
    _run_steps(raw, ["run", "current", "segments_fails_before_watermark", "current", "run"])
