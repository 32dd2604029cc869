"""`entity-state cluster up|down|status`: a one-machine Spark standalone cluster serving the `cluster` dbt target.

`up` starts, from the pip-installed PySpark and Debian's PostgreSQL server and without Docker, in this order:

    metastore  PostgreSQL holding the Hive metastore (database `metastore`, role `metastore`), data dir cluster/postgres
    master     Spark standalone master
    worker-1   Spark worker, work dir cluster/work-1
    worker-2   Spark worker, work dir cluster/work-2 (a process of its own: executors on both, shuffles between them)
    thrift     the Spark Thrift Server, an application on that master with one executor on each worker

all bound to 127.0.0.1. Logs, pid files, the warehouse (cluster/warehouse) and the metastore's database live in
$ENTITY_STATE_HOME/cluster/; the executors read and write the same local paths, which works because every process
runs on one machine (README: what a multi-host deployment changes). `up` also writes cluster/conf/, a Spark
configuration folder that points any other Spark process at the same metastore and warehouse:
`SPARK_CONF_DIR=.local/cluster/conf pyspark` (or spark-submit, or a PySpark script) sees the tables dbt wrote.
`down` stops what `up` started, found by its pid files; the metastore and the warehouse stay for the next `up`.

Ports and sizes come from the environment:

    ENTITY_STATE_METASTORE_PORT  15432  PostgreSQL (5432 is left to a server of the machine's own)
    ENTITY_STATE_MASTER_PORT     7078   master RPC (the usual 7077 is left to other Spark installations)
    ENTITY_STATE_MASTER_UI_PORT  8090   master web UI (the standalone master cannot run without one)
    ENTITY_STATE_WORKER_UI_PORT  8091   web UI of worker-1; worker-2's is the next port
    ENTITY_STATE_THRIFT_PORT     10001  Thrift Server, also read by the `cluster` profile (10000 is Hive's default)
    ENTITY_STATE_WORKER_CORES    2      per worker: the Thrift Server takes one on each, a batch job the other
    ENTITY_STATE_WORKER_MEMORY   4g     per worker
    ENTITY_STATE_EXECUTOR_MEMORY 2g     each of the Thrift Server's executors (a batch job's: 1g)
    ENTITY_STATE_CLUSTER_TIMEOUT 180    seconds `up` waits for each process to answer
"""

from __future__ import annotations

import glob
import json
import os
import secrets
import signal
import socket
import subprocess
import time
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

from entity_state.jars import DELTA_ARTIFACTS, spark_jars

HOST = "127.0.0.1"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
THRIFT_CLASS = "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2"
WORKERS = 2
METASTORE_DATABASE = "metastore"
METASTORE_ROLE = "metastore"
# Debian's server binaries (apt-get install postgresql-15; `make cluster-up` installs them when they are missing)
POSTGRES_BIN_GLOB = "/usr/lib/postgresql/*/bin"
# PostgreSQL refuses to run as root: run as root, the project runs the server as the user Debian's package creates
POSTGRES_OS_USER = "postgres"

# The `spark.sql.*` settings of the `local` profile but its warehouse folder (tests/unit/test_profiles.py keeps the
# two equal): those that change results or file layout, and the cache of compiled stages. The Thrift Server starts
# with them as its defaults so that both targets write the same tables at the same speed; the adapter tests' profile
# and the benchmark's bare sessions take them from here.
SQL_SETTINGS = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "4",
    "spark.databricks.delta.snapshotPartitions": "2",
    "spark.sql.sources.partitionOverwriteMode": "dynamic",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.legacy.timeParserPolicy": "CORRECTED",
    "spark.sql.codegen.cache.maxEntries": "1000",
    # Delta Lake (jars.lock) owns the session catalog: `using delta` tables live in the Hive metastore beside the
    # others, and the catalog hands every other table to Spark's own.
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}


class ClusterError(RuntimeError):
    """The cluster cannot be started or is not healthy; the message says what to do."""


