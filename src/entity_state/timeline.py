"""A picture of stays: one lane per entity, one coloured bar per stay (`entity-state timeline`, and the end of
`entity-state demo`).

Closed stays are solid bars from start_time to end_time. An open stay is hatched: it has not ended, and the picture
runs it to its right edge. A stale open stay (`is_stale`: silent for longer than `entity_state__stale_after`) is
solid up to its last event, marked there with a cross, and pale and cross-hatched after it: nobody has heard from the
entity since.
The right edge is a little after the latest event shown, not now, so stays from long ago stay readable; the label
of an open stay gives the moment it runs to.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

STATE_COLOURS = (
    "#4e79a7",
    "#f28e2b",
    "#59a14f",
    "#e15759",
    "#76b7b2",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
)


@dataclass(frozen=True)
class Stay:
    """One row of entity_state_view, as the picture needs it."""

    tenant_id: str
    entity_id: str
    state_id: str
    start_time: datetime
    end_time: datetime
    last_event_ts: datetime
    is_open: bool
    is_stale: bool


def lanes(stays: list[Stay]) -> list[tuple[str, str]]:
    """The (tenant_id, entity_id) lanes, top to bottom: by tenant, then by the entity's first stay."""
    first: dict[tuple[str, str], datetime] = {}
    for stay in stays:
        key = (stay.tenant_id, stay.entity_id)
        first[key] = min(first.get(key, stay.start_time), stay.start_time)
    return sorted(first, key=lambda key: (key[0], first[key], key[1]))


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def why_not_write(path: Path) -> str | None:
    """None when the picture may be written to `path`; else why not. Only a picture may be replaced, and nothing is
    written into the landing folder: a file there is landed data."""
    from entity_state.paths import local_landing_dir

    landing = local_landing_dir()
    if landing is not None and path.resolve().is_relative_to(landing):
        return f"{path} lies in the landing folder {landing}, which holds landed data only; choose another --out"
    if path.exists() and (not path.is_file() or path.open("rb").read(len(PNG_SIGNATURE)) != PNG_SIGNATURE):
        return f"{path} exists and is not a PNG picture; it is left as it is: choose another --out"
    return None


