"""Where the configured folders are on this machine, for the commands that must not write into or delete landed data.

Standard library only: `entity-state clean` runs through it even where the project's virtual environment is gone.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import unquote, urlparse

DEFAULT_LANDING_DIR = "data/landing/events"
DEFAULT_STATE_HOME = ".local"
DEFAULT_DRIVER_ARCHIVE = "jvm/spark-driver.jsa"
URI = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def state_home(env: Mapping[str, str] = os.environ) -> Path:
    """ENTITY_STATE_HOME (default `.local`) resolved against the working directory, as Spark resolves it."""
    return Path(env.get("ENTITY_STATE_HOME", DEFAULT_STATE_HOME)).resolve()


def driver_archive(env: Mapping[str, str] = os.environ) -> Path | None:
    """The class archive the `local` profile starts Spark's driver with (profiles/profiles.yml reads the same
    settings): ENTITY_STATE_DRIVER_ARCHIVE, default `jvm/spark-driver.jsa` in the state home; None when that variable
    is set empty, which turns the archive off."""
    location = env.get("ENTITY_STATE_DRIVER_ARCHIVE")
    if location is None:
        return state_home(env) / DEFAULT_DRIVER_ARCHIVE
    return Path(location).resolve() if location else None


def local_landing_dir(env: Mapping[str, str] = os.environ) -> Path | None:
    """The landing folder ENTITY_STATE_LANDING_DIR names (default `data/landing/events`), resolved; None when it is
    a URI of another file system (s3://, hdfs://...), which no local command can reach."""
    return local_path(env.get("ENTITY_STATE_LANDING_DIR", DEFAULT_LANDING_DIR))


def local_path(location: str) -> Path | None:
    if URI.match(location):
        parsed = urlparse(location)
        if parsed.scheme.lower() != "file":
            return None
        location = unquote(parsed.path)
    return Path(location).resolve()


def nested(one: Path, other: Path) -> bool:
    """True when one of the two (resolved) paths is the other or lies inside it."""
    return one == other or one in other.parents or other in one.parents
