"""Validate event files and land them as batches in the landing folder the dbt source reads.

A landed batch is one Parquet file with the columns tenant_id, entity_id, state_id (strings), event_time and
ingested_at (timestamps, UTC), and event_time_text: the producer's text when it could not be parsed (event_time is
then null and the row ends in the quarantine as `unparseable_event_time`, never silently as a null time).
Files are written under a hidden temporary name and renamed into place, so a `dbt run` never sees half a file, and
never onto an existing file: the landing folder is the only copy of every landed batch, so a name that is taken
is refused (LandingError), never overwritten.
"""

from __future__ import annotations

import email.utils
import errno
import itertools
import os
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from entity_state.paths import DEFAULT_LANDING_DIR

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
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

# Column-wise parsing (parse_timestamps): a fast path for the common forms. Its patterns (RE2, for pyarrow) admit only
# text that parse_timestamp reads the same way when the fields are in range (see _iso_micros and _epoch_micros);
# anything else, including every value whose fields the fast path finds out of range, is left to parse_timestamp.
# The values are trimmed of these four characters first; str.strip() removes them too, and text with other white
# space around it goes the row-wise way.
FAST_PATH_SPACE = " \t\r\n"
# YYYY-MM-DD or YYYY/MM/DD, T or space, hh:mm:ss, an optional fraction of 1 to 6 digits, no offset, Z or +hh:mm.
ISO_TEXT = r"^[0-9]{4}[-/][0-9]{2}[-/][0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?(Z|[+-][0-9]{2}:[0-9]{2})?$"
EPOCH_TEXT = r"^\+?[0-9]{9,16}$"
DAYS_IN_MONTH = np.array([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])
PARSE_CHUNK_ROWS = 1 << 18
# Progress bars (load_files(progress=True)) only for inputs this large: smaller ones take a second or two.
PROGRESS_MIN_ROWS = 1_000_000
PROGRESS_MIN_CSV_BYTES = 64 << 20


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
    A time outside years 1-9999 in UTC raises ValueError too.
    """
    text = text.strip()
    try:
        if EPOCH_DIGITS.fullmatch(text):
            number = float(text) if "." in text else int(text)
            digits = len(text.lstrip("+-").split(".")[0])
            scale = 1 if digits <= 11 else 1_000 if digits <= 14 else 1_000_000
            return EPOCH + timedelta(seconds=number / scale)
        try:
            value = datetime.fromisoformat(SLASHED_DATE.sub(r"\1-\2-\3", text, count=1))
        except ValueError:
            try:
                value = email.utils.parsedate_to_datetime(text)
            except (TypeError, ValueError, IndexError):
                raise ValueError(f"cannot parse {text!r} as a timestamp") from None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"{text!r} is out of the range of timestamps (years 1-9999)") from None


def parse_timestamps(texts: pa.Array | pa.ChunkedArray) -> tuple[pa.Array, pa.Array]:
    """parse_timestamp over a column: the UTC timestamps, and the text of the values that cannot be parsed.

    Null or blank text gives a null timestamp and a null text; unparseable text a null timestamp and the text.
    The common forms (ISO 8601 with `-` or `/`, `T` or space, up to 6 fraction digits, `Z` or `+hh:mm`; integer
    epochs) are parsed column-wise; every other value, and every value the fast path does not take as valid, goes
    through parse_timestamp itself, so the result is parse_timestamp's for each row.
    """
    texts = texts.combine_chunks() if isinstance(texts, pa.ChunkedArray) else texts
    texts = texts.cast(pa.string())
    trimmed = pc.utf8_trim(texts, FAST_PATH_SPACE)
    data, offsets = _utf8_bytes(trimmed)
    micros = np.zeros(len(texts), np.int64)
    parsed = np.zeros(len(texts), bool)
    for pattern, convert in ((ISO_TEXT, _iso_micros), (EPOCH_TEXT, _epoch_micros)):
        rows = np.flatnonzero(pc.fill_null(pc.match_substring_regex(trimmed, pattern), False).to_numpy(False))
        values, valid = convert(data, offsets[rows], offsets[rows + 1] - offsets[rows])
        micros[rows[valid]] = values[valid]
        parsed[rows[valid]] = True
    blank = pc.fill_null(pc.equal(pc.binary_length(trimmed), 0), True).to_numpy(False)
    unparsed = np.zeros(len(texts), bool)
    rest = np.flatnonzero(~parsed & ~blank)
    for row, text in zip(rest, texts.take(rest).to_pylist(), strict=True):
        try:
            value = _parse_text(text)
        except ValueError:
            unparsed[row] = True
            continue
        if value is not None:
            micros[row] = (value - EPOCH) // timedelta(microseconds=1)
            parsed[row] = True
    times = pa.array(micros, pa.int64(), mask=~parsed).cast(TIMESTAMP)
    kept = pc.if_else(pa.array(unparsed), texts, pa.scalar(None, pa.string()))
    return times, kept


def _parse_text(text: str | None) -> datetime | None:
    """One value the way the loader always read it: None for null or blank text, else parse_timestamp."""
    return None if text is None or not text.strip() else parse_timestamp(text)


def _utf8_bytes(texts: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The bytes of a string array and the offsets of its values in them (value i is bytes[offsets[i]:offsets[i+1]])."""
    _, offsets, data = texts.buffers()
    offsets = np.frombuffer(offsets, np.int32)[texts.offset : texts.offset + len(texts) + 1].astype(np.int64)
    data = np.frombuffer(data, np.uint8) if data is not None and data.size else np.zeros(1, np.uint8)
    return data, offsets


