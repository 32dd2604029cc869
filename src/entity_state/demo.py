"""`entity-state demo` (`make demo`): land the shipped demo events in several batches, run `dbt build` after each,
print one entity's timeline.

The demo works in a landing folder and a schema of its own, whatever the environment says: it lands in
`$ENTITY_STATE_HOME/demo/landing` (default `.local/demo/landing`, next to the warehouse and metastore, never landed
data) and builds the schema `entity_state_demo`. It sets ENTITY_STATE_LANDING_DIR and ENTITY_STATE_SCHEMA for its
own dbt calls only, and puts them back afterwards.

To start from scratch it deletes only the batch files it wrote itself: a marker file in its folder records each one
(name and SHA-256) before and after it is written. A folder without the marker, or holding any other file, or a file
changed since the demo wrote it, makes the demo stop with a message before it runs anything. It never deletes a
folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

from entity_state.environment import overridden_environment
from entity_state.paths import local_path, nested, state_home

DEMO_EVENTS = Path("data/demo/events.csv")
DEMO_SCHEMA = "entity_state_demo"
# the profile's schema when ENTITY_STATE_SCHEMA is unset (profiles/profiles.yml)
DEFAULT_SCHEMA = "entity_state"
# the demo's events are from 2026-01-01, so with this setting its open stays show as stale in the picture
DEMO_STALE_AFTER = "30 minutes"
MARKER = ".entity_state_demo.json"
# write_atomically's temporary names (`.<name>.<8 hex>.tmp`), and the marker's own while it is rewritten
TEMPORARY = re.compile(r"^\.(?P<name>.+)\.[0-9a-f]{8}\.tmp$")


class DemoRefused(RuntimeError):
    """The demo would touch something that is not its own; the message names it and says what to do."""


def demo_folder() -> Path:
    """The demo's landing folder: `demo/landing` in the state home (ENTITY_STATE_HOME, default `.local`)."""
    return state_home() / "demo" / "landing"


class DemoFolder:
    """The demo's landing folder and the marker that records the batch files the demo wrote there."""

    def __init__(self, path: Path, batches: dict[str, str | None]) -> None:
        self.path = path
        self.batches = batches  # file name -> SHA-256 once written (None while it is being written)

    @classmethod
    def claim(cls, path: Path) -> DemoFolder:
        """Create the folder with its marker, or check that it is the demo's and delete the demo's files in it.

        Raises DemoRefused, having deleted nothing, when the folder has no marker or holds anything the demo did
        not write (or a file the demo wrote that has changed since).
        """
        if not path.exists() and not path.is_symlink():
            return cls._create(path)
        if path.is_symlink() or not path.is_dir():
            raise DemoRefused(f"{path} is not a folder the demo created; move it away, then run the demo again.")
        entries = sorted(path.iterdir())
        if not (path / MARKER).is_file():
            raise DemoRefused(
                f"{path} exists but is not the demo's folder (it has no {MARKER}, which the demo creates with the "
                f"folder){_listing(entries)}. The demo only deletes files it wrote itself: move that folder away, "
                f"then run the demo again."
            )
        batches = _read_marker(path / MARKER)
        own, foreign = [], []
        for entry in entries:
            if entry.name == MARKER:
                continue
            reason = _not_own(entry, batches)
            if reason is None:
                own.append(entry)
            else:
                foreign.append(f"{entry.name} ({reason})")
        if foreign:
            raise DemoRefused(
                f"{path} holds files the demo did not write: {', '.join(foreign)}. The demo never deletes them "
                f"(they may be landed data): move them out of that folder, then run the demo again. Nothing was "
                f"deleted."
            )
        for entry in own:
            entry.unlink()
        folder = cls(path, {})
        folder._save()
        return folder

    @classmethod
    def _create(cls, path: Path) -> DemoFolder:
        # built aside with its marker, then renamed into place: the folder never exists without its marker
        aside = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
        aside.mkdir(parents=True)
        cls(aside, {})._save()
        os.rename(aside, path)
        return cls(path, {})

    def land(self, table, ingested_at: datetime):
        """Land one batch in the folder, recording its name in the marker before and its digest after."""
        from entity_state.landing import batch_name, land

        name = batch_name(ingested_at)
        self.batches[name] = None
        self._save()
        batch = land(table, ingested_at, self.path, name)
        self.batches[name] = _digest(batch.path)
        self._save()
        return batch

    def _save(self) -> None:
        document = {
            "written_by": "entity-state demo",
            "about": "This folder is the demo's own; the demo deletes the files listed here, and only them.",
            "batches": self.batches,
        }
        temporary = self.path / f"{MARKER}.{uuid.uuid4().hex[:8]}.tmp"
        temporary.write_text(json.dumps(document, indent=2) + "\n")
        os.replace(temporary, self.path / MARKER)  # the demo's own marker, never a landed file


