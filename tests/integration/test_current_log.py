"""The log of open stays behind `entity_state_current`: a run adds the open stays of the entities its batch touched,
and nothing for the others; once the log holds `entity_state__compact_after_windows` windows, a run writes every
entity's open stay into its partition and drops the partitions before it."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.reference import Event

from .dbt_harness import failing_statement, recording_watermark
from .state_assertions import assert_matches_reference

T0 = datetime(2026, 7, 1, 8, 0, tzinfo=UTC)
ARRIVAL = datetime(2026, 7, 2, tzinfo=UTC)


def _rows_per_window(project) -> list[int]:
    """How many rows each window's partition of the log holds, oldest window first."""
    rows = project.query(
        f"select emitted_window, count(*) as n from {project.schema}.entity_state_current_log "
        "group by emitted_window order by emitted_window"
    )
    return [row["n"] for row in rows]


def _logged_since(log_file: Path, size: int) -> bytes:
    """What dbt wrote to its log file (the tests' dbt calls are --quiet) past its first `size` bytes."""
    with log_file.open("rb") as log:
        log.seek(size)
        return log.read()


def test_a_run_logs_the_entities_it_touched_and_compaction_writes_every_entity(project):
    project.settings = {"entity_state__compact_after_windows": 2}
    log_file = Path(os.environ["DBT_LOG_PATH"]) / "dbt.log"
    size_at_start = log_file.stat().st_size if log_file.exists() else 0
    landed: list[Event] = []
    arrival = iter(ARRIVAL + timedelta(minutes=minute) for minute in range(1, 10))
    project.land_moves(landed, T0, next(arrival), [("e-1", "A", 0), ("e-2", "X", 1), ("e-3", "P", 1)])
    project.dbt("run")
    project.land_moves(landed, T0, next(arrival), [("e-1", "B", 4)])
    project.dbt("run")
    assert _rows_per_window(project) == [3, 1]
    assert_matches_reference(project, landed)

    # the third write compacts: every entity's row in its partition, the partitions before it dropped once its
    # watermark is recorded. One whose watermark fails to record keeps them; the next compaction drops them
    project.land_moves(landed, T0, next(arrival), [("e-2", "Y", 5)])
    with failing_statement(recording_watermark("entity_state_current_log")) as hits:
        assert not project.dbt("run", expect_success=False).success
    assert hits, "the failure was not injected"
    assert _rows_per_window(project) == [3, 1, 3]
    assert_matches_reference(project, landed)

    # the stopped write's rows seed no walk (they are past the recorded watermark): the rerun walks its window again,
    # with the batch landed since, and compacts
    project.land_moves(landed, T0, next(arrival), [("e-3", "Q", 6)])
    project.dbt("run")
    assert _rows_per_window(project) == [3]
    assert_matches_reference(project, landed)

    # a late event repairs e-1 in the compacted log, and the next write adds its row alone again
    project.land_moves(landed, T0, next(arrival), [("e-1", "C", 2)])
    project.dbt("run")
    assert _rows_per_window(project) == [3, 1]
    assert_matches_reference(project, landed)

    # stored in buckets by entity, so the view ranks each entity's rows where they lie, without a shuffle of the log
    plan = "\n".join(
        str(value)
        for row in project.query(f"explain select * from {project.schema}.entity_state_current")
        for value in row.values()
    )
    assert "Bucketed: true" in plan and "Exchange hashpartitioning" not in plan, plan
    # a log stored in other buckets than the setting asks (built before the setting, or before a change of it) says
    # so in each run's log; a full refresh of the log alone rebuilds it with them, and the state stays right
    size_before = log_file.stat().st_size
    assert b"buckets, not the" not in _logged_since(log_file, size_at_start)[: size_before - size_at_start]
    project.dbt("run", "--vars", "{entity_state__log_buckets: 8}")
    assert b"is stored in 4 buckets, not the 8 its config asks for" in _logged_since(log_file, size_before)
    size_before = log_file.stat().st_size
    project.dbt("run", "--full-refresh", "-s", "entity_state_current_log", "--vars", "{entity_state__log_buckets: 8}")
    assert b"buckets, not the" not in _logged_since(log_file, size_before)
    layout = {
        row["col_name"]: row["data_type"]
        for row in project.query(f"describe formatted {project.schema}.entity_state_current_log")
    }
    assert layout["Num Buckets"] == "8", layout
    assert_matches_reference(project, landed)
