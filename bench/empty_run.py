"""Before/after check for one optimisation: the cost of an in-process `dbt run` when nothing new has landed, and
when a small batch has.

Builds a state (`--history` events, 20k by default, landed in files of up to 1M), then times `--runs` runs with no
new batch in one warmed-up dbt process, then (with `--batch N`) `--runs` runs each after landing an N-event batch,
and prints the medians of the whole run and of the two state models. With `--late-share S`, in-order batches
alternate with batches that have that share of their rows moved back by up to `--late-by` hours (late events, which
make a run repair their entities). Run it from a project folder (for a before/after comparison, from a copy of the
project at each commit): `.venv/bin/python bench/empty_run.py --out DIR`.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
from datetime import timedelta
from pathlib import Path

from run import NOISE, STATE_MODELS, InProcessDbt, Workspace

from entity_state.generate import EventStream, StreamConfig


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--history", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=0, help="also time runs after an N-event batch (0: do not)")
    parser.add_argument("--late-share", type=float, default=0.0, help="also time each batch with this share late")
    parser.add_argument("--late-by", type=float, default=168.0, help="hours a late event is moved back, at most")
    args = parser.parse_args()
    workspace = Workspace(args.out.resolve(), "empty_run")
    stream = EventStream(StreamConfig(entities=20_000, **NOISE))
    for start in range(0, args.history, 1_000_000):
        workspace.land(stream, min(1_000_000, args.history - start), "history")
    dbt = InProcessDbt(workspace)
    try:
        dbt.invoke("run")
        runs = {"empty": [dbt.invoke("run") for _ in range(args.runs)]}
        if args.batch and args.late_share:
            # in-order and late batches alternate on the same growing state, in one warmed-up process
            in_order_config = stream.config
            late_config = dataclasses.replace(
                in_order_config, late_share=args.late_share, late_by=timedelta(hours=args.late_by)
            )
            in_order = f"{args.batch:,}-event batch in order"
            late = f"{args.batch:,}-event batch {args.late_share:.1%} late"
            runs[in_order], runs[late] = [], []
            for _ in range(args.runs):
                for label, config in ((in_order, in_order_config), (late, late_config)):
                    stream.config = config
                    workspace.land(stream, args.batch, "batch", args.batch)
                    runs[label].append(dbt.invoke("run"))
        elif args.batch:
            runs[f"{args.batch:,}-event batch"] = []
            for _ in range(args.runs):
                workspace.land(stream, args.batch, "batch", args.batch)
                runs[f"{args.batch:,}-event batch"].append(dbt.invoke("run"))
    finally:
        dbt.close()
    for label, measured in runs.items():
        whole = statistics.median(m.seconds for m in measured)
        state = statistics.median(sum(m.models[name] for name in STATE_MODELS) for m in measured)
        print(f"{label} in-process dbt run: {whole:.1f} s median of {len(measured)}; state models {state:.1f} s")
        print(f"  all runs: {[round(m.seconds, 1) for m in measured]}")
        per_model = {name: statistics.median(m.models.get(name, 0.0) for m in measured) for name in measured[0].models}
        print("  per model (median s): " + ", ".join(f"{name} {value:.2f}" for name, value in per_model.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
