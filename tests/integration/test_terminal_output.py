"""The terminal shows dbt's own output only: Spark's progress bars and log lines go to the state home's log file.

One real dbt process (its own JVM, as a user's `dbt` command), started from another folder than the project, runs a
query whose Spark stage lasts long enough for a console progress bar (shown after 500 ms) if one were enabled.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from .dbt_harness import PROJECT_DIR

# Seconds of hashing on 2 cores: with spark.ui.showConsoleProgress on, this draws `[Stage 0:=====>  (1 + 1) / 2]`
# bars on stderr (checked), yet it is cheap next to a `dbt run`.
SLOW_QUERY = "select count(distinct id % 1000003) as buckets from range(0, 10000000, 1, 2)"
SPARK_MARKERS = ("[Stage ", "WARN ", "INFO ", "log4j", "Setting default log level", "sc.setLogLevel")


def test_dbt_output_has_no_spark_progress_bars_or_log_lines(tmp_path):
    home = tmp_path / "home"
    environment = {
        **os.environ,
        "ENTITY_STATE_HOME": str(home),
        "ENTITY_STATE_TARGET": "local",
        "ENTITY_STATE_SCHEMA": "entity_state_terminal",
    }
    # a user's command: dbt finds the profile from its arguments, and the driver starts as for one invocation
    environment.pop("DBT_PROFILES_DIR", None)
    environment.pop("ENTITY_STATE_DRIVER_KEPT_ALIVE", None)
    dbt = Path(sys.executable).with_name("dbt")
    arguments = ["show", "--inline", SLOW_QUERY, "--limit", "1"]
    arguments += ["--project-dir", str(PROJECT_DIR), "--profiles-dir", str(PROJECT_DIR / "profiles")]
    finished = subprocess.run(
        [str(dbt), *arguments], cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=600
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert finished.stderr == ""
    assert "| 1000003 |" in finished.stdout
    assert [marker for marker in SPARK_MARKERS if marker in finished.stdout] == []
    log = home / "logs" / "spark.log"
    assert log.is_file(), "Spark's log file is missing"
    assert "WARN" in log.read_text()
