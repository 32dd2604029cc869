"""`entity-state cluster up|down|status`: a one-machine Spark standalone cluster serving the `cluster` dbt target.

`up` starts, from the pip-installed PySpark and without Docker, a master, one worker with bounded cores and memory,
and the Spark Thrift Server submitted to that master, all bound to 127.0.0.1. Logs, pid files, the warehouse and the
Derby metastore live in $ENTITY_STATE_HOME/cluster/; the executors read and write the same local paths, which works
because everything runs on one machine. `down` stops what `up` started, found by its pid files.

Ports and sizes come from the environment:

    ENTITY_STATE_MASTER_PORT     7078   master RPC (the usual 7077 is left to other Spark installations)
    ENTITY_STATE_MASTER_UI_PORT  8090   master web UI (the standalone master cannot run without one)
    ENTITY_STATE_WORKER_UI_PORT  8091   worker web UI
    ENTITY_STATE_THRIFT_PORT     10001  Thrift Server, also read by the `cluster` profile (10000 is Hive's default)
    ENTITY_STATE_WORKER_CORES    1
    ENTITY_STATE_WORKER_MEMORY   2g     also the executor's memory: one executor takes the whole worker
    ENTITY_STATE_CLUSTER_TIMEOUT 180    seconds `up` waits for each process to answer
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from entity_state.jars import DELTA_ARTIFACTS, spark_jars

HOST = "127.0.0.1"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
THRIFT_CLASS = "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2"

# The `spark.sql.*` settings of the `local` profile but its warehouse folder (tests/unit/test_profiles.py keeps the
# two equal): those that change results or file layout, and the cache of compiled stages. The Thrift Server starts
# with them as its defaults so that both targets write the same tables at the same speed; the adapter tests' profile
# and the benchmark's bare sessions take them from here.
SQL_SETTINGS = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "4",
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
    master_port: int
    master_ui_port: int
    worker_ui_port: int
    thrift_port: int
    worker_cores: int
    worker_memory: str
    timeout: float

    @classmethod
    def from_env(cls) -> Settings:
        home = Path(os.environ.get("ENTITY_STATE_HOME", ".local")).resolve()
        return cls(
            directory=home / "cluster",
            master_port=_env_int("ENTITY_STATE_MASTER_PORT", 7078),
            master_ui_port=_env_int("ENTITY_STATE_MASTER_UI_PORT", 8090),
            worker_ui_port=_env_int("ENTITY_STATE_WORKER_UI_PORT", 8091),
            thrift_port=_env_int("ENTITY_STATE_THRIFT_PORT", 10001),
            worker_cores=_env_int("ENTITY_STATE_WORKER_CORES", 1),
            worker_memory=os.environ.get("ENTITY_STATE_WORKER_MEMORY", "2g"),
            timeout=float(os.environ.get("ENTITY_STATE_CLUSTER_TIMEOUT", "180")),
        )

    @property
    def master_url(self) -> str:
        return f"spark://{HOST}:{self.master_port}"


@dataclass(frozen=True)
class Component:
    name: str
    main_class: str
    # every port the process binds, with the variable that moves it; the first one answers once it is up
    ports: tuple[tuple[int, str], ...]


def components(settings: Settings) -> tuple[Component, ...]:
    """In start order; `down` stops them in reverse."""
    return (
        Component(
            "master",
            MASTER_CLASS,
            (
                (settings.master_port, "ENTITY_STATE_MASTER_PORT"),
                (settings.master_ui_port, "ENTITY_STATE_MASTER_UI_PORT"),
            ),
        ),
        Component("worker", WORKER_CLASS, ((settings.worker_ui_port, "ENTITY_STATE_WORKER_UI_PORT"),)),
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
    for component in to_start:
        process = _start(settings, component)
        print(f"{component.name}: started (pid {process.pid}), log {_log(settings, component)}", flush=True)
        _wait_for_port(settings, component, process)
    _wait_for_thrift(settings)
    print(f"cluster up: {settings.master_url}, Thrift Server {HOST}:{settings.thrift_port} answers `select 1`")


def down(settings: Settings) -> None:
    for component in reversed(components(settings)):
        pid_file = _pid_file(settings, component)
        pid = running_pid(settings, component)
        if pid is None:
            print(f"{component.name}: not running")
        else:
            _stop(pid)
            print(f"{component.name}: stopped (pid {pid})")
        pid_file.unlink(missing_ok=True)


def status(settings: Settings) -> bool:
    """Prints what runs; true when every process runs and the Thrift Server answers a query."""
    healthy = True
    for component in components(settings):
        pid = running_pid(settings, component)
        healthy = healthy and pid is not None
        print(f"{component.name}: " + (f"running (pid {pid})" if pid else "not running"))
    if healthy:
        try:
            thrift_select_one(settings.thrift_port)
        except Exception as error:  # any failure to connect or query means the server is not usable yet
            print(f"thrift: `select 1` on {HOST}:{settings.thrift_port} failed: {error}")
            return False
        print(f"thrift: {HOST}:{settings.thrift_port} answers `select 1`")
    return healthy


def running_pid(settings: Settings, component: Component) -> int | None:
    """The pid in the component's pid file, if that process is alive and still runs the component's class (a
    stale pid file may name a pid the system has since given to another process)."""
    try:
        pid = int(_pid_file(settings, component).read_text())
    except (FileNotFoundError, ValueError):
        return None
    command = subprocess.run(["ps", "-p", str(pid), "-o", "command="], capture_output=True, text=True).stdout
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


def _start(settings: Settings, component: Component) -> subprocess.Popen:
    spark_home = _spark_home()
    env = dict(
        os.environ,
        SPARK_HOME=str(spark_home),
        SPARK_LOCAL_IP=HOST,  # web UIs bind to it, not to --host
        SPARK_DAEMON_MEMORY="512m",  # master and worker only schedule; the executor gets the memory
        SPARK_DAEMON_JAVA_OPTS="-Duser.timezone=UTC",
    )
    spark_class = str(spark_home / "bin" / "spark-class")
    if component.main_class == MASTER_CLASS:
        command = [spark_class, MASTER_CLASS, "--host", HOST, "--port", str(settings.master_port)]
        command += ["--webui-port", str(settings.master_ui_port)]
    elif component.main_class == WORKER_CLASS:
        command = [spark_class, WORKER_CLASS, "--host", HOST, "--cores", str(settings.worker_cores)]
        command += ["--memory", settings.worker_memory, "--webui-port", str(settings.worker_ui_port)]
        # the default work dir is inside the installed pyspark package
        command += ["--work-dir", str(settings.directory / "work"), settings.master_url]
    else:
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
        cwd=settings.directory,  # stray files (derby.log, spark-warehouse) land in the cluster folder
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
    directory = settings.directory
    return {
        "spark.driver.host": HOST,
        "spark.driver.bindAddress": HOST,
        "spark.driver.memory": "1g",
        "spark.driver.extraJavaOptions": (
            f"-Dderby.system.home={directory / 'metastore'} "
            f"-Dderby.stream.error.file={directory / 'derby.log'} -Duser.timezone=UTC"
        ),
        "spark.executor.extraJavaOptions": "-Duser.timezone=UTC",
        "spark.executor.cores": str(settings.worker_cores),
        "spark.executor.memory": settings.worker_memory,
        "spark.cores.max": str(settings.worker_cores),
        "spark.ui.enabled": "false",
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": str(directory / "warehouse"),
        # Delta's classes on the driver's own class path: the Thrift Server's sessions do not see jars added by
        # spark.jars alone (NoClassDefFoundError for org.apache.spark.sql.delta.sources.DeltaSourceUtils$ on their
        # first statement); spark.jars still ships them to the executors
        "spark.driver.extraClassPath": spark_jars(artifacts=DELTA_ARTIFACTS).replace(",", ":"),
        "spark.jars": spark_jars(artifacts=DELTA_ARTIFACTS),
        **SQL_SETTINGS,
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
        time.sleep(1)
    raise ClusterError(
        f"{component.name} did not open port {port} within {settings.timeout:.0f} s (ENTITY_STATE_CLUSTER_TIMEOUT); "
        f"see {_log(settings, component)}. `entity-state cluster down` stops what was started."
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
            time.sleep(2)


def _stop(pid: int, grace_seconds: float = 30) -> None:
    """SIGTERM to the process group (the worker's executors with it), SIGKILL after the grace period."""
    try:
        group = os.getpgid(pid)
    except ProcessLookupError:
        return
    # only signal a group this process leads, that is one `up` created; otherwise the process alone
    send = (lambda sig: os.killpg(group, sig)) if group == pid else (lambda sig: os.kill(pid, sig))
    send(signal.SIGTERM)
    deadline = time.monotonic() + grace_seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            return
        time.sleep(0.5)
    send(signal.SIGKILL)


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


def _pid_file(settings: Settings, component: Component) -> Path:
    return settings.directory / f"{component.name}.pid"


def _log(settings: Settings, component: Component) -> Path:
    return settings.directory / f"{component.name}.log"


def _tail(path: Path, lines: int = 20) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name, str(default))
    try:
        return int(value)
    except ValueError:
        raise ClusterError(f"{name} must be an integer, got {value!r}") from None
