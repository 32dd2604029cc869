from __future__ import annotations

import os
import time

import pytest

from .dbt_harness import TARGETS, DbtProject, thrift_connection

os.environ["TZ"] = "UTC"
time.tzset()

# The test files whose tests take longest (seconds per test in CI runs: the property test 430-1100, the batches of a
# million events or entities 180-320, the real-process tests, which start new JVMs: 60-120 each, and 490-690 for
# their chain of kill points). `make
# test-integration` hands tests to its two processes one at a time in collection order (`--dist load`), so these go
# first and the short ones fill the gaps at the end; handed out last, one long test would leave the other process idle.
LONGEST_FIRST = ("test_property_splits.py", "test_scale.py", "test_real_processes.py", "test_table_input.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        name = item.path.name
        return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: the files' own order otherwise, so every process collects the same order


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
    # one dbt.log for the whole session, never rolled over, so a test can read what its own calls logged
    os.environ["DBT_LOG_FILE_MAX_BYTES"] = "0"


@pytest.fixture(scope="session")
def dbt_session(request: pytest.FixtureRequest, tmp_path_factory) -> DbtProject:
    target = request.config.getoption("--target")
    if target == "cluster":
        try:
            thrift_connection().close()
        except Exception as error:  # refused, reset, timed out: all mean there is no server to test against
            pytest.exit(f"--target cluster: no Thrift Server answers ({error}); start it with `make cluster-up`", 2)
    # On the cluster the pytest processes of `-n 2` share one Thrift Server, and so one metastore: each gets a schema
    # of its own. Locally each process has a metastore of its own.
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    schema = f"entity_state_test_{worker}" if target == "cluster" and worker else "entity_state_test"
    project = DbtProject(tmp_path_factory.mktemp("entity_state_home"), target, schema)
    # A command that connects: on `local` it starts the in-process Spark session, with the profile's settings, that
    # `reset` and the tests' reads then share (once started, a later getOrCreate hands back that one).
    project.dbt("run-operation", "create_landing_table")
    return project


@pytest.fixture
def project(dbt_session: DbtProject) -> DbtProject:
    """A clean schema and landing folder for one test, in the shared Spark session (local) or server (cluster)."""
    dbt_session.reset()
    return dbt_session
