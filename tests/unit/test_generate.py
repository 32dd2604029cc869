"""`entity-state generate`: the same arguments give the same files, and each knob does what it says."""

from __future__ import annotations

import itertools
from datetime import timedelta

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from entity_state.cli import main
from entity_state.generate import EventStream, StreamConfig, generate, state_name
from entity_state.landing import LANDED_SCHEMA

KEY = ["tenant_id", "entity_id", "state_id", "event_time"]


def _rows(table: pa.Table) -> list[tuple]:
    return list(zip(*(table.column(name).to_pylist() for name in KEY), strict=True))


def test_same_arguments_give_byte_identical_files(tmp_path):
    arguments = ["generate", "--batches", "3", "--events-per-batch", "2000", "--entities", "300", "--quiet"]
    arguments += ["--duplicates", "0.05", "--disorder", "0.2", "--seed", "7"]
    assert main([*arguments, "--landing-dir", str(tmp_path / "a")]) == 0
    assert main([*arguments, "--landing-dir", str(tmp_path / "b")]) == 0
    first, second = sorted((tmp_path / "a").iterdir()), sorted((tmp_path / "b").iterdir())
    assert [p.name for p in first] == [p.name for p in second]
    assert len(first) == 3
    assert all(a.read_bytes() == b.read_bytes() for a, b in zip(first, second, strict=True))
    assert pq.read_schema(first[0]).remove_metadata() == LANDED_SCHEMA
    other_seed = tmp_path / "c"
    list(generate(StreamConfig(entities=300, seed=8), 1, 2000, other_seed))
    assert _rows(pq.read_table(next(other_seed.iterdir()))) != _rows(pq.read_table(first[0]))


def test_batches_follow_each_other_in_time_and_ingestion():
    stream = EventStream(StreamConfig(entities=50, disorder=0.3))
    first, second = stream.next_batch(1000), stream.next_batch(1000)
    assert pc.max(first["event_time"]).as_py() < pc.min(second["event_time"]).as_py()
    assert pc.max(first["event_time"]).as_py() < first["ingested_at"][0].as_py() < second["ingested_at"][0].as_py()
    assert pc.count_distinct(first["ingested_at"]).as_py() == 1


def test_duplicate_share_is_exact_copies():
    table = EventStream(StreamConfig(entities=100, duplicate_share=0.1)).next_batch(10_000)
    rows = _rows(table)
    assert len(rows) == 10_000
    assert len(rows) - len(set(rows)) == 1000
    assert len(set(_rows(EventStream(StreamConfig(entities=100)).next_batch(10_000)))) == 10_000


@pytest.mark.parametrize("disorder", [0.0, 0.25])
def test_disorder_moves_about_that_share_of_rows_out_of_time_order(disorder):
    table = EventStream(StreamConfig(entities=100, disorder=disorder)).next_batch(20_000)
    times = table.column("event_time").to_pylist()
    misplaced = sum(1 for time, in_order in zip(times, sorted(times), strict=True) if time != in_order)
    if disorder == 0:
        assert misplaced == 0
    else:
        assert 0.8 * disorder * len(times) < misplaced <= disorder * len(times) * 1.1


def test_late_share_moves_that_share_of_rows_before_the_previous_batch():
    config = StreamConfig(entities=100, late_share=0.05, late_by=timedelta(days=1), tick=timedelta(seconds=1))
    stream = EventStream(config)
    first, second = stream.next_batch(5000), stream.next_batch(5000)
    earlier = pc.max(first["event_time"]).as_py()
    late = [time for time in second["event_time"].to_pylist() if time <= earlier]
    assert 0.03 * 5000 < len(late) < 0.07 * 5000
    assert min(late) >= earlier - timedelta(days=1)
    in_order = EventStream(StreamConfig(entities=100, tick=timedelta(seconds=1)))
    in_order.next_batch(5000)
    assert pc.min(in_order.next_batch(5000)["event_time"]).as_py() > earlier


def test_moves_follow_the_state_graph_and_the_heartbeat_ratio():
    config = StreamConfig(entities=40, states=12, fanout=2, heartbeats_per_change=4.0, disorder=0.5)
    stream = EventStream(config)
    tables = [stream.next_batch(5000) for _ in range(3)]
    events = sorted(
        (entity, time, state) for table in tables for _, entity, state, time in _rows(table)
    )  # per entity in time order, across batches
    index = {state_name(i): i for i in range(config.states)}
    changes = heartbeats = 0
    for (entity, _, state), (next_entity, _, next_state) in itertools.pairwise(events):
        if entity != next_entity:
            continue
        step = (index[next_state] - index[state]) % config.states
        assert step in (0, 1, 2), (entity, state, next_state)
        changes += step != 0
        heartbeats += step == 0
    assert 3.5 < heartbeats / changes < 4.5


def test_touched_entities_limits_a_batch_to_that_many_entities():
    table = EventStream(StreamConfig(entities=1000)).next_batch(5000, touched_entities=20)
    assert pc.count_distinct(table["entity_id"]).as_py() == 20
    assert pc.count_distinct(table["tenant_id"]).as_py() <= 4


def test_invalid_knobs_are_refused(capsys):
    assert main(["generate", "--duplicates", "1.5", "--quiet"]) == 2
    assert "duplicate_share" in capsys.readouterr().err
    with pytest.raises(ValueError, match="fanout"):
        StreamConfig(states=3, fanout=3)


def test_generating_twice_into_one_folder_keeps_the_first_files(tmp_path, capsys):
    arguments = ["generate", "--batches", "2", "--events-per-batch", "500", "--entities", "50", "--quiet"]
    arguments += ["--seed", "7", "--landing-dir", str(tmp_path)]
    assert main(arguments) == 0
    landed = {path.name: (path.read_bytes(), path.stat().st_mtime_ns) for path in tmp_path.iterdir()}
    # the same seed and start give the same file names; more disorder would give other rows under those names
    assert main([*arguments, "--disorder", "0.5"]) == 2
    assert "already exists: a landed file is never overwritten" in capsys.readouterr().err
    assert {path.name: (path.read_bytes(), path.stat().st_mtime_ns) for path in tmp_path.iterdir()} == landed
