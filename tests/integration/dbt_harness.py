"""Drive the dbt project in-process, on one of two targets.

`local`: Spark runs in this process, so one Spark session serves many dbt invocations and the tests read results
through it. `cluster`: dbt talks to a running Spark Thrift Server (`make cluster-up`), and the tests read results
and reset the schema through a thrift connection of their own, as any other client would.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager, suppress
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import yaml
from dbt.adapters.spark import session as spark_session_module
from dbt.adapters.spark.connections import PyhiveConnectionWrapper
from dbt.cli.main import dbtRunner, dbtRunnerResult

from entity_state.landing import LANDED_SCHEMA
from tests.reference import Event

PROJECT_DIR = Path(__file__).resolve().parents[2]
# the state home this pytest process started with, whose cluster/ folder `make cluster-up` filled: read before
# DbtProject points ENTITY_STATE_HOME at a test's own
CLUSTER_HOME = Path(os.environ.get("ENTITY_STATE_HOME", PROJECT_DIR / ".local")).resolve()
STATE_MODELS = ("entity_state_segments", "entity_state_current")
# `dbt build` with the data tests on the state but without the yml unit tests: those run the models' SQL on fixed
# inputs, never on the state, so a test about the state gains nothing from them, and they take about a third of a
# build here (12 of them, 10 s). test_dbt_build_runs_the_data_tests_on_the_state keeps the whole `dbt build`.
BUILD_ON_THE_STATE = ("build", "--exclude", "test_type:unit")
TARGETS = ("local", "cluster")
# where each target's dbt connection sends a SQL statement; failure injection replaces its `execute`
STATEMENT_CURSORS = {"local": spark_session_module.Cursor, "cluster": PyhiveConnectionWrapper}
# A user's own events table, with column names of its own, for the table input (macros/landing/events_input.sql)
EVENTS_TABLE_COLUMNS = {
    "tenant_id": "customer",
    "entity_id": "pallet",
    "state_id": "warehouse",
    "event_time": "seen_at",
    "event_time_text": "seen_at_text",
    "ingested_at": "arrived_at",
}


class InjectedFailure(RuntimeError):
    """Raised in place of a SQL statement to simulate a failure at that point of a run."""


class DbtProject:
    """One schema and one landing folder, reset between tests; every dbt call runs in this process."""

    def __init__(self, home: Path, target: str = "local", schema: str = "entity_state_test") -> None:
        if target not in TARGETS:
            raise ValueError(f"unknown target {target!r}; use one of {', '.join(TARGETS)}")
        self.home = home
        self.target = target
        self.schema = schema
        self.landing = home / "landing"
        self.landing.mkdir(parents=True, exist_ok=True)
        os.environ.update(
            ENTITY_STATE_HOME=str(home),
            ENTITY_STATE_SCHEMA=schema,
            ENTITY_STATE_LANDING_DIR=str(self.landing),
            ENTITY_STATE_TARGET=target,
            DBT_PROFILES_DIR=str(PROJECT_DIR / "profiles"),
        )
        self._batch = 0
        self.events_table: str | None = None
        self.settings: dict[str, Any] = {}
        # dbt threads for `run` and `build` (--threads); none: the profile's (1)
        self.threads: int | None = None

    @property
    def vars(self) -> dict[str, Any]:
        """The vars every dbt call of this project gets: `settings`, and the table input's when it is in use."""
        if self.events_table is None:
            return dict(self.settings)
        return {
            **self.settings,
            "entity_state__events_table": self.events_table,
            "entity_state__events_columns": EVENTS_TABLE_COLUMNS,
        }

    def use_events_table(self) -> str:
        """Read the events from a table of the user's own (columns named as in EVENTS_TABLE_COLUMNS) from now on;
        `land` inserts into it. Returns its name."""
        schema = f"{self.schema}_raw"
        self.events_table = f"{schema}.pallet_events"
        self.execute(f"create schema if not exists {schema}")
        columns = ", ".join(
            f"{column} {'timestamp' if name in ('event_time', 'ingested_at') else 'string'}"
            for name, column in EVENTS_TABLE_COLUMNS.items()
        )
        self.execute(f"create table {self.events_table} ({columns}) using parquet")
        return self.events_table

    def dbt(self, *args: str, expect_success: bool = True, write_artifacts: bool = False) -> dbtRunnerResult:
        """One dbt call in this process. It writes no manifest.json or run_results.json unless `write_artifacts`
        (a call that `dbt retry` follows needs them): the runner returns the results, and writing them cost about
        0.3 s of every call."""
        cwd = os.getcwd()
        os.chdir(PROJECT_DIR)
        if self.vars:
            args = _with_vars(args, self.vars)
        if self.threads is not None and args[0] in ("run", "build"):
            args = (*args, "--threads", str(self.threads))
        artifacts = [] if write_artifacts else ["--no-write-json"]
        try:
            result = dbtRunner().invoke([*args, "--quiet", *artifacts, "--project-dir", str(PROJECT_DIR)])
        finally:
            os.chdir(cwd)
        if expect_success and not result.success:
            raise AssertionError(f"dbt {' '.join(args)} failed: {result.exception or _failures(result)}")
        return result

    def land(self, rows: list[dict[str, Any]], ingested_at: datetime) -> Path | None:
        """Write one batch file the way the loader does (typed Parquet, ingested_at stamped), or insert the batch
        into the events table when the table input is in use."""
        if self.events_table is not None:
            self._insert_into_events_table(rows, ingested_at)
            return None
        self._batch += 1
        columns = {name: [row.get(name) for row in rows] for name in ("tenant_id", "entity_id", "state_id")}
        columns["event_time"] = [row["event_time"] for row in rows]
        columns["event_time_text"] = [row.get("event_time_text") for row in rows]
        columns["ingested_at"] = [ingested_at] * len(rows)
        path = self.landing / f"batch_{self._batch:05d}.parquet"
        pq.write_table(pa.table(columns, schema=LANDED_SCHEMA), path)
        return path

    def _insert_into_events_table(self, rows: list[dict[str, Any]], ingested_at: datetime) -> None:
        def literal(name: str, value: Any) -> str:
            if value is None:
                return "null"
            if name in ("event_time", "ingested_at"):
                return f"timestamp'{value.astimezone(UTC).strftime('%Y-%m-%d %H:%M:%S.%f')}'"
            return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"

        rows = [{**row, "ingested_at": ingested_at} for row in rows]
        values = ", ".join(
            "(" + ", ".join(literal(name, row.get(name)) for name in EVENTS_TABLE_COLUMNS) + ")" for row in rows
        )
        self.execute(f"insert into {self.events_table} ({', '.join(EVENTS_TABLE_COLUMNS.values())}) values {values}")

    def land_moves(
        self, landed: list[Event], first_event_at: datetime, ingested_at: datetime, moves: list[tuple[str, str, int]]
    ) -> None:
        """Land one batch of (entity, state, minute) events of tenant 'acme', minutes counted from first_event_at,
        and add them to `landed`, the events the test compares the state with."""
        rows = [
            dict(tenant_id="acme", entity_id=entity, state_id=state, event_time=first_event_at + timedelta(minutes=m))
            for entity, state, m in moves
        ]
        self.land(rows, ingested_at)
        landed += [Event("acme", r["entity_id"], r["state_id"], r["event_time"], ingested_at) for r in rows]

    def table_location(self, table: str) -> Path:
        """The folder of one of the schema's tables, as the metastore records it."""
        rows = self.query(f"describe formatted {self.schema}.{table}")
        return Path(re.sub(r"^file:", "", next(row["data_type"] for row in rows if row["col_name"] == "Location")))

    def query(self, sql: str) -> list[dict[str, Any]]:
        if self.target == "local":
            return [row.asDict() for row in _spark().sql(sql).collect()]
        with closing(thrift_connection()) as connection:
            cursor = connection.cursor()
            cursor.execute(sql)
            types = [(column[0], column[1]) for column in cursor.description]
            return [
                {name: _from_thrift(value, kind) for (name, kind), value in zip(types, row, strict=True)}
                for row in cursor.fetchall()
            ]

    def execute(self, sql: str) -> None:
        """Run one statement that returns nothing (DDL, insert)."""
        if self.target == "local":
            _spark().sql(sql)
            return
        with closing(thrift_connection()) as connection:
            connection.cursor().execute(sql)

    def table_exists(self, name: str) -> bool:
        """Whether the schema holds the table; false too before dbt first created the schema."""
        if not self.query(f"show schemas like '{self.schema}'"):
            return False
        return bool(self.query(f"show tables in {self.schema} like '{name}'"))

    def reset(self) -> None:
        """Drop every table of the schema and empty the landing folder."""
        for schema in (self.schema, f"{self.schema}_raw"):
            with suppress(RuntimeError):
                self.execute(f"drop schema if exists {schema} cascade")
        self.events_table = None
        self.settings = {}
        self.threads = None
        shutil.rmtree(self.landing, ignore_errors=True)
        self.landing.mkdir(parents=True)
        self._batch = 0


