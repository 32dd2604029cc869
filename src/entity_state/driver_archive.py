"""`entity-state driver-archive`: the classes a Spark driver loads, archived once so that each `dbt` command starts
sooner.

Each `dbt` command on the `local` target starts a Spark driver (a JVM) that loads and verifies Spark's, Hive's and
Parquet's classes from their jars before it runs anything. Java 17 can write the classes a JVM loaded to an archive
when it exits (`-XX:ArchiveClassesAtExit`) and map that archive at a later start instead (`-XX:SharedArchiveFile`,
class data sharing). The `local` profile starts every driver with the archive at ENTITY_STATE_DRIVER_ARCHIVE
(default `$ENTITY_STATE_HOME/jvm/spark-driver.jsa`): Java ignores a missing file, and one written by another Java or
another PySpark install with a warning that names it (write it again then).

This command writes that archive. It runs dbt in this process on a scratch state of its own (a state home, landing
folder and dbt target folder in a temporary folder beside the archive, removed at the end; nothing of yours is read or
written): a first run on a generated batch, then the scheduled build on a second one with late events, so the driver
loads what a run and a build load. It then stops the driver, which makes Java write the archive, and moves the
archive into place whole.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from entity_state.environment import overridden_environment
from entity_state.generate import StreamConfig, generate
from entity_state.paths import driver_archive

SCRATCH_SCHEMA = "entity_state_driver_archive"
# The scratch state's events: small, since what the archive keeps is the classes a run loads, not anything of its rows.
SCRATCH_STREAM = StreamConfig(
    tenants=2, entities=200, duplicate_share=0.02, late_share=0.05, late_by=timedelta(hours=1)
)
SCRATCH_BATCH_EVENTS = 500
# Java's own lines about the classes it cannot archive (signed jars, old class versions) are not for the user.
QUIET_ARCHIVING = "-Xlog:cds=off -Xlog:cds+dynamic=off"
DRIVER_EXIT_SECONDS = 300


class ArchiveNotWritten(Exception):
    """The scratch runs failed, or Java wrote no archive."""


def main(project: Path) -> int:
    target = driver_archive()
    if target is None:
        print(
            "entity-state driver-archive: ENTITY_STATE_DRIVER_ARCHIVE is empty, which turns the archive off: "
            "set it to a file path (or unset it for $ENTITY_STATE_HOME/jvm/spark-driver.jsa) to write one",
            file=sys.stderr,
        )
        return 2
    started = time.perf_counter()
    try:
        write_driver_archive(target, project)
    except ArchiveNotWritten as error:
        print(f"entity-state driver-archive: {error}", file=sys.stderr)
        return 1
    megabytes = target.stat().st_size / 2**20
    print(
        f"entity-state driver-archive: wrote {target} ({megabytes:.0f} MB) in {time.perf_counter() - started:.0f} s; "
        "each dbt command on the local target now starts its Spark driver with it"
    )
    return 0


def write_driver_archive(target: Path, project: Path) -> None:
    """Run the scratch state's dbt calls on the dbt project in `project`, with its profiles, in this process and with
    a driver that archives its classes at exit; stop that driver, and move its archive to `target`. This process
    cannot start Spark again afterwards."""
    from dbt.cli.main import dbtRunner

    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="driver-archive-", dir=target.parent))
    try:
        written = scratch / "spark-driver.jsa"
        landing = scratch / "landing"
        batches = generate(SCRATCH_STREAM, 2, SCRATCH_BATCH_EVENTS, landing)
        folders = ["--project-dir", str(project), "--profiles-dir", str(project / "profiles")]
        folders += ["--target-path", str(scratch / "target"), "--log-path", str(scratch / "logs")]
        with overridden_environment(_scratch_settings(scratch, landing, written)):
            runner = dbtRunner()
            for command in (["run"], ["build", "--selector", "scheduled"]):
                next(batches)
                result = runner.invoke([*command, "--quiet", *folders])
                if not result.success:
                    # dbt printed its errors above (--quiet keeps them)
                    reason = f": {result.exception}" if result.exception else ""
                    failed = f"the scratch `dbt {' '.join(command)}` failed{reason}"
                    raise ArchiveNotWritten(f"{failed}. No archive written.")
            _stop_driver()
        if not written.is_file():
            raise ArchiveNotWritten(f"the driver exited without writing {written}. No archive written.")
        os.replace(written, target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _scratch_settings(scratch: Path, landing: Path, written: Path) -> dict[str, str]:
    """The settings the profile reads, pointed at the scratch state. The driver is started without an archive to read
    (Java cannot read one and write one at once), with the user's own options kept."""
    options = os.environ.get("ENTITY_STATE_DRIVER_JAVA_OPTIONS", "")
    return {
        "ENTITY_STATE_HOME": str(scratch / "home"),
        "ENTITY_STATE_LANDING_DIR": str(landing),
        "ENTITY_STATE_SCHEMA": SCRATCH_SCHEMA,
        "ENTITY_STATE_TARGET": "local",
        "ENTITY_STATE_DRIVER_ARCHIVE": "",
        "ENTITY_STATE_DRIVER_JAVA_OPTIONS": f"{options} -XX:ArchiveClassesAtExit={written} {QUIET_ARCHIVING}".strip(),
    }


def _stop_driver() -> None:
    """Stop the Spark session dbt opened and wait for its JVM to exit: Java writes the archive on the way out. PySpark's
    driver exits when its standard input closes."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    gateway = SparkContext._gateway
    if gateway is None:
        raise ArchiveNotWritten("no Spark driver was started in this process. No archive written.")
    SparkSession.builder.getOrCreate().stop()
    gateway.proc.stdin.close()
    try:
        gateway.proc.wait(timeout=DRIVER_EXIT_SECONDS)
    except subprocess.TimeoutExpired as error:
        waited = f"the driver did not exit within {DRIVER_EXIT_SECONDS} s"
        raise ArchiveNotWritten(f"{waited}. No archive written.") from error
