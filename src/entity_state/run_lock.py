"""One dbt run at a time per state home.

On the `local` target the state home holds the embedded metastore, which admits one process: a second run would
otherwise block in its first statement while Hive retries the metastore, then maybe fail with a Java trace. The
lock turns that into an immediate, plain error. It is an operating-system record lock on `<home>/run.lock`: the
kernel releases it when the holding process exits, however it exits, so a killed run never leaves a stale lock.
"""

from __future__ import annotations

import fcntl
import os
import socket
from datetime import UTC, datetime
from pathlib import Path

LOCK_FILE_NAME = "run.lock"

# Open lock files of this process, by path. Closing any descriptor of a file drops every record lock the process
# holds on it, so each stays open for the life of the process, as the metastore it guards does.
_held: dict[Path, int] = {}


class StateHomeLocked(RuntimeError):
    """Another process holds the state home."""


def state_home() -> Path:
    """The state home the `local` profile uses, resolved as Spark resolves it (against the working directory)."""
    return Path(os.environ.get("ENTITY_STATE_HOME", ".local")).resolve()


def acquire(home: Path, command: str) -> None:
    """Hold the run lock of `home` until this process exits, or raise StateHomeLocked naming the holder."""
    lock_path = home / LOCK_FILE_NAME
    if lock_path in _held:
        return
    home.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.lockf(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = os.pread(descriptor, 4096, 0).decode(errors="replace").strip() or "a process that is starting"
        os.close(descriptor)
        raise StateHomeLocked(
            f"Another dbt run holds the state in {home} ({holder}). Runs on one state home never overlap: wait "
            f"for that run to finish, then run again. Nothing was read or written by this one. The lock is "
            f"released when that process exits, even if it is killed."
        ) from None
    os.ftruncate(descriptor, 0)
    started_at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    os.pwrite(
        descriptor, f"pid {os.getpid()} on {socket.gethostname()}, `dbt {command}` since {started_at}".encode(), 0
    )
    _held[lock_path] = descriptor