@dataclass(frozen=True)
class Settings:
    directory: Path
    metastore_port: int
    master_port: int
    master_ui_port: int
    worker_ui_port: int
    thrift_port: int
    worker_cores: int
    worker_memory: str
    executor_memory: str
    timeout: float

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        home = Path(env.get("ENTITY_STATE_HOME", ".local")).resolve()
        return cls(
            directory=home / "cluster",
            metastore_port=_env_int(env, "ENTITY_STATE_METASTORE_PORT", 15432),
            master_port=_env_int(env, "ENTITY_STATE_MASTER_PORT", 7078),
            master_ui_port=_env_int(env, "ENTITY_STATE_MASTER_UI_PORT", 8090),
            worker_ui_port=_env_int(env, "ENTITY_STATE_WORKER_UI_PORT", 8091),
            thrift_port=_env_int(env, "ENTITY_STATE_THRIFT_PORT", 10001),
            worker_cores=_env_int(env, "ENTITY_STATE_WORKER_CORES", 2),
            worker_memory=env.get("ENTITY_STATE_WORKER_MEMORY", "4g"),
            executor_memory=env.get("ENTITY_STATE_EXECUTOR_MEMORY", "2g"),
            timeout=float(env.get("ENTITY_STATE_CLUSTER_TIMEOUT", "180")),
        )

    @property
    def master_url(self) -> str:
        return f"spark://{HOST}:{self.master_port}"

    @property
    def warehouse(self) -> Path:
        return self.directory / "warehouse"

    @property
    def postgres_data(self) -> Path:
        return self.directory / "postgres"

    @property
    def conf_dir(self) -> Path:
        """The Spark configuration folder of any client of this cluster's metastore (SPARK_CONF_DIR)."""
        return self.directory / "conf"

    @property
    def metastore_url(self) -> str:
        return f"jdbc:postgresql://{HOST}:{self.metastore_port}/{METASTORE_DATABASE}"


@dataclass(frozen=True)
class Component:
    name: str
    # what its command line holds, so that a pid file naming a pid since given to another process is not believed
    main_class: str
    # every port the process binds, with the variable that moves it; the first one answers once it is up
    ports: tuple[tuple[int, str], ...]


def components(settings: Settings) -> tuple[Component, ...]:
    """In start order; `down` stops them in reverse."""
    workers = tuple(
        Component(
            f"worker-{index}",
            WORKER_CLASS,
            ((settings.worker_ui_port + index - 1, "ENTITY_STATE_WORKER_UI_PORT"),),
        )
        for index in range(1, WORKERS + 1)
    )
    return (
        Component("metastore", "postgres", ((settings.metastore_port, "ENTITY_STATE_METASTORE_PORT"),)),
        Component(
            "master",
            MASTER_CLASS,
            (
                (settings.master_port, "ENTITY_STATE_MASTER_PORT"),
                (settings.master_ui_port, "ENTITY_STATE_MASTER_UI_PORT"),
            ),
        ),
        *workers,
        Component("thrift", THRIFT_CLASS, ((settings.thrift_port, "ENTITY_STATE_THRIFT_PORT"),)),
    )


def up(settings: Settings) -> None:
    settings.directory.mkdir(parents=True, exist_ok=True)
    to_start = []
    for component in components(settings):
        pid = running_pid(settings, component)
        if pid is not None:
            print(f"{component.name}: already running (pid {pid})")
            continue
        # every port is checked before anything starts, so a taken port leaves nothing half started
        for port, variable in component.ports:
            if not _port_free(port):
                raise ClusterError(
                    f"{component.name}: port {port} on {HOST} is already taken by another process. "
                    f"Stop that process or choose another port with {variable}=..."
                )
        to_start.append(component)
    if any(c.name == "metastore" for c in to_start):
        _init_postgres(settings)
    _write_client_conf(settings)
    for component in to_start:
        if component.name == "thrift":
            # the metastore's role, database and tables, before the first Spark process connects to it
            _ensure_metastore_database(settings)
        process = _start(settings, component)
        print(f"{component.name}: started (pid {process.pid}), log {_log(settings, component)}", flush=True)
        _wait_for_port(settings, component, process)
        if component.main_class == WORKER_CLASS:
            _wait_for_worker(settings, component)
    _wait_for_thrift(settings)
    print(f"cluster up: {settings.master_url}, Thrift Server {HOST}:{settings.thrift_port} answers `select 1`")


def down(settings: Settings) -> None:
    for component in reversed(components(settings)):
        pid_file = _pid_file(settings, component)
        pid = running_pid(settings, component)
        if pid is None:
            print(f"{component.name}: not running")
        else:
            stop(settings, component)
            print(f"{component.name}: stopped (pid {pid})")
        pid_file.unlink(missing_ok=True)


