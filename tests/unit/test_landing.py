"""The loader: what it accepts, what it keeps for the quarantine, what it refuses up front."""

from __future__ import annotations

import email.utils
import errno
import os
from datetime import UTC, datetime, timedelta, timezone

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from entity_state.landing import (
    LandingError,
    land,
    load_files,
    parse_timestamp,
    parse_timestamps,
    read_events,
    write_atomically,
)

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


@pytest.mark.parametrize(
    "text", ["-99999999999", "9999999999999999999", "0001-01-01T00:30:00+01:00", "Fri, 31 Dec 9999 23:00:00 -0500"]
)
def test_a_time_outside_the_datetime_range_is_unparseable_not_a_crash(text):
    with pytest.raises(ValueError, match="out of the range"):
        parse_timestamp(text)


def test_an_out_of_range_time_is_quarantined_like_other_unparseable_text(tmp_path):
    path = tmp_path / "events.csv"
    path.write_text("tenant_id,entity_id,state_id,event_time\nacme,e-1,A,9999999999999999999\nacme,e-1,B,1772524800\n")
    table = read_events(path)
    assert table.column("event_time").to_pylist() == [None, EIGHT_UTC]
    assert table.column("event_time_text").to_pylist() == ["9999999999999999999", None]


# Text of every accepted form, with fields in and out of range, and junk: the column-wise parse must give what
# parse_timestamp gives row by row (timestamp, or the text kept as unparseable) for every value. Each field of an
# ISO text is valid, or one time in five at or just past a limit.
def _digits(low: int, high: int, width: int) -> st.SearchStrategy[str]:
    return st.integers(low, high).map(lambda number: str(number).zfill(width))


SPACES = st.sampled_from(["", "", "", " ", "  ", "\t", "\n", "\r\n", "\xa0", "\x0b", "\u2003"])
ISO_FIELDS = {
    "year": st.one_of(_digits(1970, 2100, 4), _digits(1, 9999, 4)),
    "dashes": st.sampled_from(["--", "//"]),
    "month": _digits(1, 12, 2),
    "day": _digits(1, 28, 2),
    "separator": st.sampled_from("T "),
    "hour": _digits(0, 23, 2),
    "minute": _digits(0, 59, 2),
    "second": _digits(0, 59, 2),
    "fraction": st.one_of(st.just(""), st.text("0123456789", min_size=1, max_size=6).map(lambda d: f".{d}")),
    "zone": st.one_of(
        st.sampled_from(["", "Z"]),
        st.builds(lambda sign, hh, mm: f"{sign}{hh}:{mm}", st.sampled_from("+-"), _digits(0, 23, 2), _digits(0, 59, 2)),
    ),
}
ISO_LIMITS = {
    "year": ["0000", "0001", "0002", "9998", "9999", "0400", "1900", "2000", "2024", "20261", "226"],
    "dashes": ["-/", "/-", "..", "-.", "//", "--"],
    "month": ["00", "01", "02", "12", "13", "3", "99"],
    "day": ["00", "01", "29", "30", "31", "32", "1"],
    "separator": ["t", "x", "_", "  ", "", "T"],
    "hour": ["00", "23", "24", "25", "7"],
    "minute": ["00", "59", "60", "61"],
    "second": ["00", "59", "60", "61"],
    "fraction": [".", ".0", ".999999", ".1234567", ".123456789", ",5", ".5Z"],
    "zone": [
        "z",
        "UTC",
        " Z",
        "+0100",
        "+01",
        "+01:00:30",
        "+01:00.5",
        "+24:00",
        "-24:00",
        "+23:59",
        "-23:59",
        "+00:60",
        "-00:99",
        "+00:00",
        "-00:00",
        "Z",
        "ZZ",
    ],
}


@st.composite
def iso_texts(draw) -> str:
    parts = {
        name: draw(st.sampled_from(ISO_LIMITS[name]) if draw(st.integers(0, 4)) == 4 else strategy)
        for name, strategy in ISO_FIELDS.items()
    }
    dashes = parts["dashes"]
    date = f"{parts['year']}{dashes[0]}{parts['month']}{dashes[1]}{parts['day']}"
    time = f"{parts['hour']}:{parts['minute']}:{parts['second']}{parts['fraction']}{parts['zone']}"
    return f"{date}{parts['separator']}{time}"


