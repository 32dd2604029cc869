{% macro create_landing_table() %}
    {{ return(adapter.dispatch('create_landing_table', 'entity_state')()) }}
{% endmacro %}

{% macro default__create_landing_table() %}
    {{ exceptions.raise_compiler_error(
        "create_landing_table has no implementation for the '" ~ target.type ~ "' adapter: declare the landing "
        ~ "table yourself and remove the on-run-start hook from dbt_project.yml."
    ) }}
{% endmacro %}

{#- The landing table is external: dropping it never deletes landed files. It is recreated at the start of every
    invocation so that its location follows ENTITY_STATE_LANDING_DIR and a long-lived Spark session lists the
    folder afresh (a cached listing would hide files that landed since the last run). -#}
{% macro spark__create_landing_table() %}
    {%- if execute and not entity_state.is_table_input() -%}
        {%- set relation = entity_state._landing_relation() -%}
        {%- set location = entity_state.landing_dir() -%}
        {#- statements, not run_query: over thrift a DDL statement has no result set to fetch -#}
        {% call statement('create_landing_schema') -%}
            create schema if not exists {{ adapter.quote(relation.schema) }}
        {%- endcall %}
        {% call statement('drop_landing_table') -%}
            drop table if exists {{ relation }}
        {%- endcall %}
        {% call statement('create_landing_table') -%}
            create table {{ relation }} (
                tenant_id string,
                entity_id string,
                state_id string,
                event_time timestamp,
                event_time_text string,
                ingested_at timestamp
            )
            using parquet
            location '{{ dbt.escape_single_quotes(location) }}'
        {%- endcall %}
    {%- endif -%}
{% endmacro %}

{#- A relative folder resolves against the working directory of the process that runs Spark: dbt's own on the
    in-process `local` output, a server's on any other, where it would silently point somewhere else. (Keyed on the
    output's name because dbt does not expose the connection method to Jinja.) -#}
{% macro landing_dir() %}
    {%- set location = env_var('ENTITY_STATE_LANDING_DIR', 'data/landing/events') -%}
    {%- set is_absolute = location.startswith('/') or modules.re.match('^[a-zA-Z][a-zA-Z0-9+.-]*:', location) -%}
    {%- if target.name != 'local' and not is_absolute -%}
        {{ exceptions.raise_compiler_error(
            "ENTITY_STATE_LANDING_DIR must be an absolute path or a URI (file:/..., s3://...) on target '"
            ~ target.name ~ "': Spark runs in another process there and would resolve '" ~ location
            ~ "' against its own working directory."
        ) }}
    {%- endif -%}
    {{ return(location) }}
{% endmacro %}

{% macro _landing_relation() %}
    {{ return(api.Relation.create(
        database=none, schema=target.schema, identifier='landing_events'
    )) }}
{% endmacro %}

{#- The landed rows that can be applied, trimmed, each distinct event once: the body of stg_events. `landed_filter`
    narrows stg_landing_events first: a state model passes its window there, where the filter on the landing file's
    modification time still reaches the file listing (after the dedup it no longer could). Rows without a full key
    or an event time cannot be placed on any timeline: events_rejected keeps them. -#}
{% macro applicable_events(landed_filter='true') %}
    select distinct
        trim(tenant_id) as tenant_id,
        trim(entity_id) as entity_id,
        trim(state_id) as state_id,
        event_time,
        ingested_at
    from {{ ref('stg_landing_events') }}
    where reject_reason is null
        and ({{ landed_filter }})
{% endmacro %}
