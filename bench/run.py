"""Benchmark: incremental cost against history, full recompute, the ClickHouse pattern, fixed cost and memory.

`make bench-quick` (minutes) and `make bench` (the full sizes). Results: a table on stdout, `results.json` and
`results.png` in the output folder. Wall times are medians of several runs measured within one benchmark run, so
their ratios hold even on a machine shared with other work; absolute numbers do not.

Repetitions of an incremental run apply consecutive batches of the same shape (same size, same number of touched
entities) in one long-lived dbt process, rather than restoring a copy of the warehouse before each: the history then
grows by a few percent between repetitions, which is small next to the steps between history sizes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psutil
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from entity_state.generate import EventStream, StreamConfig, batch_file_name, state_name
from entity_state.landing import LANDED_SCHEMA, write_atomically

PROJECT_DIR = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
SCHEMA = "entity_state_bench"
# the profile starts the in-process driver with the JVM compiler for one dbt invocation unless this says "true"
KEPT_ALIVE = "ENTITY_STATE_DRIVER_KEPT_ALIVE"
DRIVER_ARCHIVE = "ENTITY_STATE_DRIVER_ARCHIVE"
STATE_MODELS = ("entity_state_segments", "entity_state_current")
# the current state: one row per entity, merged by entity from segments' open stays
CURRENT = "entity_state_current"
# the time-in-state table: its own column, to show what it adds to a run and that it follows the batch (the view
# entity_state_daily over it costs a run nothing once created)
DAILY_MODEL = "entity_state_daily_counted"
# what the ratio goals time, "state run" in the rows: the state path (selectors.yml `state`: the manifest, segments,
# current, the quarantine, the batch counts, the view), as a frequent schedule runs it
STATE_RUN = ("run", "--selector", "state")
# the two tables that follow the stays from their own progress, timed in rows of their own after each state run
FOLLOWERS_RUN = ("run", "--select", "entity_state_changes", DAILY_MODEL)

SIZES = {
    # only checks that the harness runs end to end; its figures mean nothing
    "smoke": {
        "entities": 1_000,
        "histories": [2_000, 4_000],
        "history_file": 2_000,
        "batch": 500,
        "batch_entities": 100,
        "small_batch": 100,
        "reps": 1,
        "refresh_reps": 1,
        "fixed_reps": 1,
        "fixed_history": 1_000,
        "skew_events": 1_000,
        "history_files": 50,
        "file_events": 20,
        "daily_histories": [2_000, 4_000],
        "daily_tick_seconds": 60,
        "late_history": 4_000,
        "heavy_entity_events": 500,
        "long_history": 8_000,
    },
    "quick": {
        "entities": 20_000,
        "histories": [100_000, 400_000],
        "history_file": 200_000,
        "batch": 20_000,
        "batch_entities": 2_000,
        "small_batch": 1_000,
        "reps": 3,
        "refresh_reps": 1,
        "fixed_reps": 2,
        "fixed_history": 20_000,
        "skew_events": 100_000,
        "history_files": 2_000,
        "file_events": 20,
        "daily_histories": [100_000, 400_000],
        "daily_tick_seconds": 10,
        "late_history": 400_000,
        "heavy_entity_events": 10_000,
        "long_history": 1_000_000,
    },
    "full": {
        "entities": 200_000,
        # at the 9-17k events/s measured here, building 20M events alone would use most of the 30-minute budget
        "histories": [1_000_000, 2_000_000, 5_000_000],
        "history_file": 2_000_000,
        "batch": 100_000,
        "batch_entities": 10_000,
        "small_batch": 1_000,
        "reps": 3,
        "refresh_reps": 1,
        "fixed_reps": 2,
        "fixed_history": 20_000,
        "skew_events": 1_000_000,
        "history_files": 10_000,
        "file_events": 20,
        "daily_histories": [1_000_000, 5_000_000],
        "daily_tick_seconds": 1,
        "late_history": 5_000_000,
        "heavy_entity_events": 100_000,
        # built by one first run, not batch by batch (the section "long")
        "long_history": 20_000_000,
    },
}
SECTIONS = ("history", "fixed", "skew", "files", "daily", "late", "long")
# realistic noise in every stream: 1% exact duplicates, 10% of rows out of order within their batch
NOISE = {"duplicate_share": 0.01, "disorder": 0.1}


@dataclass
class Measurement:
    seconds: float
    peak_rss: int
    phases: dict[str, float] = field(default_factory=dict)
    models: dict[str, float] = field(default_factory=dict)
    # bytes of data files each Delta table's commits during the run added, and its current version holds after the
    # run (point 4 of the performance issue: writes that follow the batch); see delta_tables
    written: dict[str, int] = field(default_factory=dict)
    stored: dict[str, int] = field(default_factory=dict)


class TreeMemory:
    """Peak resident memory of a process and all its children (the JVM), sampled every 50 ms."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> TreeMemory:
        self._thread.start()
        return self

    def __exit__(self, *_) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while not self._stop.is_set():
            try:
                root = psutil.Process(self.pid)
                total = sum(_rss(p) for p in [root, *root.children(recursive=True)])
            except psutil.NoSuchProcess:
                return
            self.peak = max(self.peak, total)
            self._stop.wait(0.05)


def _rss(process: psutil.Process) -> int:
    try:
        return process.memory_info().rss
    except psutil.NoSuchProcess:
        return 0


class Workspace:
    """One warehouse, metastore and landing folder under the benchmark output, and the env dbt runs with."""

    def __init__(self, root: Path, name: str) -> None:
        self.home = root / name
        shutil.rmtree(self.home, ignore_errors=True)
        self.landing = self.home / "landing"
        self.landing.mkdir(parents=True)
        self.runs = 0
        self.files: list[dict] = []  # every landed file in order, with its role, for the chDB replay
        self.env = {
            **os.environ,
            "ENTITY_STATE_HOME": str(self.home),
            "ENTITY_STATE_LANDING_DIR": str(self.landing),
            "ENTITY_STATE_SCHEMA": SCHEMA,
            "ENTITY_STATE_TARGET": "local",
            "ENTITY_STATE_DRIVER_MEMORY": os.environ.get("ENTITY_STATE_DRIVER_MEMORY", "4g"),
            "DBT_PROFILES_DIR": str(PROJECT_DIR / "profiles"),
            "DBT_TARGET_PATH": str(self.home / "target"),
            "TZ": "UTC",
        }

    def land(
        self, stream: EventStream, events: int, role: str, touched: int | None = None, backdate: bool = False
    ) -> int:
        """Land the stream's next batch; `backdate` sets the file's modification time to its ingested_at, as for a
        file that really landed then (a history built in minutes that stands for months of runs)."""
        return self._write(stream.next_batch(events, touched), stream, role, backdate)

    def land_table(self, table: pa.Table, stream: EventStream, role: str, backdate: bool = False) -> int:
        """Land rows built outside the stream (named after the stream's batch count, which then moves on)."""
        stream.batches += 1
        return self._write(table, stream, role, backdate)

    def _write(self, table: pa.Table, stream: EventStream, role: str, backdate: bool) -> int:
        path = write_atomically(table, self.landing / batch_file_name(table, stream.config, stream.batches))
        if backdate:
            stamp = table.column("ingested_at")[0].as_py().timestamp()
            os.utime(path, (stamp, stamp))
        self.files.append({"path": str(path), "role": role, "events": table.num_rows})
        return table.num_rows

    def dbt_args(self, *args: str) -> tuple[list[str], Path]:
        self.runs += 1
        logs = self.home / "logs" / f"{self.runs:03d}"
        return [*args, "--log-format-file", "json", "--log-level-file", "debug", "--log-path", str(logs)], logs

    def table(self, name: str) -> Path:
        """The folder of dbt's table `name` in the warehouse (Delta: its data files and its `_delta_log`)."""
        return self.home / "warehouse" / f"{SCHEMA}.db" / name

    def snapshot(self, name: str) -> Path:
        copy = self.home.parent / f"{self.home.name}.{name}"
        shutil.rmtree(copy, ignore_errors=True)
        for part in ("warehouse", "metastore", "landing"):
            shutil.copytree(self.home / part, copy / part)
        return copy

    def restore(self, copy: Path) -> None:
        for part in ("warehouse", "metastore", "landing"):
            shutil.rmtree(self.home / part)
            shutil.copytree(copy / part, self.home / part)


