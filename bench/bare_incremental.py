"""The baseline of the benchmark: one incremental run written as directly as PySpark allows, with none of dbt.

It does the state work an incremental `dbt run` must do, on the same landed files, in two Delta tables of its own
(folders `segments` and `current` of its state folder, with deletion vectors on as the project's): read the window's
files, keep each distinct event once (its earliest arrival), seed each touched entity with its stored open stay, drop
the events older than what that stay has applied, walk seed and events into stays, merge every stay, closed and
open, into `segments` by key (tenant_id, entity_id, start_time, state_id; partitioned by is_open, as the project's)
and the open stays into `current` by entity, one Delta commit each. A first run (no state yet) writes both tables
instead. No quarantine, no batch counts, no run manifest, no repairs of late events, no change feed, no metadata
checks: what is left is what Spark and Delta need for the batch, which every run of the project is compared with
(bench/run.py, "ratio to bare Spark").

It runs inside the benchmark's kept-alive dbt worker (bench/dbt_worker.py, command `bare_incremental`), in the Spark
session dbt started, so both pay the same process and JVM; or in a new process (`bare-incremental`).
"""

from __future__ import annotations

import time
from pathlib import Path

KEY = ["tenant_id", "entity_id"]
STAY_KEY = [*KEY, "start_time", "state_id"]
# as the project's tables (dbt_project.yml); the change data feed is left off, as nothing here reads it
PROPERTIES = {"delta.enableDeletionVectors": "true"}


def apply(spark, files: list[str], state: Path) -> dict:
    """Apply the landed `files` to the state in folder `state`; returns the seconds it took (the benchmark reads what
    it wrote from the tables' Delta logs)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    started = time.perf_counter()
    segments_path, current_path = str(state / "segments"), str(state / "current")
    has_state = (state / "current" / "_delta_log").exists()

    events = (
        spark.read.parquet(*files)
        .select(
            *(F.trim(F.col(name)).alias(name) for name in ("tenant_id", "entity_id", "state_id")),
            "event_time",
            "ingested_at",
        )
        .where("tenant_id <> '' and entity_id <> '' and state_id <> '' and event_time is not null")
        .groupBy("tenant_id", "entity_id", "state_id", "event_time")
        .agg(F.min("ingested_at").alias("ingested_at"))
    )
    if has_state:
        # the touched entities' open stays
        seed = (
            spark.read.format("delta")
            .load(current_path)
            .join(events.select(*KEY).distinct(), KEY, "left_semi")
            .select(*KEY, "state_id", "start_time", "last_event_ts")
        )
        # an event older than what its entity's stored stay has applied is late: it does not move the state
        events = (
            events.join(seed.select(*KEY, "last_event_ts"), KEY, "left")
            .where("last_event_ts is null or event_time > last_event_ts")
            .drop("last_event_ts")
        )
        walk_input = events.withColumn("seed_start", F.lit(None).cast("timestamp")).unionByName(
            seed.select(
                *KEY,
                "state_id",
                F.col("last_event_ts").alias("event_time"),
                F.lit(None).cast("timestamp").alias("ingested_at"),
                F.col("start_time").alias("seed_start"),
            )
        )
    else:
        walk_input = events.withColumn("seed_start", F.lit(None).cast("timestamp"))

    order = Window.partitionBy(*KEY).orderBy(F.col("event_time"), F.col("ingested_at").asc_nulls_first(), "state_id")
    islands = (
        walk_input.withColumn("previous_state", F.lag("state_id").over(order))
        .withColumn("is_new_stay", F.coalesce(F.col("previous_state") != F.col("state_id"), F.lit(True)))
        .withColumn("stay", F.sum(F.col("is_new_stay").cast("int")).over(order))
    )
    stays = islands.groupBy(*KEY, "stay").agg(
        F.first("state_id").alias("state_id"),
        F.coalesce(F.min("seed_start"), F.min("event_time")).alias("start_time"),
        F.max("event_time").alias("last_event_ts"),
    )
    following = Window.partitionBy(*KEY).orderBy("stay")
    stays = (
        stays.withColumn("next_state_id", F.lead("state_id").over(following))
        .withColumn("end_time", F.lead("start_time").over(following))
        .select(*KEY, "state_id", "next_state_id", "start_time", "end_time", "last_event_ts")
        .withColumn("is_open", F.col("end_time").isNull())
        .localCheckpoint()  # one walk for both writes
    )
    open_stays = stays.where("is_open").select(*KEY, "state_id", "start_time", "last_event_ts")

    if not has_state:
        _create(stays.write.partitionBy("is_open"), segments_path)
        _create(open_stays.write, current_path)
    else:
        # the stored open stay a walk continued comes back with its key: updated (closed or grown); the rest are new
        stays.createOrReplaceTempView("bare_walked_stays")
        on = " and ".join(f"stored.{column} = walked.{column}" for column in STAY_KEY)
        spark.sql(
            f"merge into delta.`{segments_path}` as stored using bare_walked_stays as walked "
            f"on stored.is_open and {on} "
            "when matched then update set * when not matched then insert *"
        )
        open_stays.createOrReplaceTempView("bare_open_stays")
        on = " and ".join(f"stored.{column} = walked.{column}" for column in KEY)
        spark.sql(
            f"merge into delta.`{current_path}` as stored using bare_open_stays as walked on {on} "
            "when matched then update set * when not matched then insert *"
        )
    return {"seconds": time.perf_counter() - started}


def _create(writer, path: str) -> None:
    """A new Delta table at `path` from `writer`, with the project's table properties."""
    for key, value in PROPERTIES.items():
        writer = writer.option(key, value)
    writer.format("delta").mode("errorifexists").save(path)