def stop(settings: Settings, component: Component, sig: int | None = None) -> None:
    """Stop one component (`sig`: with that signal, SIGKILL to kill it as a crash would). The metastore gets
    PostgreSQL's fast shutdown (SIGINT): its default, on SIGTERM, waits for every client to disconnect."""
    pid = running_pid(settings, component)
    if pid is None:
        return
    if sig is None and component.name == "metastore":
        _stop(pid, first=signal.SIGINT, group=False)
    else:
        _stop(pid, first=sig or signal.SIGTERM)
    _pid_file(settings, component).unlink(missing_ok=True)


def status(settings: Settings) -> bool:
    """Prints what runs where; true when every process runs and the Thrift Server answers a query."""
    healthy = True
    for component in components(settings):
        pid = running_pid(settings, component)
        healthy = healthy and pid is not None
        where = ", ".join(f"{HOST}:{port}" for port, _ in component.ports)
        state = f"running (pid {pid}) on {where}" if pid else "not running"
        print(f"{component.name}: {state}; {_where(settings, component)}")
    if running_pid(settings, component_named(settings, "master")) is not None:
        for line in _workers_as_the_master_sees_them(settings):
            print(f"master: {line}")
    if healthy:
        try:
            thrift_select_one(settings.thrift_port)
        except Exception as error:  # any failure to connect or query means the server is not usable yet
            print(f"thrift: `select 1` on {HOST}:{settings.thrift_port} failed: {error}")
            return False
        print(f"thrift: {HOST}:{settings.thrift_port} answers `select 1`")
    return healthy


def component_named(settings: Settings, name: str) -> Component:
    return next(c for c in components(settings) if c.name == name)


def _where(settings: Settings, component: Component) -> str:
    log = f"log {_log(settings, component)}"
    if component.name == "metastore":
        return f"{settings.metastore_url}, data {settings.postgres_data}, {log}"
    if component.main_class == WORKER_CLASS:
        return f"work dir {_work_dir(settings, component)}, {log}"
    if component.name == "thrift":
        return f"warehouse {settings.warehouse}, {log}"
    return log


def _workers_as_the_master_sees_them(settings: Settings) -> list[str]:
    """One line per worker the master knows: its state and the cores its executors use (the master's JSON page)."""
    try:
        page = _master_page(settings)
    except (OSError, ValueError) as error:
        return [f"no answer on its web UI ({error})"]
    lines = [
        f"worker {w['host']}:{w['port']} {w['state']}, {w['coresused']}/{w['cores']} cores and "
        f"{w['memoryused']}/{w['memory']} MB used by executors"
        for w in page.get("workers", [])
        if w.get("state") == "ALIVE"
    ]
    apps = [f"application {a['name']}: {a['cores']} cores" for a in page.get("activeapps", [])]
    return lines + apps or ["no worker registered"]


def alive_workers(settings: Settings) -> list[dict]:
    """The workers the master counts as alive, from its JSON page."""
    return [w for w in _master_page(settings).get("workers", []) if w.get("state") == "ALIVE"]


def _master_page(settings: Settings) -> dict:
    """The master's state as its web UI gives it (workers, applications)."""
    with urllib.request.urlopen(f"http://{HOST}:{settings.master_ui_port}/json/", timeout=5) as response:
        return json.load(response)


def running_pid(settings: Settings, component: Component) -> int | None:
    """The pid in the component's pid file, if that process is alive and still runs the component's class (a
    stale pid file may name a pid the system has since given to another process)."""
    try:
        pid = int(_pid_file(settings, component).read_text())
    except (FileNotFoundError, ValueError):
        return None
    # the whole command line: ps cuts it to the width of a terminal (or $COLUMNS), and a JVM's class comes after
    # its class path
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        command = subprocess.run(["ps", "-ww", "-p", str(pid), "-o", "command="], capture_output=True, text=True).stdout
    return pid if component.main_class in command else None


def thrift_select_one(port: int) -> None:
    from pyhive import hive

    connection = hive.connect(host=HOST, port=port, username="entity_state")
    try:
        cursor = connection.cursor()
        cursor.execute("select 1")
        if cursor.fetchall() != [(1,)]:
            raise ClusterError("`select 1` returned something else than 1")
    finally:
        connection.close()


# --- the metastore's PostgreSQL server


