"""Only the state models use this project's materialization: a user's incremental models keep dbt-spark's.

The project once overrode dbt-spark's `incremental` materialization for every model; its state models now use a
materialization of their own, `state_table`, which builds a new table aside (`<model>__rebuild_<id>`) and renames
it into place. In a project that loads this one as a package (conftest.py, where package overrides of built-in
materializations are honoured), a user's `incremental` models must resolve to dbt-spark's materialization and run
its SQL, while a `state_table` model runs ours.
"""

from __future__ import annotations

from collections import defaultdict

import pytest
from dbt.tests.util import relation_from_name, run_dbt, write_file
from dbt_common.events.base_types import EventMsg

_USER_MODEL = """
{{{{ config(materialized='incremental', file_format='parquet', {config}) }}}}
select cast({{{{ 2 if is_incremental() else 1 }}}} as bigint) as id, 'run' as msg
"""

_STATE_MODEL = """
{{ config(materialized='state_table', incremental_strategy='append', file_format='parquet') }}
select cast({{ 2 if entity_state.has_stored_state() else 1 }} as bigint) as id, 'run' as msg
"""

ASIDE = "__rebuild_"
MATERIALIZATIONS = ("incremental", "state_table")


class TestStateTableOnly:
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "user_append.sql": _USER_MODEL.format(config="incremental_strategy='append'"),
            "user_insert_overwrite.sql": _USER_MODEL.format(
                config="incremental_strategy='insert_overwrite', partition_by='id'"
            ),
            "state_model.sql": _STATE_MODEL,
        }

    def test_incremental_models_run_dbt_spark_and_state_tables_ours(self, project):
        manifest = run_dbt(["parse"])
        root = manifest.metadata.project_name
        macros = {name: manifest.find_materialization_macro_by_name(root, name, "spark") for name in MATERIALIZATIONS}
        resolved = {name: macro and macro.package_name for name, macro in macros.items()}
        assert resolved == {"incremental": "dbt_spark", "state_table": "entity_state"}, (
            "materialization macros resolved from the wrong packages"
        )

        _, first = _run_and_collect_sql()
        _, second = _run_and_collect_sql()
        schema = project.test_schema

        for model in ("user_append", "user_insert_overwrite"):
            sql = first[model] + second[model]
            assert ASIDE not in sql, f"{model} was built aside by this project's materialization:\n{sql}"
        # dbt-spark creates the table under its own name, then writes into it
        assert f"create table {schema}.user_append\n" in first["user_append"]
        assert f"insert into table {schema}.user_append\n" in second["user_append"]
        assert f"create table {schema}.user_insert_overwrite\n" in first["user_insert_overwrite"]
        assert f"insert overwrite table {schema}.user_insert_overwrite\n" in second["user_insert_overwrite"]
        assert "partition (id)" in second["user_insert_overwrite"]

        # the state model builds its table aside and renames it into place, then appends like dbt-spark
        assert f"create table {schema}.state_model{ASIDE}" in first["state_model"]
        assert f"rename to {schema}.state_model" in first["state_model"]
        assert f"insert into table {schema}.state_model\n" in second["state_model"]

        expected = {"user_append": [1, 2], "user_insert_overwrite": [1, 2], "state_model": [1, 2]}
        assert {model: _ids(project, model) for model in expected} == expected
        # the package's on-run-start hook ran alongside
        assert project.run_sql(f"show tables in {schema} like 'landing_events'", fetch="all")


def _run_and_collect_sql(*, expect_pass: bool = True) -> tuple[list, dict[str, str]]:
    """One `dbt run`: its results, and the SQL each model sent, by model name."""
    sql: dict[str, str] = defaultdict(str)

    def collect(event: EventMsg) -> None:
        if event.info.name == "SQLQuery" and event.data.conn_name.startswith("model."):
            sql[event.data.conn_name.rsplit(".", 1)[-1]] += event.data.sql + "\n"

    results = run_dbt(["run"], expect_pass=expect_pass, callbacks=[collect])
    return results, sql


def _ids(project, model: str) -> list[int]:
    relation = relation_from_name(project.adapter, model)
    return [row[0] for row in project.run_sql(f"select id from {relation} order by id", fetch="all")]


_CONTRACTED_MODEL = """
{{ config(materialized='state_table', incremental_strategy='append', file_format='parquet') }}
select cast(1 as bigint) as id, 'run' as msg
"""

