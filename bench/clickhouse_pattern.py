"""The reference write-up's pattern in chDB (embedded ClickHouse), for comparison only.

Two materialized views on an events table keep `entity_state_current` (ReplacingMergeTree, one row per entity) and
`entity_state_segments` (closed stays): each walks the inserted block seeded with the stored current row. Adapted
from the write-up: timestamps in microseconds (the project's precision) and the events table a Null engine (the views
only need the inserted block).

Each batch is inserted as ONE block: the views see the state as it was before the whole INSERT, so a batch cut into
several blocks would lose the transitions at block boundaries (see shared/reference/README.md).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

DATABASE = "bench"

SCHEMA = [
    f"DROP DATABASE IF EXISTS {DATABASE}",
    f"CREATE DATABASE {DATABASE}",
    f"""CREATE TABLE {DATABASE}.events (
        tenant_id String, entity_id String, state_id String, event_time DateTime64(6, 'UTC')
    ) ENGINE = Null""",
    f"""CREATE TABLE {DATABASE}.entity_state_current (
        tenant_id String, entity_id String, state_id LowCardinality(String),
        start_time DateTime64(6, 'UTC'), last_event_ts DateTime64(6, 'UTC')
    ) ENGINE = ReplacingMergeTree(last_event_ts) ORDER BY (tenant_id, entity_id)""",
    f"""CREATE TABLE {DATABASE}.entity_state_segments (
        tenant_id String, entity_id String, state_id LowCardinality(String), next_state_id LowCardinality(String),
        start_time DateTime64(6, 'UTC'), end_time DateTime64(6, 'UTC'), last_event_ts DateTime64(6, 'UTC')
    ) ENGINE = MergeTree ORDER BY (tenant_id, entity_id, start_time)""",
]

# one row per entity of the block: the stored seed and the block's events sorted by time
_BLOCK = f"""block AS (
    SELECT
        e.tenant_id AS tenant_id, e.entity_id AS entity_id, max(e.event_time) AS last_event_ts,
        any(s.seed_state_id) AS seed_state, any(s.seed_start_time) AS seed_start, max(s.has_seed) AS has_seed,
        arraySort(x -> x.1, groupArray((e.event_time, e.state_id))) AS evs
    FROM {DATABASE}.events AS e
    LEFT JOIN (
        SELECT tenant_id, entity_id, state_id AS seed_state_id, start_time AS seed_start_time, toUInt8(1) AS has_seed
        FROM {DATABASE}.entity_state_current FINAL
    ) AS s ON s.tenant_id = e.tenant_id AND s.entity_id = e.entity_id
    GROUP BY e.tenant_id, e.entity_id
)"""

# gaps and islands over (seed ++ block) with array functions: boundaries and forward-filled run starts
_WALK = """walked AS (
    SELECT
        tenant_id, entity_id, last_event_ts,
        if(has_seed = 1, arrayConcat([(seed_start, seed_state)], evs), evs) AS pts,
        arrayMap(x -> x.2, pts) AS st,
        arrayMap(x -> x.1, pts) AS ts,
        length(pts) AS n,
        arrayMap(i -> if(i = 1, 0, st[i] != st[i - 1]), range(1, n + 1)) AS boundary,
        arrayMap(p -> p.2, arrayFill(p -> p.1 = 1,
            arrayMap(i -> (if(i = 1, 1, st[i] != st[i - 1]), ts[i]), range(1, n + 1)))) AS rs
    FROM block
)"""

VIEWS = [
    f"""CREATE MATERIALIZED VIEW {DATABASE}.transition_mv TO {DATABASE}.entity_state_segments AS
    WITH {_BLOCK}, {_WALK}
    SELECT tenant_id, entity_id, st[idx - 1] AS state_id, st[idx] AS next_state_id, rs[idx - 1] AS start_time,
        ts[idx] AS end_time, last_event_ts
    FROM walked ARRAY JOIN range(2, n + 1) AS idx
    WHERE boundary[idx] = 1""",
    f"""CREATE MATERIALIZED VIEW {DATABASE}.update_mv TO {DATABASE}.entity_state_current AS
    WITH {_BLOCK}, {_WALK}
    SELECT tenant_id, entity_id, st[n] AS state_id, rs[n] AS start_time, last_event_ts
    FROM walked""",
]

# one INSERT = one block, whatever its size, and one reading thread so the file is not split either
ONE_BLOCK = (
    "SETTINGS max_threads = 1, max_insert_threads = 1, max_block_size = 1000000000, "
    "min_insert_block_size_rows = 1000000000, min_insert_block_size_bytes = 0, "
    "max_insert_block_size = 1000000000, input_format_parquet_max_block_size = 1000000000, "
    "input_format_parquet_prefer_block_bytes = 0"
)


class ClickHousePattern:
    def __init__(self, path: Path | None = None) -> None:
        from chdb import session

        self._folder = None if path else tempfile.TemporaryDirectory(prefix="chdb_bench_")
        self.session = session.Session(str(path or self._folder.name))
        for statement in [*SCHEMA, *VIEWS]:
            self.session.query(statement)

    def insert_file(self, parquet: Path) -> float:
        """Insert one landed batch as one block; returns the seconds the INSERT (and so both views) took."""
        started = time.perf_counter()
        self.session.query(
            f"INSERT INTO {DATABASE}.events SELECT tenant_id, entity_id, state_id, event_time "
            f"FROM file('{parquet}', Parquet) {ONE_BLOCK}"
        )
        return time.perf_counter() - started

    def export_closed_stays(self, path: Path) -> None:
        """Closed stays as Parquet, times in epoch microseconds, for comparison with the dbt tables."""
        result = self.session.query(
            f"SELECT tenant_id, entity_id, toString(state_id) AS state_id, toString(next_state_id) AS next_state_id, "
            f"toUnixTimestamp64Micro(start_time) AS start_us, toUnixTimestamp64Micro(end_time) AS end_us "
            f"FROM {DATABASE}.entity_state_segments",
            "Parquet",
        )
        path.write_bytes(result.bytes())

    def close(self) -> None:
        self.session.close()
        if self._folder is not None:
            self._folder.cleanup()


def main(plan_file: str, stays_file: str) -> None:
    """Insert the files of a plan ([{path, role}]) in order, one block each; print timings, export closed stays."""
    plan = json.loads(Path(plan_file).read_text())
    pattern = ClickHousePattern()
    try:
        timings = [{"role": item["role"], "seconds": pattern.insert_file(Path(item["path"]))} for item in plan]
        pattern.export_closed_stays(Path(stays_file))
    finally:
        pattern.close()
    print(json.dumps(timings))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
