"""The Spark jobs, stages and tasks behind each SQL statement of one `dbt run`, with the statement's time.

A statement's time on a small batch is mostly the fixed cost of each Spark job and stage it starts, not rows, so
their number shows where a run's queries plan the same input again. Builds a state (`--history` events), takes one
untimed run after a `--batch`-event batch to warm the process up, then lands another batch and reports the statements
of that run, costliest first. dbt runs in this process, as in a kept-alive scheduler. Run it from a project folder:
`.venv/bin/python bench/spark_jobs.py --out DIR`.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from run import KEPT_ALIVE, NOISE, PROJECT_DIR, Workspace

from entity_state.generate import EventStream, StreamConfig


@dataclass
class Statement:
    sql: str
    seconds: float
    jobs: int
    stages: int
    tasks: int


def _status_tracker():
    from pyspark.sql import SparkSession

    return SparkSession.builder.getOrCreate().sparkContext.statusTracker()


def record_statements(recorded: list[Statement]) -> None:
    """Record every statement dbt sends through its in-process cursor: a query's job runs while its rows are
    fetched, a command's (a write, DDL) when it is sent, so both calls count."""
    from dbt.adapters.spark import session as spark_session

    cursor = spark_session.Cursor
    original_execute, original_fetchall = cursor.execute, cursor.fetchall
    # dbt starts the Spark session in its first statement: asking for one before would start it without dbt's
    # settings, and nothing has run before it anyway
    session = {"started": False}

    def job_ids() -> set[int]:
        return set(_status_tracker().getJobIdsForGroup(None)) if session["started"] else set()

    def finish(pending: tuple[str, float, set[int]], more_seconds: float) -> None:
        sql, seconds, jobs_before = pending
        session["started"] = True
        tracker = _status_tracker()
        jobs = [tracker.getJobInfo(job) for job in sorted(job_ids() - jobs_before)]
        # with adaptive execution each query stage is a job of its own, whose stage list repeats the stages it
        # follows (skipped: they ran in an earlier job); only the stages that ran tasks count
        stage_ids = {stage for job in jobs if job for stage in job.stageIds}
        ran = [info for info in map(tracker.getStageInfo, stage_ids) if info and info.numCompletedTasks]
        tasks = sum(info.numCompletedTasks for info in ran)
        recorded.append(Statement(sql, seconds + more_seconds, len(jobs), len(ran), tasks))

    def execute(self, sql: str, *parameters):
        before, started = job_ids(), time.perf_counter()
        try:
            return original_execute(self, sql, *parameters)
        finally:
            text = re.sub(r"\s+", " ", re.sub(r"/\*.*?\*/", "", sql, flags=re.DOTALL)).strip()
            self.pending_statement = (text, time.perf_counter() - started, before)
            if not re.match(r"(select|with|show|describe)\b", text, flags=re.IGNORECASE):
                finish(self.pending_statement, 0.0)
                self.pending_statement = None

    def fetchall(self):
        started = time.perf_counter()
        try:
            return original_fetchall(self)
        finally:
            if getattr(self, "pending_statement", None):
                finish(self.pending_statement, time.perf_counter() - started)
                self.pending_statement = None

    cursor.execute, cursor.fetchall = execute, fetchall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--history", type=int, default=20_000)
    parser.add_argument("--entities", type=int, default=2_000)
    parser.add_argument("--batch", type=int, default=1_000)
    parser.add_argument("--top", type=int, default=12, help="statements listed, costliest first")
    parser.add_argument("--selector", help="the measured run's selector (selectors.yml), e.g. state; default all")
    args = parser.parse_args()
    workspace = Workspace(args.out.resolve(), "spark_jobs")
    os.environ.update(workspace.env, **{KEPT_ALIVE: "true"})
    os.chdir(PROJECT_DIR)
    from dbt.cli.main import dbtRunner

    def dbt_run(*selection: str) -> float:
        arguments, _ = workspace.dbt_args("run", "--quiet", *selection)
        started = time.perf_counter()
        result = dbtRunner().invoke(arguments)
        if not result.success:
            raise RuntimeError(f"dbt run failed: {result.exception or result.result}")
        return time.perf_counter() - started

    stream = EventStream(StreamConfig(entities=args.entities, **NOISE))
    workspace.land(stream, args.history, "history")
    dbt_run()
    workspace.land(stream, args.batch, "batch", args.batch)
    dbt_run()
    recorded: list[Statement] = []
    record_statements(recorded)
    workspace.land(stream, args.batch, "batch", args.batch)
    seconds = dbt_run(*(["--selector", args.selector] if args.selector else []))
    print(
        f"{args.batch:,}-event batch on {args.history:,} events: dbt run {seconds:.1f} s, {len(recorded)} statements "
        f"{sum(s.seconds for s in recorded):.1f} s, {sum(s.jobs for s in recorded)} Spark jobs, "
        f"{sum(s.stages for s in recorded)} stages, {sum(s.tasks for s in recorded)} tasks"
    )
    print(f"{'seconds':>8} {'jobs':>5} {'stages':>6} {'tasks':>6}  statement")
    for statement in sorted(recorded, key=lambda s: -s.seconds)[: args.top]:
        counts = f"{statement.jobs:5d} {statement.stages:6d} {statement.tasks:6d}"
        print(f"{statement.seconds:8.2f} {counts}  {statement.sql[:90]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
