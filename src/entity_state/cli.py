"""Command line: `entity-state load FILE... [--batches N] [--ingested-at TIME]`, `entity-state generate`,
`entity-state demo`, `entity-state cluster up|down|status` and `entity-state clean`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from entity_state.generate import StreamConfig, generate
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

    generate = commands.add_parser(
        "generate", help="land synthetic batches: pallets moving between warehouses (deterministic per seed)"
    )
    defaults = StreamConfig()
    generate.add_argument("--batches", type=int, default=10, help="number of batches (files) to land")
    generate.add_argument("--events-per-batch", type=int, default=100_000, help="rows per batch, duplicates included")
    generate.add_argument("--tenants", type=int, default=defaults.tenants)
    generate.add_argument("--entities", type=int, default=defaults.entities, help="entities in all tenants")
    generate.add_argument(
        "--touched-entities", type=int, help="each batch draws its events from this many entities (default: all)"
    )
    generate.add_argument("--states", type=int, default=defaults.states, help="warehouses on the ring")
    generate.add_argument("--fanout", type=int, default=defaults.fanout, help="moves allowed from each warehouse")
    generate.add_argument("--heartbeats-per-change", type=float, default=defaults.heartbeats_per_change)
    generate.add_argument("--duplicates", type=float, default=defaults.duplicate_share, help="share of exact copies")
    generate.add_argument("--disorder", type=float, default=defaults.disorder, help="share of rows out of time order")
    generate.add_argument("--seed", type=int, default=defaults.seed)
    generate.add_argument(
        "--start", type=parse_timestamp, default=defaults.start, help="time of the first event (ISO 8601, UTC)"
    )
    generate.add_argument("--landing-dir", type=Path, help="landing folder (default: $ENTITY_STATE_LANDING_DIR)")
    generate.add_argument("--quiet", action="store_true", help="no progress bar")

    demo = commands.add_parser(
        "demo",
        help="land the shipped demo events batch by batch and run dbt build, in a folder and schema of its own "
        "($ENTITY_STATE_HOME/demo/landing, entity_state_demo; ENTITY_STATE_LANDING_DIR and ENTITY_STATE_SCHEMA are "
        "ignored)",
    )
    demo.add_argument("--batches", type=int, default=3)
    demo.add_argument("--tenant", default="acme")
    demo.add_argument("--entity", default="e-1")

    cluster = commands.add_parser("cluster", help="start, stop or check the local Spark cluster (`cluster` target)")
    cluster.add_argument("action", choices=["up", "down", "status"])

    commands.add_parser(
        "clean",
        help="stop the local cluster, then remove .local, target and logs from the project folder; never the landing "
        "folder (refuses if ENTITY_STATE_LANDING_DIR lies inside one of them)",
    )

    args = parser.parse_args(argv)
    if args.command == "clean":
        from entity_state.clean import main as clean

        return clean([])
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
    if args.command == "generate":
        return _generate(args)
    from entity_state.demo import run_demo

    return run_demo(args.batches, args.tenant, args.entity)


def _generate(args: argparse.Namespace) -> int:
    try:
        config = StreamConfig(
            tenants=args.tenants,
            entities=args.entities,
            states=args.states,
            fanout=args.fanout,
            heartbeats_per_change=args.heartbeats_per_change,
            duplicate_share=args.duplicates,
            disorder=args.disorder,
            seed=args.seed,
            start=args.start,
        )
    except ValueError as error:
        print(f"entity-state generate: {error}", file=sys.stderr)
        return 2
    if args.batches < 1 or args.events_per_batch < 1:
        print("entity-state generate: --batches and --events-per-batch must be at least 1", file=sys.stderr)
        return 2
    directory = args.landing_dir or landing_dir()
    paths: list[Path] = []
    try:
        paths.extend(
            generate(config, args.batches, args.events_per_batch, directory, args.touched_entities, not args.quiet)
        )
    except LandingError as error:
        # the same options give the same file names: a second run into one folder meets the first one's files
        print(
            f"entity-state generate: {error} The file names follow the options (seed, start, sizes): use another "
            f"--seed or --start, or another --landing-dir. {len(paths)} batch(es) landed before this one.",
            file=sys.stderr,
        )
        return 2
    print(f"landed {len(paths)} batches of {args.events_per_batch} events in {directory}")
    return 0


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