def _number(data: np.ndarray, start: np.ndarray, width: int) -> np.ndarray:
    """The `width` ASCII digits at `start` of each value, as integers."""
    number = np.zeros(len(start), np.int64)
    for position in range(width):
        number = number * 10 + data[start + position] - ord("0")
    return number


def _iso_micros(data: np.ndarray, start: np.ndarray, length: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Microseconds since the epoch of values matching ISO_TEXT, and which of them parse_timestamp reads the same way.

    parse_timestamp turns `/` into `-` in the date and reads the text with datetime.fromisoformat, which takes
    exactly these forms when the fields are in range; no offset means UTC. Valid here: both date separators alike,
    a real calendar day, hour <= 23, minute and second <= 59, an offset below 24 hours with minutes <= 59, and a
    year 2..9998, so converting to UTC cannot leave datetime's range (years 1..9999).
    """
    year, month, day = _number(data, start, 4), _number(data, start + 5, 2), _number(data, start + 8, 2)
    hour, minute, second = _number(data, start + 11, 2), _number(data, start + 14, 2), _number(data, start + 17, 2)
    # after the 19 characters of date and time: [.fraction][Z | +hh:mm]
    last = data[np.maximum(start + length - 1, 0)]
    zone_start = np.maximum(start + length - 6, 0)
    has_offset = (length >= 25) & ((data[zone_start] == ord("+")) | (data[zone_start] == ord("-")))
    zone_length = np.where(last == ord("Z"), 1, np.where(has_offset, 6, 0))
    fraction_digits = np.maximum(length - 19 - zone_length - 1, 0)
    fraction = np.zeros(len(start), np.int64)
    for position in range(6):
        digit = data[np.minimum(start + 20 + position, len(data) - 1)].astype(np.int64) - ord("0")
        fraction = fraction * 10 + np.where(position < fraction_digits, digit, 0)
    zone_sign = np.where(has_offset & (data[zone_start] == ord("-")), -1, 1)
    zone_hour = np.where(has_offset, _number(data, zone_start + 1, 2), 0)
    zone_minute = np.where(has_offset, _number(data, zone_start + 4, 2), 0)
    leap = (year % 4 == 0) & ((year % 100 != 0) | (year % 400 == 0))
    last_day = DAYS_IN_MONTH[np.clip(month, 1, 12)] + ((month == 2) & leap)
    valid = (
        (data[start + 4] == data[start + 7])
        & (year >= 2)
        & (year <= 9998)
        & (month >= 1)
        & (month <= 12)
        & (day >= 1)
        & (day <= last_day)
        & (hour <= 23)
        & (minute <= 59)
        & (second <= 59)
        & (zone_hour <= 23)
        & (zone_minute <= 59)
    )
    seconds = _days_from_civil(year, month, day) * 86_400 + hour * 3_600 + minute * 60 + second
    seconds -= zone_sign * (zone_hour * 3_600 + zone_minute * 60)
    return seconds * 1_000_000 + fraction, valid


def _days_from_civil(year: np.ndarray, month: np.ndarray, day: np.ndarray) -> np.ndarray:
    """Days since 1970-01-01 of proleptic Gregorian dates (H. Hinnant's days_from_civil), for years >= 1."""
    year = year - (month <= 2)
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * np.where(month > 2, month - 3, month + 9) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146_097 + day_of_era - 719_468


def _epoch_micros(data: np.ndarray, start: np.ndarray, length: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Microseconds since the epoch of values matching EPOCH_TEXT, and which of them parse_timestamp reads the same.

    parse_timestamp computes EPOCH + timedelta(seconds=n / scale): n / scale is a float, which timedelta rounds to
    the nearest microsecond. The exact n * 10**6 / scale is a whole number of microseconds, and below 2**32 s
    (2106-02-07) the float is within half a unit in its last place of the exact value, at most 2**-22 s (0.24 us;
    timedelta's own arithmetic adds under 2**-33 us), so the rounding lands on n * 10**6 / scale exactly. Larger
    values, and negative ones, go row-wise.
    """
    signed = data[np.minimum(start, len(data) - 1)] == ord("+")
    start, count = start + signed, length - signed
    number = np.zeros(len(start), np.int64)
    for position in range(16):
        digit = data[np.minimum(start + position, len(data) - 1)].astype(np.int64) - ord("0")
        number = np.where(position < count, number * 10 + digit, number)
    scale = np.where(count <= 11, 1, np.where(count <= 14, 1_000, 1_000_000))
    valid = number < (1 << 32) * scale
    return np.where(valid, number * (1_000_000 // scale), 0), valid


def read_events(path: Path, progress: bool = False) -> pa.Table:
    """Read a CSV or Parquet file of events and return it in the landed schema (ingested_at left null).

    With progress, large files show progress bars on stderr: reading a CSV (in bytes), then the event times.
    """
    suffix = path.suffix.lower()
    try:
        if suffix == ".csv":
            table = _read_csv(path, progress and path.stat().st_size >= PROGRESS_MIN_CSV_BYTES)
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
    bar = _progress_bar(table.num_rows, f"{path.name}: event times") if progress else None
    columns["event_time"], columns["event_time_text"] = _as_timestamps(path, table, "event_time", bar)
    if bar is not None:
        bar.close()
    columns["ingested_at"] = pa.nulls(table.num_rows, TIMESTAMP)
    return pa.table(columns, schema=LANDED_SCHEMA)


def _read_csv(path: Path, progress: bool) -> pa.Table:
    options = pa_csv.ConvertOptions(column_types=dict.fromkeys(REQUIRED_COLUMNS, pa.string()))
    if not progress:
        return pa_csv.read_csv(path, convert_options=options)
    from tqdm import tqdm

    size = path.stat().st_size
    with tqdm.wrapattr(path.open("rb"), "read", total=size, desc=f"{path.name}: read") as stream:
        return pa_csv.read_csv(stream, convert_options=options)


def _progress_bar(rows: int, description: str):
    """A tqdm bar on stderr over `rows` rows, or None for inputs below PROGRESS_MIN_ROWS."""
    if rows < PROGRESS_MIN_ROWS:
        return None
    from tqdm import tqdm

    return tqdm(total=rows, unit=" rows", unit_scale=True, desc=description)


def _as_strings(path: Path, table: pa.Table, name: str) -> pa.ChunkedArray:
    column = table.column(name)
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        return column.cast(pa.string())
    raise LandingError(f"{path}: column {name} must be text, found {column.type}")


def _as_timestamps(path: Path, table: pa.Table, name: str, bar=None) -> tuple[pa.ChunkedArray, pa.ChunkedArray]:
    """The column as UTC timestamps, and the text of the values that could not be parsed (null elsewhere)."""
    column = table.column(name)
    if pa.types.is_timestamp(column.type):
        if column.type.tz is None:
            column = column.cast(pa.timestamp("us")).cast(TIMESTAMP)
        if bar is not None:
            bar.update(table.num_rows)
        return column.cast(TIMESTAMP), pa.chunked_array([pa.nulls(table.num_rows, pa.string())])
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        times, texts = [], []
        for piece in _pieces(column, PARSE_CHUNK_ROWS):
            piece_times, piece_texts = parse_timestamps(piece)
            times.append(piece_times)
            texts.append(piece_texts)
            if bar is not None:
                bar.update(len(piece))
        return pa.chunked_array(times, TIMESTAMP), pa.chunked_array(texts, pa.string())
    raise LandingError(f"{path}: column {name} must be a timestamp or timestamp text, found {column.type}")


def _pieces(column: pa.ChunkedArray, rows: int) -> list[pa.Array]:
    return [chunk.slice(start, rows) for chunk in column.chunks for start in range(0, len(chunk), rows)]


def slices(table: pa.Table, batches: int) -> list[pa.Table]:
    """Cut a table into `batches` consecutive slices of near-equal size (none empty unless the table is)."""
    if batches < 1:
        raise LandingError(f"--batches must be at least 1, got {batches}")
    batches = max(1, min(batches, table.num_rows))
    bounds = [round(i * table.num_rows / batches) for i in range(batches + 1)]
    return [table.slice(start, end - start) for start, end in itertools.pairwise(bounds)]


def batch_name(ingested_at: datetime) -> str:
    """A new batch file's name: its stamp, then a random part, so two batches never share a name."""
    return f"batch_{ingested_at:%Y%m%dT%H%M%S%f}_{uuid.uuid4().hex[:8]}.parquet"


def land(table: pa.Table, ingested_at: datetime, directory: Path | None = None, name: str | None = None) -> LandedBatch:
    """Write one batch, stamped with ingested_at, into the landing folder atomically (as `name`, default a new
    batch_name); raises LandingError if that name is taken."""
    directory = directory or landing_dir()
    directory.mkdir(parents=True, exist_ok=True)
    stamped = table.set_column(
        table.schema.get_field_index("ingested_at"), "ingested_at", pa.array([ingested_at] * table.num_rows, TIMESTAMP)
    )
    path = directory / (name or batch_name(ingested_at))
    return LandedBatch(write_atomically(stamped, path), table.num_rows, ingested_at)


def write_atomically(table: pa.Table, path: Path) -> Path:
    """Write a landed-schema table under a hidden temporary name, then move it to `path`, which must not exist.

    The move is a hard link then the removal of the temporary name: unlike a rename, a link fails when the name is
    taken, so an existing landed file is never replaced, even by a writer racing this one. Raises LandingError then.
    """
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        pq.write_table(table.cast(LANDED_SCHEMA), temporary)
        _move_without_replacing(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    return path


def _move_without_replacing(source: Path, path: Path) -> None:
    try:
        os.link(source, path)
        return
    except FileExistsError:
        raise _name_taken(path) from None
    except OSError as error:
        if error.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK, errno.ENOSYS):
            raise
    # a file system without hard links: check, then rename (a writer racing this one could slip in between)
    if path.exists():
        raise _name_taken(path)
    os.rename(source, path)


def _name_taken(path: Path) -> LandingError:
    return LandingError(
        f"{path} already exists: a landed file is never overwritten (the landing folder is the only copy of its "
        f"batch), so nothing was written. Land the new batch under another name or into another folder."
    )


def load_files(
    paths: Sequence[Path],
    batches: int = 1,
    ingested_at: datetime | None = None,
    directory: Path | None = None,
    progress: bool = False,
) -> list[LandedBatch]:
    """Validate every file first, then land each one (or each of its slices) as a new batch.

    Batches get strictly increasing ingested_at stamps: from the given start time one second apart, or else the
    time each one lands (at least a microsecond after the previous one). With progress, inputs of at least
    PROGRESS_MIN_ROWS rows show progress bars on stderr.
    """
    parts = [part for path in paths for part in slices(read_events(Path(path), progress), batches)]
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
    bar = _progress_bar(sum(part.num_rows for part in parts), "land") if progress else None
    for part in parts:
        landed.append(land(part, stamp, directory))
        if bar is not None:
            bar.update(part.num_rows)
        if ingested_at is not None:
            stamp += timedelta(seconds=1)
        else:
            stamp = max(stamp + timedelta(microseconds=1), datetime.now(UTC))
    if bar is not None:
        bar.close()
    return landed