def delta_tables(root: Path, since: float) -> tuple[dict[str, int], dict[str, int]]:
    """Bytes of data files per Delta table under a warehouse or state folder `root` (a table is the folder of a
    `_delta_log`): those the table's commits at or after `since` (a time.time()) added, and those its current
    version holds. Read from each table's log, which needs no Spark session (runs in other processes are measured
    too), and gives what Spark would: a commit's new files are its `numTargetBytesAdded` in `describe history` for a
    merge (`numOutputBytes` for a write), the live files `sizeInBytes` in `describe detail`. A file a commit only marks
    rows of deleted (a deletion vector) comes again in the log with the same path: it is not new bytes. The files
    deletion vectors are kept in (a few bytes per marked file) are not counted, as Delta's metrics leave them out."""
    written: dict[str, int] = {}
    stored: dict[str, int] = {}
    for log in root.rglob("_delta_log"):
        table = log.parent.name
        live: dict[str, int] = {}
        seen: set[str] = set()
        added = 0
        # every commit's JSON file stays (checkpoints come beside them; their cleanup keeps 30 days)
        for commit in sorted(log.glob("[0-9]*.json")):
            actions = [json.loads(line) for line in commit.read_text().splitlines() if line.strip()]
            committed_at = next(a["commitInfo"]["timestamp"] for a in actions if "commitInfo" in a) / 1000
            for action in actions:
                if "remove" in action:
                    live.pop(action["remove"]["path"], None)
            for action in actions:
                if "add" in action:
                    path, size = action["add"]["path"], action["add"]["size"]
                    live[path] = size
                    if path not in seen and committed_at >= since:
                        added += size
                    seen.add(path)
        written[table], stored[table] = added, sum(live.values())
    return written, stored


class InProcessDbt:
    """A long-lived `dbtRunner` in a child process (bench/dbt_worker.py serve), warmed up before timing."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.stderr = open(workspace.home / "worker.log", "ab")  # noqa: SIM115 (closed in close())
        self.process = subprocess.Popen(
            [PYTHON, str(PROJECT_DIR / "bench" / "dbt_worker.py"), "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            # what README tells a scheduler that keeps dbt alive to set
            env={**workspace.env, KEPT_ALIVE: "true"},
            text=True,
            cwd=PROJECT_DIR,
        )
        # starts the JVM and parses the project: what a kept-alive scheduler pays once
        self.warm_up = self.invoke("run-operation", "create_landing_table", starts_spark=True)

    def invoke(self, *args: str, starts_spark: bool = False) -> Measurement:
        arguments, logs = self.workspace.dbt_args(*args)
        started = time.time()
        with TreeMemory(self.process.pid) as memory:
            self.process.stdin.write(json.dumps({"cmd": "dbt", "args": arguments}) + "\n")
            self.process.stdin.flush()
            answer = json.loads(self.process.stdout.readline() or "null")
        if not answer or not answer["success"]:
            raise RuntimeError(f"dbt {' '.join(args)} failed: {answer and answer['error']}; see {logs}")
        return _measurement(answer["seconds"], memory.peak, logs, self.workspace, False, starts_spark, started)

    def bare_incremental(self, files: list[str], state: str = "bare") -> Measurement:
        """The baseline job (bench/bare_incremental.py) on `files`, in this worker's Spark session, with its own
        state in the workspace folder `state`."""
        request = {"cmd": "bare_incremental", "files": files, "state": str(self.workspace.home / state)}
        started = time.time()
        with TreeMemory(self.process.pid) as memory:
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
            answer = json.loads(self.process.stdout.readline() or "null")
        if not answer or not answer["success"]:
            raise RuntimeError(f"the baseline job failed; see {self.workspace.home / 'worker.log'}")
        written, stored = delta_tables(self.workspace.home / state, started)
        return Measurement(answer["seconds"], memory.peak, written=written, stored=stored)

    def export(self, queries: dict[str, str], folder: Path) -> None:
        """Each query's rows as parquet in `folder`/name, from the worker's Spark session, outside any timed run."""
        request = {"cmd": "export", "queries": queries, "folder": str(folder)}
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        if not json.loads(self.process.stdout.readline() or "null"):
            raise RuntimeError(f"the export failed; see {self.workspace.home / 'worker.log'}")

    def close(self) -> None:
        self.process.stdin.write(json.dumps({"cmd": "quit"}) + "\n")
        self.process.stdin.close()
        self.process.wait()
        self.stderr.close()


def cli_dbt(workspace: Workspace, *args: str, kept_alive_compiler: bool = False, archive: bool = True) -> Measurement:
    """`dbt run` as a user types it: a new process, a new JVM, with the profile's compiler for a driver that runs
    dbt once, or (`kept_alive_compiler`) the one it starts a driver kept alive with; with the class archive of the
    workspace's state home where `write_driver_archive` wrote one, or (not `archive`) without."""
    arguments, logs = workspace.dbt_args(*args)
    started, started_at = time.perf_counter(), time.time()
    env = {**workspace.env, KEPT_ALIVE: "true" if kept_alive_compiler else "false"}
    if not archive:
        env[DRIVER_ARCHIVE] = ""
    with open(workspace.home / "cli.log", "ab") as output:
        process = subprocess.Popen(
            [str(Path(PYTHON).parent / "dbt"), *arguments],
            env=env,
            cwd=PROJECT_DIR,
            stdout=output,
            stderr=output,
        )
        with TreeMemory(process.pid) as memory:
            code = process.wait()
    seconds = time.perf_counter() - started
    if code != 0:
        raise RuntimeError(f"dbt {' '.join(args)} exited with {code}; see {logs}")
    return _measurement(seconds, memory.peak, logs, workspace, True, True, started_at)


def write_driver_archive(workspace: Workspace) -> Measurement:
    """`entity-state driver-archive` as `make demo` runs it, into the workspace's state home."""
    started = time.perf_counter()
    with open(workspace.home / "cli.log", "ab") as output:
        process = subprocess.Popen(
            [str(Path(PYTHON).parent / "entity-state"), "driver-archive"],
            env=workspace.env,
            cwd=PROJECT_DIR,
            stdout=output,
            stderr=output,
        )
        with TreeMemory(process.pid) as memory:
            code = process.wait()
    if code != 0:
        raise RuntimeError(f"entity-state driver-archive exited with {code}; see {workspace.home / 'cli.log'}")
    return Measurement(time.perf_counter() - started, memory.peak)


