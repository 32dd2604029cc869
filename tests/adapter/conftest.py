"""dbt's adapter test suite (dbt-tests-adapter) on the `local` session target, with this project loaded as a package.

Every test class gets a dbt project of its own (dbt-tests-adapter's `project` fixture) that installs this project as
a local package: its macros, its `state_table` materialization and its on-run-start hook are loaded next to the
suite's models, while its own models, sources, data tests and unit tests are disabled, so the suite sees only its
own nodes. Spark runs in this process, set up like the `local` output of profiles/profiles.yml; the first dbt
invocation starts it and the rest reuse it, so run this package in a pytest process of its own (`make
test-adapter`), never together with tests/integration, whose Spark session has another warehouse and metastore.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

try:
    import dbt.tests.util as dbt_tests_util
except ModuleNotFoundError as error:  # pragma: no cover - a message instead of a bare import error
    raise ImportError(
        "tests/adapter needs dbt-tests-adapter==1.20.0 (the release that matches dbt-core 1.11), which is not "
        "installed in this environment: install the project's dev dependencies first"
    ) from error

from dbt.cli.main import dbtRunner, dbtRunnerResult
from dbt.contracts.results import NodeStatus, RunExecutionResult
from dbt.tests.util import run_dbt

from entity_state.cluster import SQL_SETTINGS
from entity_state.jars import DELTA_ARTIFACTS, spark_jars

pytest_plugins = ["dbt.tests.fixtures.project"]

PROJECT_DIR = Path(__file__).resolve().parents[2]
PACKAGE = "entity_state"


def _package_models_off() -> dict[str, Any]:
    """`+enabled: false` for each folder and file of the package's models/. Not for the whole package: dbt configures
    a project's on-run-start hooks under `models` too (`<package>.hooks.*`), and the hook must stay (re-enabling
    `hooks` works, but dbt then warns on every invocation that the path applies to no resource)."""
    return {
        path.stem: {"+enabled": False}
        for path in (PROJECT_DIR / "models").iterdir()
        if path.is_dir() or path.suffix in (".sql", ".py")
    }


# Merged into every test project's dbt_project.yml, whatever the test class's own `project_config_update` says.
PACKAGE_SETTINGS: dict[str, Any] = {
    # The package's own resources stay out of the suite's projects, so the suite's result counts hold.
    "models": {PACKAGE: _package_models_off()},
    "sources": {PACKAGE: {"+enabled": False}},
    "data_tests": {PACKAGE: {"+enabled": False}},
    "unit_tests": {PACKAGE: {"+enabled": False}},
    "flags": {
        # By default dbt ignores a package's override of a built-in materialization (such as `incremental`); a
        # project's own macros always override it. Honouring package overrides puts the suite's models in the
        # position of a user's models in this project itself: if this package overrode `incremental` again, the
        # suite would run on that override, not on dbt-spark's materialization.
        "require_explicit_package_overrides_for_builtin_materializations": False,
    },
}


def pytest_configure(config: pytest.Config) -> None:
    # dbt-tests-adapter defines its class-scoped fixtures as instance methods, which pytest 9 warns about once per
    # fixture and class (and pytest 10 will refuse): a matter for dbt-tests-adapter, not for these tests.
    config.addinivalue_line(
        "filterwarnings", "ignore:Class-scoped fixtures defined as instance methods:pytest.PytestRemovedIn10Warning"
    )


@pytest.fixture(scope="session")
def spark_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Warehouse, metastore and landing folder of this process's Spark session."""
    return tmp_path_factory.mktemp("spark_home")


@pytest.fixture(scope="session", autouse=True)
def landing_dir(spark_home: Path) -> Iterator[Path]:
    """The package's on-run-start hook creates an external table over this (empty) folder in every test schema."""
    landing = spark_home / "landing"
    landing.mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ENTITY_STATE_LANDING_DIR", str(landing))
        yield landing


