"""`entity-state jars`: the Java packages of jars.lock in .venv/jars, each checked against its pinned SHA-256.

Maven (`mvn dependency:copy`, from the machine's Maven settings) fetches a jar only when the folder lacks it or holds
a file whose checksum differs; a file that does not match after the copy is removed and the command fails, so no
Spark process ever loads an unverified jar. Spark finds them by the paths `spark_jars` gives.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
LOCK_FILE = PROJECT_ROOT / "jars.lock"
JARS_DIR = Path(sys.prefix) / "jars"
# What a Spark session needs for Delta Lake tables; the local profile names the same files
# (tests/unit/test_profiles.py keeps the two equal).
DELTA_ARTIFACTS = ("delta-spark_2.12", "delta-storage")


class JarError(RuntimeError):
    """A pinned jar cannot be had or does not match its checksum; the message says what to do."""


@dataclass(frozen=True)
class PinnedJar:
    group: str
    artifact: str
    version: str
    sha256: str

    @property
    def coordinates(self) -> str:
        return f"{self.group}:{self.artifact}:{self.version}"

    @property
    def file_name(self) -> str:
        # without its version, so that the profile names it once: a new pin is a new checksum, and fetched again
        return f"{self.artifact}.jar"


def read_lock(path: Path = LOCK_FILE) -> list[PinnedJar]:
    jars = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            coordinates, sha256 = line.split()
            group, artifact, version = coordinates.split(":")
        except ValueError:
            raise JarError(
                f"{path.name} line {number}: expected 'group:artifact:version sha256', got {line!r}"
            ) from None
        jars.append(PinnedJar(group, artifact, version, sha256.lower()))
    return jars


def install(jars_dir: Path = JARS_DIR, lock: Path = LOCK_FILE) -> list[Path]:
    """Every jar of the lock in `jars_dir`, verified; fetched with Maven only when missing or not matching."""
    jars_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for jar in read_lock(lock):
        path = jars_dir / jar.file_name
        if not _matches(path, jar):
            path.unlink(missing_ok=True)
            _copy_with_maven(jar, jars_dir)
            if not _matches(path, jar):
                path.unlink(missing_ok=True)
                raise JarError(
                    f"{jar.coordinates}: the file Maven delivered does not have the SHA-256 {lock.name} pins "
                    f"({jar.sha256}); it was removed. Check the Maven repository this machine uses, "
                    f"or update the pin in {lock.name} if the version moved on purpose."
                )
        paths.append(path)
    return paths


def spark_jars(jars_dir: Path = JARS_DIR, lock: Path = LOCK_FILE, artifacts: tuple[str, ...] | None = None) -> str:
    """The `spark.jars` value for the pinned jars (all, or those whose artifact is named), each checked present."""
    paths = []
    for jar in read_lock(lock):
        if artifacts is not None and jar.artifact not in artifacts:
            continue
        path = jars_dir / jar.file_name
        if not path.is_file():
            raise JarError(f"{path} is missing: run `make install` (it copies the jars of {lock.name})")
        paths.append(str(path))
    return ",".join(paths)


def _matches(path: Path, jar: PinnedJar) -> bool:
    if not path.is_file():
        return False
    return hashlib.sha256(path.read_bytes()).hexdigest() == jar.sha256


def _copy_with_maven(jar: PinnedJar, jars_dir: Path) -> None:
    command = [
        "mvn",
        "--batch-mode",
        "--quiet",
        "--strict-checksums",
        "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy",
        f"-Dartifact={jar.coordinates}",
        f"-DoutputDirectory={jars_dir}",
        "-Dmdep.overWriteReleases=true",
        "-Dmdep.stripVersion=true",
    ]
    try:
        result = subprocess.run(command, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise JarError("Maven (mvn) is missing: install it (apt-get install maven), then run `make install`") from None
    if result.returncode != 0:
        raise JarError(f"Maven could not copy {jar.coordinates}:\n{(result.stdout + result.stderr).strip()[-2000:]}")


def main() -> int:
    try:
        for path in install():
            print(path)
    except JarError as error:
        print(f"entity-state jars: {error}", file=sys.stderr)
        return 1
    return 0
