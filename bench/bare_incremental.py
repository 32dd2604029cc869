"""The baseline of the benchmark: one incremental run written as directly as PySpark allows, with none of dbt.

It does the work an incremental `dbt run` must do, on the same landed files, in its own parquet folders: read the
window's files, keep each distinct event once (its earliest arrival), seed each touched entity with its stored open
stay, drop the events older than what that stay has applied, walk seed and events into stays, append the closed
stays, and replace the current rows of the touched hash buckets (dynamic partition overwrite). No quarantine, no
batch counts, no watermarks, no crash safety, no metadata checks: what is left is what Spark itself needs for the
batch, which every run of the project is compared with (bench/run.py, "ratio to bare Spark").

It runs inside the benchmark's kept-alive dbt worker (bench/dbt_worker.py, command `bare_incremental`), in the Spark
session dbt started, so both pay the same process and JVM.
"""

from __future__ import annotations

import time
from pathlib import Path

KEY = ["tenant_id", "entity_id"]
BUCKETS = 16  # hash buckets of the current rows, replaced where the batch touched them


def apply(spark, files: list[str], state: Path) -> dict:
    """Apply the landed `files` to the state in folder `state`; returns the seconds it took (the benchmark reads what
    it wrote from the folder)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    started = time.perf_counter()
    current_path, segments_path = str(state / "current"), str(state / "segments")
    has_state = (state / "current").exists()

    landed = spark.read.parquet(*files)
    events = (
        landed.select(
            *(F.trim(F.col(name)).alias(name) for name in ("tenant_id", "entity_id", "state_id")),
            "event_time",
            "ingested_at",
        )
        .where("tenant_id <> '' and entity_id <> '' and state_id <> '' and event_time is not null")
        .groupBy("tenant_id", "entity_id", "state_id", "event_time")
        .agg(F.min("ingested_at").alias("ingested_at"))
        .withColumn("bucket", F.pmod(F.xxhash64(*KEY), F.lit(BUCKETS)))
    )
    if has_state:
        touched = [row.bucket for row in events.select("bucket").distinct().collect()]
        stored = spark.read.parquet(current_path).where(F.col("bucket").isin(touched))
        seed = stored.select(*KEY, "state_id", "start_time", "last_event_ts", "bucket")
        # an event older than what its entity's stored stay has applied is late: it does not move the state
        events = (
            events.join(seed.select(*KEY, "last_event_ts"), KEY, "left")
            .where("last_event_ts is null or event_time > last_event_ts")
            .drop("last_event_ts")
        )
        walk_input = events.select(
            *KEY, "state_id", "event_time", "ingested_at", F.lit(None).cast("timestamp").alias("seed_start"), "bucket"
        ).unionByName(
            seed.select(
                *KEY,
                "state_id",
                F.col("last_event_ts").alias("event_time"),
                F.lit(None).cast("timestamp").alias("ingested_at"),
                F.col("start_time").alias("seed_start"),
                "bucket",
            )
        )
    else:
        stored = None
        walk_input = events.withColumn("seed_start", F.lit(None).cast("timestamp"))

    order = Window.partitionBy(*KEY).orderBy(F.col("event_time"), F.col("ingested_at").asc_nulls_first(), "state_id")
    islands = (
        walk_input.withColumn("previous_state", F.lag("state_id").over(order))
        .withColumn("is_new_stay", F.coalesce(F.col("previous_state") != F.col("state_id"), F.lit(True)))
        .withColumn("stay", F.sum(F.col("is_new_stay").cast("int")).over(order))
    )
    stays = islands.groupBy(*KEY, "bucket", "stay").agg(
        F.first("state_id").alias("state_id"),
        F.coalesce(F.min("seed_start"), F.min("event_time")).alias("start_time"),
        F.max("event_time").alias("last_event_ts"),
    )
    following = Window.partitionBy(*KEY).orderBy("stay")
    stays = stays.withColumn("next_state_id", F.lead("state_id").over(following)).withColumn(
        "end_time", F.lead("start_time").over(following)
    )
    stays = stays.localCheckpoint()  # one walk for both writes

    closed = stays.where("end_time is not null").select(
        *KEY, "state_id", "next_state_id", "start_time", "end_time", "last_event_ts"
    )
    closed.write.mode("append").parquet(segments_path)
    open_stays = stays.where("end_time is null").select(*KEY, "state_id", "start_time", "last_event_ts", "bucket")
    if stored is not None:
        # the touched buckets' other entities keep their rows
        open_stays = open_stays.unionByName(
            stored.join(open_stays.select(*KEY), KEY, "left_anti").select(
                *KEY, "state_id", "start_time", "last_event_ts", "bucket"
            )
        ).localCheckpoint()
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    open_stays.write.mode("overwrite").partitionBy("bucket").parquet(current_path)
    return {"seconds": time.perf_counter() - started}
