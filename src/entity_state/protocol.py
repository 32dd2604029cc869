"""The state tables' windows as their models declare them (`config.meta.state_window` in the models' yml), and a
picture of them: which table seeds which, which watermarks each may not pass, which follows another's writes, and
whose closed stays bound a repair's read of the landed history.
The declarations are the one source: the macro state_window reads the same keys when a model compiles. From the
project root,
`.venv/bin/python -m entity_state.protocol` redraws assets/state_windows.png (shown by the docs site and
docs/design.md)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

LANDING = "landing"


@dataclass(frozen=True)
class Bound:
    table: str
    once_built: bool = False


@dataclass(frozen=True)
class StateWindow:
    model: str
    seed: str | None
    may_not_pass: tuple[Bound, ...]
    emitted_column: str | None
    follows: str | None = None
    closed_stays: str | None = None


def state_windows(project_dir: Path) -> dict[str, StateWindow]:
    """Every model that declares a window, by name, with `this` (seed, closed stays) spelled as the model's own name."""
    windows = {}
    for path in sorted((project_dir / "models").rglob("_*__models.yml")):
        for model in (yaml.safe_load(path.read_text()) or {}).get("models", []):
            declared = ((model.get("config") or {}).get("meta") or {}).get("state_window")
            if declared is None:
                continue
            bounds = tuple(
                Bound(bound) if isinstance(bound, str) else Bound(bound["table"], bool(bound.get("once_built")))
                for bound in declared["may_not_pass"]
            )
            seed, closed_stays = declared.get("seed"), declared.get("closed_stays")
            windows[model["name"]] = StateWindow(
                model["name"],
                model["name"] if seed == "this" else seed,
                bounds,
                declared.get("emitted_column"),
                declared.get("follows"),
                model["name"] if closed_stays == "this" else closed_stays,
            )
    return windows


def _levels(windows: dict[str, StateWindow]) -> dict[str, int]:
    """Column of each node in the picture: one right of everything it may not pass (the landing folder first)."""
    levels = {LANDING: 0}

    def level(name: str) -> int:
        if name not in levels:
            levels[name] = 1 + max(level(bound.table) for bound in windows[name].may_not_pass)
        return levels[name]

    for name in windows:
        level(name)
    return levels


def draw(windows: dict[str, StateWindow], out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import FancyArrowPatch

    levels = _levels(windows)
    columns: dict[int, list[str]] = {}
    for name, level in sorted(levels.items(), key=lambda item: (item[1], item[0])):
        columns.setdefault(level, []).append(name)
    # tables of one column spread apart, a lone one in the middle, so a bound that skips a column passes between them
    position = {
        name: (level * 4.0, (len(names) - 1) * 1.3 - row * 2.6)
        for level, names in columns.items()
        for row, name in enumerate(names)
    }
    position[LANDING] = (0.0, 0.0)

    figure, axes = plt.subplots(figsize=(13, 5.2))
    boxes = {}
    for name, (x, y) in position.items():
        window = windows.get(name)
        label = "landed events" if name == LANDING else name
        if window and window.emitted_column:
            label += f"\none partition per run\n(emitted: {window.emitted_column})"
        boxes[name] = axes.text(
            x,
            y,
            label,
            ha="center",
            va="center",
            fontsize=8.5,
            bbox={"boxstyle": "round,pad=0.5", "facecolor": "#eef3fa" if window else "#f4f4f4", "edgecolor": "#555"},
        )
    xs = [x for x, _ in position.values()]
    ys = [y for _, y in position.values()]
    axes.set_xlim(min(xs) - 1.6, max(xs) + 1.6)
    axes.set_ylim(min(ys) - 1.3, max(ys) + 1.5)
    axes.axis("off")
    figure.canvas.draw()  # lays out the boxes, so that arrows can end at their edges
    to_data = axes.transData.inverted()
    extents = {name: box.get_bbox_patch().get_window_extent().transformed(to_data) for name, box in boxes.items()}

    def edge(name: str, toward: tuple[float, float]) -> tuple[float, float]:
        """Where the line from the centre of a box toward a point leaves the box, a little outside it."""
        (x, y), box = position[name], extents[name]
        dx, dy = toward[0] - x, toward[1] - y
        scale = min(box.width / 2 / abs(dx) if dx else float("inf"), box.height / 2 / abs(dy) if dy else float("inf"))
        return x + dx * scale * 1.04, y + dy * scale * 1.04

    def arrow(source: str, target: str, style: str, colour: str, bend: float) -> None:
        common = {"arrowstyle": "-|>", "mutation_scale": 14, "linestyle": style, "color": colour, "linewidth": 1.3}
        if source == target:
            # a table's own rows: a loop over its box, above for the seed, below for its closed stays
            x, y = position[source]
            side = extents[source].height / 2 * (1 if bend > 0 else -1)
            axes.add_patch(
                FancyArrowPatch(
                    (x + 0.45, y + side),
                    (x - 0.45, y + side),
                    connectionstyle=f"arc3,rad={1.2 if bend > 0 else -1.2}",
                    **common,
                )
            )
            return
        start = edge(source, position[target])
        end = edge(target, position[source])
        axes.add_patch(FancyArrowPatch(start, end, connectionstyle=f"arc3,rad={bend}", **common))

    for window in windows.values():
        for bound in window.may_not_pass:
            arrow(bound.table, window.model, ":" if bound.once_built else "-", "#1f5fa8", 0.0)
        if window.seed:
            arrow(window.seed, window.model, "--", "#c0392b", 0.3)
        if window.follows:
            arrow(window.follows, window.model, "-.", "#2e8b57", -0.3)
        if window.closed_stays:
            arrow(window.closed_stays, window.model, (0, (5, 2, 1, 2, 1, 2)), "#7d3c98", -0.45)

    axes.legend(
        handles=[
            Line2D([], [], color="#1f5fa8", label="may not pass: the window ends at this watermark"),
            Line2D([], [], color="#1f5fa8", linestyle=":", label="the same, once that table is built"),
            Line2D([], [], color="#c0392b", linestyle="--", label="seed: its stored open stays start the walk"),
            Line2D([], [], color="#2e8b57", linestyle="-.", label="follows its writes, rebuilt with it"),
            Line2D(
                [],
                [],
                color="#7d3c98",
                linestyle=(0, (5, 2, 1, 2, 1, 2)),
                label="closed stays: where a repair's read of the landed history starts",
            ),
        ],
        loc="lower center",
        bbox_to_anchor=(0.5, -0.12),
        ncol=2,
        fontsize=8,
        frameon=False,
    )
    axes.set_title("State tables: what each run's window may not pass, and what seeds its walk", fontsize=10)
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=110, bbox_inches="tight")
    plt.close(figure)
    return out


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m entity_state.protocol", description=__doc__)
    parser.add_argument("--project-dir", type=Path, default=Path.cwd(), help="the dbt project (default: here)")
    parser.add_argument("--out", type=Path, help="the PNG to write (default: assets/state_windows.png of the project)")
    args = parser.parse_args(argv)
    out = draw(state_windows(args.project_dir), args.out or args.project_dir / "assets" / "state_windows.png")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
