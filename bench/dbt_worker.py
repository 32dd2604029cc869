"""Child processes of the benchmark, so that each one's memory (with its JVM) can be measured on its own.

`serve`: a long-lived dbt, in-process (`dbtRunner`), answering one JSON command per line on stdin. Its Spark session
is started once by a warm-up, so a timed `dbt run` costs what a scheduler keeping dbt alive would pay: parse, hooks,
metadata queries and the models, but no JVM start.

`serve` also runs the benchmark's baseline job (bench/bare_incremental.py) in that session, on request, and exports
query results as parquet for the benchmark's checks (`export`).

`bare`: a fresh SparkSession with the profile's settings that replays SQL statements dbt ran, to separate the cost
of the queries from the cost of dbt around them.

`bare-incremental`: the baseline job in a fresh SparkSession with the same settings, as a scheduler would start it:
the bare counterpart of a `dbt run` as a new process.

`export`: query results as parquet, in a fresh SparkSession (for the checks made when no worker is alive).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from entity_state.cluster import SQL_SETTINGS
from entity_state.jars import DELTA_ARTIFACTS, spark_jars
from entity_state.paths import driver_archive

PROJECT_DIR = Path(__file__).resolve().parents[1]
# the JVM options the local profile adds for a driver that runs dbt once (profiles/profiles.yml): the bare replay is a
# new process, as the CLI run it replays, and its driver starts as that run's did (with the class archive too)
ONE_RUN_COMPILER = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"


def serve() -> None:
    # answers go to the real stdout; dbt's console output and Spark's go to stderr
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    os.chdir(PROJECT_DIR)
    from dbt.cli.main import dbtRunner

    for line in sys.stdin:
        command = json.loads(line)
        if command["cmd"] == "quit":
            break
        if command["cmd"] == "bare_incremental":
            # the baseline job (bench/bare_incremental.py), in the session dbt opened
            from pyspark.sql import SparkSession

            sys.path.insert(0, str(PROJECT_DIR / "bench"))
            from bare_incremental import apply

            outcome = apply(SparkSession.builder.getOrCreate(), command["files"], Path(command["state"]))
            answers.write(json.dumps({"success": True, **outcome}) + "\n")
            continue
        if command["cmd"] == "export":
            # queries of the harness itself (not timed), in the session dbt opened
            from pyspark.sql import SparkSession

            _export(SparkSession.builder.getOrCreate(), command["queries"], command["folder"])
            answers.write(json.dumps({"success": True}) + "\n")
            continue
        started = time.perf_counter()
        result = dbtRunner().invoke(command["args"])
        answers.write(
            json.dumps(
                {
                    "seconds": time.perf_counter() - started,
                    "success": bool(result.success),
                    "error": None if result.success else str(result.exception or result.result),
                }
            )
            + "\n"
        )


def bare(statements_file: str) -> None:
    """Replay statements in a fresh session; prints session start time and each statement's time as JSON."""
    started = time.perf_counter()
    spark = _bare_session()
    session_seconds = time.perf_counter() - started
    timings = []
    for statement in json.loads(Path(statements_file).read_text()):
        began = time.perf_counter()
        spark.sql(statement["sql"]).collect()
        timings.append({"kind": statement["kind"], "seconds": time.perf_counter() - began})
    spark.stop()
    print(json.dumps({"session_seconds": session_seconds, "statements": timings}))


def bare_incremental(files_file: str, state: str) -> None:
    """The baseline job on the files listed in `files_file` (JSON), in a fresh session; prints its seconds and the
    session's start as JSON."""
    started = time.perf_counter()
    spark = _bare_session()
    session_seconds = time.perf_counter() - started
    sys.path.insert(0, str(PROJECT_DIR / "bench"))
    from bare_incremental import apply

    outcome = apply(spark, json.loads(Path(files_file).read_text()), Path(state))
    spark.stop()
    print(json.dumps({"session_seconds": session_seconds, **outcome}))


def export(request_file: str) -> None:
    """The queries of `request_file` (JSON: queries, folder) in a fresh session, as `serve`'s `export`."""
    request = json.loads(Path(request_file).read_text())
    spark = _bare_session()
    _export(spark, request["queries"], request["folder"])
    spark.stop()
    print(json.dumps({"success": True}))


def _export(spark, queries: dict[str, str], folder: str) -> None:
    """Each query's rows as parquet files in `folder`/name."""
    for name, query in queries.items():
        spark.sql(query).coalesce(1).write.mode("overwrite").parquet(f"{folder}/{name}")


def _bare_session():
    """A SparkSession with the local profile's settings, its driver started as a `dbt` command's."""
    from pyspark.sql import SparkSession

    home = os.environ["ENTITY_STATE_HOME"]
    archive = driver_archive()  # as the profile starts the driver (Java ignores a missing file)
    class_archive = f"-XX:SharedArchiveFile={archive}" if archive else ""
    builder = SparkSession.builder.master("local[2]").appName("entity_state_bare").enableHiveSupport()
    settings = {
        "spark.ui.enabled": "false",
        "spark.driver.memory": os.environ.get("ENTITY_STATE_DRIVER_MEMORY", "2g"),
        "spark.sql.warehouse.dir": f"{home}/warehouse",
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={home}/metastore -Duser.timezone=UTC "
        f"-Dlog4j2.configurationFile={PROJECT_DIR}/profiles/log4j2.properties "
        f"-Dentity_state.spark_log={home}/logs/spark.log {ONE_RUN_COMPILER} {class_archive}",
        "spark.ui.showConsoleProgress": "false",
        "spark.jars": spark_jars(artifacts=DELTA_ARTIFACTS),
        **SQL_SETTINGS,
    }
    for key, value in settings.items():
        builder = builder.config(key, value)
    os.chdir(PROJECT_DIR)
    return builder.getOrCreate()


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve()
    elif sys.argv[1] == "bare-incremental":
        bare_incremental(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "export":
        export(sys.argv[2])
    else:
        bare(sys.argv[2])
