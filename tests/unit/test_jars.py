"""jars.lock and `entity-state jars`: a pinned jar is used only when its checksum matches, fetched only when it does
not, and a file that still does not match is removed and named in the error."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from entity_state import jars
from entity_state.jars import JarError, install, read_lock, spark_jars


def _lock(tmp_path: Path, content: bytes, group: str = "org.example", artifact: str = "thing") -> Path:
    lock = tmp_path / "jars.lock"
    lock.write_text(f"# a comment\n\n{group}:{artifact}:1.0 {hashlib.sha256(content).hexdigest()}\n")
    return lock


def _maven_delivering(content: bytes, calls: list[str]):
    def copy(jar, jars_dir: Path) -> None:
        calls.append(jar.coordinates)
        (jars_dir / jar.file_name).write_bytes(content)

    return copy


def test_the_project_lock_pins_delta_for_scala_2_12_and_each_jar_once():
    pinned = read_lock()
    artifacts = [jar.artifact for jar in pinned]
    assert "delta-spark_2.12" in artifacts and "delta-storage" in artifacts
    assert len(set(artifacts)) == len(artifacts)
    assert all(len(jar.sha256) == 64 for jar in pinned)


def test_a_matching_jar_is_kept_without_maven(tmp_path, monkeypatch):
    lock = _lock(tmp_path, b"jar bytes")
    (tmp_path / "jars").mkdir()
    (tmp_path / "jars" / "thing.jar").write_bytes(b"jar bytes")
    calls: list[str] = []
    monkeypatch.setattr(jars, "_copy_with_maven", _maven_delivering(b"other", calls))
    assert install(tmp_path / "jars", lock) == [tmp_path / "jars" / "thing.jar"]
    assert calls == []


def test_a_missing_or_altered_jar_is_fetched_again(tmp_path, monkeypatch):
    lock = _lock(tmp_path, b"jar bytes")
    (tmp_path / "jars").mkdir()
    (tmp_path / "jars" / "thing.jar").write_bytes(b"tampered")
    calls: list[str] = []
    monkeypatch.setattr(jars, "_copy_with_maven", _maven_delivering(b"jar bytes", calls))
    install(tmp_path / "jars", lock)
    assert calls == ["org.example:thing:1.0"]
    assert (tmp_path / "jars" / "thing.jar").read_bytes() == b"jar bytes"


def test_a_delivered_jar_with_another_checksum_is_removed_and_named(tmp_path, monkeypatch):
    lock = _lock(tmp_path, b"jar bytes")
    monkeypatch.setattr(jars, "_copy_with_maven", _maven_delivering(b"not the pinned jar", []))
    with pytest.raises(JarError, match=r"org\.example:thing:1\.0: .* SHA-256"):
        install(tmp_path / "jars", lock)
    assert not (tmp_path / "jars" / "thing.jar").exists()


def test_a_malformed_lock_line_is_named(tmp_path):
    lock = tmp_path / "jars.lock"
    lock.write_text("org.example:thing 0123\n")
    with pytest.raises(JarError, match="line 1: expected 'group:artifact:version sha256'"):
        read_lock(lock)


def test_spark_jars_lists_the_named_artifacts_and_refuses_a_missing_one(tmp_path):
    lock = _lock(tmp_path, b"jar bytes")
    with pytest.raises(JarError, match="run `make install`"):
        spark_jars(tmp_path, lock)
    (tmp_path / "thing.jar").write_bytes(b"jar bytes")
    assert spark_jars(tmp_path, lock) == str(tmp_path / "thing.jar")
    assert spark_jars(tmp_path, lock, artifacts=("other",)) == ""
