"""Command line: `entity-state load FILE... [--batches N] [--ingested-at TIME]`, `entity-state demo` and
`entity-state cluster up|down|status`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from entity_state.landing import LandingError, landing_dir, load_files, parse_timestamp


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="entity-state", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    load = commands.add_parser("load", help="validate event files and land them as new batches")
    load.add_argument("files", nargs="+", type=Path, help="CSV or Parquet files of events")
    load.add_argument("--batches", type=int, default=1, help="cut each file into N batches (default 1)")
    load.add_argument(
        "--ingested-at",
        type=parse_timestamp,
        help="stamp the first batch with this time (ISO 8601, UTC if no offset) instead of now",
    )
    load.add_argument("--landing-dir", type=Path, help="landing folder (default: $ENTITY_STATE_LANDING_DIR)")

    demo = commands.add_parser("demo", help="land the shipped demo events batch by batch and run dbt build")
    demo.add_argument("--batches", type=int, default=3)
    demo.add_argument("--tenant", default="acme")
    demo.add_argument("--entity", default="e-1")

    cluster = commands.add_parser("cluster", help="start, stop or check the local Spark cluster (`cluster` target)")
    cluster.add_argument("action", choices=["up", "down", "status"])

    args = parser.parse_args(argv)
    if args.command == "cluster":
        return run_cluster(args.action)
    if args.command == "load":
        try:
            landed = load_files(args.files, args.batches, args.ingested_at, args.landing_dir or landing_dir())
        except LandingError as error:
            print(f"entity-state load: {error}", file=sys.stderr)
            return 2
        for batch in landed:
            print(f"landed {batch.rows} rows as {batch.path} (ingested_at {batch.ingested_at.isoformat()})")
        return 0
    from entity_state.demo import run_demo

    return run_demo(args.batches, args.tenant, args.entity)


def run_cluster(action: str) -> int:
    from entity_state import cluster

    try:
        settings = cluster.Settings.from_env()
        if action == "up":
            cluster.up(settings)
        elif action == "down":
            cluster.down(settings)
        elif not cluster.status(settings):
            print("the cluster is not up: start it with `make cluster-up`", file=sys.stderr)
            return 1
    except cluster.ClusterError as error:
        print(f"entity-state cluster {action}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
