"""A run killed with SIGKILL at any point, followed by a plain `dbt run`, ends as an uninterrupted run would.

Each killed run here is a real process (tests/integration/dbt_process.py), so the kill is a real SIGKILL of the JVM
and of dbt, not an exception dbt could handle.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from entity_state.landing import LANDED_SCHEMA
from tests.reference import ClosedStay, Event, OpenStay, recompute

from .dbt_harness import PROJECT_DIR
from .state_assertions import stays_from_changes

SCHEMA = "entity_state_killed"
T0 = datetime(2026, 4, 1, 6, 0, tzinfo=UTC)
FIRST_BATCH = [("e-1", "A", 0), ("e-1", "B", 3), ("e-2", "X", 1), ("e-3", "P", 2)]
# e-3's R at minute 1 is late (older than its P of the first batch): every kill point also interrupts a repair
SECOND_BATCH = [
    ("e-1", "B", 5),
    ("e-1", "C", 7),
    ("e-1", "A", 9),
    ("e-2", "Y", 4),
    ("e-2", "X", 6),
    ("e-3", "R", 1),
    ("e-4", "Q", 8),
]

KILL_POINTS = {
    "before the run manifest's write": (r"insert into table \S*entity_state_runs\b", "before"),
    "before the segments merge": (r"merge into \S*entity_state_segments\b", "before"),
    "in the middle of the segments merge": (r"merge into \S*entity_state_segments\b", "mid-write"),
    "between segments and current": (r"merge into \S*entity_state_current\b", "before"),
    "in the middle of the current merge": (r"merge into \S*entity_state_current\b", "mid-write"),
    "before the batch counts' write": (r"insert into table \S*entity_state_batches\b", "before"),
    "in the middle of the changes' write": (r"insert into table \S*entity_state_changes\b", "mid-write"),
    "in the middle of the time in state's replace": (
        r"create or replace table \S*entity_state_daily_counted\b",
        "mid-write",
    ),
}

# One batch per kill point for the chain of kill points on one state home, each landing a minute after the one before
# and with events ten minutes later. Each repeats SECOND_BATCH's moves and adds e-3's P at 12: the next batch's R at
# 11 is then late, so each killed run applies a late event, and its rerun a repair.
KILL_BATCHES = [
    [(entity, state, minute + 10 * index) for entity, state, minute in [*SECOND_BATCH, ("e-3", "P", 12)]]
    for index in range(len(KILL_POINTS))
]


# how the Spark driver of each process here starts (ProcessProject's environment says why)
ONE_RUN_DRIVER = {"ENTITY_STATE_DRIVER_KEPT_ALIVE": "false", "ENTITY_STATE_DRIVER_JAVA_OPTIONS": "-XX:+UseSerialGC"}


class ProcessProject:
    """One state home driven only by dbt processes. With `archive`, the processes' Spark drivers start with that
    class archive, as a user's do after `make demo`."""

    def __init__(self, home: Path, archive: Path | None = None) -> None:
        self.home = home
        self.landing = home / "landing"
        self.landed: list[Event] = []
        self.env = {
            **os.environ,
            "ENTITY_STATE_HOME": str(home),
            "ENTITY_STATE_SCHEMA": SCHEMA,
            "ENTITY_STATE_LANDING_DIR": str(self.landing),
            "ENTITY_STATE_TARGET": "local",
            "DBT_PROFILES_DIR": str(PROJECT_DIR / "profiles"),
            # dbt's partial-parse file is only reused under the same profile: with the pytest process's target
            # folder, each of these processes (another schema and home) would parse the project whole, and the
            # pytest process's next dbt call would again. Beside the home: the processes of one home share it.
            "DBT_TARGET_PATH": str(home.parent / "dbt_target"),
            "TZ": "UTC",
            # Each process here runs a few statements and dies, as a user's `dbt` command: the profile's compiler for
            # a driver that runs dbt once (`make test` sets the kept-alive one for its own pytest processes), and the
            # serial collector, which starts the JVM with less work on 2 cores. What is tested (a SIGKILL of that
            # JVM and a plain rerun) does not depend on how Java compiles Spark's code.
            **ONE_RUN_DRIVER,
            "ENTITY_STATE_DRIVER_ARCHIVE": str(archive or ""),
        }

    def land(self, batch: list[tuple[str, str, int]], ingested_minute: int) -> None:
        self.landed += self.write_batch(batch, ingested_minute, self.landing)[1]

    def write_batch(
        self, batch: list[tuple[str, str, int]], ingested_minute: int, folder: Path
    ) -> tuple[Path, list[Event]]:
        """Write a batch file as the loader does, into `folder`; returns the file and its events."""
        ingested_at = T0 + timedelta(days=1, minutes=ingested_minute)
        events = [
            Event("acme", entity, state, T0 + timedelta(minutes=minute), ingested_at) for entity, state, minute in batch
        ]
        columns = {
            "tenant_id": [e.tenant_id for e in events],
            "entity_id": [e.entity_id for e in events],
            "state_id": [e.state_id for e in events],
            "event_time": [e.event_time for e in events],
            "event_time_text": [None for _ in events],
            "ingested_at": [e.ingested_at for e in events],
        }
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"batch_{ingested_minute:05d}.parquet"
        pq.write_table(pa.table(columns, schema=LANDED_SCHEMA), path)
        return path, events

    def dbt(self, *options: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "tests.integration.dbt_process", *options],
            cwd=PROJECT_DIR,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=600,
        )

    def run_and_dump(self) -> dict:
        output = self.home / "dump.json"
        finished = self.dbt("--dump", str(output), "run")
        assert finished.returncode == 0, finished.stdout[-4000:] + finished.stderr[-4000:]
        return json.loads(output.read_text())


