from __future__ import annotations

import os
import time

import pytest

from .dbt_harness import DbtProject

os.environ["TZ"] = "UTC"
time.tzset()


@pytest.fixture(scope="session")
def dbt_session(tmp_path_factory) -> DbtProject:
    project = DbtProject(tmp_path_factory.mktemp("entity_state_home"))
    project.dbt("parse")
    return project


@pytest.fixture
def project(dbt_session: DbtProject) -> DbtProject:
    """A clean schema and landing folder for one test, in the shared Spark session."""
    dbt_session.dbt("run-operation", "create_landing_table")
    dbt_session.reset()
    return dbt_session
