"""Validate event files and land them as batches in the landing folder the dbt source reads.

A landed batch is one Parquet file with the columns tenant_id, entity_id, state_id (strings), event_time and
ingested_at (timestamps, UTC), and event_time_text: the producer's text when it could not be parsed (event_time is
then null and the row ends in the quarantine as `unparseable_event_time`, never silently as a null time).
Files are written under a hidden temporary name and renamed into place, so a `dbt run` never sees half a file.
"""

from __future__ import annotations

import email.utils
import itertools
import os
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

KEY_COLUMNS = ("tenant_id", "entity_id", "state_id")
REQUIRED_COLUMNS = (*KEY_COLUMNS, "event_time")
TIMESTAMP = pa.timestamp("us", tz="UTC")
LANDED_SCHEMA = pa.schema(
    [
        *[(name, pa.string()) for name in KEY_COLUMNS],
        ("event_time", TIMESTAMP),
        ("event_time_text", pa.string()),
        ("ingested_at", TIMESTAMP),
    ]
)
EPOCH_DIGITS = re.compile(r"[+-]?\d{9,19}(\.\d+)?")
SLASHED_DATE = re.compile(r"(\d{4})/(\d{2})/(\d{2})")
DEFAULT_LANDING_DIR = "data/landing/events"


class LandingError(ValueError):
    """A file cannot be landed; the message names the file and what is wrong with it."""


@dataclass(frozen=True)
class LandedBatch:
    path: Path
    rows: int
    ingested_at: datetime


def landing_dir() -> Path:
    return Path(os.environ.get("ENTITY_STATE_LANDING_DIR", DEFAULT_LANDING_DIR))


def parse_timestamp(text: str) -> datetime:
    """Timestamp text to an aware UTC datetime; raises ValueError if it is none of the accepted forms.

    Accepted: ISO 8601 (`T` or space, optional fraction, `Z` or `+hh:mm` offset), the same with `/` between the
    date parts, RFC 2822 (`Tue, 03 Mar 2026 08:00:00 +0100`), and Unix epoch seconds (9-11 digits, optional
    fraction) or milliseconds (12-14 digits) or microseconds (15-19 digits). Text without an offset is UTC.
    """
    text = text.strip()
    if EPOCH_DIGITS.fullmatch(text):
        number = float(text) if "." in text else int(text)
        digits = len(text.lstrip("+-").split(".")[0])
        scale = 1 if digits <= 11 else 1_000 if digits <= 14 else 1_000_000
        return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=number / scale)
    try:
        value = datetime.fromisoformat(SLASHED_DATE.sub(r"\1-\2-\3", text, count=1))
    except ValueError:
        try:
            value = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            raise ValueError(f"cannot parse {text!r} as a timestamp") from None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def read_events(path: Path) -> pa.Table:
    """Read a CSV or Parquet file of events and return it in the landed schema (ingested_at left null)."""
    suffix = path.suffix.lower()
    try:
        if suffix == ".csv":
            table = pa_csv.read_csv(
                path, convert_options=pa_csv.ConvertOptions(column_types=dict.fromkeys(REQUIRED_COLUMNS, pa.string()))
            )
        elif suffix in (".parquet", ".pq"):
            table = pq.read_table(path)
        else:
            raise LandingError(f"{path}: unsupported file type '{suffix}'; use .csv or .parquet")
    except (OSError, pa.ArrowInvalid) as error:
        raise LandingError(f"{path}: cannot be read: {error}") from error
    missing = [name for name in REQUIRED_COLUMNS if name not in table.column_names]
    if missing:
        raise LandingError(f"landing file '{path.name}': column(s) {', '.join(missing)} missing ({path})")
    columns = {name: _as_strings(path, table, name) for name in KEY_COLUMNS}
    columns["event_time"], columns["event_time_text"] = _as_timestamps(path, table, "event_time")
    columns["ingested_at"] = pa.nulls(table.num_rows, TIMESTAMP)
    return pa.table(columns, schema=LANDED_SCHEMA)


