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