def _with_vars(args: tuple[str, ...], defaults: dict[str, Any]) -> tuple[str, ...]:
    """args with `--vars` set to `defaults` updated by the vars args already gives (dbt takes one --vars only)."""
    if "--vars" not in args:
        return (*args, "--vars", json.dumps(defaults))
    at = args.index("--vars")
    given = yaml.safe_load(args[at + 1])
    return (*args[:at], "--vars", json.dumps({**defaults, **given}), *args[at + 2 :])


def _failures(result: dbtRunnerResult) -> str:
    if result.result is None:
        return "no result"
    return "; ".join(f"{r.node.name if r.node else '?'}: {r.message}" for r in result.result if r.status != "success")


def thrift_connection():
    """A new session on the Thrift Server of the `cluster` profile, per statement: a long-lived session would keep
    its own cache of table listings and could miss what dbt's sessions wrote since."""
    from pyhive import hive

    return hive.connect(
        host=os.environ.get("ENTITY_STATE_THRIFT_HOST", "127.0.0.1"),
        port=int(os.environ.get("ENTITY_STATE_THRIFT_PORT", "10001")),
        username=os.environ.get("ENTITY_STATE_THRIFT_USER", "entity_state"),
    )


def _spark():
    from pyspark.sql import SparkSession

    # dbt has created the session already; getOrCreate hands back that one
    return SparkSession.builder.getOrCreate()


