"""What a write killed after some of its tasks committed leaves behind must never be read.

Segments, the quarantine and the batch counts each add one partition per run. Such a write commits through the
`_temporary` folder at the table's root, and its commit moves in every committed task output it finds there,
including the tasks of an earlier write that was killed before its own commit. This test plants exactly that
leftover (files of the partition the killed write would have written) and checks that the next run's commit takes
it in without any reader seeing it.
"""

from __future__ import annotations

import json
import re
import shutil
from datetime import UTC, datetime, timedelta

from tests.reference import Event

from .state_assertions import assert_matches_reference

T0 = datetime(2026, 5, 1, 8, 0, tzinfo=UTC)
ARRIVAL = datetime(2026, 5, 2, tzinfo=UTC)
KILLED_TASK = "task_202605020000_0007_m_000000"  # the name Hadoop gives a committed task's output folder


def _batch(project, landed, ingested_minute, *events):
    project.land_moves(landed, T0, ARRIVAL + timedelta(minutes=ingested_minute), list(events))


def _partition_a_run_would_write(project) -> str:
    """The partition a run of the current window writes, as a run killed now would have named it."""
    result = project.dbt("compile", "-s", "entity_state_segments")
    compiled = result.result.results[0].node.compiled_code
    return json.loads(re.search(r"/\* entity_state\.write_plan=(\{.*?\}) \*/", compiled).group(1))["partition"]


def test_task_output_left_by_a_killed_write_is_never_read(project):
    landed: list[Event] = []
    _batch(project, landed, 1, ("e-1", "A", 0), ("e-1", "B", 4), ("e-2", "X", 1), ("e-2", "Y", 2))
    project.dbt("run")
    _batch(project, landed, 2, ("e-1", "C", 6), ("e-2", "Z", 5))

    # A second run, killed after one of its tasks committed: that task's files sit under `_temporary`, holding
    # (here) copies of stays already in the table, in the partition the killed run was writing.
    table = project.table_location("entity_state_segments")
    killed_partition = f"emitted_window={_partition_a_run_would_write(project)}"
    stored_files = [path for path in table.glob("emitted_window=*/*.parquet") if path.stat().st_size > 0]
    assert stored_files, "the first run wrote no stay files to copy"
    leftover = table / "_temporary" / "0" / KILLED_TASK / killed_partition
    leftover.mkdir(parents=True)
    for path in stored_files:
        shutil.copy(path, leftover / path.name)

    project.dbt("run")

    # The run's commit did take the leftover in (else this test would prove nothing), into a partition of its own
    # that the metastore does not know, so no reader sees it.
    assert any((table / killed_partition).glob("*.parquet")), "the leftover task output was not committed"
    partitions = {row["partition"] for row in project.query(f"show partitions {project.schema}.entity_state_segments")}
    assert killed_partition not in partitions
    assert_matches_reference(project, landed)
