"""The reference itself, on cases small enough to check by hand."""

from __future__ import annotations

import csv
from datetime import UTC, datetime
from pathlib import Path

from tests.reference import ClosedStay, Event, OpenStay, recompute

ARTICLE = Path(__file__).resolve().parents[1] / "fixtures" / "article_example"


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def article_events(split: str) -> list[Event]:
    with open(ARTICLE / "events.csv") as handle:
        return [
            Event(
                r["tenant_id"],
                r["entity_id"],
                r["state_id"],
                at(r["event_time"]),
                at("2026-01-02").replace(minute=int(r[split])),
            )
            for r in csv.DictReader(handle)
        ]


def test_article_example_gives_the_expected_stays_for_every_split():
    expected_closed = [
        ClosedStay("acme", "e-1", "A", "B", at("2026-01-01 09:00"), at("2026-01-01 09:12"), at("2026-01-01 09:10")),
        ClosedStay("acme", "e-1", "B", "C", at("2026-01-01 09:12"), at("2026-01-01 09:41"), at("2026-01-01 09:30")),
    ]
    expected_open = [OpenStay("acme", "e-1", "C", at("2026-01-01 09:41"), at("2026-01-01 09:41"))]
    for split in ("batch_case1", "batch_case2", "batch_case3"):
        result = recompute(article_events(split))
        assert result.closed == expected_closed, split
        assert result.open == expected_open, split
        assert result.late == []


def test_event_older_than_an_earlier_batch_is_late_and_takes_its_place_in_the_timeline():
    events = [
        Event("t", "e", "A", at("2026-01-01 10:00"), at("2026-01-02 00:00")),
        Event("t", "e", "B", at("2026-01-01 09:00"), at("2026-01-02 00:01")),
    ]
    result = recompute(events)
    assert result.closed == [
        ClosedStay("t", "e", "B", "A", at("2026-01-01 09:00"), at("2026-01-01 10:00"), at("2026-01-01 09:00"))
    ]
    assert result.open == [OpenStay("t", "e", "A", at("2026-01-01 10:00"), at("2026-01-01 10:00"))]
    assert [e.state_id for e in result.late] == ["B"]


def stays_after_late(late_state: str, late_minute: int) -> list[tuple]:
    """A-A (9:00, 9:20), B (9:40), C (10:00), then one late event at 9:`late_minute` in a later batch."""
    first, later = at("2026-01-02 00:00"), at("2026-01-02 00:01")
    events = [
        Event("t", "e", "A", at("2026-01-01 09:00"), first),
        Event("t", "e", "A", at("2026-01-01 09:20"), first),
        Event("t", "e", "B", at("2026-01-01 09:40"), first),
        Event("t", "e", "C", at("2026-01-01 10:00"), first),
        Event("t", "e", late_state, at("2026-01-01 09:00").replace(minute=late_minute), later),
    ]
    result = recompute(events)
    stays = [(s.state_id, s.start_time.minute, s.end_time.minute, s.last_event_ts.minute) for s in result.closed]
    stays += [(s.state_id, s.start_time.minute, None, s.last_event_ts.minute) for s in result.open]
    return sorted(stays, key=lambda stay: stay[1] if stay[2] is not None else 99)


def test_late_events_split_extend_prepend_and_join_stays():
    # another state inside a closed stay splits it in three
    assert stays_after_late("C", 10) == [
        ("A", 0, 10, 0),
        ("C", 10, 20, 10),
        ("A", 20, 40, 20),
        ("B", 40, 0, 40),
        ("C", 0, None, 0),
    ]
    # the same state after the stay's last event extends last_event_ts only
    assert stays_after_late("B", 50) == [("A", 0, 40, 20), ("B", 40, 0, 50), ("C", 0, None, 0)]
    # another state after the stay's last event ends it there; joined with the next stay when that has its state
    assert stays_after_late("C", 30) == [("A", 0, 30, 20), ("C", 30, 40, 30), ("B", 40, 0, 40), ("C", 0, None, 0)]
    assert stays_after_late("B", 30) == [("A", 0, 30, 20), ("B", 30, 0, 40), ("C", 0, None, 0)]
    # an exact duplicate arriving late changes nothing
    assert stays_after_late("A", 20) == [("A", 0, 40, 20), ("B", 40, 0, 40), ("C", 0, None, 0)]


def test_out_of_order_events_within_one_batch_are_not_late():
    batch = at("2026-01-02 00:00")
    events = [
        Event("t", "e", "B", at("2026-01-01 10:00"), batch),
        Event("t", "e", "A", at("2026-01-01 09:00"), batch),
    ]
    result = recompute(events)
    assert result.late == []
    assert [(s.state_id, s.next_state_id) for s in result.closed] == [("A", "B")]


def test_duplicate_in_a_later_batch_at_the_last_timestamp_changes_nothing():
    moment = at("2026-01-01 10:00")
    events = [
        Event("t", "e", "A", moment, at("2026-01-02 00:00")),
        Event("t", "e", "B", moment, at("2026-01-02 00:00")),
        Event("t", "e", "A", moment, at("2026-01-02 00:01")),
    ]
    result = recompute(events)
    assert [(s.state_id, s.start_time, s.end_time) for s in result.closed] == [("A", moment, moment)]
    assert result.open == [OpenStay("t", "e", "B", moment, moment)]


def test_new_state_at_the_same_timestamp_in_a_later_batch_is_applied_after_the_earlier_ones():
    moment = at("2026-01-01 10:00")
    events = [
        Event("t", "e", "B", moment, at("2026-01-02 00:00")),
        Event("t", "e", "A", moment, at("2026-01-02 00:01")),
    ]
    result = recompute(events)
    assert [(s.state_id, s.next_state_id) for s in result.closed] == [("B", "A")]


def test_same_entity_id_in_two_tenants_is_two_entities_and_bad_rows_are_skipped():
    batch = at("2026-01-02 00:00")
    events = [
        Event("t1", "e", "A", at("2026-01-01 09:00"), batch),
        Event("t2", "e", "B", at("2026-01-01 09:30"), batch),
        Event(" t1 ", "e", "C", at("2026-01-01 10:00"), batch),
        Event("t1", "", "C", at("2026-01-01 11:00"), batch),
        Event("t1", "e", None, at("2026-01-01 11:00"), batch),
        Event("t1", "e", "D", None, batch),
    ]
    result = recompute(events)
    assert [(s.tenant_id, s.state_id, s.next_state_id) for s in result.closed] == [("t1", "A", "C")]
    assert [(s.tenant_id, s.state_id) for s in result.open] == [("t1", "C"), ("t2", "B")]


def test_an_event_stamped_later_than_its_arrival_beyond_the_skew_is_not_applied():
    arrival = at("2026-01-01 09:00")
    at_the_skew = Event("acme", "e-1", "A", at("2026-01-01 10:00"), arrival)
    beyond_it = Event("acme", "e-1", "B", at("2026-01-01 10:00:01"), arrival)
    result = recompute([at_the_skew, beyond_it])
    assert result.closed == []
    assert result.open == [OpenStay("acme", "e-1", "A", at("2026-01-01 10:00"), at("2026-01-01 10:00"))]
