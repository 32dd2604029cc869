"""The write-up's six events, in the three splits shipped with the project, through `dbt run` after each batch."""

from __future__ import annotations

import csv
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.reference import Event

from .state_assertions import assert_matches_reference, view_stays

pytestmark = pytest.mark.cluster

CASE = Path(__file__).resolve().parents[1] / "fixtures" / "article_example"


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def _expected_rows() -> list[tuple]:
    with open(CASE / "expected_view.csv") as handle:
        return sorted(
            (
                r["tenant_id"],
                r["entity_id"],
                r["state_id"],
                r["next_state_id"] or None,
                _at(r["start_time"]),
                None if r["is_open"] == "true" else _at(r["end_time"]),
                _at(r["last_event_ts"]),
                r["is_open"] == "true",
            )
            for r in csv.DictReader(handle)
        )


@pytest.mark.parametrize("split", ["batch_case1", "batch_case2", "batch_case3"])
def test_article_split_gives_the_expected_view(project, split):
    run_article_split(project, split)


def run_article_split(project, split: str) -> None:
    """Land the article's events in the batches of `split`, `dbt run` after each, and compare the view."""
    with open(CASE / "events.csv") as handle:
        rows = list(csv.DictReader(handle))
    landed: list[Event] = []
    for batch in sorted({int(r[split]) for r in rows}):
        ingested_at = datetime(2026, 1, 2, tzinfo=UTC) + timedelta(minutes=batch)
        part = [dict(r, event_time=_at(r["event_time"])) for r in rows if int(r[split]) == batch]
        project.land(part, ingested_at)
        landed += [Event(r["tenant_id"], r["entity_id"], r["state_id"], r["event_time"], ingested_at) for r in part]
        project.dbt("run")

    closed, opened = view_stays(project)
    got = sorted(
        [
            (s.tenant_id, s.entity_id, s.state_id, s.next_state_id, s.start_time, s.end_time, s.last_event_ts, False)
            for s in closed
        ]
        + [(s.tenant_id, s.entity_id, s.state_id, None, s.start_time, None, s.last_event_ts, True) for s in opened]
    )
    assert got == _expected_rows()
    assert_matches_reference(project, landed)
