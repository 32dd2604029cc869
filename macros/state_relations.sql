{#- Resolves another model's relation without `ref`, so no DAG edge is added. `entity_state_segments` needs the
    current table as the seed of its walk while `entity_state_current` depends on segments; a `ref` both ways would
    be a cycle. Returns none when the table does not exist yet. -#}
{% macro state_relation(model_name) %}
    {%- if not execute -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set nodes = graph.nodes.values()
        | selectattr('resource_type', 'equalto', 'model')
        | selectattr('package_name', 'equalto', project_name)
        | selectattr('name', 'equalto', model_name)
        | list -%}
    {%- if nodes | length != 1 -%}
        {{ exceptions.raise_compiler_error(
            "state_relation: expected one model named '" ~ model_name ~ "' in project '" ~ project_name
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
    {%- set buckets = var('entity_state_buckets') | int -%}
    {%- if buckets < 1 -%}
        {{ exceptions.raise_compiler_error('var entity_state_buckets must be a positive integer, got ' ~ buckets) }}
    {%- endif -%}
    cast(pmod(xxhash64({{ tenant_column }}, {{ entity_column }}), {{ buckets }}) as int)
{% endmacro %}

{#- The one place that decides how a state table is written. `replace_partitions` rewrites only the partitions a
    run produced rows for; `append` adds rows. Table formats with MERGE (Delta, Iceberg, Hudi) could map
    `replace_partitions` to `merge` here; plain parquet, the only format available to this project, cannot. -#}
{% macro state_write_strategy(mode) %}
    {%- set strategies = {'replace_partitions': 'insert_overwrite', 'append': 'append'} -%}
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