def _read_marker(marker: Path) -> dict[str, str | None]:
    try:
        batches = json.loads(marker.read_text())["batches"]
        if isinstance(batches, dict) and all(isinstance(name, str) for name in batches):
            return batches
    except (OSError, ValueError, KeyError, TypeError):
        pass
    raise DemoRefused(
        f"{marker} cannot be read as the demo's record of its files, so the demo cannot tell its files from others "
        f"in {marker.parent}: move that folder away, then run the demo again."
    )


def _not_own(entry: Path, batches: dict[str, str | None]) -> str | None:
    """None for a file the demo wrote (a recorded batch, or a temporary file of the demo's), else why the entry is
    not the demo's."""
    name = entry.name
    if entry.is_symlink() or not entry.is_file():
        return "not a regular file"
    temporary = TEMPORARY.match(name)
    if temporary and (temporary["name"] in batches or temporary["name"] == MARKER.removeprefix(".")):
        return None
    if name in batches:
        digest = batches[name]
        # None: killed between landing it and recording its digest; its name has a random part the demo chose
        if digest is None or digest == _digest(entry):
            return None
        return "changed since the demo wrote it"
    return "not written by the demo"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _listing(entries: list[Path], limit: int = 10) -> str:
    if not entries:
        return ""
    names = ", ".join(entry.name for entry in entries[:limit])
    more = f" and {len(entries) - limit} more" if len(entries) > limit else ""
    return f" and holds {names}{more}"


def check_environment(folder: Path) -> str | None:
    """The line telling that the environment's landing folder or schema is ignored (None if they are the demo's);
    raises DemoRefused when the environment's landing folder and the demo's lie one inside the other."""
    ignored = []
    landing = os.environ.get("ENTITY_STATE_LANDING_DIR")
    if landing is not None:
        path = local_path(landing)
        if path != folder:
            if path is not None and nested(path, folder):
                raise DemoRefused(
                    f"ENTITY_STATE_LANDING_DIR={landing} and the demo's folder {folder} lie one inside the other: "
                    f"the demo would write among landed files. Point ENTITY_STATE_LANDING_DIR elsewhere or unset "
                    f"it (the demo does not use it), or move ENTITY_STATE_HOME."
                )
            ignored.append(f"ENTITY_STATE_LANDING_DIR={landing}")
    schema = os.environ.get("ENTITY_STATE_SCHEMA")
    if schema is not None and schema != DEMO_SCHEMA:
        ignored.append(f"ENTITY_STATE_SCHEMA={schema}")
    if not ignored:
        return None
    return (
        f"entity-state demo: ignores {' and '.join(ignored)} from the environment; it lands in {folder} and builds "
        f"schema {DEMO_SCHEMA}"
    )


@contextmanager
def demo_environment(folder: Path) -> Iterator[None]:
    """The demo's landing folder and schema for the dbt calls made inside; the environment as it was afterwards."""
    settings = {"ENTITY_STATE_LANDING_DIR": str(folder), "ENTITY_STATE_SCHEMA": DEMO_SCHEMA}
    # run outside make (which exports it), dbt would look for ~/.dbt/profiles.yml and stop without a word here
    settings["DBT_PROFILES_DIR"] = os.environ.get("DBT_PROFILES_DIR") or str(Path("profiles").resolve())
    # the demo's dbt calls share one Spark driver: Java's default compiler, as for any driver kept alive (the profile
    # gives a single `dbt` command the quick one), unless the environment says otherwise
    settings["ENTITY_STATE_DRIVER_KEPT_ALIVE"] = os.environ.get("ENTITY_STATE_DRIVER_KEPT_ALIVE") or "true"
    with overridden_environment(settings):
        yield


