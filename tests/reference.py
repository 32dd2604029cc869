"""An independent, pure-Python statement of what the project computes: the full recompute over all history.

It shares no code with the SQL. The rules, as the README states them:
- rows with an empty or null tenant_id, entity_id or state_id, or a null event_time, are not applied (strings are
  compared after trimming surrounding spaces);
- exact duplicates (same tenant, entity, state and event_time) keep their earliest arrival;
- an event is late when an event of the same entity that arrived in an earlier batch (smaller ingested_at) has a
  later event_time; late events are kept aside and never move the state;
- the remaining events of an entity, ordered by (event_time, ingested_at, state_id), form stays: maximal runs of
  one state. A stay ends at the first event of the next stay, which also gives its next_state_id.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime


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


def recompute(events: Iterable[Event]) -> Recompute:
    earliest: dict[tuple, datetime] = {}
    for event in events:
        tenant, entity, state = _clean(event.tenant_id), _clean(event.entity_id), _clean(event.state_id)
        if tenant is None or entity is None or state is None or event.event_time is None:
            continue
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
                else:
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
