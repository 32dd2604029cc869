"""Command line: `entity-state load FILE... [--batches N] [--ingested-at TIME]`, `entity-state generate`,
`entity-state sql QUERY`, `entity-state timeline`,
`entity-state demo`, `entity-state docs [--serve]`, `entity-state driver-archive`, `entity-state jars`,
`entity-state cluster up|down|status` and `entity-state clean`."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from entity_state.generate import StreamConfig, generate
from entity_state.landing import LandingError, landing_dir, load_files, parse_timestamp
from entity_state.paths import DEFAULT_LANDING_DIR

LANDING_DIR_HELP = f"landing folder (default: $ENTITY_STATE_LANDING_DIR, else {DEFAULT_LANDING_DIR})"
CLUSTER_EPILOG = """settings (environment variables, with their defaults): ENTITY_STATE_HOME (.local; the cluster's
files go to its cluster/ folder), ENTITY_STATE_METASTORE_PORT (15432), ENTITY_STATE_MASTER_PORT (7078),
ENTITY_STATE_MASTER_UI_PORT (8090), ENTITY_STATE_WORKER_UI_PORT (8091) and the next port for the second worker,
ENTITY_STATE_THRIFT_PORT (10001), ENTITY_STATE_WORKER_CORES (2), ENTITY_STATE_WORKER_MEMORY (4g),
ENTITY_STATE_EXECUTOR_MEMORY (2g), ENTITY_STATE_CLUSTER_TIMEOUT (180 seconds), ENTITY_STATE_POSTGRES_BIN (the newest
/usr/lib/postgresql/*/bin)"""


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows each option's default, except where there is none to show (None, a flag's False): those options say
    in their help what happens when they are not given."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None or action.default is False:
            return action.help
        return super()._get_help_string(action)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="entity-state", description=__doc__, formatter_class=HelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)

    load = commands.add_parser("load", help="validate event files and land them as new batches")
    load.add_argument("files", nargs="+", type=Path, help="CSV or Parquet files of events")
    load.add_argument("--batches", type=int, default=1, help="cut each file into N batches")
    load.add_argument(
        "--ingested-at",
        type=parse_timestamp,
        help="stamp the first batch with this time (ISO 8601, UTC if no offset) (default: now)",
    )
    load.add_argument("--landing-dir", type=Path, help=LANDING_DIR_HELP)
    load.add_argument(
        "--quiet", action="store_true", help="no progress bars (shown on a terminal for inputs of 1M rows or more)"
    )

    generate = commands.add_parser(
        "generate", help="land synthetic batches: pallets moving between warehouses (deterministic per seed)"
    )
    defaults = StreamConfig()
    generate.add_argument("--batches", type=int, default=10, help="number of batches (files) to land")
    generate.add_argument("--events-per-batch", type=int, default=100_000, help="rows per batch, duplicates included")
    generate.add_argument("--tenants", type=int, default=defaults.tenants, help="tenants the entities belong to")
    generate.add_argument("--entities", type=int, default=defaults.entities, help="entities in all tenants")
    generate.add_argument(
        "--touched-entities", type=int, help="each batch draws its events from this many entities (default: all)"
    )
    generate.add_argument("--states", type=int, default=defaults.states, help="warehouses on the ring")
    generate.add_argument("--fanout", type=int, default=defaults.fanout, help="moves allowed from each warehouse")
    generate.add_argument(
        "--heartbeats-per-change",
        type=float,
        default=defaults.heartbeats_per_change,
        help="events that repeat an entity's state, per change of state",
    )
    generate.add_argument("--duplicates", type=float, default=defaults.duplicate_share, help="share of exact copies")
    generate.add_argument("--disorder", type=float, default=defaults.disorder, help="share of rows out of time order")
    generate.add_argument("--seed", type=int, default=defaults.seed, help="random seed")
    generate.add_argument(
        "--start", type=parse_timestamp, default=defaults.start, help="time of the first event (ISO 8601, UTC)"
    )
    generate.add_argument("--landing-dir", type=Path, help=LANDING_DIR_HELP)
    generate.add_argument("--quiet", action="store_true", help="no progress bar")

    sql = commands.add_parser(
        "sql",
        help="run a query on the local state, with ref() and source() (dbt show --inline)",
        description="Run a query on the state, with {{ ref('...') }} and {{ source('...') }}: an in-process "
        "`dbt show --inline QUERY` with the project's profiles (profiles/), from the project root found from the "
        "current folder upwards. Target and schema as for dbt: ENTITY_STATE_TARGET (local), ENTITY_STATE_SCHEMA "
        "(entity_state), ENTITY_STATE_HOME (.local).",
    )
    sql.add_argument("query", help="SQL, e.g. \"select * from {{ ref('entity_state_view') }}\"")
    sql.add_argument("--limit", type=int, default=100, help="rows to show; -1 for all")
    sql.add_argument("--output", choices=["text", "json"], default="text", help="table (text) or JSON")

    timeline = commands.add_parser(
        "timeline",
        help="draw the stays of entity_state_view as a PNG: one lane per entity, one bar per stay",
        description="Draw the stays of entity_state_view as a PNG picture: one lane per entity, one coloured bar "
        "per stay, the open stay hatched, a stale one marked. Reads the state as `entity-state sql` does (project "
        "root, ENTITY_STATE_TARGET, ENTITY_STATE_SCHEMA, ENTITY_STATE_HOME).",
    )
    timeline.add_argument("--tenant", help="only this tenant's entities (default: every tenant)")
    timeline.add_argument("--entity", action="append", help="only this entity; repeat for more (default: all)")
    timeline.add_argument(
        "--out", type=Path, help="the PNG file to write (default: $ENTITY_STATE_HOME/timeline.png, in .local/)"
    )
    timeline.add_argument("--stale-after", help="mark stays silent this long as stale, e.g. '2 hours' (default: off)")

    demo = commands.add_parser(
        "demo",
        help="land the shipped demo events batch by batch and run dbt build, in a folder and schema of its own "
        "($ENTITY_STATE_HOME/demo/landing, entity_state_demo; ENTITY_STATE_LANDING_DIR and ENTITY_STATE_SCHEMA are "
        "ignored)",
    )
    demo.add_argument("--batches", type=int, default=3)
    demo.add_argument("--tenant", default="acme")
    demo.add_argument("--entity", default="e-1")

    docs = commands.add_parser(
        "docs",
        help="dbt docs generate (and serve) for the state of ENTITY_STATE_SCHEMA; unset, the demo's schema while "
        "the default schema holds no state, so that `make demo` then `make docs-serve` shows the demo's tables",
    )
    docs.add_argument("--serve", action="store_true", help="serve the site after generating it")
    docs.add_argument("--port", type=int, default=8080, help="port of the served site")

    archive_help = (
        "write the classes a Spark driver loads to the archive each dbt command on the local target starts its "
        "driver with ($ENTITY_STATE_DRIVER_ARCHIVE, default $ENTITY_STATE_HOME/jvm/spark-driver.jsa), from dbt runs "
        "on a scratch state of its own; again after upgrading Java or PySpark"
    )
    commands.add_parser("driver-archive", help=archive_help, description=archive_help)

    jars_help = "copy the Java packages pinned in jars.lock (Delta Lake, the metastore's JDBC driver) into .venv/jars, "
    jars_help += "checked against their SHA-256, fetching with Maven only those missing (`make install` runs it)"
    commands.add_parser("jars", help=jars_help, description=jars_help)

    cluster = commands.add_parser(
        "cluster", help="start, stop or check the local Spark cluster (`cluster` target)", epilog=CLUSTER_EPILOG
    )
    cluster.add_argument("action", choices=["up", "down", "status"], help="start (waits until it answers), stop, check")

    commands.add_parser(
        "clean",
        help="stop the local cluster, then remove .local, target and logs from the project folder; never the landing "
        "folder (refuses if ENTITY_STATE_LANDING_DIR lies inside one of them)",
    )

    for command in commands.choices.values():
        command.formatter_class = HelpFormatter
        for action in command._actions:  # an option without a help text shows its default all the same
            if action.help is None and action.default not in (None, False, argparse.SUPPRESS):
                action.help = "(default: %(default)s)"
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "clean":
        from entity_state.clean import main as clean

        return clean([])
    if args.command == "cluster":
        return run_cluster(args.action)
    if args.command == "sql":
        return run_sql(args.query, args.limit, args.output)
    if args.command == "timeline":
        return run_timeline(args.tenant, args.entity, args.out, args.stale_after)
    if args.command == "load":
        progress = not args.quiet and sys.stderr.isatty()
        try:
            landed = load_files(
                args.files, args.batches, args.ingested_at, args.landing_dir or landing_dir(), progress=progress
            )
        except LandingError as error:
            print(f"entity-state load: {error}", file=sys.stderr)
            return 2
        for batch in landed:
            print(f"landed {batch.rows} rows as {batch.path} (ingested_at {batch.ingested_at.isoformat()})")
        return 0
    if args.command == "generate":
        return _generate(args)
    if args.command == "docs":
        return run_docs(args.serve, args.port)
    if args.command == "jars":
        from entity_state.jars import main as install_jars

        return install_jars()
    if args.command == "driver-archive":
        root = _enter_project("driver-archive")
        if root is None:
            return 1
        from entity_state.driver_archive import main as write_archive

        return write_archive(root)
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


def project_root(start: Path) -> Path | None:
    """The entity_state dbt project folder: `start` or the nearest parent with its dbt_project.yml."""
    for folder in (start, *start.parents):
        project_file = folder / "dbt_project.yml"
        if (
            project_file.is_file()
            and (folder / "profiles" / "profiles.yml").is_file()
            and any(line.strip() == "name: entity_state" for line in project_file.read_text().splitlines())
        ):
            return folder
    return None


def _enter_project(command: str) -> Path | None:
    """chdir to the project root (the state home and the landing folder default to paths relative to it, as for
    dbt itself) and return it; None, having said why, when the current folder is not inside the project."""
    root = project_root(Path.cwd().resolve())
    if root is None:
        print(
            f"entity-state {command}: {Path.cwd()} is not inside the entity_state dbt project (no dbt_project.yml "
            "of it here or in a parent folder): run it from the project folder",
            file=sys.stderr,
        )
        return None
    os.chdir(root)
    return root


def run_sql(query: str, limit: int, output: str) -> int:
    """`dbt show --inline QUERY` in this process, from the project root, with the project's profiles."""
    root = _enter_project("sql")
    if root is None:
        return 1
    from dbt.cli.main import dbtRunner

    arguments = ["show", "--inline", query, "--limit", str(limit), "--output", output, "--quiet"]
    arguments += ["--project-dir", str(root), "--profiles-dir", str(root / "profiles")]
    return 0 if dbtRunner().invoke(arguments).success else 1


def run_docs(serve: bool, port: int) -> int:
    """`dbt docs generate`, then `dbt docs serve` if asked, in this process, on the state `documented_state` picks."""
    root = _enter_project("docs")
    if root is None:
        return 1
    from dbt.cli.main import dbtRunner

    from entity_state.demo import documented_state

    with documented_state() as note:
        if note:
            print(f"entity-state docs: {note}")
        runner = dbtRunner()
        paths = ["--project-dir", str(root), "--profiles-dir", str(root / "profiles")]
        if not runner.invoke(["docs", "generate", *paths]).success:
            return 1
        if serve:
            return 0 if runner.invoke(["docs", "serve", "--port", str(port), "--no-browser", *paths]).success else 1
    return 0


def run_timeline(tenant: str | None, entities: list[str] | None, out: Path | None, stale_after: str | None) -> int:
    """Read the stays through dbt in this process and draw them (entity_state.timeline)."""
    from entity_state.timeline import draw, read_stays, why_not_write

    out = out.resolve() if out else None  # against the folder the user is in, before moving to the project root
    refusal = why_not_write(out) if out else None
    if refusal:
        print(f"entity-state timeline: {refusal}", file=sys.stderr)
        return 2
    root = _enter_project("timeline")
    if root is None:
        return 1
    os.environ["DBT_PROFILES_DIR"] = str(root / "profiles")
    import json

    from dbt.cli.main import dbtRunner

    from entity_state.paths import state_home

    vars_ = json.dumps({"entity_state__stale_after": stale_after}) if stale_after else None
    stays = read_stays(dbtRunner(), tenant, entities, vars_)
    if stays is None:
        return 1
    if not stays:
        print("entity-state timeline: no stays to draw (no entity matches, or nothing has run yet)", file=sys.stderr)
        return 1
    path = draw(stays, out or state_home() / "timeline.png")
    print(f"timeline picture: {path}")
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
