"""`make demo`: land the shipped demo events in several batches, run `dbt build` after each, print a timeline.

The demo uses its own schema and landing folder (ENTITY_STATE_SCHEMA / ENTITY_STATE_LANDING_DIR, set by the
Makefile) and starts them from scratch, so it can be rerun without touching data you landed yourself.
"""

from __future__ import annotations

import os
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

from entity_state.landing import land, landing_dir, read_events, slices

DEMO_EVENTS = Path("data/demo/events.csv")


def run_demo(batches: int, tenant: str, entity: str) -> int:
    from dbt.cli.main import dbtRunner

    runner = dbtRunner()
    schema = os.environ.get("ENTITY_STATE_SCHEMA", "entity_state")
    directory = landing_dir()
    shutil.rmtree(directory, ignore_errors=True)
    if not runner.invoke(["run-operation", "drop_schema_for_demo", "--args", f"{{schema: {schema}}}"]).success:
        return 1
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=batches)
    for number, part in enumerate(slices(read_events(DEMO_EVENTS), batches), start=1):
        batch = land(part, start + timedelta(minutes=number), directory)
        print(f"\n== batch {number}/{batches}: {batch.rows} events landed in {batch.path.name}; dbt build", flush=True)
        if not runner.invoke(["build", "--quiet"]).success:
            print("dbt build failed; see logs/dbt.log")
            return 1
    print(f"\n== timeline of {tenant}/{entity} (entity_state_view)", flush=True)
    query = (
        "select state_id, next_state_id, start_time, end_time, last_event_ts, is_open "
        "from {{ ref('entity_state_view') }} "
        f"where tenant_id = '{tenant}' and entity_id = '{entity}' order by start_time, is_open"
    )
    return 0 if runner.invoke(["show", "--inline", query, "--limit", "-1", "--quiet"]).success else 1