def postgres_bin() -> Path:
    """The folder of PostgreSQL's server binaries: ENTITY_STATE_POSTGRES_BIN, else Debian's newest."""
    given = os.environ.get("ENTITY_STATE_POSTGRES_BIN")
    found = [Path(given)] if given else sorted(map(Path, glob.glob(POSTGRES_BIN_GLOB)), key=_version_key)
    found = [folder for folder in found if (folder / "postgres").is_file()]
    if not found:
        raise ClusterError(
            "the PostgreSQL server is not installed (no postgres in "
            f"{given or POSTGRES_BIN_GLOB}): `make cluster-up` installs it (apt-get install postgresql-15), "
            "or set ENTITY_STATE_POSTGRES_BIN to the folder of its binaries"
        )
    return found[-1]


def _version_key(folder: Path) -> tuple[int, ...]:
    version = folder.parent.name
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def _as_postgres_owner(command: list[str]) -> list[str]:
    """The command as the user the server's files belong to: `postgres` when run as root, else the caller."""
    if os.geteuid() != 0:
        return command
    return ["setpriv", f"--reuid={POSTGRES_OS_USER}", f"--regid={POSTGRES_OS_USER}", "--init-groups", "--", *command]


def _init_postgres(settings: Settings) -> None:
    """A data dir of its own, made once with initdb: the server's superuser is its OS user, reached on the unix
    socket in the data dir only (peer); the metastore's role connects on 127.0.0.1 with a password (scram)."""
    data = settings.postgres_data
    if (data / "PG_VERSION").is_file():
        return
    data.mkdir(parents=True, exist_ok=True)
    data.chmod(0o700)
    if os.geteuid() == 0:
        import pwd

        owner = pwd.getpwnam(POSTGRES_OS_USER)
        os.chown(data, owner.pw_uid, owner.pw_gid)
    command = [str(postgres_bin() / "initdb"), "-D", str(data), "--encoding=UTF8", "--locale=C"]
    command += ["--auth-local=peer", "--auth-host=scram-sha-256"]
    done = subprocess.run(_as_postgres_owner(command), capture_output=True, text=True, cwd="/")
    if done.returncode != 0:
        raise ClusterError(
            f"initdb of the metastore's database in {data} failed (the user {POSTGRES_OS_USER} must be able to "
            f"reach that folder when run as root):\n{(done.stdout + done.stderr).strip()[-2000:]}"
        )
    print(f"metastore: created the PostgreSQL data dir {data}")


def _metastore_password(settings: Settings) -> str:
    """The metastore role's password, made once, readable by this user alone."""
    path = settings.conf_dir / "metastore.password"
    if not path.is_file():
        settings.conf_dir.mkdir(parents=True, exist_ok=True)
        path.touch(mode=0o600)
        path.write_text(secrets.token_hex(16) + "\n")
    return path.read_text().strip()


def _psql(settings: Settings, sql: str, database: str = "postgres") -> str:
    command = [str(postgres_bin() / "psql"), "-h", str(settings.postgres_data), "-p", str(settings.metastore_port)]
    command += ["-d", database, "-v", "ON_ERROR_STOP=1", "-qAt", "-c", sql]
    done = subprocess.run(_as_postgres_owner(command), capture_output=True, text=True, cwd="/")
    if done.returncode != 0:
        raise ClusterError(f"psql on the metastore's server failed: {done.stderr.strip()[-2000:]}")
    return done.stdout.strip()


def _ensure_metastore_database(settings: Settings) -> None:
    """The role and the database the Hive metastore lives in, and its tables (_create_metastore_schema)."""
    password = _metastore_password(settings).replace("'", "''")
    if not _psql(settings, f"select 1 from pg_roles where rolname = '{METASTORE_ROLE}'"):
        _psql(settings, f"create role {METASTORE_ROLE} login")
    _psql(settings, f"alter role {METASTORE_ROLE} password '{password}'")
    if not _psql(settings, f"select 1 from pg_database where datname = '{METASTORE_DATABASE}'"):
        _psql(settings, f"create database {METASTORE_DATABASE} owner {METASTORE_ROLE} encoding 'UTF8'")
        print(f"metastore: created the database {METASTORE_DATABASE} on {HOST}:{settings.metastore_port}")
    if not _psql(settings, "select 1 from pg_tables where tablename = 'VERSION'", database=METASTORE_DATABASE):
        _create_metastore_schema(settings)


# The metastore's schema version that Spark's built-in Hive 2.3.9 client expects (and checks: hive-site.xml)
HIVE_SCHEMA_VERSION = "2.3.0"


