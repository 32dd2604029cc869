"""A pure-Python model of the incremental design, step for step as the SQL does it.

It lets the design (seeded walk, per-row watermarks, the two watermarks and the order of writes) be checked
against the reference on thousands of random cases in seconds; the integration tests then check that the dbt
project behaves like this model on Spark.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from datetime import datetime

from tests.reference import ClosedStay, Event, OpenStay, _clean


@dataclass
class CurrentRow:
    state_id: str
    start_time: datetime
    last_event_ts: datetime
    states_at_last_event_ts: frozenset[str]
    watermark: datetime


@dataclass
class Warehouse:
    landed: list[Event] = field(default_factory=list)
    current: dict[tuple[str, str], CurrentRow] | None = None
    current_watermark: datetime | None = None
    # each closed stay with the arrival of its closing event and, for an entity walked again from its repair start
    # (a late event), the repair: the arrival of the newest event it walked and the write's number
    segments: list[tuple[ClosedStay, datetime, tuple[datetime, int] | None]] | None = None
    writes: int = 0
    segments_watermark: datetime | None = None

    def _valid(self, low: datetime | None, high: datetime | None) -> list[Event]:
        rows = set()
        for e in self.landed:
            tenant, entity, state = _clean(e.tenant_id), _clean(e.entity_id), _clean(e.state_id)
            if None in (tenant, entity, state) or e.event_time is None or high is None:
                continue
            if (low is None or e.ingested_at > low) and e.ingested_at <= high:
                rows.add(Event(tenant, entity, state, e.event_time, e.ingested_at))
        return list(rows)

    def walk(
        self,
        events: list[Event],
        seed: dict[tuple[str, str], CurrentRow] | None,
        low: datetime | None,
        high: datetime | None,
    ):
        """Returns (closed stays with their closing ingested_at and, for a repaired entity, the arrival of the newest
        event the repair walked; open rows by entity). An entity with a late event (older than an event from an
        earlier batch, or than its stored last event) is walked again from its events landed up to `high`, without
        its stored row, from the latest stored stay start at or before its earliest late event that is the only
        stored event at its time's head (the stored event before it is older); from the beginning if none is.
        What the repair reads of the landed history is bounded as the SQL bounds it (repair_history_bound), here at
        the tightest, per entity: an entity without a stored row reads its window events only; one with a stored
        row its events from _repair_bound on, and the window's."""
        seed = seed or {}
        possibly_late = _possibly_late_entities(events, seed)
        first: dict[tuple, datetime] = {}
        for e in events:
            row = seed.get((e.tenant_id, e.entity_id))
            if row is not None and e.ingested_at <= row.watermark:
                continue
            key = (e.tenant_id, e.entity_id, e.state_id, e.event_time)
            first[key] = min(first.get(key, e.ingested_at), e.ingested_at)
        by_entity: dict[tuple[str, str], list[tuple]] = {}
        for (tenant, entity, state, time), ingested in first.items():
            by_entity.setdefault((tenant, entity), []).append((time, ingested, state))
        closed, opened = [], {}
        for key, items in by_entity.items():
            row = seed.get(key)
            applied, late_times = [], []
            repaired_through = None
            for time, ingested, state in items:
                earlier = [t for t, i, _ in items if i < ingested] + ([row.last_event_ts] if row else [])
                if earlier and time < max(earlier):
                    late_times.append(time)
                if row and time == row.last_event_ts and state in row.states_at_last_event_ts:
                    continue
                applied.append((time, ingested, state))
            if late_times:
                # the SQL walks a window without its repair when this finds no entity (may_have_late_events)
                assert key in possibly_late, f"{key} has a late event that _possibly_late_entities misses"
                history: dict[tuple, datetime] = {}
                bound = self._repair_bound(key, row, min(late_times)) if row else None
                for e in self._valid(None if row else low, high):
                    if (e.tenant_id, e.entity_id) == key and (
                        bound is None or e.event_time >= bound or e.ingested_at > low
                    ):
                        k = (e.event_time, e.state_id)
                        history[k] = min(history.get(k, e.ingested_at), e.ingested_at)
                ordered = sorted((time, ingested, state) for (time, state), ingested in history.items())
                stored = [event for event in ordered if row and event[1] <= row.watermark]
                repair_from = None
                for before, event in itertools.pairwise([None, *stored]):
                    if event[0] > min(late_times):
                        break
                    if before is None or (before[2] != event[2] and before[0] < event[0]):
                        repair_from = event[0]
                row = None
                applied = [event for event in ordered if repair_from is None or event[0] >= repair_from]
                repaired_through = max(ingested for _, ingested, _ in applied)
            if not applied:
                continue
            applied.sort()
            # islands: [state, start, last, started_ingested, seed_states_at_last or None]
            islands = [[row.state_id, row.start_time, row.last_event_ts, None, row]] if row else []
            for time, ingested, state in applied:
                if islands and islands[-1][0] == state:
                    islands[-1][2] = max(islands[-1][2], time)
                else:
                    islands.append([state, time, time, ingested, None])
            for island, following in itertools.pairwise(islands):
                stay = ClosedStay(key[0], key[1], island[0], following[0], island[1], following[1], island[2])
                closed.append((stay, following[3], repaired_through))
            last_ts = max(i[2] for i in islands)
            states = {i[0] for i in islands if i[2] == last_ts}
            if row and row.last_event_ts == last_ts:
                states |= row.states_at_last_event_ts
            opened[key] = (islands[-1][0], islands[-1][1], islands[-1][2], frozenset(states))
        return closed, opened

    def _repair_bound(self, key: tuple[str, str], row: CurrentRow, first_late: datetime) -> datetime:
        """The earliest event time a repair of the entity needs, from its standing closed stays (the view's, as of
        its stored row): the latest end at or before its earliest late event of a stay whose last event is strictly
        before it; else, or when segments holds a repair of the entity past its stored row (its standing stays may
        then be ones that repair replaces), the earliest start of the entity's stays in segments or of its stored
        row, which is at or before its first stored event."""
        written = [(s, r) for s, _, r in self.segments or [] if (s.tenant_id, s.entity_id) == key]
        first = min([s.start_time for s, _ in written] + [row.start_time])
        if any(r is not None and r[0] > row.watermark for _, r in written):
            return first
        stays = [stay for stay in self.view()[0] if (stay.tenant_id, stay.entity_id) == key]
        ends = [s.end_time for s in stays if s.end_time <= first_late and s.last_event_ts < s.end_time]
        return max(ends, default=first)

    # entity_state_segments
    def run_segments(self, full_refresh: bool = False, fail_before_watermark: bool = False) -> None:
        incremental = self.segments is not None and not full_refresh
        seed = self.current if incremental else None
        low = self.current_watermark if incremental and self.current is not None else None
        high = max((e.ingested_at for e in self.landed), default=None)
        emitted = self.effective_segments_watermark() if incremental else None
        closed, _ = self.walk(self._valid(low, high), seed, low, high)
        self.writes += 1
        new = [
            (s, c, (repaired_through, self.writes) if repaired_through else None)
            for s, c, repaired_through in closed
            if repaired_through or emitted is None or c > emitted
        ]
        self.segments = (self.segments if incremental else []) + new
        if fail_before_watermark:
            return
        marks = [m for m in (emitted, high) if m is not None]
        self.segments_watermark = max(marks) if marks else None

    def effective_segments_watermark(self) -> datetime | None:
        if self.segments is None:
            return None
        marks = [c for _, c, _ in self.segments] + ([self.segments_watermark] if self.segments_watermark else [])
        return max(marks) if marks else None

    # entity_state_current
    def run_current(self, full_refresh: bool = False) -> None:
        incremental = self.current is not None and not full_refresh
        low = self.current_watermark if incremental else None
        high = self.effective_segments_watermark()
        stored = self.current if incremental else {}
        _, opened = self.walk(self._valid(low, high), stored, low, high)
        rows = dict(stored)
        for key, (state, start, last, states) in opened.items():
            rows[key] = CurrentRow(state, start, last, states, high)
        self.current = rows
        self.current_watermark = high

    def view(self) -> tuple[list[ClosedStay], list[OpenStay]]:
        """Closed stays up to each entity's current watermark. A repair caught up with replaces the stays of its entity
        written before it (closed by an event it walked, or written by an earlier repair) that start at or after its
        first stay."""
        current = self.current or {}

        def caught_up(stay: ClosedStay, closed_at: datetime, repair: tuple[datetime, int] | None) -> bool:
            row = current.get((stay.tenant_id, stay.entity_id))
            return row is not None and closed_at <= row.watermark and (repair is None or repair[0] <= row.watermark)

        rows = [(s, c, r) for s, c, r in self.segments or [] if caught_up(s, c, r)]
        repair_from: dict[tuple[str, str, tuple[datetime, int]], datetime] = {}
        for s, _, r in rows:
            if r is not None:
                key = (s.tenant_id, s.entity_id, r)
                repair_from[key] = min(repair_from.get(key, s.start_time), s.start_time)

        def replaced(stay: ClosedStay, closed_at: datetime, repair: tuple[datetime, int] | None) -> bool:
            return any(
                (tenant, entity) == (stay.tenant_id, stay.entity_id)
                and start <= stay.start_time
                and (closed_at <= later[0] if repair is None else repair < later)
                for (tenant, entity, later), start in repair_from.items()
            )

        closed = [s for s, c, r in rows if not replaced(s, c, r)]
        opened = [OpenStay(k[0], k[1], r.state_id, r.start_time, r.last_event_ts) for k, r in current.items()]
        return closed, opened


def _possibly_late_entities(events: list[Event], seed: dict[tuple[str, str], CurrentRow]) -> set[tuple[str, str]]:
    """The entities of the window that may have a late event, by the SQL's coarse rule (_possibly_late_entities):
    an event older than the entity's stored last event, or events from several batches."""
    times: dict[tuple[str, str], list[datetime]] = {}
    batches: dict[tuple[str, str], set[datetime]] = {}
    for e in events:
        key = (e.tenant_id, e.entity_id)
        times.setdefault(key, []).append(e.event_time)
        batches.setdefault(key, set()).add(e.ingested_at)
    return {
        key for key in times if (key in seed and min(times[key]) < seed[key].last_event_ts) or len(batches[key]) > 1
    }