def _as_time(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def _assert_equals_reference(
    dump: dict, events: list[Event], *, late_batch_applied_alone: bool = True, repaired_batch: datetime | None = None
) -> None:
    """Compare the view with the recompute; a late event applied by a later run than its entity's earlier events
    must have been applied by a repair write. `repaired_batch`, when given, names the batch that repair must have
    walked (the table also holds earlier repairs), and `late_batch_applied_alone` is then not read."""
    reference = recompute(events)
    rows = dump["entity_state_view"]
    closed = [
        ClosedStay(
            r["tenant_id"],
            r["entity_id"],
            r["state_id"],
            r["next_state_id"],
            _as_time(r["start_time"]),
            _as_time(r["end_time"]),
            _as_time(r["last_event_ts"]),
        )
        for r in rows
        if not r["is_open"]
    ]
    opened = [
        OpenStay(r["tenant_id"], r["entity_id"], r["state_id"], _as_time(r["start_time"]), _as_time(r["last_event_ts"]))
        for r in rows
        if r["is_open"]
    ]
    assert sorted(closed, key=repr) == sorted(reference.closed, key=repr)
    assert sorted(opened, key=repr) == sorted(reference.open, key=repr)
    # one row per stay, by its key
    keys = [(r["tenant_id"], r["entity_id"], r["start_time"], r["state_id"]) for r in dump["entity_state_segments"]]
    assert len(keys) == len(set(keys)), "entity_state_segments holds a stay twice"
    assert stays_from_changes(dump["entity_state_changes"]) == sorted(reference.closed, key=repr), (
        "entity_state_changes does not rebuild the closed stays"
    )
    walked = {
        _as_time(r["repaired_through_ingested_at"])
        for r in dump["entity_state_segments"]
        if r["repaired_through_ingested_at"]
    }
    if repaired_batch is not None:
        assert repaired_batch in walked, "the late batch was applied without a repair"
    elif late_batch_applied_alone:
        assert walked or not reference.late, "a late event was applied without a repair"
    else:
        assert not walked, "one run applied both batches, so it had nothing to repair"


@pytest.fixture
def driver_archive(tmp_path_factory) -> Path:
    """The class archive `entity-state driver-archive` writes, for the processes of the kill chain."""
    archive = tmp_path_factory.mktemp("jvm") / "spark-driver.jsa"
    written = subprocess.run(
        [str(Path(sys.executable).parent / "entity-state"), "driver-archive"],
        cwd=PROJECT_DIR,
        env={
            **os.environ,
            "DBT_PROFILES_DIR": str(PROJECT_DIR / "profiles"),
            **ONE_RUN_DRIVER,
            "ENTITY_STATE_DRIVER_ARCHIVE": str(archive),
        },
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert written.returncode == 0, written.stdout[-4000:] + written.stderr[-4000:]
    # one line of its own, none of Java's or dbt's; its scratch state removed
    assert written.stdout.startswith(f"entity-state driver-archive: wrote {archive} ("), written.stdout
    assert len(written.stdout.splitlines()) == 1, written.stdout
    assert list(archive.parent.iterdir()) == [archive]
    return archive


def test_a_run_killed_at_any_point_is_repaired_by_a_plain_rerun(tmp_path, driver_archive):
    """Each kill point in turn, on one state home: a run applying a batch with a late event is killed there, and the
    next process reruns plainly, checks the state against the recompute, then lands the next batch and is the next
    killed run. A rerun and the next killed run share a process (one JVM start per kill point, not two); each run
    is killed where the runs before it left the state, a rerun after every kill included. Every driver must map the
    archive: with -Xshare:on Java refuses to start without it."""
    project = ProcessProject(tmp_path / "home", driver_archive)
    project.env["ENTITY_STATE_DRIVER_JAVA_OPTIONS"] += " -Xshare:on"
    project.land(FIRST_BATCH, 1)
    home = project.home
    pending = home.parent / "pending"
    repaired_batch, rerun_of = None, None
    for index, (point, (pattern, when)) in enumerate(KILL_POINTS.items()):
        batch_file, batch = project.write_batch(KILL_BATCHES[index], index + 2, pending)
        dump = home / "dump.json"
        for left_by_the_process_before in (home / "killed_at", dump):
            left_by_the_process_before.unlink(missing_ok=True)

        killed = project.dbt(
            "--dump",
            str(dump),
            "--then-land",
            str(batch_file),
            "--then-kill-at",
            pattern,
            "--then-kill-when",
            when,
            "run",
        )

        output = killed.stdout[-4000:] + killed.stderr[-4000:]
        assert killed.returncode == -signal.SIGKILL, f"{point}: not killed\n{output}"
        assert (home / "killed_at").read_text() == when, point
        # the dump is the rerun after the kill before this one (in the first process, the first batch's run)
        with _after(rerun_of):
            _assert_equals_reference(json.loads(dump.read_text()), project.landed, repaired_batch=repaired_batch)
        project.landed += batch
        repaired_batch, rerun_of = batch[0].ingested_at, point
    with _after(rerun_of):
        _assert_equals_reference(project.run_and_dump(), project.landed, repaired_batch=repaired_batch)


@contextmanager
def _after(point: str | None) -> Iterator[None]:
    """Name the kill point whose rerun an assertion checks (none: the first batch's run, before any kill)."""
    try:
        yield
    except AssertionError as error:
        after = f"a kill {point} and a plain rerun" if point else "the first batch's run, before any kill"
        raise AssertionError(f"after {after}: {error}") from error


def test_a_first_run_killed_while_it_builds_a_state_table_is_repaired_by_a_plain_rerun(tmp_path):
    project = ProcessProject(tmp_path / "home")
    project.land(FIRST_BATCH, 1)

    killed = project.dbt(
        "--kill-at", r"create or replace table \S*entity_state_segments\b", "--kill-when", "mid-write", "run"
    )

    assert killed.returncode == -signal.SIGKILL, killed.stdout[-4000:] + killed.stderr[-4000:]
    assert (project.home / "killed_at").read_text() == "mid-write"
    project.land(SECOND_BATCH, 2)
    # nothing was committed, so the rerun walks both batches at once: e-3's R is early in that walk, not late
    _assert_equals_reference(project.run_and_dump(), project.landed, late_batch_applied_alone=False)


def test_of_two_runs_at_the_same_time_one_proceeds_and_the_other_is_refused_at_once(tmp_path):
    """The run lock is taken before dbt connects, so it holds on a state home no run has built yet too. A home of its
    own, with no first state or archive shared with the kill chain: the pytest process that gets this test builds
    and writes neither for it."""
    home = tmp_path / "home"
    project = ProcessProject(home)
    project.land(FIRST_BATCH, 1)
    project.land(SECOND_BATCH, 2)

    runs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.integration.dbt_process", "run"],
            cwd=PROJECT_DIR,
            env=project.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [run.communicate(timeout=600)[0] for run in runs]

    # The first to start holds the state home's run lock until it exits; the other stops before it connects, with
    # a message that says so, instead of waiting on the metastore. The runs never overlap, so nothing is applied
    # twice; a plain rerun then finds nothing new and the state equals the reference.
    codes = sorted(run.returncode for run in runs)
    assert codes == [0, 1], outputs
    refused = next(output for run, output in zip(runs, outputs, strict=True) if run.returncode != 0)
    assert f"Another dbt run holds the state in {home}" in refused, refused[-3000:]
    assert "Derby" not in refused, refused[-3000:]
    # the run that proceeded applied both batches at once: e-3's R is early in its walk, not late
    _assert_equals_reference(project.run_and_dump(), project.landed, late_batch_applied_alone=False)
