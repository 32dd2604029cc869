{#- The materialization of this project's state tables (`materialized='state_table'`). It is dbt-spark's incremental
    materialization (dbt-spark 1.11.0) under a name of its own, so that it applies to the state models only: a user's
    own incremental models, in this project or in one that uses it as a package, keep dbt-spark's behaviour, and a
    package needs no override of a built-in materialization (which dbt refuses since 1.8 unless the root project
    allows it). Its models ask `entity_state.has_stored_state()` where others ask `is_incremental()`. Changes against
    dbt-spark's: a new table is built aside under a name of its own and renamed into place, instead of being created
    under the model's name. For a full refresh of an existing table the old one is swapped out with a second rename,
    instead of being dropped first: a full refresh that fails while building leaves the old table, with its watermark,
    as it was; one killed between the two renames leaves no table under the model's name, and the next run rebuilds it
    from the landed history. The aside name is unique per invocation because a build killed midway leaves files in its
    folder, which would block a table of the same name: so a first run killed while it builds is repaired by a plain
    rerun too. A view standing at the model's name is dropped only once its table is built aside. An enforced contract
    is checked on the table built aside, by one `describe`, rather than by dbt-spark's empty query before the build
    (_build_state_table). It also accepts the strategy `insert_new_partition` (see macros/write/write_strategy.sql),
    follows the model's write plan (write_plan: a table is rebuilt as a full refresh does when the plan says
    `rebuild`, and nothing is written to an existing table when it says `is_window_empty`, or `writes_no_rows` after
    checking the table's columns where the model asks for that check), forgets what the run memo holds of the table's
    properties when it builds the table anew and after hooks that changed them (forget_table_properties), sets
    dbt-spark's partition overwrite mode only before the write it serves (so an empty window sends no statement for
    it), and words on_schema_change='fail' for state tables (fail_on_state_schema_change), which, with an enforced
    contract, then write from the model's query without dbt-spark's temporary view. Under `--empty` it only checks an
    existing table (its query planned, its columns), and builds a missing one only where no other state table exists
    from before the run. Keep the rest in step with dbt-spark when upgrading it. -#}
{% materialization state_table, adapter='spark', supported_languages=['sql'] -%}
  {#-- Validate early so we don't run SQL if the file_format + strategy combo is invalid --#}
  {%- set raw_file_format = config.get('file_format', default='parquet') -%}
  {%- set raw_strategy = config.get('incremental_strategy') or 'append' -%}
  {%- set grant_config = config.get('grants') -%}

  {%- set file_format = dbt_spark_validate_get_file_format(raw_file_format) -%}
  {#-- entity_state: one strategy of this project's own besides dbt-spark's (see insert_new_partition_sql) --#}
  {%- if raw_strategy == 'insert_new_partition' -%}
    {%- set strategy = raw_strategy -%}
  {%- else -%}
    {%- set strategy = dbt_spark_validate_get_incremental_strategy(raw_strategy, file_format) -%}
  {%- endif -%}

  {#-- Set vars --#}

  {%- set unique_key = config.get('unique_key', none) -%}
  {%- set partition_by = config.get('partition_by', none) -%}
  {%- set language = model['language'] -%}
  {%- set on_schema_change = incremental_validate_on_schema_change(config.get('on_schema_change'), default='ignore') -%}
  {%- set incremental_predicates = config.get('predicates', none) or config.get('incremental_predicates', none) -%}
  {%- set target_relation = this -%}
  {%- set existing_relation = load_relation(this) -%}
  {%- set plan = entity_state.read_write_plan(compiled_code) -%}
  {% set tmp_relation = this.incorporate(path = {"identifier": this.identifier ~ '__dbt_tmp'}) -%}

  {#-- for SQL model we will create temp view that doesn't have database and schema --#}
  {%- if language == 'sql'-%}
    {%- set tmp_relation = tmp_relation.include(database=false, schema=false) -%}
  {%- endif -%}

  {#-- entity_state: `--empty` reads no rows of any ref or source. An existing table is then only checked: its query
       is planned on no rows (_check_query_without_rows), and its columns are held to the contract and to the
       table's (a build checks the first, an incremental write the second): nothing is written, no hook runs and no
       property changes, with --full-refresh too, which would otherwise replace the state with an empty table. A
       missing table is built as dbt builds one, empty, only where no other state table exists from before this run
       (_assert_no_state_under_empty). --#}
  {%- if flags.EMPTY and existing_relation is not none and not existing_relation.is_view -%}
    {%- do entity_state._check_query_without_rows() -%}
    {%- do entity_state._checked_state_columns(existing_relation, on_schema_change) -%}
    {{ return({'relations': [target_relation]}) }}
  {%- elif flags.EMPTY -%}
    {%- do entity_state._assert_no_state_under_empty(existing_relation) -%}
  {%- endif -%}

  {#-- Run pre-hooks --#}
  {{ run_hooks(pre_hooks) }}
  {%- do entity_state.forget_table_properties(target_relation, if_changed=true) -%}

  {#-- entity_state: where a new table is built before it takes the model's name (see the comment at the top) --#}
  {%- set rebuild_relation = this.incorporate(
      path={"identifier": this.identifier ~ '__rebuild_' ~ invocation_id.replace('-', '')[:12]}, type='table'
  ) -%}

  {#-- entity_state: a table built anew has none of the properties the run memo may hold of it (the hooks that set
       properties forget them too) --#}
  {%- if existing_relation is none or existing_relation.is_view or should_full_refresh()
      or plan.get('rebuild') is not none -%}
    {%- do entity_state.forget_table_properties(target_relation) -%}
  {%- endif -%}

  {#-- Incremental run logic --#}
  {%- if existing_relation is none -%}
    {#-- entity_state: built aside, then renamed into place --#}
    {%- do entity_state._build_state_table(rebuild_relation) -%}
    {% do adapter.rename_relation(rebuild_relation, target_relation) %}
    {% do persist_constraints(target_relation, model) %}
  {%- elif existing_relation.is_view -%}
    {#-- a view holds no state: replace it, once the table that replaces it is built aside --#}
    {%- do entity_state._build_state_table(rebuild_relation) -%}
    {% do adapter.drop_relation(existing_relation) %}
    {% do adapter.rename_relation(rebuild_relation, target_relation) %}
    {% do persist_constraints(target_relation, model) %}
  {%- elif should_full_refresh() or plan.get('rebuild') is not none -%}
    {#-- entity_state: build the new table aside, then swap it in (see the comment at the top) --#}
    {%- set backup_relation = this.incorporate(path={"identifier": this.identifier ~ '__backup'}, type='table') -%}
    {%- set stale_backup = load_relation(backup_relation) -%}
    {% if stale_backup is not none %}
      {% do adapter.drop_relation(stale_backup) %}
    {% endif %}
    {%- do entity_state._build_state_table(rebuild_relation) -%}
    {% do adapter.rename_relation(existing_relation, backup_relation) %}
    {% do adapter.rename_relation(rebuild_relation, target_relation) %}
    {% do adapter.drop_relation(backup_relation) %}
    {% do persist_constraints(target_relation, model) %}
  {%- elif plan.get('is_window_empty') -%}
    {#-- entity_state: nothing new in the window, so no write: an empty statement would still plan the model's
         query twice and add an empty partition --#}
    {% do store_raw_result('main', message='SKIP (nothing new in the window)', code='SKIP', rows_affected=0) %}
  {%- elif plan.get('writes_no_rows') -%}
    {#-- entity_state: something new, but no row of this table: no write either, but the table's columns are held
         to the model's as a write would hold them, so a changed model fails now, not at its next write --#}
    {%- do entity_state._checked_state_columns(existing_relation, on_schema_change) -%}
    {% do store_raw_result('main', message='SKIP (no row to write in the window)', code='SKIP', rows_affected=0) %}
  {%- else -%}
    {#-- entity_state: with on_schema_change='fail' and an enforced contract, the model's columns are the ones its
         yml declares (the contract holds its query to them whenever the table is built), so they are compared with
         the table's (see fail_on_state_schema_change) and the rows are written straight from the model's query.
         dbt-spark's temporary view would make Spark analyse the query twice, once for the view and once for the
         write: 0.1-0.5 s per state model and run. The table's columns, read once for the check, also give the
         write its column list (dbt-spark's write would `describe` the table again). --#}
    {%- set stored_columns = entity_state._checked_state_columns(existing_relation, on_schema_change) -%}
    {%- if stored_columns is not none -%}
      {%- set rows_source -%}
(
{{ compiled_code }}
) as model_rows
      {%- endset -%}
    {%- else -%}
      {#-- Relation must be merged --#}
      {%- call statement('create_tmp_relation', language=language) -%}
        {{ create_table_as(True, tmp_relation, compiled_code, language) }}
      {%- endcall -%}
      {%- do process_schema_changes(on_schema_change, tmp_relation, existing_relation) -%}
      {%- set rows_source = tmp_relation -%}
    {%- endif -%}
    {#-- Set Overwrite Mode (entity_state: only before a write to an existing table, the one statement it serves) --#}
    {%- if strategy in ['insert_overwrite', 'microbatch'] and partition_by -%}
      {%- call statement() -%}
        set spark.sql.sources.partitionOverwriteMode = DYNAMIC
      {%- endcall -%}
    {%- endif -%}
    {%- call statement('main') -%}
      {%- if strategy == 'insert_new_partition' -%}
        {{ entity_state.insert_new_partition_sql(
            rows_source, target_relation, partition_by, model.compiled_code, stored_columns
        ) }}
      {%- else -%}
        {{ dbt_spark_get_incremental_sql(strategy, rows_source, target_relation, existing_relation, unique_key, incremental_predicates) }}
      {%- endif -%}
    {%- endcall -%}
  {%- endif -%}

  {% set should_revoke = should_revoke(existing_relation, full_refresh_mode) %}
  {% do apply_grants(target_relation, grant_config, should_revoke) %}

  {% do persist_docs(target_relation, model) %}

  {{ run_hooks(post_hooks) }}
  {%- do entity_state.forget_table_properties(target_relation, if_changed=true) -%}

  {{ return({'relations': [target_relation]}) }}

{%- endmaterialization %}

{#- Builds a state table at `relation` from the model's query (the materialization's `main` statement): dbt-spark's
    `create table ... as`, the branch of spark__create_table_as for the formats that create a table once, without
    the contract check dbt-spark runs first, which plans the whole query a second time in an empty `select`
    (0.1-0.3 s per build here). The built table's columns are held to the contract by one `describe`: their names
    and types (_contract_differences), and their order, which dbt-spark would impose by selecting the yml's columns
    from the query, and which here the query must give (a select of the yml's columns around it would also drop,
    unseen, a column the query has and the yml lacks). A table that breaks the contract is dropped before the run
    stops, and since `relation` is always the name aside, it never takes the model's name. A model without an
    enforced contract, or in a format that replaces tables, is built by dbt-spark's create_table_as as it is. -#}
{% macro _build_state_table(relation) %}
    {%- if not model['contract']['enforced'] or config.get('file_format', 'parquet') in ['delta', 'iceberg'] -%}
        {%- call statement('main') -%}
            {{ create_table_as(False, relation, model.compiled_code) }}
        {%- endcall -%}
        {{ return('') }}
    {%- endif -%}
    {%- call statement('main') -%}
        create table {{ relation }}
        {{ file_format_clause() }}
        {{ options_clause() }}
        {{ tblproperties_clause() }}
        {{ partition_cols(label="partitioned by") }}
        {{ clustered_cols(label="clustered by") }}
        {{ location_clause() }}
        {{ comment_clause() }}
        as
        {{ model.compiled_code }}
    {%- endcall -%}
    {%- set built_columns = adapter.get_columns_in_relation(relation) -%}
    {%- set differences = entity_state._contract_differences(built_columns) -%}
    {%- set built_order = built_columns | map(attribute='name') | map('lower') | list -%}
    {%- set declared_order = model['columns'].values() | map(attribute='name') | map('lower') | list -%}
    {%- if not differences and built_order != declared_order -%}
        {%- set differences = "The query gives the columns in another order (" ~ built_order | join(', ')
            ~ ") than the yml (" ~ declared_order | join(', ') ~ "): a state table keeps the yml's order." -%}
    {%- endif -%}
    {%- if differences -%}
        {% do adapter.drop_relation(relation) %}
        {{ exceptions.raise_compiler_error(
            "Model " ~ model.name ~ " has an enforced contract, and the table its query built breaks it: "
            ~ differences ~ " The table was dropped and nothing else changed. Make the model's query and the "
            ~ "columns (name, data_type) in its yml agree."
        ) }}
    {%- endif -%}
{% endmacro %}

{#- Under `--empty` a missing state table (or a view in its place, `existing`) is built empty. On a schema where no
    other state table existed before the run (the ones this run built are empty too, with no watermark), the next
    plain run then walks every landed event into every table. Where one did, the new table's window would end at
    what that one holds (its watermark, or its rows' when a run stopped before recording it), and the empty table
    would record it and look caught up to the next run, which would skip the history it misses: so the run stops
    instead, before writing anything, and says what to run. -#}
{% macro _assert_no_state_under_empty(existing) %}
    {%- set built_in_this_run = entity_state.run_memo('changed_tables') -%}
    {%- set stored = [] -%}
    {%- for node in graph.nodes.values()
        if node.resource_type == 'model' and node.package_name == model.package_name
        and node.config.materialized == 'state_table' and node.name != model.name -%}
        {%- set relation = entity_state.state_relation(node.name) -%}
        {%- if relation is not none and entity_state._memo_key(relation) not in built_in_this_run -%}
            {%- do stored.append(node.name) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if stored -%}
        {{ exceptions.raise_compiler_error(
            this ~ (" is a view" if existing is not none else " does not exist") ~ ", but other state tables hold "
            ~ "state already (" ~ stored | join(', ') ~ "). Built empty by --empty, it would look caught up with "
            ~ "them to the next run, which would skip the history it misses. Run a plain `dbt run` first (it builds "
            ~ model.name ~ " from the landed events), then --empty; or run --empty on a schema of its own."
        ) }}
    {%- endif -%}
{% endmacro %}
