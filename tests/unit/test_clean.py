"""`entity-state clean` / `make clean`: removes what the project builds, never the landing folder."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from entity_state import clean as clean_module
from entity_state.cli import main

PROJECT_DIR = Path(__file__).resolve().parents[2]


@pytest.fixture
def stops() -> list[bool]:
    """One entry per stop of the local cluster: whether .local was still there then."""
    return []


@pytest.fixture
def project(tmp_path, monkeypatch, stops) -> Path:
    """A project folder with what a user has after some runs: state, dbt output and landed batches."""
    folder = tmp_path / "project"
    for path, content in {
        "dbt_project.yml": "name: entity_state\nversion: '0.1.0'\n",
        ".local/warehouse/entity_state.db/part-0.parquet": "state",
        ".local/demo/landing/batch_1.parquet": "demo",
        "target/manifest.json": "{}",
        "logs/dbt.log": "log",
        "data/landing/events/batch_1.parquet": "the only copy",
        "data/demo/events.csv": "shipped",
    }.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(content)
    monkeypatch.chdir(folder)
    for name in ("ENTITY_STATE_LANDING_DIR", "ENTITY_STATE_HOME"):
        monkeypatch.delenv(name, raising=False)
    # the real one would look for pid files; this one records whether .local was still there when it ran
    monkeypatch.setattr(clean_module, "_stop_local_cluster", lambda: stops.append((folder / ".local").exists()))
    return folder


def _files(folder: Path) -> set[str]:
    return {str(path.relative_to(folder)) for path in folder.rglob("*") if path.is_file()}


def test_clean_removes_state_and_dbt_output_and_keeps_the_landed_files(project, stops, capsys):
    assert main(["clean"]) == 0
    assert _files(project) == {"dbt_project.yml", "data/landing/events/batch_1.parquet", "data/demo/events.csv"}
    assert (project / "data/landing/events/batch_1.parquet").read_text() == "the only copy"
    assert stops == [True]  # the cluster is stopped first, before .local goes
    out = capsys.readouterr().out
    assert "removed .local, target, logs" in out
    assert "kept the landing folder" in out
    assert main(["clean"]) == 0  # nothing left to remove is not an error


@pytest.mark.parametrize(
    "landing",
    [
        ".local/landing",  # relative, inside the state home
        "{project}/target/events",  # absolute, inside dbt's output
        "file://{project}/logs/in",  # a file: URI
        "{project}",  # the landing folder holds everything clean removes
    ],
)
def test_clean_refuses_when_the_landing_folder_lies_inside_what_it_removes(
    project, stops, monkeypatch, capsys, landing
):
    monkeypatch.setenv("ENTITY_STATE_LANDING_DIR", landing.format(project=project))
    before = _files(project)
    assert main(["clean"]) == 2
    error = capsys.readouterr().err
    assert "which clean would remove: that would delete landed files" in error
    assert "Nothing was removed" in error
    assert _files(project) == before
    assert stops == []


def test_a_landing_folder_on_another_file_system_does_not_stop_clean(project, monkeypatch):
    monkeypatch.setenv("ENTITY_STATE_LANDING_DIR", "s3://bucket/events/")
    assert main(["clean"]) == 0
    assert not (project / ".local").exists()


def test_clean_outside_the_project_folder_removes_nothing(tmp_path, monkeypatch, capsys):
    elsewhere = tmp_path / "home"
    (elsewhere / "logs").mkdir(parents=True)
    (elsewhere / "logs" / "mine.log").write_text("not the project's")
    monkeypatch.chdir(elsewhere)
    assert main(["clean"]) == 2
    assert "is not the entity_state project folder" in capsys.readouterr().err
    assert (elsewhere / "logs" / "mine.log").read_text() == "not the project's"


def test_a_linked_state_home_loses_the_link_not_what_it_points_at(project, tmp_path):
    shared = tmp_path / "shared"
    (shared / "keep").mkdir(parents=True)
    (shared / "keep" / "file").write_text("kept")
    shutil.rmtree(project / ".local")
    (project / ".local").symlink_to(shared)
    assert main(["clean"]) == 0
    assert not (project / ".local").exists()
    assert (shared / "keep" / "file").read_text() == "kept"


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_clean_keeps_the_landed_files(project):
    """The Makefile's target itself, on a project copy without .venv (so through `python -m entity_state.clean`)."""
    shutil.copy(PROJECT_DIR / "Makefile", project / "Makefile")
    (project / "src").symlink_to(PROJECT_DIR / "src")
    done = subprocess.run(
        ["make", "--no-print-directory", "clean", f"PYTHON={sys.executable}"],
        cwd=project,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(project)},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (project / "data/landing/events/batch_1.parquet").read_text() == "the only copy"
    assert not (project / ".local").exists() and not (project / "target").exists() and not (project / "logs").exists()
