"""The run lock of a state home: a second process is refused at once, and a dead holder never blocks anyone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from entity_state import run_lock

HOLD = (
    "import sys, time; from pathlib import Path; from entity_state import run_lock; "
    "run_lock.acquire(Path(sys.argv[1]), 'run'); print('held', flush=True); time.sleep(600)"
)


@pytest.fixture
def holder(tmp_path: Path):
    process = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "held"
    yield process
    process.kill()
    process.wait()


def test_a_second_process_is_refused_with_a_message_naming_the_holder(tmp_path: Path, holder):
    with pytest.raises(run_lock.StateHomeLocked) as refused:
        run_lock.acquire(tmp_path, "run")
    message = str(refused.value)
    assert f"Another dbt run holds the state in {tmp_path}" in message
    assert f"pid {holder.pid} " in message
    assert "`dbt run`" in message


def test_a_killed_holder_leaves_no_stale_lock(tmp_path: Path, holder):
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    run_lock.acquire(tmp_path, "build")
    assert (tmp_path / run_lock.LOCK_FILE_NAME).read_text().startswith(f"pid {os.getpid()} ")


def test_taking_the_lock_again_in_the_holding_process_keeps_it_held(tmp_path: Path):
    run_lock.acquire(tmp_path, "run")
    run_lock.acquire(tmp_path, "test")
    probe = subprocess.run(
        [sys.executable, "-c", HOLD.replace("time.sleep(600)", "pass"), str(tmp_path)], capture_output=True, text=True
    )
    assert probe.returncode != 0
    assert "StateHomeLocked: Another dbt run holds the state" in probe.stderr, probe.stderr