def _create_metastore_schema(settings: Settings) -> None:
    """Every table of the Hive metastore, made once, before any Spark process connects.

    Derived from the Hive 2.3.9 jars Spark itself ships and runs: DataNucleus's SchemaTool (in Spark's jars too)
    maps the metastore's JDO classes with Hive's own mapping (package.jdo, inside hive-metastore-2.3.9.jar), so the
    schema cannot drift from the client that uses it, and no second copy of Hive's schema scripts is kept here.
    Not the Hive client's `datanucleus.schema.autoCreateAll`: it creates tables lazily, as each is first needed,
    and two Thrift sessions doing that at once deadlocked here (one adding a foreign key to TBL_PRIVS while the
    other held TBLS in an open transaction). The version row then lets every client check the schema it meets."""
    work = settings.directory / "schema"
    work.mkdir(parents=True, exist_ok=True)
    jars = _spark_home() / "jars"
    with zipfile.ZipFile(next(jars.glob("hive-metastore-*.jar"))) as jar:
        (work / "package.jdo").write_bytes(jar.read("package.jdo"))
    properties = work / "datanucleus.properties"
    properties.touch(mode=0o600)  # it holds the metastore's password
    properties.write_text(
        "".join(
            f"{key}={value}\n"
            for key, value in {
                **{k: v for k, v in metastore_hive_conf(settings).items() if k.startswith("javax.jdo.")},
                # as Hive's ObjectStore sets them (HiveConf's defaults), so the names and value tables match
                "datanucleus.storeManagerType": "rdbms",
                "datanucleus.identifierFactory": "datanucleus1",
                "datanucleus.rdbms.useLegacyNativeValueStrategy": "true",
            }.items()
        )
    )
    class_path = f"{jars}/*:{spark_jars(artifacts=('postgresql',))}"
    command = ["java", "-cp", class_path, "org.datanucleus.store.schema.SchemaTool", "-create", "-api", "JDO"]
    command += ["-props", str(properties), str(work / "package.jdo")]
    done = subprocess.run(command, capture_output=True, text=True, cwd=work)
    (work / "schematool.log").write_text(done.stdout + done.stderr)
    created = _psql(settings, "select count(*) from pg_tables where schemaname = 'public'", database=METASTORE_DATABASE)
    if done.returncode != 0 or int(created or 0) == 0:
        raise ClusterError(
            f"DataNucleus SchemaTool could not create the metastore's tables; see {work / 'schematool.log'}:\n"
            f"{(done.stdout + done.stderr).strip()[-2000:]}"
        )
    _psql(
        settings,
        f"""insert into "VERSION" ("VER_ID", "SCHEMA_VERSION", "VERSION_COMMENT") """
        f"""values (1, '{HIVE_SCHEMA_VERSION}', 'entity-state cluster up (DataNucleus SchemaTool)')""",
        database=METASTORE_DATABASE,
    )
    print(f"metastore: created the Hive {HIVE_SCHEMA_VERSION} schema ({created} tables)")


def metastore_hive_conf(settings: Settings) -> dict[str, str]:
    """The Hive client's settings for the metastore on PostgreSQL (conf/hive-site.xml, read by every Spark driver
    started with SPARK_CONF_DIR=conf)."""
    return {
        "javax.jdo.option.ConnectionURL": settings.metastore_url,
        "javax.jdo.option.ConnectionDriverName": "org.postgresql.Driver",
        "javax.jdo.option.ConnectionUserName": METASTORE_ROLE,
        "javax.jdo.option.ConnectionPassword": _metastore_password(settings),
        # the schema `up` created whole (_create_metastore_schema): checked, never changed by a client
        "datanucleus.schema.autoCreateAll": "false",
        "hive.metastore.schema.verification": "true",
    }


