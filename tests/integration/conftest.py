from __future__ import annotations

import os
import time

import pytest

from .dbt_harness import TARGETS, DbtProject, thrift_connection

os.environ["TZ"] = "UTC"
time.tzset()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--target",
        choices=TARGETS,
        default=os.environ.get("ENTITY_STATE_TARGET", "local"),
        help="dbt target the integration tests run on: local (in-process Spark, default) or cluster (the Thrift "
        "Server of `make cluster-up`); default from ENTITY_STATE_TARGET",
    )


@pytest.fixture(scope="session", autouse=True)
def dbt_artifacts_of_this_process(tmp_path_factory) -> None:
    """dbt's target and log folders for this pytest process alone: with `-n 2` (make test-integration) two
    processes run dbt on the one project, and a shared `target/` would mix their manifests and partial-parse
    files. The dbt processes the tests start inherit the variables."""
    artifacts = tmp_path_factory.mktemp("dbt_artifacts")
    os.environ["DBT_TARGET_PATH"] = str(artifacts / "target")
    os.environ["DBT_LOG_PATH"] = str(artifacts / "logs")


@pytest.fixture(scope="session")
def dbt_session(request: pytest.FixtureRequest, tmp_path_factory) -> DbtProject:
    target = request.config.getoption("--target")
    if target == "cluster":
        try:
            thrift_connection().close()
        except Exception as error:  # refused, reset, timed out: all mean there is no server to test against
            pytest.exit(f"--target cluster: no Thrift Server answers ({error}); start it with `make cluster-up`", 2)
    project = DbtProject(tmp_path_factory.mktemp("entity_state_home"), target)
    project.dbt("parse")
    return project


@pytest.fixture
def project(dbt_session: DbtProject) -> DbtProject:
    """A clean schema and landing folder for one test, in the shared Spark session (local) or server (cluster)."""
    dbt_session.dbt("run-operation", "create_landing_table")
    dbt_session.reset()
    return dbt_session
