"""`entity-state clean` (`make clean`): remove what the project creates and can rebuild, never landed data.

Removed, in the project folder: `.local` (the default state home: warehouse, metastore, demo, local cluster, bench
runs), `target` and `logs` (dbt's output). Never removed: the landing folder (ENTITY_STATE_LANDING_DIR, default
`data/landing/events`), the only copy of every landed batch. If that folder lies inside anything clean would
remove (or holds it), clean stops with a message before it stops or removes anything. A state home moved elsewhere
with ENTITY_STATE_HOME is not removed either: clean cannot know what else that folder holds.

Standard library only, so `python -m entity_state.clean` works where the virtual environment is gone.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from entity_state.paths import local_landing_dir, nested, state_home

REBUILDABLE = (".local", "target", "logs")
PROJECT_NAME = "entity_state"


class CleanRefused(RuntimeError):
    """Clean would remove landed data, or is not run from the project folder; the message says what to do."""


def project_folder(folder: Path) -> Path:
    """The folder, resolved, if it is this dbt project's root; raises CleanRefused otherwise, since `target` and
    `logs` anywhere else may be somebody else's."""
    folder = folder.resolve()
    project_file = folder / "dbt_project.yml"
    try:
        names = [line.split(":", 1)[1].strip().strip("'\"") for line in project_file.read_text().splitlines()
                 if line.startswith("name:")]  # fmt: skip
    except OSError:
        names = []
    if names != [PROJECT_NAME]:
        raise CleanRefused(
            f"{folder} is not the {PROJECT_NAME} project folder (no dbt_project.yml naming it): run clean there"
        )
    return folder


def targets(project: Path) -> list[Path]:
    return [project / name for name in REBUILDABLE]


def check(project: Path, env: Mapping[str, str] = os.environ) -> list[Path]:
    """The paths clean removes; raises CleanRefused when the landing folder lies inside one of them, or holds one."""
    landing = local_landing_dir(env)
    removed = targets(project)
    if landing is not None:
        clashes = [path for path in removed if nested(landing, path.resolve())]
        if clashes:
            setting = env.get("ENTITY_STATE_LANDING_DIR", "the default data/landing/events")
            raise CleanRefused(
                f"the landing folder {landing} (ENTITY_STATE_LANDING_DIR={setting}) lies inside "
                f"{' and '.join(str(path) for path in clashes)}, which clean would remove: that would delete landed "
                f"files, the only copy of their batches. Nothing was removed. Move the landed files to a folder of "
                f"their own and point ENTITY_STATE_LANDING_DIR there, then run clean again."
            )
    return removed


def clean(
    project: Path, env: Mapping[str, str] = os.environ, stop_cluster: Callable[[], None] | None = None
) -> list[Path]:
    """Check first, then stop the local cluster (it writes into `.local`), then remove; returns what was removed."""
    removed = check(project, env)
    if stop_cluster is not None:
        stop_cluster()
    done = []
    for path in removed:
        if path.is_symlink():
            path.unlink()  # the link only, never what it points at
        elif path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
        else:
            continue
        done.append(path)
    return done


def _stop_local_cluster() -> None:
    from entity_state import cluster

    cluster.down(cluster.Settings.from_env())


def main(argv: list[str] | None = None) -> int:
    if argv:
        print(f"entity-state clean takes no arguments, got {' '.join(argv)}", file=sys.stderr)
        return 2
    from entity_state.cluster import ClusterError

    try:
        project = project_folder(Path.cwd())
        removed = clean(project, os.environ, _stop_local_cluster)
    except CleanRefused as error:
        print(f"entity-state clean: {error}", file=sys.stderr)
        return 2
    except ClusterError as error:
        print(f"entity-state clean: the local cluster did not stop ({error}); nothing was removed", file=sys.stderr)
        return 1
    home = state_home()
    print(f"removed {', '.join(path.name for path in removed) or 'nothing (nothing to remove)'}")
    landing = local_landing_dir()
    if landing is not None and landing.exists():
        print(f"kept the landing folder {landing}: clean never removes landed files")
    if not nested(home, project / ".local"):
        print(f"kept ENTITY_STATE_HOME={home}: outside the project folder; remove it yourself if it is only state")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
