"""What only a cluster shows: a run killed while the server writes, a worker (its executor) lost during a run, a
restart of every process, and a second Spark client reading what dbt wrote through the shared metastore.

The cluster is the one `make cluster-up` started (src/entity_state/cluster.py): PostgreSQL holding the Hive
metastore, a master, two workers, the Thrift Server. The tests marked `cluster_alone` stop or kill parts of it, so
`make test-cluster` runs them after the rest of the sample, in one process; they leave it whole again.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from entity_state import cluster
from tests.reference import Event

from .dbt_harness import CLUSTER_HOME, PROJECT_DIR, _cursor_execute_wrapped, thrift_connection
from .dbt_process import _data_files
from .state_assertions import assert_matches_reference
from .test_real_processes import FIRST_BATCH, SECOND_BATCH, ProcessProject, _assert_equals_reference

pytestmark = pytest.mark.cluster

T0 = datetime(2026, 6, 1, 7, 0, tzinfo=UTC)
ARRIVAL = datetime(2026, 6, 2, tzinfo=UTC)
SEGMENTS_WRITE = r"merge into \S*entity_state_segments\b"


@pytest.fixture
def settings(request: pytest.FixtureRequest) -> cluster.Settings:
    """The settings of the cluster the tests run on: its home is the one the pytest process started with, not the
    state home each DbtProject sets."""
    if request.config.getoption("--target") != "cluster":
        pytest.skip("needs the local cluster: --target cluster (make test-cluster)")
    return cluster.Settings.from_env({**os.environ, "ENTITY_STATE_HOME": str(CLUSTER_HOME)})


def _batch(project, landed: list[Event], ingested_minute: int, *moves: tuple[str, str, int]) -> None:
    project.land_moves(landed, T0, ARRIVAL + timedelta(minutes=ingested_minute), list(moves))


def test_a_run_killed_while_the_server_writes_is_repaired_by_a_plain_rerun(tmp_path, settings):
    """A dbt process on the cluster target is killed (SIGKILL) while the Thrift Server runs its segments write for a
    batch with a late event; the server outlives its client, and a plain rerun ends as an uninterrupted run would."""
    project = ProcessProject(tmp_path / "home")
    schema = f"entity_state_killed_{os.environ.get('PYTEST_XDIST_WORKER', 'gw0')}"
    # the cluster outlives a test session: a state this test left there before would have applied its batches
    # already, and the killed run would find nothing to write
    with closing(thrift_connection()) as connection:
        connection.cursor().execute(f"drop schema if exists {schema} cascade")
    project.env.update(
        ENTITY_STATE_TARGET="cluster",
        ENTITY_STATE_SCHEMA=schema,
        ENTITY_STATE_WAREHOUSE_DIR=str(settings.warehouse),
    )
    project.land(FIRST_BATCH, 1)
    batch_file, batch = project.write_batch(SECOND_BATCH, 2, tmp_path / "pending")
    killed = project.dbt(
        "--then-land",
        str(batch_file),
        "--then-kill-at",
        SEGMENTS_WRITE,
        "--then-kill-when",
        "mid-write",
        "run",
    )
    killed_at = project.home / "killed_at"
    assert killed.returncode == -signal.SIGKILL, (killed_at.exists() and killed_at.read_text(), killed.stderr[-4000:])
    assert killed_at.read_text() == "mid-write"
    project.landed += batch
    _assert_equals_reference(project.run_and_dump(), project.landed, repaired_batch=batch[0].ingested_at)


@contextmanager
def killing_worker_at(settings: cluster.Settings, pattern: str, worker: str = "worker-2") -> Iterator[list[str]]:
    """SIGKILL `worker` and its executor (its process group) during the first statement matching `pattern` (a write):
    once its tasks write a data file, else a second after it was sent, else once it finished, before the next statement.
    Yields a list that gets the moment of the kill; the worker is started again on leaving the block."""
    target = cluster.Component(worker, cluster.WORKER_CLASS, ())
    killed: list[str] = []

    def kill(location: Path, before: set[Path], finished: threading.Event) -> None:
        deadline = time.monotonic() + 1
        moment = "while the write ran, before its tasks wrote a data file"
        while time.monotonic() < deadline:
            # Delta's tasks write their data files into the table's folder; the commit comes after them
            if _data_files(location) - before:
                moment = "mid-write (tasks writing data files)"
                break
            if finished.is_set():
                moment = "after the write, before the next statement"
                break
            time.sleep(0.002)
        cluster.stop(settings, target, signal.SIGKILL)
        killed.append(moment)

    def wrap(original: Callable[..., Any]) -> Callable[..., Any]:
        def execute(self, sql: str, *parameters: Any, **keywords: Any) -> None:
            if killed or not re.search(pattern, sql, flags=re.IGNORECASE | re.DOTALL):
                return original(self, sql, *parameters, **keywords)
            written = re.search(r"(?:insert into table|merge into)\s+(\S+)", sql).group(1)
            schema, _, table = written.replace("`", "").rpartition(".")
            finished = threading.Event()
            location = settings.warehouse / f"{schema}.db" / table
            killer = threading.Thread(target=kill, args=(location, _data_files(location), finished))
            killer.start()
            try:
                return original(self, sql, *parameters, **keywords)
            finally:
                finished.set()
                killer.join()

        return execute

    try:
        with _cursor_execute_wrapped(wrap):
            yield killed
    finally:
        cluster.up(settings)  # starts the killed worker again; the Thrift Server then gets its executor back


@pytest.mark.cluster_alone
def test_a_worker_killed_during_a_run_loses_nothing(project, settings):
    """worker-2 and its executor die while the segments write of a batch with a late event runs. Spark either
    reschedules the lost tasks on worker-1 and the run succeeds, or the run fails and a plain rerun repairs it;
    either way the state equals the reference."""
    landed: list[Event] = []
    _batch(project, landed, 1, ("e-1", "A", 0), ("e-1", "B", 10), ("e-2", "X", 1), ("e-3", "P", 4))
    project.dbt("run")
    _batch(project, landed, 2, ("e-1", "C", 5), ("e-1", "B", 12), ("e-2", "Y", 6), ("e-3", "R", 2), ("e-4", "Q", 3))
    with killing_worker_at(settings, SEGMENTS_WRITE) as killed:
        result = project.dbt("run", expect_success=False)
        assert killed, "the worker was not killed: the segments write was never sent"
        assert cluster.running_pid(settings, cluster.component_named(settings, "worker-2")) is None
        assert _eventually(lambda: len(cluster.alive_workers(settings)) == 1), "the master still counts worker-2"
    print(f"worker killed {killed[0]}; the run {'succeeded' if result.success else 'failed, rerun'}")
    if not result.success:
        project.dbt("run")
    assert_matches_reference(project, landed)
    assert len(cluster.alive_workers(settings)) == 2


def _eventually(condition: Callable[[], bool], seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def _watermark(project, table: str) -> str:
    rows = project.query(f"select max(watermark_ingested_at) as watermark from {project.schema}.{table}")
    return str(rows[0]["watermark"])


@pytest.mark.cluster_alone
def test_the_state_outlives_a_restart_of_the_cluster_and_a_batch_job_reads_it(project, settings):
    """down, up: the metastore on PostgreSQL and the warehouse keep every table and watermark, and the next run
    continues from them (its late event is a repair, not a walk of everything again). A PySpark batch job of its
    own, on the same master and metastore but not through the Thrift Server, then reads what dbt wrote."""
    landed: list[Event] = []
    _batch(project, landed, 1, ("e-1", "A", 0), ("e-1", "B", 10), ("e-2", "X", 1))
    project.dbt("run")
    watermark = _watermark(project, "entity_state_segments")

    cluster.down(settings)
    assert not any(cluster.running_pid(settings, c) for c in cluster.components(settings))
    cluster.up(settings)

    assert _watermark(project, "entity_state_segments") == watermark
    _batch(project, landed, 2, ("e-1", "C", 5), ("e-2", "Y", 3))
    project.dbt("run")
    assert_matches_reference(project, landed)
    repaired = project.query(
        f"select count(*) as n from {project.schema}.entity_state_segments "
        "where repaired_through_ingested_at is not null"
    )
    assert repaired[0]["n"] > 0, "the late C was applied without a repair: the run after the restart began anew"

    seen = _batch_job(settings, project.schema)
    assert seen["master"] == settings.master_url
    assert {"entity_state_segments", "entity_state_current", "entity_state_view"} <= set(seen["tables"])
    through_thrift = [json.dumps(row, default=str) for row in project.query(VIEW_ROWS.format(schema=project.schema))]
    assert sorted(seen["view"]) == sorted(through_thrift)


# the view's columns that do not move with the clock (an open stay's end_time, duration_seconds and is_stale do)
VIEW_ROWS = (
    "select tenant_id, entity_id, state_id, next_state_id, start_time, last_event_ts, is_open, "
    "case when is_open then null else end_time end as end_time from {schema}.entity_state_view"
)
BATCH_JOB = f"""
import json, sys
from pyspark.sql import SparkSession

spark = SparkSession.builder.appName("entity_state_batch_job").enableHiveSupport().getOrCreate()
schema = sys.argv[1]
tables = [row.tableName for row in spark.sql(f"show tables in {{schema}}").collect()]
view = [json.dumps(row.asDict(), default=str) for row in spark.sql({VIEW_ROWS!r}.format(schema=schema)).collect()]
print(json.dumps({{"master": spark.sparkContext.master, "tables": tables, "view": view}}))
"""


def _batch_job(settings: cluster.Settings, schema: str) -> dict[str, Any]:
    """A PySpark script as a user's batch job: a driver of its own, configured by the cluster's conf folder alone
    (SPARK_CONF_DIR: the master, the metastore, the warehouse), with none of the project's variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DBT_", "ENTITY_STATE_", "PYSPARK_"))}
    done = subprocess.run(
        [sys.executable, "-c", BATCH_JOB, schema],
        cwd=PROJECT_DIR,
        env={**env, "SPARK_CONF_DIR": str(settings.conf_dir), "TZ": "UTC"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
