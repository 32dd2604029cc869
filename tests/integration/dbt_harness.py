"""Drive the dbt project in-process, so one Spark session serves many dbt invocations."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from dbt.adapters.spark import session as spark_session_module
from dbt.cli.main import dbtRunner, dbtRunnerResult

from entity_state.landing import LANDED_SCHEMA

PROJECT_DIR = Path(__file__).resolve().parents[2]
STATE_MODELS = ("entity_state_segments", "entity_state_current")


class InjectedFailure(RuntimeError):
    """Raised in place of a SQL statement to simulate a failure at that point of a run."""


class DbtProject:
    """One schema and one landing folder, reset between tests; every dbt call runs in this process."""

    def __init__(self, home: Path, schema: str = "entity_state_test") -> None:
        self.home = home
        self.schema = schema
        self.landing = home / "landing"
        self.landing.mkdir(parents=True, exist_ok=True)
        os.environ.update(
            ENTITY_STATE_HOME=str(home),
            ENTITY_STATE_SCHEMA=schema,
            ENTITY_STATE_LANDING_DIR=str(self.landing),
            ENTITY_STATE_TARGET="local",
            DBT_PROFILES_DIR=str(PROJECT_DIR / "profiles"),
        )
        self._batch = 0

    def dbt(self, *args: str, expect_success: bool = True) -> dbtRunnerResult:
        cwd = os.getcwd()
        os.chdir(PROJECT_DIR)
        try:
            result = dbtRunner().invoke([*args, "--quiet", "--project-dir", str(PROJECT_DIR)])
        finally:
            os.chdir(cwd)
        if expect_success and not result.success:
            raise AssertionError(f"dbt {' '.join(args)} failed: {result.exception or _failures(result)}")
        return result

    def land(self, rows: list[dict[str, Any]], ingested_at: datetime) -> Path:
        """Write one batch file the way the loader does (typed Parquet, ingested_at stamped)."""
        self._batch += 1
        columns = {name: [row.get(name) for row in rows] for name in ("tenant_id", "entity_id", "state_id")}
        columns["event_time"] = [row["event_time"] for row in rows]
        columns["event_time_text"] = [row.get("event_time_text") for row in rows]
        columns["ingested_at"] = [ingested_at] * len(rows)
        path = self.landing / f"batch_{self._batch:05d}.parquet"
        pq.write_table(pa.table(columns, schema=LANDED_SCHEMA), path)
        return path

    def spark(self):
        from pyspark.sql import SparkSession

        # dbt has created the session already; getOrCreate hands back that one
        return SparkSession.builder.getOrCreate()

    def query(self, sql: str) -> list[dict[str, Any]]:
        return [row.asDict() for row in self.spark().sql(sql).collect()]

    def table_exists(self, name: str) -> bool:
        return self.spark().catalog.tableExists(f"{self.schema}.{name}")

    def reset(self) -> None:
        """Drop every table of the schema and empty the landing folder."""
        with suppress(RuntimeError):
            self.spark().sql(f"drop schema if exists {self.schema} cascade")
        shutil.rmtree(self.landing, ignore_errors=True)
        self.landing.mkdir(parents=True)
        self._batch = 0


def _failures(result: dbtRunnerResult) -> str:
    if result.result is None:
        return "no result"
    return "; ".join(f"{r.node.name if r.node else '?'}: {r.message}" for r in result.result if r.status != "success")


@contextmanager
def failing_statement(pattern: str) -> Iterator[list[str]]:
    """Make the first SQL statement matching `pattern` (a regex) raise instead of running."""
    original = spark_session_module.Cursor.execute
    hits: list[str] = []

    def execute(self, sql: str, *parameters: Any) -> None:
        if not hits and re.search(pattern, sql, flags=re.IGNORECASE | re.DOTALL):
            hits.append(sql)
            raise InjectedFailure(f"injected failure at: {sql[:120]}")
        return original(self, sql, *parameters)

    spark_session_module.Cursor.execute = execute
    try:
        yield hits
    finally:
        spark_session_module.Cursor.execute = original
