"""The loader: what it accepts, what it keeps for the quarantine, what it refuses up front."""

from __future__ import annotations

import errno
import os
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from entity_state.landing import LandingError, land, load_files, parse_timestamp, read_events, write_atomically

EIGHT_UTC = datetime(2026, 3, 3, 8, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    "text",
    [
        "2026-03-03T08:00:00Z",
        "2026-03-03 08:00:00",
        "2026-03-03T08:00:00.000000+00:00",
        "2026-03-03T09:00:00+01:00",
        "2026-03-03T03:00:00-05:00",
        "2026/03/03 08:00:00",
        "Tue, 03 Mar 2026 09:00:00 +0100",
        "1772524800",
        "1772524800000",
        "1772524800000000",
        "  2026-03-03T08:00:00Z  ",
    ],
)
def test_common_timestamp_forms_parse_to_the_same_utc_instant(text):
    assert parse_timestamp(text) == EIGHT_UTC


@pytest.mark.parametrize("text", ["yesterday", "2026-13-03 08:00:00", "03/04/2026 08:00", "8 o'clock", "12345"])
def test_unparseable_text_raises(text):
    with pytest.raises(ValueError):
        parse_timestamp(text)


def test_unparseable_times_are_kept_as_text_not_turned_into_null(tmp_path):
    path = tmp_path / "events.csv"
    path.write_text(
        "tenant_id,entity_id,state_id,event_time\n"
        "acme,e-1,A,2026-03-03T09:00:00+01:00\n"
        "acme,e-1,B,not a time\n"
        "acme,e-1,C,\n"
    )
    table = read_events(path)
    assert table.column("event_time").to_pylist() == [EIGHT_UTC, None, None]
    assert table.column("event_time_text").to_pylist() == [None, "not a time", None]


def test_a_missing_required_column_is_refused_with_the_file_and_column_named(tmp_path):
    path = tmp_path / "no_tenant.csv"
    path.write_text("entity_id,state_id,event_time\ne-1,A,2026-03-03T08:00:00Z\n")
    with pytest.raises(LandingError, match=r"no_tenant\.csv.*tenant_id"):
        read_events(path)


def test_a_wrongly_typed_column_is_refused_with_the_file_and_column_named(tmp_path):
    path = tmp_path / "numeric_state.parquet"
    pq.write_table(
        pa.table({"tenant_id": ["acme"], "entity_id": ["e-1"], "state_id": [7], "event_time": [EIGHT_UTC]}), path
    )
    with pytest.raises(LandingError, match=r"numeric_state\.parquet.*state_id"):
        read_events(path)


def test_an_unreadable_file_is_refused_with_the_file_named(tmp_path):
    path = tmp_path / "garbage.parquet"
    path.write_bytes(b"this is not parquet")
    with pytest.raises(LandingError, match=r"garbage\.parquet.*cannot be read"):
        read_events(path)


def test_extra_columns_are_ignored(tmp_path):
    path = tmp_path / "extra.csv"
    path.write_text("tenant_id,entity_id,state_id,event_time,colour\nacme,e-1,A,2026-03-03T08:00:00Z,red\n")
    assert "colour" not in read_events(path).column_names


def test_a_stamp_later_than_now_is_refused_before_anything_lands(tmp_path):
    source = tmp_path / "events.csv"
    source.write_text("tenant_id,entity_id,state_id,event_time\nacme,e-1,A,2026-03-03T08:00:00Z\n")
    landing = tmp_path / "landing"
    tomorrow = datetime.now(UTC) + timedelta(days=1)
    with pytest.raises(LandingError, match=r"--ingested-at .* later than now"):
        load_files([source], ingested_at=tomorrow, directory=landing)
    assert not landing.exists() or not any(landing.iterdir())
    yesterday = datetime.now(UTC) - timedelta(days=1)
    assert [batch.ingested_at for batch in load_files([source], ingested_at=yesterday, directory=landing)] == [
        yesterday
    ]


def _one_event_table(tmp_path):
    source = tmp_path / "events.csv"
    source.write_text("tenant_id,entity_id,state_id,event_time\nacme,e-1,A,2026-03-03T08:00:00Z\n")
    return read_events(source)


def test_an_existing_landed_file_is_never_overwritten(tmp_path):
    landing = tmp_path / "landing"
    first = land(_one_event_table(tmp_path), EIGHT_UTC, landing)
    landed = first.path.read_bytes()
    with pytest.raises(LandingError, match=r"already exists: a landed file is never overwritten"):
        land(_one_event_table(tmp_path), EIGHT_UTC + timedelta(hours=1), landing, name=first.path.name)
    with pytest.raises(LandingError, match=r"already exists"):
        write_atomically(_one_event_table(tmp_path), first.path)
    assert first.path.read_bytes() == landed
    assert [p.name for p in landing.iterdir()] == [first.path.name]  # no temporary file left behind


def test_without_hard_links_an_existing_file_is_still_refused(tmp_path, monkeypatch):
    def no_links(source, target):
        raise OSError(errno.EPERM, "hard links not supported")

    monkeypatch.setattr(os, "link", no_links)
    landing = tmp_path / "landing"
    first = land(_one_event_table(tmp_path), EIGHT_UTC, landing)
    landed = first.path.read_bytes()
    with pytest.raises(LandingError, match=r"already exists"):
        write_atomically(_one_event_table(tmp_path), first.path)
    assert first.path.read_bytes() == landed
    assert [p.name for p in landing.iterdir()] == [first.path.name]
