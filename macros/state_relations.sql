{#- Resolves another model's relation without `ref`, so no DAG edge is added. `entity_state_segments` needs the
    current table as the seed of its walk while `entity_state_current` depends on segments; a `ref` both ways would
    be a cycle. Returns none when the table does not exist yet. -#}
{% macro state_relation(model_name) %}
    {%- if not execute -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set nodes = graph.nodes.values()
        | selectattr('resource_type', 'equalto', 'model')
        | selectattr('package_name', 'equalto', model.package_name)
        | selectattr('name', 'equalto', model_name)
        | list -%}
    {%- if nodes | length != 1 -%}
        {{ exceptions.raise_compiler_error(
            "state_relation: expected one model named '" ~ model_name ~ "' in package '" ~ model.package_name
            ~ "', found " ~ (nodes | length) ~ ". Check the model name."
        ) }}
    {%- endif -%}
    {%- set node = nodes[0] -%}
    {{ return(adapter.get_relation(database=node.database, schema=node.schema, identifier=node.alias)) }}
{% endmacro %}

{#- Hash bucket of an entity; `entity_state_current` is partitioned by it. -#}
{% macro entity_bucket(tenant_column='tenant_id', entity_column='entity_id') %}
    {{ return(adapter.dispatch('entity_bucket', 'entity_state')(tenant_column, entity_column)) }}
{% endmacro %}

{% macro spark__entity_bucket(tenant_column, entity_column) %}
    {%- set buckets = entity_state.setting('buckets') | int -%}
    {%- if buckets < 1 -%}
        {{ exceptions.raise_compiler_error('var entity_state__buckets must be a positive integer, got ' ~ buckets) }}
    {%- endif -%}
    cast(pmod(xxhash64({{ tenant_column }}, {{ entity_column }}), {{ buckets }}) as int)
{% endmacro %}

{#- The one place that decides how a state table is written. `replace_partitions` rewrites only the partitions a
    run produced rows for; `new_partition` adds one partition that no other write uses (insert_new_partition_sql);
    `append` adds rows. Table formats with MERGE (Delta, Iceberg, Hudi) could map `replace_partitions` to `merge`
    here; plain parquet, the only format available to this project, cannot. -#}
{% macro state_write_strategy(mode) %}
    {%- set strategies = {
        'replace_partitions': 'insert_overwrite',
        'new_partition': 'insert_new_partition',
        'append': 'append',
    } -%}
    {%- if mode not in strategies -%}
        {{ exceptions.raise_compiler_error(
            "state_write_strategy: unknown mode '" ~ mode ~ "'; use one of " ~ (strategies.keys() | list | join(', '))
        ) }}
    {%- endif -%}
    {%- set file_format = config.get('file_format', 'parquet') -%}
    {%- if execute and file_format != 'parquet' -%}
        {{ exceptions.raise_compiler_error(
            "state_write_strategy supports file_format 'parquet' only (got '" ~ file_format ~ "'). Another format "
            ~ "needs its write path added and tested in macros/state_relations.sql first."
        ) }}
    {%- endif -%}
    {{ return(strategies[mode]) }}
{% endmacro %}

{#- The write of the strategy `insert_new_partition`: the model's rows go into one partition, named by the model
    in its write plan (write_plan), that no earlier write has used. Why not a dynamic partition overwrite: that lists
    every partition of the table from the metastore on each write, so a table that gains a partition per run slows
    every run down as its history grows; a write to a fully named partition looks up that partition only. Why a
    partition of its own: such a write commits through the `_temporary` folder at the table's root, and its commit
    takes in every task output left there, including those of an earlier write killed before its commit. Those can
    only belong to that killed write's own partition, which was never registered in the metastore (registration
    comes after the commit), so readers, who see registered partitions only, never see them. -#}
{% macro insert_new_partition_sql(source_relation, target_relation, partition_by, compiled_code) %}
    {%- set partition_columns = [partition_by] if partition_by is string else (partition_by or []) -%}
    {%- if partition_columns | length != 1 -%}
        {{ exceptions.raise_compiler_error(
            "incremental_strategy 'insert_new_partition' writes one partition: give " ~ target_relation
            ~ " exactly one partition_by column (got " ~ (partition_columns | join(', ') or 'none') ~ ")"
        ) }}
    {%- endif -%}
    {%- set partition = entity_state.read_write_plan(compiled_code).get('partition') -%}
    {%- if partition is none -%}
        {{ exceptions.raise_compiler_error(
            "incremental_strategy 'insert_new_partition' needs the partition to write: render "
            ~ "entity_state.write_plan(partition=value) in the model of " ~ target_relation
            ~ ", with the value it gives its partition column"
        ) }}
    {%- endif -%}
    {%- set partition_column = partition_columns[0] -%}
    {%- set dest_columns = adapter.get_columns_in_relation(target_relation)
        | rejectattr('name', 'equalto', partition_column) | list -%}
    insert into table {{ target_relation }} partition ({{ partition_column }} = '{{ partition }}')
    select {{ dest_columns | map(attribute='quoted') | join(', ') }} from {{ source_relation }}
{% endmacro %}

{#- Buckets of entity_state_current whose rows are gone, wholly or in part. Spark replaces a rewritten bucket by
    deleting its folder and then renaming the new one in: a run killed during the delete or between the two leaves
    the bucket registered in the metastore with only some or none of its rows, and readers would take the missing
    entities for ones never seen. Every row carries the number of rows its bucket was written with
    (`bucket_entities`), which tells such a bucket from a complete one. Returns the bucket numbers, sorted; an empty
    list when the table does not exist. -#}
{% macro lost_current_buckets(relation) %}
    {{ return(adapter.dispatch('lost_current_buckets', 'entity_state')(relation)) }}
{% endmacro %}

{% macro spark__lost_current_buckets(relation) %}
    {%- if not execute or relation is none -%}
        {{ return([]) }}
    {%- endif -%}
    {%- set registered = [] -%}
    {%- for row in run_query('show partitions ' ~ relation).rows -%}
        {%- do registered.append(row[0].split('=')[1] | int) -%}
    {%- endfor -%}
    {%- set counted = run_query(
        'select entity_bucket, count(*), min(bucket_entities), max(bucket_entities) from ' ~ relation
        ~ ' group by entity_bucket'
    ) -%}
    {%- set complete = [] -%}
    {%- for row in counted.rows if row[1] == row[2] and row[2] == row[3] -%}
        {%- do complete.append(row[0] | int) -%}
    {%- endfor -%}
    {{ return(registered | reject('in', complete) | sort | list) }}
{% endmacro %}

{#- For the models seeded by the current rows (segments, the batch counts): true while the current table has lost
    rows, and those models must wait with an empty window, as a seed with entities missing would start their stays
    afresh. Says so in the log. -#}
{% macro is_seed_damaged(current_relation) %}
    {%- set lost_buckets = entity_state.lost_current_buckets(current_relation) -%}
    {%- if lost_buckets -%}
        {%- do log(
            this ~ ' waits: ' ~ current_relation ~ ' lost the rows of buckets ' ~ lost_buckets | join(', ')
            ~ '; its next run (a plain dbt run) rebuilds it', info=true
        ) -%}
    {%- endif -%}
    {{ return(lost_buckets | length > 0) }}
{% endmacro %}