def client_conf(settings: Settings) -> dict[str, str]:
    """What any Spark driver of this cluster starts with (conf/spark-defaults.conf): the master, the warehouse,
    the metastore's JDBC driver and the settings the Thrift Server runs with. A batch job takes 1 core of each
    worker (the Thrift Server holds the other) and 1g executors."""
    return {
        "spark.master": settings.master_url,
        "spark.driver.host": HOST,
        "spark.driver.bindAddress": HOST,
        # The driver's own class path: the Hive client (Spark's built-in 2.3.9, whose DataNucleus loads the JDBC
        # driver from there), and Delta Lake's classes, which the Thrift Server's statement threads did not find
        # in spark.jars alone (ClassNotFoundException for org.apache.spark.sql.delta.sources.DeltaSourceUtils$ on
        # two sessions' first statements). spark.jars still ships Delta to the executors.
        "spark.driver.extraClassPath": spark_jars(artifacts=("postgresql", *DELTA_ARTIFACTS)).replace(",", ":"),
        "spark.executor.extraJavaOptions": "-Duser.timezone=UTC",
        "spark.driver.extraJavaOptions": "-Duser.timezone=UTC",
        "spark.executor.cores": "1",
        "spark.executor.memory": "1g",
        "spark.cores.max": str(WORKERS),
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": str(settings.warehouse),
        "spark.jars": spark_jars(artifacts=DELTA_ARTIFACTS),
        **SQL_SETTINGS,
    }


def _write_client_conf(settings: Settings) -> None:
    conf = settings.conf_dir
    conf.mkdir(parents=True, exist_ok=True)
    properties = "".join(
        f"  <property><name>{escape(k)}</name><value>{escape(v)}</value></property>\n"
        for k, v in metastore_hive_conf(settings).items()
    )
    hive_site = conf / "hive-site.xml"
    hive_site.touch(mode=0o600)  # it holds the metastore's password
    hive_site.write_text(
        f'<?xml version="1.0"?>\n<!-- written by `entity-state cluster up` -->\n'
        f"<configuration>\n{properties}</configuration>\n"
    )
    defaults = "".join(f"{k} {v}\n" for k, v in client_conf(settings).items())
    (conf / "spark-defaults.conf").write_text(f"# written by `entity-state cluster up`\n{defaults}")


# --- starting and stopping


def _start(settings: Settings, component: Component) -> subprocess.Popen:
    spark_home = _spark_home()
    env = dict(
        os.environ,
        SPARK_HOME=str(spark_home),
        SPARK_LOCAL_IP=HOST,  # web UIs bind to it, not to --host
        SPARK_DAEMON_MEMORY="512m",  # master and worker only schedule; the executor gets the memory
        SPARK_DAEMON_JAVA_OPTS="-Duser.timezone=UTC",
    )
    env.pop("SPARK_CONF_DIR", None)
    spark_class = str(spark_home / "bin" / "spark-class")
    if component.name == "metastore":
        command = _as_postgres_owner(
            [
                str(postgres_bin() / "postgres"),
                "-D",
                str(settings.postgres_data),
                "-c",
                f"listen_addresses={HOST}",
                "-c",
                f"port={settings.metastore_port}",
                "-c",
                f"unix_socket_directories={settings.postgres_data}",
            ]
        )
    elif component.main_class == MASTER_CLASS:
        command = [spark_class, MASTER_CLASS, "--host", HOST, "--port", str(settings.master_port)]
        command += ["--webui-port", str(settings.master_ui_port)]
    elif component.main_class == WORKER_CLASS:
        command = [spark_class, WORKER_CLASS, "--host", HOST, "--cores", str(settings.worker_cores)]
        command += ["--memory", settings.worker_memory, "--webui-port", str(component.ports[0][0])]
        # the default work dir is inside the installed pyspark package
        command += ["--work-dir", str(_work_dir(settings, component)), settings.master_url]
    else:
        # hive-site.xml (the metastore) from the cluster's conf folder; every other setting on the command line
        env["SPARK_CONF_DIR"] = str(settings.conf_dir)
        command = [str(spark_home / "bin" / "spark-submit"), "--master", settings.master_url]
        command += ["--class", THRIFT_CLASS, "--name", "entity_state_thrift"]
        for key, value in _thrift_conf(settings).items():
            command += ["--conf", f"{key}={value}"]
        command += ["spark-internal", "--hiveconf", f"hive.server2.thrift.bind.host={HOST}"]
        command += ["--hiveconf", f"hive.server2.thrift.port={settings.thrift_port}"]
    log = _log(settings, component).open("ab")
    # a session of its own: `down` can signal the whole process group, executors included, and a Ctrl-C in the
    # shell that ran `up` does not reach it
    process = subprocess.Popen(
        command,
        cwd=settings.directory,  # stray files (spark-warehouse) land in the cluster folder
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    log.close()
    _pid_file(settings, component).write_text(f"{process.pid}\n")
    return process


def _thrift_conf(settings: Settings) -> dict[str, str]:
    return {
        **client_conf(settings),
        "spark.driver.memory": "1g",
        # one executor on each worker (the master spreads an application's cores over its workers)
        "spark.executor.memory": settings.executor_memory,
        "spark.cores.max": str(WORKERS),
        "spark.ui.enabled": "false",
    }


def _wait_for_port(settings: Settings, component: Component, process: subprocess.Popen) -> None:
    port = component.ports[0][0]
    deadline = time.monotonic() + settings.timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            _pid_file(settings, component).unlink(missing_ok=True)
            raise ClusterError(
                f"{component.name} exited with code {process.returncode} before opening port {port}; "
                f"see {_log(settings, component)}:\n{_tail(_log(settings, component))}"
            )
        if _port_open(port):
            return
        time.sleep(0.5)
    raise ClusterError(
        f"{component.name} did not open port {port} within {settings.timeout:.0f} s (ENTITY_STATE_CLUSTER_TIMEOUT); "
        f"see {_log(settings, component)}. `entity-state cluster down` stops what was started."
    )


def _wait_for_worker(settings: Settings, component: Component) -> None:
    """A worker's web UI opens before it has registered with the master: wait until the master counts it, so
    that the Thrift Server, started next, gets an executor on each worker."""
    ui_port = component.ports[0][0]
    deadline = time.monotonic() + settings.timeout
    while time.monotonic() < deadline:
        try:
            if any(w.get("webuiaddress", "").endswith(f":{ui_port}") for w in alive_workers(settings)):
                return
        except (OSError, ValueError):
            pass
        time.sleep(0.5)
    raise ClusterError(
        f"{component.name} did not register with the master within {settings.timeout:.0f} s; "
        f"see {_log(settings, component)}"
    )


def _wait_for_thrift(settings: Settings) -> None:
    """The port opens before the server has a session to give: retry `select 1` until it answers."""
    deadline = time.monotonic() + settings.timeout
    while True:
        try:
            thrift_select_one(settings.thrift_port)
            return
        except Exception as error:  # connection refused, transport closed, no executor yet: all mean "not yet"
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"the Thrift Server on {HOST}:{settings.thrift_port} did not answer `select 1` within "
                    f"{settings.timeout:.0f} s: {error}; see {settings.directory / 'thrift.log'}"
                ) from error
            time.sleep(1)