def _from_thrift(value: Any, kind: str) -> Any:
    """Values as the in-process session returns them. PyHive already makes timestamps naive datetimes (UTC here);
    dates and arrays come as text."""
    if value is None:
        return None
    if kind == "DATE_TYPE":
        return date.fromisoformat(value)
    if kind == "ARRAY_TYPE":
        return json.loads(value)
    return value


@contextmanager
def _cursor_execute_wrapped(wrap: Callable[[Callable[..., Any]], Callable[..., Any]]) -> Iterator[None]:
    """Replace `execute` of the cursor of the target the tests run on (ENTITY_STATE_TARGET, set by DbtProject) with
    `wrap(original execute)` while the block runs."""
    cursor_class = STATEMENT_CURSORS[os.environ.get("ENTITY_STATE_TARGET", "local")]
    original = cursor_class.execute
    cursor_class.execute = wrap(original)
    try:
        yield
    finally:
        cursor_class.execute = original


@contextmanager
def failing_statement(pattern: str) -> Iterator[list[str]]:
    """Make the first SQL statement matching `pattern` (a regex) raise instead of running."""
    hits: list[str] = []

    def wrap(original: Callable[..., Any]) -> Callable[..., Any]:
        def execute(self, sql: str, *parameters: Any, **keywords: Any) -> None:
            if not hits and re.search(pattern, sql, flags=re.IGNORECASE | re.DOTALL):
                hits.append(sql)
                raise InjectedFailure(f"injected failure at: {sql[:120]}")
            return original(self, sql, *parameters, **keywords)

        return execute

    with _cursor_execute_wrapped(wrap):
        yield hits


@contextmanager
def statements_sent() -> Iterator[list[str]]:
    """Record every SQL statement dbt sends while the block runs, in order."""
    sent: list[str] = []

    def wrap(original: Callable[..., Any]) -> Callable[..., Any]:
        def execute(self, sql: str, *parameters: Any, **keywords: Any) -> None:
            sent.append(sql)
            return original(self, sql, *parameters, **keywords)

        return execute

    with _cursor_execute_wrapped(wrap):
        yield sent


@contextmanager
def partitions_fetched_by_statement() -> Iterator[list[tuple[str, int]]]:
    """Count, for each SQL statement dbt sends while the block runs, the table partitions the in-process Spark
    fetched from the metastore for it: a statement lists the partitions its filters keep, so one that scans a whole
    partitioned table shows here with all of them. Spark plans lazily, so a statement's count covers both sending
    it and reading its rows. Yields the (statement, partitions) pairs with a count above 0. Local target only: on
    the cluster the count lives in the Thrift Server's JVM."""
    if os.environ.get("ENTITY_STATE_TARGET", "local") != "local":
        raise RuntimeError("partitions_fetched_by_statement counts the in-process Spark's metastore reads: local only")
    cursor_class = spark_session_module.Cursor
    original_execute, original_fetchall = cursor_class.execute, cursor_class.fetchall
    fetched: list[tuple[str, int]] = []

    def count() -> int:
        return _spark()._jvm.org.apache.spark.metrics.source.HiveCatalogMetrics.METRIC_PARTITIONS_FETCHED().getCount()

    def record(sql: str, before: int) -> None:
        if (partitions := count() - before) > 0:
            fetched.append((sql, partitions))

    def execute(self, sql: str, *parameters: Any, **keywords: Any) -> None:
        before = count()
        try:
            return original_execute(self, sql, *parameters, **keywords)
        finally:
            self.counted_sql = sql
            record(sql, before)

    def fetchall(self) -> Any:
        before = count()
        try:
            return original_fetchall(self)
        finally:
            record(getattr(self, "counted_sql", "?"), before)

    cursor_class.execute, cursor_class.fetchall = execute, fetchall
    try:
        yield fetched
    finally:
        cursor_class.execute, cursor_class.fetchall = original_execute, original_fetchall