def draw(stays: list[Stay], path: Path, title: str = "Stays per entity (entity_state_view)") -> Path:
    """Write the picture of `stays` as a PNG to `path` (its folder is created) and return the path."""
    if not stays:
        raise ValueError("no stays to draw: run dbt first, or choose entities that have events")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.dates as mdates
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    order = lanes(stays)
    states = sorted({stay.state_id for stay in stays})
    colour = {state: STATE_COLOURS[i % len(STATE_COLOURS)] for i, state in enumerate(states)}
    latest = max(stay.last_event_ts if stay.is_open else stay.end_time for stay in stays)
    earliest = min(stay.start_time for stay in stays)
    edge = latest + max((latest - earliest) * 0.25, timedelta(minutes=1))
    time_format = "%H:%M" if edge - earliest <= timedelta(days=1) else "%Y-%m-%d %H:%M"

    figure, axes = plt.subplots(figsize=(11, 1.2 + 0.7 * len(order)), dpi=110)
    for lane, key in enumerate(order):
        y = len(order) - 1 - lane
        for stay in (s for s in stays if (s.tenant_id, s.entity_id) == key):
            _draw_stay(axes, stay, y, colour[stay.state_id], edge, time_format, mdates)
    axes.set_yticks(range(len(order)), [f"{tenant} / {entity}" for tenant, entity in reversed(order)])
    axes.set_ylim(-0.6, len(order) - 0.4)
    axes.set_xlim(mdates.date2num(earliest - (edge - earliest) * 0.02), mdates.date2num(edge))
    if edge - earliest <= timedelta(days=1):
        axes.xaxis.set_major_formatter(mdates.DateFormatter("%H:%M"))
        axes.set_xlabel(
            f"UTC, {earliest:%Y-%m-%d}" + (f" to {edge:%Y-%m-%d}" if edge.date() != earliest.date() else "")
        )
    else:
        axes.xaxis.set_major_formatter(mdates.DateFormatter("%Y-%m-%d\n%H:%M"))
        axes.set_xlabel("UTC")
    axes.grid(axis="x", color="#dddddd", linewidth=0.6)
    axes.set_axisbelow(True)
    axes.set_title(title, loc="left", fontsize=11)
    legend = [Patch(facecolor=colour[state], label=state) for state in states]
    legend += [
        Patch(facecolor="white", edgecolor="#444444", hatch="///", label="open (runs on to now)"),
        Line2D([], [], color="black", marker="x", linestyle="none", label="stale: last event"),
        Patch(facecolor="#dddddd", edgecolor="#777777", hatch="xx", label="stale: silent since"),
    ]
    axes.legend(handles=legend, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    plt.close(figure)
    return path


def _draw_stay(axes, stay: Stay, y: int, colour: str, edge: datetime, time_format: str, mdates) -> None:
    height = 0.56
    start = mdates.date2num(stay.start_time)
    if not stay.is_open:
        bar = axes.barh(y, mdates.date2num(stay.end_time) - start, left=start, height=height, color=colour)
        _label(axes, bar, stay.state_id, start, y)
        return
    if not stay.is_stale:
        bar = axes.barh(
            y, mdates.date2num(edge) - start, left=start, height=height, color=colour, edgecolor="#444444", hatch="///"
        )
        _label(axes, bar, f"{stay.state_id}  (open, to now: {stay.end_time:%Y-%m-%d %H:%M} UTC)", start, y)
        return
    last = mdates.date2num(stay.last_event_ts)
    bar = axes.barh(y, last - start, left=start, height=height, color=colour)
    _label(axes, bar, stay.state_id, start, y)
    # after the last event: still the stay's state (pale), but nobody has heard from the entity
    tail = axes.barh(
        y,
        mdates.date2num(edge) - last,
        left=last,
        height=height,
        color=colour,
        alpha=0.3,
        edgecolor="#777777",
        hatch="xx",
    )
    _label(axes, tail, f"{stay.state_id}: stale, silent since {stay.last_event_ts.strftime(time_format)}", last, y)
    axes.plot([last], [y], marker="x", color="black", markersize=8, markeredgewidth=2)


def _label(axes, bar, text: str, left: float, y: int) -> None:
    """The label inside its bar, cut where the bar ends (the legend names every state)."""
    label = axes.text(left, y, f"  {text}", ha="left", va="center", fontsize=7, clip_on=True)
    label.set_clip_path(bar.patches[0])


def read_stays(runner, tenant: str | None = None, entities: list[str] | None = None, vars_: str | None = None):
    """The stays of entity_state_view, through dbt show (`runner`, a dbtRunner, in the project folder), for one
    tenant and a list of entities when given. Returns a list of Stay, or None when dbt failed (it said why)."""
    conditions = []
    if tenant:
        conditions.append(f"tenant_id = '{_quoted(tenant)}'")
    if entities:
        conditions.append("entity_id in (" + ", ".join(f"'{_quoted(e)}'" for e in entities) + ")")
    query = (
        "select tenant_id, entity_id, state_id, start_time, end_time, last_event_ts, is_open, is_stale "
        "from {{ ref('entity_state_view') }}"
        + (" where " + " and ".join(conditions) if conditions else "")
        + " order by tenant_id, entity_id, start_time, is_open"
    )
    args = ["show", "--inline", query, "--limit", "-1", "--log-level", "none"]
    if vars_:
        args += ["--vars", vars_]
    result = runner.invoke(args)
    if not result.success:
        return None
    table = result.result.results[0].agate_table
    return [Stay(*(row[column] for column in table.column_names)) for row in table.rows]


def _quoted(value: str) -> str:
    return value.replace("\\", "\\\\").replace("'", "\\'")
