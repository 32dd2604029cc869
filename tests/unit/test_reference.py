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


def test_event_older_than_an_earlier_batch_is_late_and_changes_nothing():
    events = [
        Event("t", "e", "A", at("2026-01-01 10:00"), at("2026-01-02 00:00")),
        Event("t", "e", "B", at("2026-01-01 09:00"), at("2026-01-02 00:01")),
    ]
    result = recompute(events)
    assert result.closed == []
    assert result.open == [OpenStay("t", "e", "A", at("2026-01-01 10:00"), at("2026-01-01 10:00"))]
    assert [e.state_id for e in result.late] == ["B"]


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