ISO_TEXTS = iso_texts()
DATES = st.builds(
    lambda year, month, day, dash: f"{year}{dash}{month}{dash}{day}",
    _digits(1, 9999, 4),
    _digits(0, 13, 2),
    _digits(0, 32, 2),
    st.sampled_from("-/"),
)
EPOCH_TEXTS = st.builds(
    lambda sign, number, fraction: f"{sign}{number}{fraction}",
    st.sampled_from(["", "", "", "+", "-"]),
    st.one_of(
        st.integers(9, 16).flatmap(lambda width: _digits(10 ** (width - 1), 10**width - 1, width)),
        st.integers(9, 16).flatmap(lambda width: _digits(10 ** (width - 1), 10**width - 1, width)),
        st.integers(1, 20).flatmap(lambda width: _digits(0, 10**width - 1, width)),
        st.sampled_from([str(1 << 32), str((1 << 32) - 1), str((1 << 32) * 1000), str((1 << 32) * 1000 - 1)]),
        st.sampled_from([str((1 << 32) * 10**6 - 1), str((1 << 32) * 10**6), "9007199254740993", "000000001"]),
    ),
    st.one_of(st.just(""), st.just(""), st.text("0123456789", min_size=0, max_size=8).map(lambda d: f".{d}")),
)
RFC_2822_TEXTS = st.builds(
    lambda moment, minutes: email.utils.format_datetime(moment.replace(tzinfo=timezone(timedelta(minutes=minutes)))),
    st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)),
    st.integers(-23 * 60, 23 * 60),
)
EVENT_TIME_TEXTS = st.one_of(
    st.builds(lambda before, text, after: f"{before}{text}{after}", SPACES, ISO_TEXTS, SPACES),
    ISO_TEXTS,
    ISO_TEXTS,
    st.builds(lambda before, text, after: f"{before}{text}{after}", SPACES, EPOCH_TEXTS, SPACES),
    EPOCH_TEXTS,
    st.none(),
    DATES,
    RFC_2822_TEXTS,
    SPACES,
    st.text(max_size=30),
    st.text("0123456789-/:.TZ +", max_size=30),
)
# Values at the limits of the fast path, where it must step aside for the row-wise parse.
LIMITS = [
    "0001-01-01T00:30:00+01:00",
    "0002-01-01T00:30:00+01:00",
    "9999-12-31T23:30:00-01:00",
    "9998-12-31T23:30:00-01:00",
    "2026-03-03T08:00:60",
    "2026-03-03T24:00:00",
    "2026-02-29 08:00:00",
    "2024-02-29 08:00:00",
    "1900-02-29 08:00:00",
    "2000-02-29 08:00:00",
    "2026-04-31 08:00:00",
    "2026-03/03 08:00:00",
    "2026/03-03 08:00:00",
    "2026-03-03T08:00:00+24:00",
    "2026-03-03T08:00:00+23:59",
    "2026-03-03T08:00:00+00:60",
    "2026-03-03T08:00:00.1234567",
    str(1 << 32),
    str((1 << 32) - 1),
    str((1 << 32) * 1000),
    str((1 << 32) * 1000 - 1),
    str((1 << 32) * 10**6),
    str((1 << 32) * 10**6 - 1),
    "4294967297123",
    "-1772524800",
    "\xa02026-03-03T08:00:00Z",
    "\u0662\u0660\u0662\u0666-03-03T08:00:00",
]


def _row_by_row(texts: list[str | None]) -> tuple[list[datetime | None], list[str | None]]:
    times, kept = [], []
    for text in texts:
        try:
            times.append(None if text is None or not text.strip() else parse_timestamp(text))
            kept.append(None)
        except ValueError:
            times.append(None)
            kept.append(text)
    return times, kept


@settings(max_examples=1500, deadline=None)
@given(EVENT_TIME_TEXTS)
def test_the_column_wise_parse_gives_what_parse_timestamp_gives_row_by_row(text):
    times, kept = parse_timestamps(pa.array([text], pa.string()))
    assert (times.to_pylist(), kept.to_pylist()) == _row_by_row([text])


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(EVENT_TIME_TEXTS, max_size=30))
def test_the_column_wise_parse_gives_what_parse_timestamp_gives_row_by_row_for_mixed_columns(texts):
    times, kept = parse_timestamps(pa.array(texts, pa.string()))
    assert (times.to_pylist(), kept.to_pylist()) == _row_by_row(texts)


def test_the_column_wise_parse_gives_what_parse_timestamp_gives_at_the_limits_of_its_fast_path():
    times, kept = parse_timestamps(pa.array(LIMITS))
    assert (times.to_pylist(), kept.to_pylist()) == _row_by_row(LIMITS)


def test_the_fast_path_parses_the_common_forms_and_leaves_the_rest_row_by_row():
    texts = ["2026-03-03T08:00:00Z", "2026/03/03 09:00:00.5+01:00", "1772524800000", "2026-02-30 08:00:00", None, " "]
    times, kept = parse_timestamps(pa.chunked_array([texts[:3], texts[3:]]))
    half_past = EIGHT_UTC + timedelta(microseconds=500_000)
    assert times.to_pylist() == [EIGHT_UTC, half_past, EIGHT_UTC, None, None, None]
    assert kept.to_pylist() == [None, None, None, "2026-02-30 08:00:00", None, None]


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
