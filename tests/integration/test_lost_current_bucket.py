"""A bucket of entity_state_current that lost its rows is rebuilt by the next plain run.

Spark replaces a rewritten bucket by deleting its folder and then renaming the new one in. A run killed during the
delete, or between the two, leaves the bucket registered with only some or none of its rows. The kill itself lasts
milliseconds and cannot be aimed at from outside, so this test leaves the table as such a kill would (the run that
was killed had written segments and the batch counts already, and recorded the current write's intent) and then
runs dbt as a user would.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.reference import Event

from .dbt_harness import failing_statement
from .state_assertions import assert_matches_reference

T0 = datetime(2026, 6, 1, 8, 0, tzinfo=UTC)
ARRIVAL = datetime(2026, 6, 2, tzinfo=UTC)
ENTITIES = [f"e-{number}" for number in range(1, 25)]  # more than the 16 buckets: some bucket holds several


def _batch(project, landed, ingested_minute, events):
    project.land_moves(landed, T0, ARRIVAL + timedelta(minutes=ingested_minute), events)


def _bucket_folder(project) -> Path:
    """The folder of the bucket holding the most entities."""
    table = f"{project.schema}.entity_state_current"
    location = project.table_location("entity_state_current")
    counts = project.query(f"select entity_bucket, count(*) as entities from {table} group by entity_bucket")
    fullest = max(counts, key=lambda row: row["entities"])
    assert fullest["entities"] >= 2
    return location / f"entity_bucket={fullest['entity_bucket']}"


def _lose_part_of(folder: Path) -> None:
    """As a kill during the delete of the folder: its rows split over two files, one of them gone."""
    rows = pq.read_table(folder)
    for path in folder.iterdir():
        path.unlink()
    half = rows.num_rows // 2
    pq.write_table(rows.slice(0, half), folder / "part-00000-kept.parquet")


def _lose_all_of(folder: Path) -> None:
    """As a kill between the delete of the folder and the rename of the new one."""
    shutil.rmtree(folder)


@pytest.mark.parametrize("lose", [_lose_part_of, _lose_all_of], ids=["part of its rows", "all of its rows"])
def test_a_bucket_that_lost_rows_is_rebuilt_by_a_plain_rerun(project, lose):
    landed: list[Event] = []
    _batch(project, landed, 1, [(entity, "A", 0) for entity in ENTITIES] + [(entity, "B", 4) for entity in ENTITIES])
    project.dbt("run")
    _batch(project, landed, 2, [(entity, "C", 6) for entity in ENTITIES[::2]] + [("e-2", "A", 8)])
    # the killed run: everything up to the current write, whose pre-hook recorded the write's intent
    with failing_statement(r"insert overwrite table \S*entity_state_current") as hits:
        project.dbt("run", expect_success=False)
    assert hits, "the failure was not injected"

    lose(_bucket_folder(project))
    project.execute(f"refresh table {project.schema}.entity_state_current")  # a new process would not cache files

    if lose is _lose_part_of:
        result = project.dbt("test", "-s", "assert_current_buckets_are_complete", expect_success=False)
        assert not result.success, "the data test did not notice the bucket's missing rows"
    project.dbt("run")
    assert_matches_reference(project, landed)
