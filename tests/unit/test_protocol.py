"""The state tables' declared windows (config.meta.state_window) are what docs/design.md says they are, and the
picture of them can be drawn from the declarations."""

from __future__ import annotations

import re
from pathlib import Path

from entity_state.protocol import LANDING, Bound, draw, state_windows

PROJECT_DIR = Path(__file__).resolve().parents[2]


def _design_table() -> dict[str, tuple[str | None, tuple[Bound, ...], str | None, str | None, str | None]]:
    text = (PROJECT_DIR / "docs" / "design.md").read_text()
    table = text[text.index("| table | seed | may not pass | emitted column | follows | closed stays |") :]
    rows = {}
    for line in table.split("\n\n")[0].splitlines()[2:]:
        model, seed, bounds, column, follows, closed_stays = (
            cell.strip().strip("`") for cell in line.strip("|").split("|")
        )
        bound_list = []
        for bound in bounds.split(", "):
            name = re.sub(r"`| \(once built\)", "", bound)
            bound_list.append(Bound(name, bound.endswith("(once built)")))
        rows[model] = (
            model if seed == "this" else seed or None,
            tuple(bound_list),
            column or None,
            follows or None,
            model if closed_stays == "this" else closed_stays or None,
        )
    return rows


def test_the_design_doc_lists_the_declared_windows():
    windows = state_windows(PROJECT_DIR)
    declared = {
        name: (w.seed, w.may_not_pass, w.emitted_column, w.follows, w.closed_stays) for name, w in windows.items()
    }
    assert declared == _design_table()
    assert set(declared) == {
        "entity_state_segments",
        "entity_state_current_log",
        "entity_state_batches",
        "events_rejected",
        "entity_state_changes",
    }


def test_every_bound_is_the_landing_or_a_state_table_and_bounds_have_no_cycle():
    windows = state_windows(PROJECT_DIR)
    for window in windows.values():
        for bound in window.may_not_pass:
            assert bound.table == LANDING or bound.table in windows, bound
        assert window.seed is None or window.seed in windows
        assert window.follows is None or window.follows in windows
        assert window.closed_stays is None or window.closed_stays in windows

    def reaches(start: str, goal: str) -> bool:
        return any(
            b.table == goal or (b.table != LANDING and reaches(b.table, goal)) for b in windows[start].may_not_pass
        )

    assert not any(reaches(name, name) for name in windows)


def test_the_picture_is_drawn_from_the_declarations(tmp_path):
    out = draw(state_windows(PROJECT_DIR), tmp_path / "windows.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
