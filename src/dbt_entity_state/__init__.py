"""dbt plugin of the entity_state project: takes the state home's run lock before dbt opens a connection.

dbt imports every top-level module named `dbt_*` that defines `plugins` and starts those plugins at the beginning
of each invocation, before it connects: the only point where a second run can be stopped before it touches the
metastore. Installed with the project (`make install`); a dbt without it falls back on the metastore's own lock.
"""

from __future__ import annotations

from dbt.flags import get_flags
from dbt.plugins.manager import dbtPlugin

from entity_state import run_lock

PROJECT_NAME = "entity_state"

# Commands that never connect to Spark, so never touch the state.
OFFLINE_COMMANDS = frozenset({"clean", "deps", "init", "list", "ls", "parse", "serve"})


class StateHomeRunLock(dbtPlugin):
    def initialize(self) -> None:
        if self.project_name != PROJECT_NAME:
            return
        command = getattr(get_flags(), "WHICH", None) or "invocation"
        if command in OFFLINE_COMMANDS:
            return
        run_lock.acquire(run_lock.state_home(), command)


plugins = [StateHomeRunLock]