def _measurement(
    seconds: float,
    peak: int,
    logs: Path,
    workspace: Workspace,
    new_process: bool,
    starts_spark: bool,
    started_at: float,
) -> Measurement:
    events = [json.loads(line) for line in (logs / "dbt.log").read_text().splitlines() if line.startswith("{")]
    results = json.loads((workspace.home / "target" / "run_results.json").read_text())
    models = {r["unique_id"].split(".")[-1]: r["execution_time"] for r in results["results"]}
    written, stored = delta_tables(workspace.home / "warehouse", started_at)
    return Measurement(seconds, peak, log_phases(events, seconds, new_process, starts_spark), models, written, stored)


SPARK_START = "JVM, Spark session and metastore start"
# what a new `dbt run` process pays before its first statement: the floor of point 2 of the performance issue
START_PHASES = ("python start and imports", SPARK_START, "dbt parse and setup")
STATEMENT_KINDS = [
    (
        "write",
        re.compile(
            r"^\s*(insert|merge\s+into|create\s+(or\s+replace\s+)?temporary\s+view"
            r"|create\s+(or\s+replace\s+)?table\s+\S+.*\bas\b)",
            re.I | re.S,
        ),
    ),
    ("ddl", re.compile(r"^\s*(create|drop|alter)\b", re.I)),
    ("metadata", re.compile(r".", re.S)),
]


def statement_kind(sql: str) -> str:
    body = re.sub(r"^\s*/\*.*?\*/", "", sql, flags=re.S)
    return next(kind for kind, pattern in STATEMENT_KINDS if pattern.search(body))


# a query (not a command) that Spark plans when dbt sends it and runs only when dbt-spark fetches its rows
LAZY_QUERY = re.compile(r"^\s*(select|with|\()", re.I)


def statements(events: list[dict]) -> list[dict]:
    """The SQL dbt sent to Spark, in order, with each statement's kind and how long Spark took. dbt's status line
    times `spark.sql()`, which runs a command (a write, DDL, `show`) but only plans a query: a query's Spark job runs
    while dbt-spark fetches its rows, after the status line, so its time runs up to dbt's next log line: an upper
    bound, as it also holds dbt's work between the fetch and that line (the rest of a model's compiling)."""
    found, pending, fetching = [], None, None
    for event in events:
        name, data = event["info"]["name"], event.get("data", {})
        if fetching is not None:
            fetching["seconds"] += _event_time(event) - fetching.pop("status_at")
            fetching = None
        if name == "SQLQuery":
            pending = data["sql"]
        elif name == "SQLQueryStatus" and pending is not None:
            statement = {"sql": pending, "kind": statement_kind(pending), "seconds": float(data["elapsed"])}
            found.append(statement)
            if LAZY_QUERY.search(re.sub(r"^\s*/\*.*?\*/", "", pending, flags=re.S)):
                fetching = statement
                fetching["status_at"] = _event_time(event)
            pending = None
    if fetching is not None:
        fetching.pop("status_at")
    return found


def _event_time(event: dict) -> float:
    return datetime.fromisoformat(event["info"]["ts"].replace("Z", "+00:00")).timestamp()


def log_phases(events: list[dict], total: float, new_process: bool, starts_spark: bool) -> dict[str, float]:
    """Where the time of one invocation went, from dbt's own log: parse, Spark statements by kind, the rest."""

    first = _event_time(events[0])
    # parsing ends where dbt starts talking to Spark (ConcurrencyLine, or the first query of a run-operation)
    ready = next(_event_time(e) for e in events if e["info"]["name"] in ("ConcurrencyLine", "SQLQuery"))
    ran = statements(events)
    phases = {"dbt parse and setup": ready - first}
    if new_process:
        phases["python start and imports"] = max(0.0, total - (_event_time(events[-1]) - first))
    if starts_spark:
        # the first statement of a new process waits for the JVM, the Spark session and the metastore to start
        phases[SPARK_START] = ran[0]["seconds"]
        ran = ran[1:]
    for kind in ("metadata", "ddl", "write"):
        phases[f"spark {kind} statements"] = sum(s["seconds"] for s in ran if s["kind"] == kind)
    phases["dbt between statements"] = max(0.0, total - sum(phases.values()))
    return phases


def bare_replay(workspace: Workspace, logs: Path) -> Measurement:
    """The statements of one dbt run, replayed by a bare PySpark job in a new process."""
    events = [json.loads(line) for line in (logs / "dbt.log").read_text().splitlines() if line.startswith("{")]
    plan = workspace.home / "bare_statements.json"
    plan.write_text(json.dumps(statements(events)))
    result, seconds, peak = _bare_child(workspace, "bare", str(plan))
    # the bare job's SparkSession comes up without the metastore, which its first statement then starts
    phases = {SPARK_START: result["session_seconds"] + result["statements"][0]["seconds"]}
    for kind in ("metadata", "ddl", "write"):
        phases[f"spark {kind} statements"] = sum(s["seconds"] for s in result["statements"][1:] if s["kind"] == kind)
    phases["python start and imports"] = max(0.0, seconds - sum(phases.values()))
    return Measurement(seconds, peak, phases)


def bare_process(workspace: Workspace, files: list[str], state: str) -> Measurement:
    """The baseline job (bench/bare_incremental.py) on `files` in a new process, its JVM start included, as a
    scheduler would run it; its state in the workspace folder `state`."""
    listing = workspace.home / "bare_files.json"
    listing.write_text(json.dumps(files))
    started_at = time.time()
    result, seconds, peak = _bare_child(workspace, "bare-incremental", str(listing), str(workspace.home / state))
    written, stored = delta_tables(workspace.home / state, started_at)
    phases = {SPARK_START: result["session_seconds"], "spark write statements": result["seconds"]}
    phases["python start and imports"] = max(0.0, seconds - sum(phases.values()))
    return Measurement(seconds, peak, phases, written=written, stored=stored)