@contextmanager
def documented_state() -> Iterator[str | None]:
    """The state `entity-state docs` documents: the environment's, unless it names no schema and the default
    schema holds no state while the demo's does; then the demo's (its landing folder too, so that the docs'
    hooks refresh its landing table as the demo left it). Yields the line that says so, or None."""
    warehouse = state_home() / "warehouse"
    # built: it holds the stays (a compile or docs run alone creates the schema and its landing table)
    built = {
        schema: (warehouse / f"{schema}.db" / "entity_state_segments").is_dir()
        for schema in (DEFAULT_SCHEMA, DEMO_SCHEMA)
    }
    if "ENTITY_STATE_SCHEMA" in os.environ or built[DEFAULT_SCHEMA] or not built[DEMO_SCHEMA]:
        yield None
        return
    with demo_environment(demo_folder()):
        yield (
            f"documenting the demo's state (schema {DEMO_SCHEMA}): schema {DEFAULT_SCHEMA} holds no state "
            "(set ENTITY_STATE_SCHEMA to choose)"
        )


def run_demo(batches: int, tenant: str, entity: str) -> int:
    if not DEMO_EVENTS.is_file() or not Path("dbt_project.yml").is_file():
        print(f"entity-state demo: run it from the project folder (no {DEMO_EVENTS} here)", file=sys.stderr)
        return 2
    folder = demo_folder()
    try:
        notice = check_environment(folder)
        if notice:
            print(notice, flush=True)
        demo = DemoFolder.claim(folder)
    except DemoRefused as error:
        print(f"entity-state demo: {error}", file=sys.stderr)
        return 2
    with demo_environment(folder):
        return _build(demo, batches, tenant, entity)


def _build(demo: DemoFolder, batches: int, tenant: str, entity: str) -> int:
    from dbt.cli.main import dbtRunner

    from entity_state.landing import read_events, slices

    runner = dbtRunner()
    if not runner.invoke(["run-operation", "drop_schema_for_demo", "--args", f"{{schema: {DEMO_SCHEMA}}}"]).success:
        return 1
    settings = ["--vars", json.dumps({"entity_state__stale_after": DEMO_STALE_AFTER})]
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=batches)
    for number, part in enumerate(slices(read_events(DEMO_EVENTS), batches), start=1):
        batch = demo.land(part, start + timedelta(minutes=number))
        print(f"\n== batch {number}/{batches}: {batch.rows} events landed in {batch.path.name}; dbt build", flush=True)
        if not runner.invoke(["build", "--quiet", *settings]).success:
            print("dbt build failed; see logs/dbt.log")
            return 1
    print(f"\n== timeline of {tenant}/{entity} (entity_state_view)", flush=True)
    query = (
        "select state_id, next_state_id, start_time, end_time, last_event_ts, is_open "
        "from {{ ref('entity_state_view') }} "
        f"where tenant_id = '{tenant}' and entity_id = '{entity}' order by start_time, is_open"
    )
    if not runner.invoke(["show", "--inline", query, "--limit", "-1", "--quiet", *settings]).success:
        return 1
    return _draw_timeline(runner, tenant, settings)


def _draw_timeline(runner, tenant: str, settings: list[str]) -> int:
    """The picture of the tenant's entities: written under the state home, its path printed."""
    from entity_state.timeline import draw, read_stays

    stays = read_stays(runner, tenant, vars_=settings[1])
    if not stays:
        print(f"no stays of tenant {tenant} to draw")
        return 1
    path = draw(stays, state_home() / "demo" / "timeline.png", title=f"Stays of tenant {tenant} (entity_state_view)")
    print(
        f"\n== timeline picture of tenant {tenant}: {path}\n"
        f"   (open stays hatched; stale after {DEMO_STALE_AFTER} of silence: marked with a cross at the last event)"
    )
    return 0