@pytest.fixture(scope="class")
def dbt_profile_target(spark_home: Path) -> dict[str, Any]:
    """The `local` output of profiles/profiles.yml, with its warehouse and Derby metastore under a pytest tmp dir."""
    java_options = " ".join(
        (
            f"-Dderby.system.home={spark_home / 'metastore'}",
            "-Duser.timezone=UTC",
            f"-Dlog4j2.configurationFile={PROJECT_DIR / 'profiles' / 'log4j2.properties'}",
            f"-Dentity_state.spark_log={spark_home / 'logs' / 'spark.log'}",
            os.environ.get("ENTITY_STATE_DRIVER_JAVA_OPTIONS", ""),
        )
    )
    return {
        "type": "spark",
        "method": "session",
        "host": "localhost",
        "threads": 1,
        "server_side_parameters": {
            "spark.master": "local[2]",
            "spark.app.name": "entity_state_adapter_tests",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.driver.memory": os.environ.get("ENTITY_STATE_DRIVER_MEMORY", "2g"),
            "spark.sql.catalogImplementation": "hive",
            "spark.sql.warehouse.dir": str(spark_home / "warehouse"),
            "spark.driver.extraJavaOptions": java_options,
            "spark.jars": spark_jars(artifacts=DELTA_ARTIFACTS),
            **SQL_SETTINGS,
        },
    }


@pytest.fixture(scope="session")
def package_dir(tmp_path_factory) -> Path:
    """The project as the suite installs it: links to its files, but not to its analyses/, which read the models
    disabled above, and which dbt 1.11 offers no setting to disable (its dbt_project.yml ignores `analyses:`)."""
    folder = tmp_path_factory.mktemp("entity_state_package")
    for path in PROJECT_DIR.iterdir():
        if path.name not in ("analyses", ".venv", ".local", "target", "logs", "dbt_packages", ".git"):
            (folder / path.name).symlink_to(path)
    return folder


@pytest.fixture(scope="class")
def packages(package_dir: Path) -> dict[str, Any]:
    return {"packages": [{"local": str(package_dir)}]}


@pytest.fixture(scope="class")
def dbt_project_yml(dbt_project_yml: dict[str, Any], project_root) -> dict[str, Any]:
    """dbt-tests-adapter's dbt_project.yml (its defaults and the class's `project_config_update`) plus
    PACKAGE_SETTINGS."""
    config = _merged(dbt_project_yml, PACKAGE_SETTINGS)
    Path(project_root, "dbt_project.yml").write_text(yaml.safe_dump(config))
    return config


@pytest.fixture(scope="class")
def project(project):
    """dbt-tests-adapter's project, with the package installed: its fixtures write packages.yml but run no
    `dbt deps`."""
    run_dbt(["deps"])
    return project


class _SuiteRunner(dbtRunner):
    """dbtRunner as the suite's `run_dbt` sees it: without the results of the package's on-run-start hook.

    dbt reports each on-run-start hook as a result before the nodes' results, so the hook would shift the suite's
    result counts and indexes (`len(results) == 3`, `results[1].message`). The hook must still pass: a failed one
    is raised here, so that no test that expects its run to fail could mistake it for the failure it expects.
    """

    def invoke(self, args: list[str], **kwargs: Any) -> dbtRunnerResult:
        outcome = super().invoke(args, **kwargs)
        if isinstance(outcome.result, RunExecutionResult):
            results = outcome.result.results
            failed = [r for r in results if _is_package_hook(r.node) and r.status != NodeStatus.Success]
            if failed:
                raise AssertionError(f"{PACKAGE}'s on-run-start hook failed: {failed[0].message}")
            outcome.result.results = [r for r in results if not _is_package_hook(r.node)]
        return outcome


def _is_package_hook(node: Any) -> bool:
    return getattr(node, "resource_type", None) == "operation" and node.package_name == PACKAGE


@pytest.fixture(scope="session", autouse=True)
def _suite_runner() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(dbt_tests_util, "dbtRunner", _SuiteRunner)
        yield


def _merged(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merged(merged[key], value)
        else:
            merged[key] = value
    return merged