def _as_strings(path: Path, table: pa.Table, name: str) -> pa.ChunkedArray:
    column = table.column(name)
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        return column.cast(pa.string())
    raise LandingError(f"{path}: column {name} must be text, found {column.type}")


def _as_timestamps(path: Path, table: pa.Table, name: str) -> tuple[pa.Array, pa.Array]:
    """The column as UTC timestamps, and the text of the values that could not be parsed (null elsewhere)."""
    column = table.column(name)
    if pa.types.is_timestamp(column.type):
        if column.type.tz is None:
            column = column.cast(pa.timestamp("us")).cast(TIMESTAMP)
        return column.cast(TIMESTAMP).combine_chunks(), pa.nulls(table.num_rows, pa.string())
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        values, unparsed = [], []
        for text in column.to_pylist():
            try:
                values.append(None if text is None or not text.strip() else parse_timestamp(text))
                unparsed.append(None)
            except ValueError:
                values.append(None)
                unparsed.append(text)
        return pa.array(values, TIMESTAMP), pa.array(unparsed, pa.string())
    raise LandingError(f"{path}: column {name} must be a timestamp or timestamp text, found {column.type}")


def slices(table: pa.Table, batches: int) -> list[pa.Table]:
    """Cut a table into `batches` consecutive slices of near-equal size (none empty unless the table is)."""
    if batches < 1:
        raise LandingError(f"--batches must be at least 1, got {batches}")
    batches = max(1, min(batches, table.num_rows))
    bounds = [round(i * table.num_rows / batches) for i in range(batches + 1)]
    return [table.slice(start, end - start) for start, end in itertools.pairwise(bounds)]


def land(table: pa.Table, ingested_at: datetime, directory: Path | None = None) -> LandedBatch:
    """Write one batch, stamped with ingested_at, into the landing folder atomically."""
    directory = directory or landing_dir()
    directory.mkdir(parents=True, exist_ok=True)
    stamped = table.set_column(
        table.schema.get_field_index("ingested_at"), "ingested_at", pa.array([ingested_at] * table.num_rows, TIMESTAMP)
    )
    name = f"batch_{ingested_at:%Y%m%dT%H%M%S%f}_{uuid.uuid4().hex[:8]}.parquet"
    return LandedBatch(write_atomically(stamped, directory / name), table.num_rows, ingested_at)


def write_atomically(table: pa.Table, path: Path) -> Path:
    """Write a landed-schema table under a hidden temporary name, then rename it into place."""
    temporary = path.with_name(f".{path.name}.tmp")
    pq.write_table(table.cast(LANDED_SCHEMA), temporary)
    os.replace(temporary, path)
    return path


def load_files(
    paths: Sequence[Path], batches: int = 1, ingested_at: datetime | None = None, directory: Path | None = None
) -> list[LandedBatch]:
    """Validate every file first, then land each one (or each of its slices) as a new batch.

    Batches get strictly increasing ingested_at stamps: from the given start time one second apart, or else the
    time each one lands (at least a microsecond after the previous one).
    """
    parts = [part for path in paths for part in slices(read_events(Path(path)), batches)]
    if ingested_at is not None:
        last = ingested_at + timedelta(seconds=len(parts) - 1)
        if last > datetime.now(UTC):
            # dbt runs skip landing files modified well before their window starts, unread: a file stamped later
            # than it was written could be skipped (var entity_state__landing_clock_skew_minutes), so it is refused
            # here.
            raise LandingError(
                f"--ingested-at {ingested_at.isoformat()} would stamp batches up to {last.isoformat()}, later than "
                f"now: a batch's ingested_at must not be later than the moment its file is written"
            )
    landed = []
    stamp = ingested_at or datetime.now(UTC)
    for part in parts:
        landed.append(land(part, stamp, directory))
        if ingested_at is not None:
            stamp += timedelta(seconds=1)
        else:
            stamp = max(stamp + timedelta(microseconds=1), datetime.now(UTC))
    return landed
