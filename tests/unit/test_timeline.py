"""The timeline picture: lanes in order, one PNG per call, and a clear error when there is nothing to draw."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from entity_state.cli import main
from entity_state.timeline import Stay, draw, lanes

T0 = datetime(2026, 1, 1, 9, tzinfo=UTC)


def _stay(tenant, entity, state, start, end, last, is_open=False, is_stale=False):
    at = [T0 + timedelta(minutes=m) for m in (start, end, last)]
    return Stay(tenant, entity, state, *at, is_open, is_stale)


STAYS = [
    _stay("acme", "e-1", "A", 0, 12, 10),
    _stay("acme", "e-1", "B", 12, 41, 30),
    _stay("acme", "e-1", "C", 41, 400, 41, is_open=True, is_stale=True),
    _stay("acme", "early", "A", -5, 400, 20, is_open=True),
    _stay("globex", "e-1", "depot", 2, 400, 50, is_open=True),
]


def test_lanes_go_by_tenant_then_first_stay():
    assert lanes(list(reversed(STAYS))) == [("acme", "early"), ("acme", "e-1"), ("globex", "e-1")]


def test_draw_writes_a_png_with_a_lane_per_entity(tmp_path):
    path = draw(STAYS, tmp_path / "pictures" / "timeline.png")
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    one_lane = draw(STAYS[:3], tmp_path / "one.png").read_bytes()
    assert height > int.from_bytes(one_lane[20:24], "big"), "three lanes should be taller than one"
    assert width == int.from_bytes(one_lane[16:20], "big")


def test_draw_refuses_nothing(tmp_path):
    with pytest.raises(ValueError, match="no stays to draw"):
        draw([], tmp_path / "empty.png")
    assert not (tmp_path / "empty.png").exists()


def test_timeline_never_writes_over_a_file_that_is_not_a_picture_or_into_the_landing_folder(
    tmp_path, monkeypatch, capsys
):
    landing = tmp_path / "landing"
    landing.mkdir()
    landed = landing / "batch_1.parquet"
    landed.write_bytes(b"landed data")
    notes = tmp_path / "notes.txt"
    notes.write_text("mine")
    monkeypatch.setenv("ENTITY_STATE_LANDING_DIR", str(landing))
    assert main(["timeline", "--out", str(notes)]) == 2
    assert "is not a PNG picture" in capsys.readouterr().err
    assert main(["timeline", "--out", str(landing / "picture.png")]) == 2
    assert "lies in the landing folder" in capsys.readouterr().err
    assert notes.read_text() == "mine" and landed.read_bytes() == b"landed data"
    assert sorted(path.name for path in landing.iterdir()) == ["batch_1.parquet"]
