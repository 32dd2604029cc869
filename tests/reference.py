"""An independent, pure-Python statement of what the project computes: the full recompute over all history.

It shares no code with the SQL. The rules, as the README states them:
- rows with an empty or null tenant_id, entity_id or state_id, or a null event_time, are not applied (strings are
  compared after trimming surrounding spaces), nor are events whose event_time is later than their ingested_at by
  more than the allowed clock skew (an event cannot arrive before it happened);
- exact duplicates (same tenant, entity, state and event_time) keep their earliest arrival;
- the events of an entity, ordered by (event_time, ingested_at, state_id), form stays: maximal runs of one state.
  A stay ends at the first event of the next stay, which also gives its next_state_id. Arrival order only breaks
  ties at an equal event_time: an event that arrives after newer ones takes its place in the timeline;
- such an event is also listed as late (for the audit, not to set it aside): an event of the same entity that
  arrived in an earlier batch (smaller ingested_at) has a later event_time.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta


@dataclass(frozen=True)
class Event:
    tenant_id: str | None
    entity_id: str | None
    state_id: str | None
    event_time: datetime | None
    ingested_at: datetime


@dataclass(frozen=True)
class ClosedStay:
    tenant_id: str
    entity_id: str
    state_id: str
    next_state_id: str
    start_time: datetime
    end_time: datetime
    last_event_ts: datetime


@dataclass(frozen=True)
class OpenStay:
    tenant_id: str
    entity_id: str
    state_id: str
    start_time: datetime
    last_event_ts: datetime


@dataclass
class Recompute:
    closed: list[ClosedStay]
    open: list[OpenStay]
    late: list[Event]


def _clean(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip(" ")
    return value or None


# the project's default for the var entity_state__event_clock_skew_minutes
EVENT_CLOCK_SKEW = timedelta(minutes=60)


def is_rejected(event: Event, event_clock_skew: timedelta = EVENT_CLOCK_SKEW) -> bool:
    """A row that cannot be placed on any timeline: a key missing or blank, no event time, or an event time later
    than its arrival by more than the clock skew."""
    if any(_clean(value) is None for value in (event.tenant_id, event.entity_id, event.state_id)):
        return True
    return event.event_time is None or event.event_time > event.ingested_at + event_clock_skew


def recompute(events: Iterable[Event], event_clock_skew: timedelta = EVENT_CLOCK_SKEW) -> Recompute:
    earliest: dict[tuple, datetime] = {}
    for event in events:
        if is_rejected(event, event_clock_skew):
            continue
        tenant, entity, state = _clean(event.tenant_id), _clean(event.entity_id), _clean(event.state_id)
        key = (tenant, entity, state, event.event_time)
        if key not in earliest or event.ingested_at < earliest[key]:
            earliest[key] = event.ingested_at

    by_entity: dict[tuple[str, str], list[Event]] = defaultdict(list)
    for (tenant, entity, state, event_time), ingested_at in earliest.items():
        by_entity[(tenant, entity)].append(Event(tenant, entity, state, event_time, ingested_at))

    result = Recompute([], [], [])
    for (tenant, entity), entity_events in sorted(by_entity.items()):
        by_batch: dict[datetime, list[Event]] = defaultdict(list)
        for event in entity_events:
            by_batch[event.ingested_at].append(event)
        applied = []
        latest_of_earlier_batches: datetime | None = None
        for batch in sorted(by_batch):
            for event in by_batch[batch]:
                if latest_of_earlier_batches is not None and event.event_time < latest_of_earlier_batches:
                    result.late.append(event)
                applied.append(event)
            latest_of_batch = max(e.event_time for e in by_batch[batch])
            if latest_of_earlier_batches is None or latest_of_batch > latest_of_earlier_batches:
                latest_of_earlier_batches = latest_of_batch
        applied.sort(key=lambda e: (e.event_time, e.ingested_at, e.state_id))

        runs: list[list[Event]] = []
        for event in applied:
            if runs and runs[-1][0].state_id == event.state_id:
                runs[-1].append(event)
            else:
                runs.append([event])
        for run, following in itertools.pairwise(runs):
            result.closed.append(
                ClosedStay(
                    tenant,
                    entity,
                    run[0].state_id,
                    following[0].state_id,
                    run[0].event_time,
                    following[0].event_time,
                    max(e.event_time for e in run),
                )
            )
        if runs:
            last = runs[-1]
            result.open.append(
                OpenStay(tenant, entity, last[0].state_id, last[0].event_time, max(e.event_time for e in last))
            )
    return result


@dataclass(frozen=True)
class DayInState:
    seconds_in_state: float
    stays_started: int
    stays_ended: int
    entities_in_state: int


def time_in_state_per_day(
    result: Recompute, now: datetime, stale_after: timedelta | None = None
) -> dict[tuple[str, str, date], DayInState]:
    """Per (tenant, state, UTC day): seconds in the state, stays started and ended, distinct entities in it.

    A closed stay counts up to its end_time; an open one up to `now`, or up to its last event when it is stale (its
    last event more than `stale_after` before now), and never before its start. Each day a stay touches gets the part
    of the day it covers; an entity counts on a day when its stay spends time in the state then, or starts then.
    Walks every day of every stay: slow for long stays, and independent of the SQL's running sums.
    """
    seconds: dict[tuple, float] = defaultdict(float)
    started: dict[tuple, int] = defaultdict(int)
    ended: dict[tuple, int] = defaultdict(int)
    entities: dict[tuple, set] = defaultdict(set)
    spans = [(s, s.end_time, True) for s in result.closed]
    for stay in result.open:
        is_stale = stale_after is not None and stay.last_event_ts < now - stale_after
        spans.append((stay, stay.last_event_ts if is_stale else now, False))
    for stay, until, has_ended in spans:
        until = max(until, stay.start_time)
        day = stay.start_time.date()
        while day <= until.date():
            key = (stay.tenant_id, stay.state_id, day)
            midnight = datetime.combine(day, time(), stay.start_time.tzinfo)
            spent = min(until, midnight + timedelta(days=1)) - max(stay.start_time, midnight)
            seconds[key] += spent.total_seconds()
            if day == stay.start_time.date():
                started[key] += 1
            if spent > timedelta(0) or day == stay.start_time.date():
                entities[key].add(stay.entity_id)
            day += timedelta(days=1)
        if has_ended:
            ended[(stay.tenant_id, stay.state_id, until.date())] += 1
    keys = set(started) | set(ended) | set(entities)
    return {key: DayInState(seconds[key], started[key], ended[key], len(entities[key])) for key in keys}
