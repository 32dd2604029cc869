{#- Resolves another model's relation without `ref`, so no DAG edge is added. `entity_state_segments` needs the
    log of open stays as the seed of its walk while `entity_state_current_log` depends on segments; a `ref` both ways
    would be a cycle. Returns none when the table does not exist yet. -#}
{% macro state_relation(model_name) %}
    {%- if not execute -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set node = entity_state._state_node(model_name) -%}
    {{ return(adapter.get_relation(database=node.database, schema=node.schema, identifier=node.alias)) }}
{% endmacro %}

{#- The graph node of a model of this project, by name. -#}
{% macro _state_node(model_name) %}
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
    {{ return(nodes[0]) }}
{% endmacro %}

{#- `is_incremental()` for the `state_table` materialization (dbt's own answers true for `incremental` models
    only): true when the model's table exists and this run writes to it, false on the first run and on a full
    refresh, when the model builds the table from all landed events. -#}
{% macro has_stored_state() %}
    {%- if not execute -%}
        {{ return(false) }}
    {%- endif -%}
    {%- set relation = adapter.get_relation(this.database, this.schema, this.identifier) -%}
    {{ return(
        relation is not none
        and relation.type == 'table'
        and model.config.materialized == 'state_table'
        and not should_full_refresh()
    ) }}
{% endmacro %}
