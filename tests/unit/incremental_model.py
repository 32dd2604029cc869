"""A pure-Python model of the incremental design, step for step as the SQL does it.

It lets the design (seeded walk, per-row watermarks, the two watermarks, the order of writes, the log of open
stays with its stopped writes and compactions) be checked against the reference on thousands of random cases
in seconds; the integration tests then check that the dbt project behaves like this model on Spark.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from tests.reference import ClosedStay, Event, OpenStay, _clean


@dataclass
class CurrentRow:
    state_id: str
    start_time: datetime
    last_event_ts: datetime
    states_at_last_event_ts: frozenset[str]
    watermark: datetime


@dataclass
class LoggedWindow:
    """One partition of entity_state_current_log: its value sorts as the window's end, then the run (the write's
    number), and it holds the open stays of the entities the window advanced, or of every entity (a compaction)."""

    partition: tuple[datetime | None, int]
    rows: dict[tuple[str, str], CurrentRow]


@dataclass
class Warehouse:
    landed: list[Event] = field(default_factory=list)
    # entity_state_current_log: its partitions (None: not built), its recorded watermark, the windows written since its
    # build or last compaction, and the windows it holds before a run compacts it
    log: list[LoggedWindow] | None = None
    log_watermark: datetime | None = None
    logged_windows: int = 0
    compact_after_windows: int = 16
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
                # without a recorded watermark to start from (a log whose build stopped before it), the SQL reads
                # the whole history (repair_history_bound gives none)
                bound = self._repair_bound(key, row, min(late_times)) if row and low is not None else None
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

    def newest_logged_rows(self, through: datetime | None = None):
        """Each entity's row of the newest partition of the log among the windows that ended at or before `through`
        (None: every partition), as newest_logged_rows; None while the log is not built."""
        if self.log is None:
            return None
        rows: dict[tuple[str, str], CurrentRow] = {}
        for window in sorted(self.log, key=_partition_order):
            end = window.partition[0]
            if through is None or (end is not None and end <= through):
                rows.update(window.rows)
        return rows

    @property
    def current(self) -> dict[tuple[str, str], CurrentRow] | None:
        """The view entity_state_current: each entity's newest row in the log, a stopped write's rows included."""
        return self.newest_logged_rows()

    def seed_rows(self) -> dict[tuple[str, str], CurrentRow] | None:
        """What seeds a walk: the log's newest rows among the windows through its recorded watermark."""
        return self.newest_logged_rows(self.log_watermark)

    # entity_state_segments
    def run_segments(self, full_refresh: bool = False, fail_before_watermark: bool = False) -> None:
        incremental = self.segments is not None and not full_refresh
        seed = self.seed_rows() if incremental else None
        low = self.log_watermark if incremental and self.log is not None else None
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

    # entity_state_current_log
    def run_current(
        self, full_refresh: bool = False, fail_before_watermark: bool = False, fail_before_drop: bool = False
    ) -> None:
        """A run of the log, as state_window plans it: the window from the recorded watermark (`low`, which seeds
        the walk) to what segments emitted; the rows of a write that stopped before its watermark move `start`
        (what the log emitted) but seed nothing. An empty window writes nothing and records `start`. A compaction
        writes every entity's row, then (after its watermark) drops the partitions before its own."""
        incremental = self.log is not None and not full_refresh
        low = self.log_watermark if incremental else None
        high = self.effective_segments_watermark()
        # emitted_watermark: the recorded watermark, or the rows of the windows written after it
        emitted = [
            row.watermark
            for window in (self.log or [] if incremental else [])
            if low is None or (window.partition[0] is not None and window.partition[0] > low)
            for row in window.rows.values()
        ]
        start = max([m for m in (low, *emitted) if m is not None], default=None)
        if incremental and (high is None or (start is not None and high <= start)):
            self.log_watermark = start
            return
        seed = self.seed_rows() if incremental else {}
        _, opened = self.walk(self._valid(low, high), seed, low, high)
        compacts = incremental and self.logged_windows >= self.compact_after_windows
        rows = {key: replace(row, watermark=high) for key, row in seed.items()} if compacts else {}
        for key, (state, start_time, last, states) in opened.items():
            rows[key] = CurrentRow(state, start_time, last, states, high)
        self.writes += 1
        written = LoggedWindow((high, self.writes), rows)
        self.log = [*(self.log if incremental else []), written]
        if fail_before_watermark:
            return
        self.log_watermark = high
        self.logged_windows = 1 if compacts or not incremental else self.logged_windows + 1
        if compacts and not fail_before_drop:
            self.log = [w for w in self.log if _partition_order(w) >= _partition_order(written)]

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


def _partition_order(window: LoggedWindow) -> tuple[datetime, int]:
    """The order of partition values (window_partition_value): a window's end, then its run. A build without a
    window end gets the value 'none...', which sorts after every end's digits."""
    end, write = window.partition
    return (end or datetime.max.replace(tzinfo=UTC), write)


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
