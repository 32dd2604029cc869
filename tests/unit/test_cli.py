"""The `entity-state` command line."""

from __future__ import annotations

import sys

import pytest

from entity_state import cli, landing


@pytest.fixture
def small_inputs_are_large(monkeypatch, tmp_path):
    """Progress bars from 3 rows on, and a CSV of 3 events."""
    monkeypatch.setattr(landing, "PROGRESS_MIN_ROWS", 3)
    monkeypatch.setattr(landing, "PROGRESS_MIN_CSV_BYTES", 10)
    path = tmp_path / "events.csv"
    path.write_text(
        "tenant_id,entity_id,state_id,event_time\n"
        "acme,e-1,A,2026-03-03T08:00:00Z\nacme,e-1,B,2026-03-03T09:00:00Z\nacme,e-2,A,1772524800\n"
    )
    return path


@pytest.mark.parametrize(("tty", "quiet", "shown"), [(True, False, True), (True, True, False), (False, False, False)])
def test_load_shows_progress_on_a_terminal_unless_quiet(
    small_inputs_are_large, tmp_path, capsys, monkeypatch, tty, quiet, shown
):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: tty)
    arguments = ["load", str(small_inputs_are_large), "--landing-dir", str(tmp_path / "landing")]
    assert cli.main([*arguments, *(["--quiet"] if quiet else [])]) == 0
    err = capsys.readouterr().err
    assert ("events.csv: event times" in err and "land" in err) == shown
    assert ("events.csv: read" in err) == shown


def test_no_progress_below_a_million_rows(tmp_path, capsys):
    path = tmp_path / "events.csv"
    path.write_text("tenant_id,entity_id,state_id,event_time\nacme,e-1,A,2026-03-03T08:00:00Z\n")
    landing.load_files([path], directory=tmp_path / "landing", progress=True)
    assert capsys.readouterr().err == ""