_REORDERED_MODEL = """
{{ config(materialized='state_table', incremental_strategy='append', file_format='parquet') }}
select 'run' as msg, cast(1 as bigint) as id
"""

_CONTRACTS = """
version: 2
models:
  - name: kept_contract
    config: {contract: {enforced: true}}
    columns:
      - {name: id, data_type: bigint}
      - {name: msg, data_type: string}
  - name: aliased_contract
    config: {contract: {enforced: true}}
    columns:
      - {name: id, data_type: long}
      - {name: msg, data_type: STRING}
  - name: reordered_contract
    config: {contract: {enforced: true}}
    columns:
      - {name: id, data_type: bigint}
      - {name: msg, data_type: string}
  - name: broken_contract
    config: {contract: {enforced: true}}
    columns:
      - {name: id, data_type: string}
      - {name: note, data_type: string}
"""


class TestStateTableContract:
    """A state table with an enforced contract is built without dbt's empty query beforehand (it would plan the
    model's query a second time) and held to the contract by its built table's columns: their names, their types
    as Spark reads the yml's, their order. A table that breaks it is dropped before it takes the model's name, and
    the run stops naming the differences, leaving what stood at the name (a view, or the table a full refresh would
    replace)."""

    @pytest.fixture(scope="class")
    def models(self):
        return {
            "kept_contract.sql": _CONTRACTED_MODEL,
            "aliased_contract.sql": _CONTRACTED_MODEL,
            "reordered_contract.sql": _REORDERED_MODEL,
            "broken_contract.sql": _CONTRACTED_MODEL,
            "contracts.yml": _CONTRACTS,
        }

    def test_the_built_table_is_held_to_the_contract(self, project):
        schema = project.test_schema
        run_dbt(["parse"])  # registers the adapter that project.run_sql uses
        project.run_sql(f"create view {schema}.broken_contract as select 1 as stood_here")
        results, sql = _run_and_collect_sql(expect_pass=False)
        status = {result.node.name: result for result in results}
        assert str(status["kept_contract"].status) == "success"
        assert "where false" not in sql["kept_contract"], "the query was planned again for dbt's contract check"
        assert "describe query" not in sql["kept_contract"], "the yml's types were read back though none differed"
        assert _columns(project, "kept_contract") == [("id", "bigint"), ("msg", "string")]
        assert _ids(project, "kept_contract") == [1]

        assert str(status["aliased_contract"].status) == "success", status["aliased_contract"].message
        assert "describe query" in sql["aliased_contract"]
        assert _columns(project, "aliased_contract") == [("id", "bigint"), ("msg", "string")]

        reordered = status["reordered_contract"]
        assert str(reordered.status) == "error"
        assert "The query gives the columns in another order (msg, id) than the yml (id, msg)" in reordered.message
        assert _tables_like(project, "reordered_contract") == set()

        broken = status["broken_contract"]
        assert str(broken.status) == "error"
        assert "has an enforced contract, and the table its query built breaks it" in broken.message
        assert "Only in the table: msg string" in broken.message
        assert "Only in the model: note string" in broken.message
        assert "Other type in the table: id bigint (the model gives string)" in broken.message
        assert _tables_like(project, "broken_contract") == {"broken_contract"}, "the view was not left in place"
        assert project.run_sql(f"select stood_here from {schema}.broken_contract", fetch="all") == [(1,)]

        retyped = _CONTRACTS.replace("{name: id, data_type: bigint}", "{name: id, data_type: int}", 1)
        write_file(retyped, project.project_root, "models", "contracts.yml")
        results = run_dbt(["run", "--full-refresh", "-s", "kept_contract"], expect_pass=False)
        assert "Other type in the table: id bigint (the model gives int)" in results[0].message
        assert _tables_like(project, "kept_contract") == {"kept_contract"}, "the table a full refresh replaces went"
        assert _ids(project, "kept_contract") == [1]


def _columns(project, model: str) -> list[tuple[str, str]]:
    relation = relation_from_name(project.adapter, model)
    return [(row[0], row[1]) for row in project.run_sql(f"describe {relation}", fetch="all")]


def _tables_like(project, prefix: str) -> set[str]:
    """What stands in the schema (tables and views) under a name that starts with `prefix`."""
    rows = project.run_sql(f"show tables in {project.test_schema}", fetch="all")
    return {row[1] for row in rows if row[1].startswith(prefix)}
