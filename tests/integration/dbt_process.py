"""Run dbt in a process of its own, for the tests that need a real process: SIGKILL at a chosen point of a run,
two runs at once. Each process boots its own JVM, so the state lives in its own ENTITY_STATE_HOME.
DBT_ARGS default to `run`; `--dump` writes the view, the segments table and the changes feed as JSON after dbt finishes
(after the first run, with `--then-land`).

    python -m tests.integration.dbt_process [--kill-at REGEX [--kill-when before|mid-write]] [--dump OUT.json]
        [--then-land BATCH.parquet [--then-kill-at REGEX [--then-kill-when before|mid-write]]] [DBT_ARGS...]

`--kill-at` sends SIGKILL to this process when dbt is about to execute the first statement matching REGEX
(`before`), or while that statement's Spark job is writing files (`mid-write`: as soon as a new data file shows up
under the target table's location, before Delta commits it). The point reached is written to
$ENTITY_STATE_HOME/killed_at before the kill.

`--then-land` moves a batch file into the landing folder once dbt succeeded (and the dump is written), and runs dbt
again in this process, killed as `--then-kill-at` says: one process both checks a rerun and is the next killed run,
so a chain of kill points starts one JVM per point instead of two.

With ENTITY_STATE_TARGET=cluster, dbt sends its statements to the Thrift Server: the kill is armed on that
connection's cursor, the new data files are watched for in the cluster's warehouse (ENTITY_STATE_WAREHOUSE_DIR, a
folder this machine sees), and the dump reads through the Thrift Server.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from dbt.adapters.spark import session as spark_session_module
from dbt.adapters.spark.connections import PyhiveConnectionWrapper
from dbt.cli.main import dbtRunner

PROJECT_DIR = Path(__file__).resolve().parents[2]


def _home() -> Path:
    return Path(os.environ["ENTITY_STATE_HOME"])


def _die(point: str) -> None:
    (_home() / "killed_at").write_text(point)
    os.kill(os.getpid(), signal.SIGKILL)


def _table_location(sql: str) -> Path | None:
    found = re.search(
        r"(?:insert (?:overwrite|into) table|create (?:or replace )?table|merge into)\s+(\S+)", sql, re.IGNORECASE
    )
    if not found:
        return None
    schema, _, table = found.group(1).replace("`", "").rpartition(".")
    warehouse = Path(os.environ.get("ENTITY_STATE_WAREHOUSE_DIR") or _home() / "warehouse")
    return warehouse / f"{schema}.db" / table


def _data_files(location: Path) -> set[Path]:
    """The table's data files: Delta writes them where they stay, and only its commit in _delta_log makes them part
    of the table."""
    if not location.exists():
        return set()
    return {path for path in location.rglob("*.parquet") if "_delta_log" not in path.parts}


def _watch_for_new_files(location: Path, before: set[Path], statement_done: threading.Event) -> None:
    while not statement_done.is_set():
        if _data_files(location) - before:
            _die("mid-write")
        time.sleep(0.002)


# the cursor whose `execute` sends dbt's statements on this process's target
CURSOR = PyhiveConnectionWrapper if os.environ.get("ENTITY_STATE_TARGET") == "cluster" else spark_session_module.Cursor
UNARMED_EXECUTE = CURSOR.execute


def _arm_kill(pattern: str, when: str) -> None:
    """Kill this process at the statement `pattern` matches; replaces a kill armed before."""
    original = UNARMED_EXECUTE

    def execute(self, sql: str, *parameters: Any) -> None:
        if not re.search(pattern, sql, flags=re.IGNORECASE | re.DOTALL):
            return original(self, sql, *parameters)
        if when == "before":
            _die("before")
        location = _table_location(sql)
        if location is None:
            raise SystemExit(f"--kill-when mid-write needs a write statement, got: {sql[:120]}")
        statement_done = threading.Event()
        # the files before the statement, listed before it is sent: a watcher started late under load would
        # otherwise count the statement's own files as there before
        before = _data_files(location)
        threading.Thread(target=_watch_for_new_files, args=(location, before, statement_done), daemon=True).start()
        try:
            return original(self, sql, *parameters)
        finally:
            statement_done.set()
            (_home() / "killed_at").write_text("missed: the write finished before a new data file was seen")

    CURSOR.execute = execute


def _dbt(args: list[str]) -> bool:
    os.chdir(PROJECT_DIR)
    return dbtRunner().invoke([*args, "--project-dir", str(PROJECT_DIR)]).success


def _dump(output: Path) -> None:
    schema = os.environ["ENTITY_STATE_SCHEMA"]
    tables = {}
    for name in ("entity_state_view", "entity_state_segments", "entity_state_changes"):
        rows = _select_all(f"{schema}.{name}")
        tables[name] = [{key: _jsonable(value) for key, value in row.items()} for row in rows]
    output.write_text(json.dumps(tables))


def _select_all(table: str) -> list[dict[str, Any]]:
    if CURSOR is PyhiveConnectionWrapper:
        from contextlib import closing

        from tests.integration.dbt_harness import thrift_connection

        with closing(thrift_connection()) as connection:
            cursor = connection.cursor()
            cursor.execute(f"select * from {table}")
            names = [column[0] for column in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.getOrCreate()  # the session dbt opened, with the profile's settings
    return [row.asDict() for row in spark.sql(f"select * from {table}").collect()]


def _jsonable(value: Any) -> Any:
    """A value of a row as JSON holds it: timestamps as ISO text, nested structs (segments' batch_counts) as dicts."""
    if hasattr(value, "asDict"):
        return {key: _jsonable(item) for key, item in value.asDict().items()}
    if isinstance(value, list | tuple):
        return [_jsonable(item) for item in value]
    return value.isoformat() if hasattr(value, "isoformat") else value


def _land(batch: Path) -> None:
    """Land a prepared batch file as the loader would: it appears whole in the landing folder, modified now."""
    landed = Path(os.environ["ENTITY_STATE_LANDING_DIR"]) / batch.name
    os.replace(batch, landed)
    os.utime(landed)


def main(argv: list[str]) -> int:
    options = {
        "--kill-at": None,
        "--kill-when": "before",
        "--dump": None,
        "--then-land": None,
        "--then-kill-at": None,
        "--then-kill-when": "before",
    }
    while argv[:1] and argv[0] in options:
        options[argv[0]], argv = argv[1], argv[2:]
    if options["--then-kill-at"] and not options["--then-land"]:
        raise SystemExit("--then-kill-at needs --then-land: it arms the kill for the run after the landing")
    dbt_args = argv or ["run"]
    if options["--kill-at"]:
        _arm_kill(options["--kill-at"], options["--kill-when"])
    success = _dbt(dbt_args)
    if options["--dump"]:
        _dump(Path(options["--dump"]))
    if success and options["--then-land"]:
        _land(Path(options["--then-land"]))
        if options["--then-kill-at"]:
            _arm_kill(options["--then-kill-at"], options["--then-kill-when"])
        else:
            CURSOR.execute = UNARMED_EXECUTE
        success = _dbt(dbt_args)
    return 0 if success else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