def _bare_child(workspace: Workspace, *command: str) -> tuple[dict, float, int]:
    """`bench/dbt_worker.py COMMAND...` in a new process: the JSON it printed last, its seconds and peak memory."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [PYTHON, str(PROJECT_DIR / "bench" / "dbt_worker.py"), *command],
        env=workspace.env,
        cwd=PROJECT_DIR,
        stdout=subprocess.PIPE,
        stderr=open(workspace.home / "bare.log", "ab"),  # noqa: SIM115 (the child owns it)
        text=True,
    )
    with TreeMemory(process.pid) as memory:
        output, _ = process.communicate()
    seconds = time.perf_counter() - started
    if process.returncode != 0:
        raise RuntimeError(f"bench/dbt_worker.py {command[0]} failed; see {workspace.home / 'bare.log'}")
    return json.loads(output.strip().splitlines()[-1]), seconds, memory.peak


class Results:
    def __init__(self, mode: str, out: Path) -> None:
        self.mode, self.out = mode, out
        self.rows: list[dict] = []
        self.ratios: dict[str, dict] = {}
        self.checks: dict[str, object] = {}

    def add(self, group: str, what: str, runs: list[Measurement], events: int, sizes: str) -> dict:
        row = {
            "group": group,
            "what": what,
            "sizes": sizes,
            "events": events,
            "runs": len(runs),
            "seconds_median": statistics.median(m.seconds for m in runs),
            "seconds_all": [round(m.seconds, 3) for m in runs],
            "events_per_second": events / statistics.median(m.seconds for m in runs) if events else None,
            "peak_rss_mib": max(m.peak_rss for m in runs) / 2**20,
            "state_models_seconds_median": statistics.median(
                sum(m.models.get(name, 0.0) for name in STATE_MODELS) for m in runs
            )
            if runs[0].models
            else None,
            "daily_seconds_median": statistics.median(m.models.get(DAILY_MODEL, 0.0) for m in runs)
            if runs[0].models
            else None,
            "phases_median": {
                phase: statistics.median(m.phases.get(phase, 0.0) for m in runs) for phase in runs[0].phases
            },
            "written_bytes_median": {
                table: statistics.median(m.written.get(table, 0) for m in runs)
                for table in sorted({table for m in runs for table in m.written})
            },
            "stored_bytes_median": {
                table: statistics.median(m.stored.get(table, 0) for m in runs)
                for table in sorted({table for m in runs for table in m.stored})
            },
        }
        self.rows.append(row)
        print(f"  {what}: {row['seconds_median']:.1f} s median of {len(runs)}", flush=True)
        return row

    def ratio(self, name: str, value: float, goal: str, met: bool) -> None:
        self.ratios[name] = {"value": value, "goal": goal, "met": met}
        print(f"  ratio {name}: {value:.2f} (goal {goal}: {'met' if met else 'NOT met'})", flush=True)


def history_scaling(results: Results, sizes: dict, out: Path) -> tuple[Workspace, pa.Table]:
    """Rows 1, 2 and the Spark side of 3: the same batch shape on growing histories, then a full refresh. Returns the
    workspace and the closed stays dbt holds at the end (sorted, see closed_stays)."""
    workspace = Workspace(out, "history")
    stream = EventStream(StreamConfig(entities=sizes["entities"], **NOISE))
    dbt = InProcessDbt(workspace)
    landed, incremental, bare, followers = 0, {}, {}, {}
    applied = 0  # files the baseline job has applied

    def baseline() -> Measurement:
        """The baseline job on the files landed since its last call (the files dbt's last run read)."""
        nonlocal applied
        files = [landed_file["path"] for landed_file in workspace.files[applied:]]
        applied = len(workspace.files)
        return dbt.bare_incremental(files)

    try:
        for history in sizes["histories"]:
            history_before = landed
            while landed < history:
                landed += workspace.land(stream, min(sizes["history_file"], history - landed), "history")
            print(f"history {landed:,} events: building it with one dbt run", flush=True)
            build = dbt.invoke("run")
            new_events = landed - history_before
            results.add(
                "build", f"dbt run over {new_events:,} new events (history now {landed:,})", [build], new_events, ""
            )
            baseline()
            runs, bare_runs, follower_runs = [], [], []
            for _ in range(sizes["reps"]):
                landed += workspace.land(stream, sizes["batch"], "large", sizes["batch_entities"])
                runs.append(dbt.invoke(*STATE_RUN))
                bare_runs.append(baseline())
                follower_runs.append(dbt.invoke(*FOLLOWERS_RUN))
            shape = f"{sizes['batch_entities']:,} entities touched of {sizes['entities']:,}"
            label = f"incremental {sizes['batch']:,}-event batch on {history:,}-event history"
            incremental[history] = results.add("history", f"{label} (state path)", runs, sizes["batch"], shape)
            bare[history] = results.add("bare", f"bare PySpark: {label}", bare_runs, sizes["batch"], shape)
            followers[history] = results.add(
                "followers", f"changes feed and time in state after the {label}", follower_runs, sizes["batch"], shape
            )
        small, bare_small = [], []
        for _ in range(sizes["reps"]):
            landed += workspace.land(stream, sizes["small_batch"], "small", sizes["small_batch"])
            small.append(dbt.invoke(*STATE_RUN))
            bare_small.append(baseline())
            dbt.invoke(*FOLLOWERS_RUN)
        label = f"incremental {sizes['small_batch']:,}-event batch on {history:,}-event history"
        small_row = results.add("versus", f"spark {label} (state path)", small, sizes["small_batch"], "")
        bare_small_row = results.add("bare", f"bare PySpark: {label}", bare_small, sizes["small_batch"], "")
        full, bare_full = full_refresh_against_bare(results, dbt, sizes, landed, "refresh", "bare")
        # the baseline does the same work: its closed stays are dbt's, from the full recompute (checked before the
        # runs below move dbt's on) and from batch to batch
        tables = {"dbt": workspace.table("entity_state_segments"), "bare": workspace.home / "bare_full_0" / "segments"}
        stays = closed_stays(workspace, tables, dbt)
        results.checks["closed stays identical: dbt and bare PySpark (recomputed)"] = stays["bare"].equals(stays["dbt"])
    finally:
        dbt.close()
    # the same batch as a scheduler runs it: `dbt run` as a new process (with the driver archive `make demo` writes),
    # against the baseline job as a new process; both pay their JVM's start
    write_driver_archive(workspace)
    scheduled, bare_scheduled = [], []
    for _ in range(sizes["reps"]):
        landed += workspace.land(stream, sizes["batch"], "large", sizes["batch_entities"])
        scheduled.append(cli_dbt(workspace, *STATE_RUN))
        files = [landed_file["path"] for landed_file in workspace.files[applied:]]
        applied = len(workspace.files)
        bare_scheduled.append(bare_process(workspace, files, "bare"))
    label = f"{sizes['batch']:,}-event batch on {landed:,}-event history, as a new process"
    scheduled_row = results.add("scheduled", f"CLI state run {label}", scheduled, sizes["batch"], shape)
    bare_scheduled_row = results.add("bare", f"bare PySpark {label}", bare_scheduled, sizes["batch"], shape)
    for history, row in incremental.items():
        value = row["seconds_median"] / bare[history]["seconds_median"]
        results.ratio(f"dbt / bare PySpark, {sizes['batch']:,}-event batch on {history:,}", value, "<= 3", value <= 3)
    value = scheduled_row["seconds_median"] / bare_scheduled_row["seconds_median"]
    results.ratio(f"dbt / bare PySpark, {sizes['batch']:,}-event batch, new processes", value, "<= 2", value <= 2)
    value = small_row["seconds_median"] - bare_small_row["seconds_median"]
    results.ratio(f"dbt - bare PySpark, {sizes['small_batch']:,}-event batch (seconds)", value, "<= 5", value <= 5)
    value = bare_full["events_per_second"] / full["events_per_second"]
    results.ratio("bare PySpark / full refresh, events per second", value, "<= 1.5", value <= 1.5)
    tables = {"dbt": workspace.table("entity_state_segments"), "bare": workspace.home / "bare" / "segments"}
    stays = closed_stays(workspace, tables)
    results.checks["closed stays identical: dbt and bare PySpark (incremental)"] = stays["bare"].equals(stays["dbt"])
    largest = incremental[sizes["histories"][-1]]
    for rows, key, label in (
        (incremental, "seconds_median", ""),
        (incremental, "state_models_seconds_median", " (state models only)"),
        (followers, "seconds_median", " (changes feed and time in state)"),
    ):
        value = rows[sizes["histories"][-1]][key] / rows[sizes["histories"][0]][key]
        results.ratio(f"history scaling{label}", value, "<= 1.3", value <= 1.3)
    value = full["seconds_median"] / largest["seconds_median"]
    results.ratio("full refresh / incremental", value, ">= 10", value >= 10)
    value = full["state_models_seconds_median"] / largest["state_models_seconds_median"]
    results.ratio("full refresh / incremental (state models only)", value, ">= 10", value >= 10)
    # writes that follow the batch: "about" the touched share, counted met within twice it (a file's footer and
    # compression do not shrink with its rows). The bytes of data files the run's merge into entity_state_current
    # added (numTargetBytesAdded), against the bytes of its version after the run (sizeInBytes): with deletion
    # vectors a merge writes the rows it changes anew and marks the old ones deleted, rather than rewriting the files
    # that held them
    touched_share = sizes["batch_entities"] / sizes["entities"]
    value = rewritten_share(largest, CURRENT)
    results.ratio(
        f"share of entity_state_current a batch touching {touched_share:.0%} of the entities rewrites",
        value,
        f"<= {2 * touched_share:.2f}",
        value <= 2 * touched_share,
    )
    return workspace, stays["dbt"]


def rewritten_share(row: dict, table: str) -> float:
    """The share of `table`'s bytes (its version after the run) that a row's runs wrote, median of its runs."""
    return row["written_bytes_median"].get(table, 0) / row["stored_bytes_median"][table]


def full_refresh_against_bare(
    results: Results, dbt: InProcessDbt, sizes: dict, landed: int, group: str, bare_group: str
) -> tuple[dict, dict]:
    """Row 3's pair: `dbt run --full-refresh` over every landed event, then the baseline job recomputing every stay
    from the same files (each repetition into a state folder of its own, `bare_full_<n>`)."""
    refresh = [dbt.invoke(*STATE_RUN, "--full-refresh") for _ in range(sizes["refresh_reps"])]
    full = results.add(group, f"dbt run --selector state --full-refresh over {landed:,} events", refresh, landed, "")
    everything = [landed_file["path"] for landed_file in dbt.workspace.files]
    bare_full = results.add(
        bare_group,
        f"bare PySpark: every stay recomputed from {landed:,} events",
        [dbt.bare_incremental(everything, f"bare_full_{rep}") for rep in range(sizes["refresh_reps"])],
        landed,
        "",
    )
    return full, bare_full


def daily_scaling(results: Results, sizes: dict, out: Path) -> None:
    """entity_state_daily_counted's time per run against the history, on a stream whose events span weeks (the other
    sections' stream packs 5M events into one day, where every run recomputes every day there is)."""
    workspace = Workspace(out, "daily")
    tick = timedelta(seconds=sizes["daily_tick_seconds"])
    stream = EventStream(StreamConfig(entities=sizes["entities"], tick=tick, **NOISE))
    dbt = InProcessDbt(workspace)
    landed, rows = 0, {}
    try:
        for history in sizes["daily_histories"]:
            while landed < history:
                landed += workspace.land(stream, min(sizes["history_file"], history - landed), "history")
            print(
                f"history {landed:,} events over {landed * tick / timedelta(days=1):.0f} days: one dbt run", flush=True
            )
            dbt.invoke("run")
            runs, recomputed = [], []
            for _ in range(sizes["reps"]):
                landed += workspace.land(stream, sizes["batch"], "large", sizes["batch_entities"])
                runs.append(dbt.invoke("run"))
                recomputed.append(_daily_recomputed_from(workspace))
            days = history * tick / timedelta(days=1)
            rows[history] = results.add(
                "daily",
                f"incremental {sizes['batch']:,}-event batch on {history:,}-event history spanning {days:.0f} days",
                runs,
                sizes["batch"],
                f"batch spans {sizes['batch'] * tick / timedelta(hours=1):.0f} h",
            )
            key = f"entity_state_daily_counted recomputed from, {history:,}-event history"
            results.checks[key] = ", ".join(recomputed)
    finally:
        dbt.close()
    smallest, largest = rows[sizes["daily_histories"][0]], rows[sizes["daily_histories"][-1]]
    value = largest["daily_seconds_median"] / smallest["daily_seconds_median"]
    results.ratio("entity_state_daily_counted: history scaling", value, "<= 1.3", value <= 1.3)


def _daily_recomputed_from(workspace: Workspace) -> str:
    """The first day the last run's entity_state_daily_counted recomputed, from its compiled SQL: the day its read of
    the stays starts from (`end_time >= cast(date'...' as timestamp)`), every day when it reads them all, none when
    it keeps the rows it holds (models/questions/entity_state_daily_counted.sql)."""
    questions = workspace.home / "target" / "compiled" / "entity_state" / "models" / "questions"
    compiled = (questions / "entity_state_daily_counted.sql").read_text()
    if "recomputed as (" not in compiled:
        return "none (every row kept)"
    found = re.search(r"end_time >= cast\(date'(\d{4}-\d{2}-\d{2})' as timestamp\)", compiled)
    return found.group(1) if found else "the first day"


def clickhouse(results: Results, sizes: dict, workspace: Workspace, spark: pa.Table) -> None:
    """Row 3: the same files, in the same order, through the write-up's views in chDB, one block per insert; `spark`:
    the closed stays dbt wrote from them (closed_stays)."""
    plan = workspace.home / "chdb_plan.json"
    plan.write_text(json.dumps(workspace.files))
    stays_file = workspace.home / "chdb_closed_stays.parquet"
    print(f"chDB: inserting the same {len(workspace.files)} files, one block each", flush=True)
    process = subprocess.Popen(
        [PYTHON, str(PROJECT_DIR / "bench" / "clickhouse_pattern.py"), str(plan), str(stays_file)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=PROJECT_DIR,
    )
    with TreeMemory(process.pid) as memory:
        output, _ = process.communicate()
    if process.returncode != 0:
        raise RuntimeError("the chDB run failed")
    timings = json.loads(output.strip().splitlines()[-1])
    spark_rows = {
        "large": [r for r in results.rows if r["group"] == "history"][-1],
        "small": next(r for r in results.rows if r["group"] == "versus"),
    }
    for role, events in (("large", sizes["batch"]), ("small", sizes["small_batch"])):
        runs = [Measurement(t["seconds"], memory.peak) for t in timings if t["role"] == role]
        row = results.add("versus", f"chDB insert of a {events:,}-event batch (both views)", runs, events, "")
        results.ratio(
            f"chDB / spark events per second, {events:,}-event batch",
            row["events_per_second"] / spark_rows[role]["events_per_second"],
            "(informative)",
            True,
        )
    chdb = pq.read_table(stays_file)
    results.checks["closed stays: spark"] = spark.num_rows
    results.checks["closed stays: chDB"] = chdb.num_rows
    results.checks["closed stays identical"] = spark.equals(_sorted(chdb))
    print(f"  same closed stays in spark and chDB: {results.checks['closed stays identical']}", flush=True)


def closed_stays(workspace: Workspace, tables: dict[str, Path], dbt: InProcessDbt | None = None) -> dict[str, pa.Table]:
    """The closed stays of each Delta segments table in `tables` (a name: its folder, dbt's or the baseline job's),
    sorted, for comparisons. Spark reads them (a Delta table's rows are not its folder's files: its log says which
    files count, their deletion vectors which rows of them), in the kept-alive worker `dbt` if given, else in a new
    process (the metastore is not needed, but must not be held by a worker then), into parquet the bench reads."""
    columns = "tenant_id, entity_id, state_id, next_state_id, start_time, end_time"
    queries = {name: f"select {columns} from delta.`{folder}` where not is_open" for name, folder in tables.items()}
    folder = workspace.home / "closed_stays"
    shutil.rmtree(folder, ignore_errors=True)
    if dbt is not None:
        dbt.export(queries, folder)
    else:
        request = workspace.home / "export.json"
        request.write_text(json.dumps({"queries": queries, "folder": str(folder)}))
        _bare_child(workspace, "export", str(request))
    found = {}
    for name in queries:
        table = ds.dataset(folder / name, format="parquet").to_table()
        found[name] = _sorted(
            pa.table(
                {
                    **{column: table[column] for column in ("tenant_id", "entity_id", "state_id", "next_state_id")},
                    "start_us": pc.cast(table["start_time"], pa.int64()),
                    "end_us": pc.cast(table["end_time"], pa.int64()),
                }
            )
        )
    return found


def _sorted(table: pa.Table) -> pa.Table:
    table = table.cast(
        pa.schema(
            [(name, pa.string()) for name in table.column_names[:4]]
            + [("start_us", pa.int64()), ("end_us", pa.int64())]
        )
    )
    return table.sort_by([(name, "ascending") for name in table.column_names]).combine_chunks()


def fixed_cost(results: Results, sizes: dict, out: Path) -> None:
    """Row 4: an empty batch and a 1k-event batch, through the CLI, the in-process runner and bare PySpark, and the
    in-process scheduled build (`dbt build --selector scheduled`) of 1k-event batches."""
    workspace = Workspace(out, "fixed")
    stream = EventStream(StreamConfig(entities=sizes["entities"], **NOISE))
    workspace.land(stream, sizes["fixed_history"], "history")
    small, reps = sizes["small_batch"], sizes["fixed_reps"]
    dbt = InProcessDbt(workspace)
    try:
        dbt.invoke("run")
        results.add("fixed", "in-process dbtRunner: JVM start + parse (warm-up, once)", [dbt.warm_up], 0, "")
        kept_alive = results.add(
            "fixed", "in-process state run, empty batch", [dbt.invoke(*STATE_RUN) for _ in range(reps)], 0, ""
        )
        runs = []
        for _ in range(reps):
            workspace.land(stream, small, "small", small)
            runs.append(dbt.invoke(*STATE_RUN))
        results.add("fixed", f"in-process state run, {small:,}-event batch", runs, small, "")
        # the command README gives to schedule: the run's models, then the data tests cheap enough for every run
        builds = []
        for _ in range(reps):
            workspace.land(stream, small, "small", small)
            builds.append(dbt.invoke("build", "--selector", "scheduled"))
        results.add("fixed", f"in-process dbt build --selector scheduled, {small:,}-event batch", builds, small, "")
    finally:
        dbt.close()
    # what `make demo` (and `make run`, `make build`) write once per install, before the first new process
    results.add("fixed", "`entity-state driver-archive` (once per install)", [write_driver_archive(workspace)], 0, "")
    empty, without_archive = [], []
    for _ in range(reps):
        without_archive.append(cli_dbt(workspace, *STATE_RUN, archive=False))
        empty.append(cli_dbt(workspace, *STATE_RUN))
    empty_logs = workspace.home / "logs" / f"{workspace.runs:03d}"
    new_process = results.add("fixed", "CLI state run (new process), empty batch", empty, 0, "")
    results.add("fixed", "CLI state run (new process, no driver archive), empty batch", without_archive, 0, "")
    empty = [cli_dbt(workspace, *STATE_RUN, kept_alive_compiler=True) for _ in range(reps)]
    results.add("fixed", f"CLI state run (new process, {KEPT_ALIVE}=true), empty batch", empty, 0, "")
    value = kept_alive["seconds_median"]
    results.ratio("empty run kept alive (seconds)", value, "<= 1.5", value <= 1.5)
    # a new process's floor: what it pays before its first model (Python, the JVM and Spark session, dbt's parse)
    start = sum(new_process["phases_median"].get(phase, 0.0) for phase in START_PHASES)
    value = new_process["seconds_median"] / start
    results.ratio("empty run as a new process / its start", value, "<= 1.5", value <= 1.5)
    # each batch run three times from the same state: with the compiler for a driver kept alive, without the driver
    # archive, then as users run it
    runs, kept_alive_runs, without_archive, before = [], [], [], None
    for _ in range(reps):
        workspace.land(stream, small, "small", small)
        before = workspace.snapshot("before_last")
        kept_alive_runs.append(cli_dbt(workspace, *STATE_RUN, kept_alive_compiler=True))
        workspace.restore(before)
        without_archive.append(cli_dbt(workspace, *STATE_RUN, archive=False))
        workspace.restore(before)
        runs.append(cli_dbt(workspace, *STATE_RUN))
    results.add("fixed", f"CLI state run (new process), {small:,}-event batch", runs, small, "")
    results.add(
        "fixed", f"CLI state run (new process, no driver archive), {small:,}-event batch", without_archive, small, ""
    )
    results.add(
        "fixed", f"CLI state run (new process, {KEPT_ALIVE}=true), {small:,}-event batch", kept_alive_runs, small, ""
    )
    last_logs = workspace.home / "logs" / f"{workspace.runs:03d}"
    runs = []
    for _ in range(reps):
        workspace.restore(before)
        runs.append(bare_replay(workspace, last_logs))
    results.add("fixed", f"bare PySpark replaying that run's SQL, {small:,}-event batch", runs, small, "")
    runs = [bare_replay(workspace, empty_logs) for _ in range(reps)]
    results.add("fixed", "bare PySpark replaying an empty run's SQL", runs, 0, "")


def skewed_memory(results: Results, sizes: dict, out: Path) -> None:
    """Row 5: one entity with all of a batch's events."""
    workspace = Workspace(out, "skew")
    stream = EventStream(StreamConfig(tenants=1, entities=1, **NOISE))
    events = workspace.land(stream, sizes["skew_events"], "skew")
    dbt = InProcessDbt(workspace)
    try:
        run = dbt.invoke("run")
    finally:
        dbt.close()
    results.add("memory", f"one entity, {events:,} events in one batch (in-process dbt run)", [run], events, "")


def landing_history(results: Results, sizes: dict, out: Path) -> None:
    """Row 6: the same small batch after a few landed files and after many (one file per past run), with old files
    skipped as the project does and with the skip turned off (an allowed clock skew longer than the history)."""
    workspace = Workspace(out, "files")
    # a minute between events spreads each file over its own stretch of time, as runs minutes apart would
    stream = EventStream(StreamConfig(entities=sizes["entities"], tick=timedelta(minutes=1), **NOISE))
    small, reps, files = sizes["small_batch"], sizes["reps"], sizes["history_files"]
    no_skip = ["--vars", "{entity_state__landing_clock_skew_minutes: 10000000}"]
    for _ in range(10):
        workspace.land(stream, sizes["file_events"], "history", backdate=True)
    dbt = InProcessDbt(workspace)
    timed = {}
    try:
        dbt.invoke("run")

        def measure(label: str, *options: str) -> dict:
            runs = []
            for _ in range(reps):
                workspace.land(stream, small, "small", small, backdate=True)
                runs.append(dbt.invoke("run", *options))
            return results.add("files", label, runs, small, f"{sizes['file_events']} events per history file")

        timed["few"] = measure(f"{small:,}-event batch after 10 landed files")
        print(f"landing {files:,} history files, one per past run", flush=True)
        for _ in range(files - 10 - reps):
            workspace.land(stream, sizes["file_events"], "history", backdate=True)
        build = dbt.invoke("run")
        results.add("build", f"dbt run over {files - 10 - reps:,} new files", [build], 0, "")
        timed["many"] = measure(f"{small:,}-event batch after {files:,} landed files")
        timed["many_no_skip"] = measure(f"{small:,}-event batch after {files:,} files, old files not skipped", *no_skip)
    finally:
        dbt.close()
    value = timed["many"]["seconds_median"] / timed["few"]["seconds_median"]
    results.ratio(f"{files:,} landed files / 10", value, "<= 1.3", value <= 1.3)
    value = timed["many_no_skip"]["seconds_median"] / timed["few"]["seconds_median"]
    results.checks[f"{files:,} landed files / 10, old files not skipped (contrast, no goal)"] = round(value, 2)
    print(f"  contrast: {value:.2f} with old files not skipped", flush=True)


HEAVY_ENTITY = "pallet-heavy"


def late_events(results: Results, sizes: dict, out: Path) -> None:
    """Late events against in-order ones on the same history: a batch with 1% of its rows up to a week late, against
    the same shape in order; and one event a month late on an entity with many events, against one in-order event.
    Event times are one second apart, so the history spans months and "a week" and "a month" late mean what they say.
    Every file is backdated to its arrival, as a file that landed then, so a repair skips the files older than the
    stay its late event falls in as it would in production.
    """
    workspace = Workspace(out, "late")
    config = StreamConfig(entities=sizes["entities"], tick=timedelta(seconds=1), **NOISE)
    stream = EventStream(config)
    history, heavy = sizes["late_history"], sizes["heavy_entity_events"]
    streamed, landed = 0, 0
    print(f"late events: landing a {history:,}-event history and {heavy:,} events of {HEAVY_ENTITY}", flush=True)
    while streamed < history:
        batch = stream.next_batch(min(sizes["history_file"], history - streamed))
        streamed += batch.num_rows
        # the heavy entity's share of this stretch of time, at the batch's arrival
        share = round(heavy * batch.num_rows / history)
        times = pc.min_max(batch.column("event_time")).as_py()
        heavy_rows = _heavy_entity_rows(share, times["min"], times["max"], batch.column("ingested_at")[0].as_py())
        landed += workspace.land_table(pa.concat_tables([batch, heavy_rows]), stream, "history", backdate=True)
    dbt = InProcessDbt(workspace)
    try:
        build = dbt.invoke("run")
        results.add("build", f"dbt run over {landed:,} events (late-events history)", [build], landed, "")
        in_order, late, single, single_late = [], [], [], []
        for _ in range(sizes["reps"]):
            workspace.land(stream, sizes["batch"], "large", sizes["batch_entities"], backdate=True)
            in_order.append(dbt.invoke("run"))
            stream.config = replace(config, late_share=0.01, late_by=timedelta(days=7))
            workspace.land(stream, sizes["batch"], "late", sizes["batch_entities"], backdate=True)
            stream.config = config
            late.append(dbt.invoke("run"))
            workspace.land(stream, 1, "small", 1, backdate=True)
            single.append(dbt.invoke("run"))
            in_place = stream.next_batch(1, 1)
            month_ago = in_place.column("event_time")[0].as_py() - timedelta(days=30)
            workspace.land_table(
                _heavy_entity_rows(1, month_ago, month_ago, in_place.column("ingested_at")[0].as_py()),
                stream,
                "late",
                backdate=True,
            )
            single_late.append(dbt.invoke("run"))
        # the project's audit: the state equals the batch recompute of every landed event (fails the bench if not)
        dbt.invoke("test", "--select", "assert_state_matches_full_recompute")
        results.checks["late events: state equals the full recompute (audit test)"] = True
    finally:
        dbt.close()
    shape = f"{sizes['batch_entities']:,} entities touched of {sizes['entities']:,}"
    label = f"{sizes['batch']:,}-event batch on a {history:,}-event history"
    ordered_row = results.add("late", f"in order: {label}", in_order, sizes["batch"], shape)
    late_row = results.add("late", f"1% up to a week late: {label}", late, sizes["batch"], shape)
    single_row = results.add("late", "in order: one event", single, 1, "")
    label = f"one event a month late on an entity with {heavy:,} events"
    single_late_row = results.add("late", label, single_late, 1, "")
    value = late_row["seconds_median"] / ordered_row["seconds_median"]
    results.ratio(f"1% late / in order, {sizes['batch']:,}-event batch", value, "<= 1.5", value <= 1.5)
    value = single_late_row["seconds_median"] / single_row["seconds_median"]
    results.ratio(f"one event a month late / in order, {heavy:,}-event entity", value, "<= 2", value <= 2)


def long_history(results: Results, sizes: dict, out: Path) -> None:
    """Row 3 on a history too long to build batch by batch here: one first run over all of it, incremental batches
    on top, then a full refresh and the bare full recompute of the same events."""
    workspace = Workspace(out, "long")
    stream = EventStream(StreamConfig(entities=sizes["entities"], **NOISE))
    history, landed = sizes["long_history"], 0
    print(f"long history: landing {history:,} events", flush=True)
    while landed < history:
        landed += workspace.land(stream, min(sizes["history_file"], history - landed), "history")
    dbt = InProcessDbt(workspace)
    try:
        build = dbt.invoke("run")
        results.add("long", f"first dbt run over {landed:,} events", [build], landed, "")
        runs = []
        for _ in range(sizes["reps"]):
            landed += workspace.land(stream, sizes["batch"], "large", sizes["batch_entities"])
            runs.append(dbt.invoke(*STATE_RUN))
        shape = f"{sizes['batch_entities']:,} entities touched of {sizes['entities']:,}"
        label = f"incremental {sizes['batch']:,}-event batch on {history:,}-event history (state path)"
        incremental = results.add("long", label, runs, sizes["batch"], shape)
        full, bare_full = full_refresh_against_bare(results, dbt, sizes, landed, "long", "long")
        tables = {"dbt": workspace.table("entity_state_segments"), "bare": workspace.home / "bare_full_0" / "segments"}
        stays = closed_stays(workspace, tables, dbt)
    finally:
        dbt.close()
    value = full["seconds_median"] / incremental["seconds_median"]
    results.ratio(f"full refresh / incremental at {history:,}", value, ">= 10", value >= 10)
    value = bare_full["events_per_second"] / full["events_per_second"]
    results.ratio(f"bare PySpark / full refresh at {history:,}, events per second", value, "<= 1.5", value <= 1.5)
    results.checks[f"closed stays identical: dbt and bare PySpark ({history:,} events)"] = stays["bare"].equals(
        stays["dbt"]
    )


def _heavy_entity_rows(count: int, first: datetime, last: datetime, ingested_at: datetime) -> pa.Table:
    """`count` events of HEAVY_ENTITY spread evenly from `first` to `last`, changing state every tenth event."""
    span = (last - first) / max(count - 1, 1)
    return pa.table(
        {
            "tenant_id": ["t-00"] * count,
            "entity_id": [HEAVY_ENTITY] * count,
            "state_id": [state_name(index // 10 % 10) for index in range(count)],
            "event_time": [first + span * index for index in range(count)],
            "event_time_text": pa.nulls(count, pa.string()),
            "ingested_at": [ingested_at] * count,
        },
        schema=LANDED_SCHEMA,
    )


def machine() -> dict:
    memory = psutil.virtual_memory().total
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()[0]
    return {
        "cpus": os.cpu_count(),
        "memory_gib": round(memory / 2**30, 1),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "java": java,
        "load_average_at_start": os.getloadavg(),
        "driver_memory": os.environ.get("ENTITY_STATE_DRIVER_MEMORY", "4g"),
    }


def print_table(results: Results) -> None:
    print(
        f"\n{'what':<78} {'sizes':<30} {'median s':>9} {'events/s':>10} {'state s':>8} {'daily s':>8} {'peak MiB':>9}"
    )
    for row in results.rows:
        rate = f"{row['events_per_second']:,.0f}" if row["events_per_second"] else "-"
        state = f"{row['state_models_seconds_median']:.1f}" if row["state_models_seconds_median"] else "-"
        daily = f"{row['daily_seconds_median']:.1f}" if row.get("daily_seconds_median") else "-"
        print(
            f"{row['what']:<78} {row['sizes']:<30} {row['seconds_median']:>9.1f} {rate:>10} {state:>8} {daily:>8} "
            f"{row['peak_rss_mib']:>9,.0f}"
        )
    print()
    for name, ratio in results.ratios.items():
        print(f"{name:<60} {ratio['value']:>8.2f}  goal {ratio['goal']:<14} {'met' if ratio['met'] else 'NOT met'}")
    for name, value in results.checks.items():
        print(f"{name:<60} {value}")


def markdown(results: Results) -> str:
    """The table and ratios as Markdown, for BENCHMARKS.md."""
    lines = [
        "| what | sizes | runs | median s | events/s | state models s | entity_state_daily_counted s | peak RSS MiB |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in results.rows:
        rate = f"{row['events_per_second']:,.0f}" if row["events_per_second"] else "-"
        state = f"{row['state_models_seconds_median']:.1f}" if row["state_models_seconds_median"] else "-"
        daily = f"{row['daily_seconds_median']:.1f}" if row.get("daily_seconds_median") else "-"
        lines.append(
            f"| {row['what']} | {row['sizes']} | {row['runs']} | {row['seconds_median']:.1f} | {rate} | {state} "
            f"| {daily} | {row['peak_rss_mib']:,.0f} |"
        )
    lines += ["", "| ratio | value | goal | met |", "| --- | ---: | --- | --- |"]
    for name, ratio in results.ratios.items():
        lines.append(f"| {name} | {ratio['value']:.2f} | {ratio['goal']} | {'yes' if ratio['met'] else 'no'} |")
    lines += [
        "",
        "| what each run writes (median MiB of Delta data files) | all tables | entity_state_current (share of it) "
        "| entity_state_segments |",
        "| --- | ---: | ---: | ---: |",
    ]
    for row in results.rows:
        if row["stored_bytes_median"]:
            current = "current" if row["group"] == "bare" else CURRENT
            segments = "segments" if row["group"] == "bare" else "entity_state_segments"
            written = row["written_bytes_median"]
            # a table can be empty after a run: no share of it
            share = f" ({rewritten_share(row, current):.0%})" if row["stored_bytes_median"].get(current) else ""
            lines.append(
                f"| {row['what']} | {sum(written.values()) / 2**20:,.2f} "
                f"| {written.get(current, 0) / 2**20:,.2f}"
                f"{share} | {written.get(segments, 0) / 2**20:,.2f} |"
            )
    lines += ["", "| where the time goes (median s) | " + " | ".join(_PHASES) + " |"]
    lines.append("| --- |" + " ---: |" * len(_PHASES))
    for row in results.rows:
        if row["group"] in ("fixed", "history", "refresh"):
            cells = " | ".join(f"{row['phases_median'].get(phase, 0.0):.1f}" for phase in _PHASES)
            lines.append(f"| {row['what']} | {cells} |")
    return "\n".join(lines) + "\n"


_PHASES = [
    *START_PHASES,
    "spark metadata statements",
    "spark ddl statements",
    "spark write statements",
    "dbt between statements",
]


def chart(results: Results, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(2, 2, figsize=(18, 10))
    history = [r for r in results.rows if r["group"] == "history"]
    axis = axes[0][0]
    labels = [r["what"].split(" on ")[-1].replace("-event history", "") for r in history]
    axis.bar(labels, [r["seconds_median"] for r in history], label="whole dbt run")
    axis.bar(labels, [r["state_models_seconds_median"] for r in history], label="two state models", alpha=0.8)
    axis.set(title="Same incremental batch on growing history", ylabel="seconds (median)", xlabel="history events")
    axis.legend()

    axis = axes[0][1]
    refresh = next(r for r in results.rows if r["group"] == "refresh")
    axis.bar(["incremental batch", "--full-refresh"], [history[-1]["seconds_median"], refresh["seconds_median"]])
    axis.set(title="At the largest history", ylabel="seconds (median)")

    axis = axes[1][0]
    versus = [r for r in results.rows if r["group"] == "versus"] + [history[-1]]
    axis.barh([r["what"][:60] for r in versus], [r["events_per_second"] for r in versus])
    axis.set(title="Throughput: dbt on Spark vs the write-up's views in chDB", xlabel="events per second (log)")
    axis.set_xscale("log")  # the two differ by orders of magnitude

    axis = axes[1][1]
    fixed = [r for r in results.rows if r["group"] == "fixed"]
    phases = sorted({phase for r in fixed for phase in r["phases_median"]})
    left = [0.0] * len(fixed)
    for phase in phases:
        widths = [r["phases_median"].get(phase, 0.0) for r in fixed]
        axis.barh([r["what"][:60] for r in fixed], widths, left=left, label=phase)
        left = [a + b for a, b in zip(left, widths, strict=True)]
    axis.set(title="Fixed cost of a run: where the time goes", xlabel="seconds (median)")
    if fixed:
        axis.legend(fontsize=7)
    else:
        axis.text(0.5, 0.5, "not measured in this run (section `fixed`)", ha="center", va="center")
    figure.tight_layout()
    figure.savefig(path, dpi=90)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mode", choices=sorted(SIZES), default="quick")
    parser.add_argument("--out", type=Path, help="output folder (default .local/bench/MODE)")
    parser.add_argument("--results", type=Path, help="where to write results.json and results.png (default --out)")
    parser.add_argument(
        "--section", action="append", choices=SECTIONS, help="run only this section (repeatable; default: all)"
    )
    args = parser.parse_args()
    sizes = SIZES[args.mode]
    out = (args.out or PROJECT_DIR / ".local" / "bench" / args.mode).resolve()
    out.mkdir(parents=True, exist_ok=True)
    results = Results(args.mode, out)
    started = time.perf_counter()
    info = machine()
    print(f"bench ({args.mode}) in {out}: {info}", flush=True)
    target = (args.results or out).resolve()
    sections = args.section or SECTIONS
    # a partial run never overwrites the results of a whole one
    name = f"results-{args.mode}" + ("" if args.section is None else "-" + "-".join(sections))
    target.mkdir(parents=True, exist_ok=True)

    def save() -> None:
        # after every section, so a run stopped early still leaves what it measured
        info["minutes"] = (time.perf_counter() - started) / 60
        info["load_average_at_end"] = os.getloadavg()
        document = {
            "mode": args.mode,
            "finished": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": info,
            "sizes": sizes,
            "noise": NOISE,
            "rows": results.rows,
            "ratios": results.ratios,
            "checks": results.checks,
        }
        (target / f"{name}.json").write_text(json.dumps(document, indent=2) + "\n")

    if "history" in sections:
        workspace, stays = history_scaling(results, sizes, out)
        save()
        clickhouse(results, sizes, workspace, stays)
        save()
    if "fixed" in sections:
        fixed_cost(results, sizes, out)
        save()
    if "skew" in sections:
        skewed_memory(results, sizes, out)
        save()
    if "files" in sections:
        landing_history(results, sizes, out)
        save()
    if "daily" in sections:
        daily_scaling(results, sizes, out)
        save()
    if "late" in sections:
        late_events(results, sizes, out)
        save()
    if "long" in sections:
        long_history(results, sizes, out)
        save()
    print_table(results)
    if "history" in sections:  # the chart plots that section's rows
        chart(results, target / f"{name}.png")
    (target / f"{name}.md").write_text(markdown(results))
    print(f"\nwrote {target / name}.json, .md (and .png) in {info['minutes']:.1f} minutes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
