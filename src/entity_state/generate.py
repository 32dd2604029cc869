"""Synthetic event batches for benchmarks and load tests: pallets moving between warehouses.

Warehouses sit on a ring; from warehouse `w` a pallet can only move to one of the next `fanout` warehouses
(`w+1 .. w+fanout`, modulo the ring). Using offsets rather than an arbitrary graph lets a whole batch be walked at
once: an entity's state is its start state plus the running sum of its moves, a grouped cumulative sum in numpy,
so 20M events take seconds instead of a Python loop per event.

Event times are strictly increasing across the stream (one tick apart), so the stream is in order across batches:
nothing is late, unless `late_share` moves that share of a batch's rows back in time by up to `late_by` (an event
from a device that was offline). Within a batch, a share of rows is shuffled out of time order (`disorder`) and a
share of rows is repeated exactly (`duplicate_share`). The same config and seed give the same events, stamps and
file names.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa

from entity_state.landing import LANDED_SCHEMA, TIMESTAMP, write_atomically

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class StreamConfig:
    tenants: int = 4
    entities: int = 10_000  # in all tenants together; entity i belongs to tenant i % tenants
    states: int = 50  # warehouses on the ring
    fanout: int = 3  # moves allowed from each warehouse
    heartbeats_per_change: float = 9.0  # events that repeat the state per event that changes it
    duplicate_share: float = 0.0  # share of a batch's rows that are exact copies of another row of the batch
    disorder: float = 0.0  # share of a batch's rows moved out of time order within the batch
    late_share: float = 0.0  # share of a batch's rows whose event_time is moved back by up to `late_by`
    late_by: timedelta = timedelta(days=7)
    seed: int = 42
    start: datetime = datetime(2026, 1, 1, tzinfo=UTC)
    tick: timedelta = timedelta(milliseconds=10)  # time between consecutive events of the stream
    ingest_lag: timedelta = timedelta(minutes=1)  # a batch is stamped this long after its last event

    def __post_init__(self) -> None:
        for name in ("tenants", "entities", "states", "fanout"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.fanout >= self.states and self.states > 1:
            raise ValueError(f"fanout must be below the number of states ({self.states}), got {self.fanout}")
        if self.heartbeats_per_change < 0:
            raise ValueError(f"heartbeats_per_change must not be negative, got {self.heartbeats_per_change}")
        for name in ("duplicate_share", "disorder", "late_share"):
            if not 0 <= getattr(self, name) < 1:
                raise ValueError(f"{name} must be in [0, 1), got {getattr(self, name)}")
        if self.tick <= timedelta(0):
            raise ValueError(f"tick must be positive, got {self.tick}")


def state_name(index: int) -> str:
    return f"wh-{index:03d}"


def entity_name(index: int) -> str:
    return f"pallet-{index:08d}"


def tenant_name(index: int) -> str:
    return f"t-{index:02d}"


class EventStream:
    """The stream's position: each entity's current state, the clock and the batch count.

    `next_batch` continues it; `snapshot` copies it, so a caller can emit a batch and later go on as if it had not.
    """

    def __init__(self, config: StreamConfig) -> None:
        self.config = config
        self.rng = np.random.default_rng(config.seed)
        self.state = self.rng.integers(0, config.states, config.entities)
        self.seen = np.zeros(config.entities, dtype=bool)
        self.clock_us = _micros(config.start)
        self.last_ingested_us = 0
        self.batches = 0
        # the names are built once; a batch only gathers them by index
        self._entity_names = pa.array([entity_name(i) for i in range(config.entities)], pa.string())
        self._tenant_names = pa.array([tenant_name(i) for i in range(config.tenants)], pa.string())
        self._state_names = pa.array([state_name(i) for i in range(config.states)], pa.string())

    def snapshot(self) -> EventStream:
        return copy.deepcopy(self)

    def next_batch(self, events: int, touched_entities: int | None = None) -> pa.Table:
        """The next `events` rows (duplicates included), from `touched_entities` entities (default: all)."""
        config, rng = self.config, self.rng
        duplicates = round(events * config.duplicate_share)
        unique = events - duplicates
        population = (
            np.arange(config.entities)
            if touched_entities is None or touched_entities >= config.entities
            else np.sort(rng.choice(config.entities, touched_entities, replace=False))
        )
        entity = population[rng.integers(0, len(population), unique)]
        times = self.clock_us + np.arange(unique, dtype=np.int64) * _micros_of(config.tick)
        state = self._walk(entity, rng)

        rows = np.arange(unique)
        if duplicates:
            rows = np.concatenate([rows, rng.integers(0, unique, duplicates)])
            rows.sort(kind="stable")  # a copy sits right after its original, then disorder may move it
        if config.disorder and len(rows) > 1:
            moved = np.flatnonzero(rng.random(len(rows)) < config.disorder)
            rows[moved] = rows[rng.permutation(moved)]

        self.clock_us = int(times[-1]) + _micros_of(config.tick) if unique else self.clock_us
        if config.late_share and unique:
            late = np.flatnonzero(rng.random(unique) < config.late_share)
            times = times.copy()
            times[late] -= rng.integers(1, _micros_of(config.late_by) + 1, len(late))
        ingested_us = max(self.clock_us + _micros_of(config.ingest_lag), self.last_ingested_us + 1)
        self.last_ingested_us = ingested_us
        self.batches += 1
        entity, state, times = entity[rows], state[rows], times[rows]
        return pa.table(
            {
                "tenant_id": self._tenant_names.take(pa.array(entity % config.tenants)),
                "entity_id": self._entity_names.take(pa.array(entity)),
                "state_id": self._state_names.take(pa.array(state)),
                "event_time": pa.array(times, pa.int64()).cast(TIMESTAMP),
                "event_time_text": pa.nulls(len(rows), pa.string()),
                "ingested_at": pa.array(np.full(len(rows), ingested_us), pa.int64()).cast(TIMESTAMP),
            },
            schema=LANDED_SCHEMA,
        )

    def _walk(self, entity: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """States after each event (events in time order): start state plus the running sum of moves."""
        config = self.config
        changes = rng.random(len(entity)) < 1 / (1 + config.heartbeats_per_change)
        moves = np.where(changes, rng.integers(1, config.fanout + 1, len(entity)), 0)
        order = np.argsort(entity, kind="stable")  # per entity, still in time order
        grouped = entity[order]
        first = np.ones(len(grouped), dtype=bool)
        first[1:] = grouped[1:] != grouped[:-1]
        # an entity's first event ever reports where it starts; it is not a move
        moved = np.where(first & ~self.seen[grouped], 0, moves[order])
        running = np.cumsum(moved)
        group_start = np.flatnonzero(first)
        before_group = running[group_start] - moved[group_start]
        running -= np.repeat(before_group, np.diff(np.append(group_start, len(grouped))))
        walked = (self.state[grouped] + running) % config.states
        last = np.append(group_start[1:], len(grouped)) - 1
        self.state[grouped[last]] = walked[last]
        self.seen[grouped] = True
        state = np.empty_like(walked)
        state[order] = walked
        return state


def batch_file_name(table: pa.Table, config: StreamConfig, number: int) -> str:
    stamp = table.column("ingested_at")[0].as_py() if table.num_rows else config.start
    return f"batch_{stamp:%Y%m%dT%H%M%S%f}_gen{config.seed}_{number:05d}.parquet"


def generate(
    config: StreamConfig,
    batches: int,
    events_per_batch: int,
    directory: Path,
    touched_entities: int | None = None,
    progress: bool = False,
) -> Iterator[Path]:
    """Land `batches` batches of the stream in `directory`; yields each file's path once it is in place.

    The file names follow the config, so a second run with the same seed and start into the same folder meets the
    first one's files: write_atomically raises LandingError there rather than replace them."""
    directory.mkdir(parents=True, exist_ok=True)
    stream = EventStream(config)
    bar = _progress(batches * events_per_batch) if progress else None
    for number in range(1, batches + 1):
        table = stream.next_batch(events_per_batch, touched_entities)
        yield write_atomically(table, directory / batch_file_name(table, config, number))
        if bar is not None:
            bar.update(table.num_rows)
    if bar is not None:
        bar.close()


def _progress(total: int):
    from tqdm import tqdm

    return tqdm(total=total, unit=" events", unit_scale=True, desc="generate")


def _micros(moment: datetime) -> int:
    return _micros_of(moment - EPOCH)


def _micros_of(delta: timedelta) -> int:
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
