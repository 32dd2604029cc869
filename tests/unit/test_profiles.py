"""The `local` profile keeps Spark's own output off the terminal (a real dbt process checks the effect:
tests/integration/test_terminal_output.py), starts its driver for one invocation or for many, and with the class
archive `entity-state driver-archive` writes (a real dbt process maps it: tests/integration/test_real_processes.py)."""

from __future__ import annotations

import re
from pathlib import Path

import jinja2
import yaml

PROFILES = Path(__file__).resolve().parents[2] / "profiles"


def _local_settings() -> dict[str, str]:
    profile = yaml.safe_load((PROFILES / "profiles.yml").read_text())
    return profile["entity_state"]["outputs"]["local"]["server_side_parameters"]


def test_no_console_progress_bars():
    assert _local_settings()["spark.ui.showConsoleProgress"] == "false"


def test_spark_logs_to_a_file_in_the_state_home_with_a_config_found_from_any_folder():
    java_options = _local_settings()["spark.driver.extraJavaOptions"]
    assert " -Dlog4j2.configurationFile={{ flags.PROFILES_DIR }}/log4j2.properties " in java_options
    assert " -Dentity_state.spark_log={{ env_var('ENTITY_STATE_HOME', '.local') }}/logs/spark.log" in java_options


def test_log4j_writes_to_the_file_only():
    properties = dict(
        line.split("=", 1)
        for line in (PROFILES / "log4j2.properties").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    )
    properties = {key.strip(): value.strip() for key, value in properties.items()}
    appenders = {key: value for key, value in properties.items() if re.fullmatch(r"appender\.\w+\.type", key)}
    assert appenders == {"appender.file.type": "RollingFile"}
    assert properties["appender.file.fileName"] == "${logFile}"
    assert properties["property.logFile"].startswith("${sys:entity_state.spark_log:-")
    # the repl logger at the root's level: PySpark then prints no "Setting default log level" line
    assert properties["logger.repl.level"] == properties["rootLogger.level"]


def test_the_local_cluster_starts_with_the_spark_sql_settings_of_the_local_profile(tmp_path, monkeypatch):
    """Both targets must write the same tables at the same speed: every `spark.sql.*` setting of the local profile
    (but the warehouse folder, which is each target's own) is a default of the Thrift Server `make cluster-up`
    starts, with the same value."""
    from entity_state import cluster

    monkeypatch.setenv("ENTITY_STATE_HOME", str(tmp_path))
    server = cluster._thrift_conf(cluster.Settings.from_env())
    local = {
        key: value
        for key, value in _local_settings().items()
        if key.startswith("spark.sql.") and key != "spark.sql.warehouse.dir"
    }
    assert local, "the local profile has no spark.sql settings"
    assert {key: server.get(key) for key in local} == local


def _driver_java_options(environment: dict[str, str]) -> str:
    """The local profile's driver options as dbt renders them: env_var reads `environment`."""
    template = jinja2.Template(_local_settings()["spark.driver.extraJavaOptions"])
    return template.render(env_var=lambda name, default="": environment.get(name, default), flags={})


def test_a_driver_that_runs_dbt_once_starts_with_the_quick_compiler_and_a_kept_alive_one_with_the_default():
    one_run = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"
    assert one_run in _driver_java_options({})
    assert one_run in _driver_java_options({"ENTITY_STATE_DRIVER_KEPT_ALIVE": "false"})
    for kept_alive in ("true", "True"):
        kept_alive_options = _driver_java_options({"ENTITY_STATE_DRIVER_KEPT_ALIVE": kept_alive})
        assert "TieredStopAtLevel" not in kept_alive_options and "ReservedCodeCacheSize" not in kept_alive_options
    # options of the user's own come after, so that theirs win
    options = _driver_java_options({"ENTITY_STATE_DRIVER_JAVA_OPTIONS": "-XX:TieredStopAtLevel=4"})
    assert options.index(one_run) < options.index("-XX:TieredStopAtLevel=4")
    # the benchmark's bare replay starts its driver as a `dbt` command's
    assert f'ONE_RUN_COMPILER = "{one_run}"' in (PROFILES.parent / "bench" / "dbt_worker.py").read_text()


def test_the_driver_starts_with_the_class_archive_of_the_state_home_unless_it_is_turned_off():
    assert "-XX:SharedArchiveFile=.local/jvm/spark-driver.jsa " in _driver_java_options({})
    moved_home = _driver_java_options({"ENTITY_STATE_HOME": "/srv/state"})
    assert "-XX:SharedArchiveFile=/srv/state/jvm/spark-driver.jsa " in moved_home
    own_archive = _driver_java_options({"ENTITY_STATE_DRIVER_ARCHIVE": "/opt/jvm/driver.jsa"})
    assert "-XX:SharedArchiveFile=/opt/jvm/driver.jsa " in own_archive
    assert "SharedArchiveFile" not in _driver_java_options({"ENTITY_STATE_DRIVER_ARCHIVE": ""})
    # options of the user's own come after, so that theirs win (-Xshare:off, another archive)
    options = _driver_java_options({"ENTITY_STATE_DRIVER_JAVA_OPTIONS": "-Xshare:off"})
    assert options.index("-XX:SharedArchiveFile=") < options.index("-Xshare:off")


def test_the_archive_command_writes_where_the_profile_reads(tmp_path, monkeypatch):
    from entity_state.paths import DEFAULT_DRIVER_ARCHIVE, driver_archive

    monkeypatch.chdir(tmp_path)
    rendered = re.search(r"-XX:SharedArchiveFile=(\S+)", _driver_java_options({})).group(1)
    assert driver_archive({}) == tmp_path / rendered
    home = {"ENTITY_STATE_HOME": str(tmp_path / "home")}
    rendered = re.search(r"-XX:SharedArchiveFile=(\S+)", _driver_java_options(home)).group(1)
    assert driver_archive(home) == Path(rendered)
    assert driver_archive({**home, "ENTITY_STATE_DRIVER_ARCHIVE": "own.jsa"}) == tmp_path / "own.jsa"
    assert driver_archive({"ENTITY_STATE_DRIVER_ARCHIVE": ""}) is None
    # and where the make targets that run dbt write it first
    makefile = (PROFILES.parent / "Makefile").read_text()
    assert f"$(ENTITY_STATE_HOME)/{DEFAULT_DRIVER_ARCHIVE}," in makefile


def test_the_local_profile_loads_the_delta_jars_of_jars_lock_from_the_project_venv(tmp_path):
    from entity_state.jars import DELTA_ARTIFACTS, read_lock

    profiles_dir = tmp_path / "profiles"
    template = jinja2.Template(_local_settings()["spark.jars"])
    rendered = template.render(env_var=lambda name, default="": default, flags={"PROFILES_DIR": str(profiles_dir)})
    jars = rendered.split(",")
    pinned = {jar.artifact: jar.file_name for jar in read_lock()}
    assert jars == [f"{profiles_dir}/../.venv/jars/{pinned[artifact]}" for artifact in DELTA_ARTIFACTS]