def _stop(pid: int, grace_seconds: float = 30, first: int = signal.SIGTERM, group: bool = True) -> None:
    """`first` to the process group (the worker's executors with it), SIGKILL after the grace period."""
    try:
        leader = os.getpgid(pid)
    except ProcessLookupError:
        return
    # only signal a group this process leads, that is one `up` created; otherwise the process alone
    to_group = group and leader == pid
    send = (lambda sig: os.killpg(leader, sig)) if to_group else (lambda sig: os.kill(pid, sig))
    send(first)
    deadline = time.monotonic() + grace_seconds
    while time.monotonic() < deadline:
        if not _alive(pid) and not (to_group and _group_alive(leader)):
            return
        time.sleep(0.2)
    send(signal.SIGKILL)
    while _alive(pid):
        time.sleep(0.1)


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    listed = subprocess.run(["ps", "-e", "-o", "pgid=,stat="], capture_output=True, text=True).stdout
    return any(
        f.split()[0] == str(group) and not f.split()[1].startswith("Z") for f in listed.splitlines() if f.strip()
    )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a process that exited but was not reaped yet (a child of this process) still accepts signals
    state = subprocess.run(["ps", "-p", str(pid), "-o", "stat="], capture_output=True, text=True).stdout
    return bool(state.strip()) and not state.startswith("Z")


def _port_free(port: int) -> bool:
    with socket.socket() as probe:
        # the JVM binds with SO_REUSEADDR too, so a port in TIME_WAIT counts as free, as it will for the JVM
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((HOST, port))
        except OSError:
            return False
    return True


def _port_open(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex((HOST, port)) == 0


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def _work_dir(settings: Settings, component: Component) -> Path:
    return settings.directory / component.name.replace("worker", "work")


def _pid_file(settings: Settings, component: Component) -> Path:
    return settings.directory / f"{component.name}.pid"


def _log(settings: Settings, component: Component) -> Path:
    return settings.directory / f"{component.name}.log"


def _tail(path: Path, lines: int = 20) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def _env_int(env, name: str, default: int) -> int:
    value = env.get(name, str(default))
    try:
        return int(value)
    except ValueError:
        raise ClusterError(f"{name} must be an integer, got {value!r}") from None
