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
    folder afresh (a cached listing would hide files that landed since the last run). A `landing_events` this hook
    did not create is never dropped (_check_landing_table_is_ours). -#}
{% macro spark__create_landing_table() %}
    {%- if execute and not entity_state.is_table_input() -%}
        {%- set relation = entity_state._landing_relation() -%}
        {%- set location = entity_state.landing_dir() -%}
        {#- statements, not run_query: over thrift a DDL statement has no result set to fetch -#}
        {% call statement('create_landing_schema') -%}
            create schema if not exists {{ adapter.quote(relation.schema) }}
        {%- endcall %}
        {%- do entity_state._check_landing_table_is_ours(relation, location) -%}
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
            tblproperties ('{{ entity_state._landing_table_property() }}' = 'true')
        {%- endcall %}
    {%- endif -%}
{% endmacro %}

{% macro _landing_table_property() %}
    {{ return('entity_state.landing_table') }}
{% endmacro %}

{#- Stops the hook before it drops a `landing_events` it did not create. Dropping a managed table deletes its files
    (so does dropping an external one with external.table.purge on a Hive 3 metastore): that may be the only copy of
    someone's data. Dropped are only external tables this hook created (its table property; their folder may differ
    when ENTITY_STATE_LANDING_DIR changed) or, created before the property existed, external ones over the
    configured folder. One query, not a statement: `show table extended` returns rows, also over thrift (dbt-spark
    lists relations with it). -#}
{% macro _check_landing_table_is_ours(relation, location) %}
    {%- set found = [] -%}
    {%- set listing = "show table extended in " ~ adapter.quote(relation.schema) ~ " like '" ~ relation.identifier ~ "'" -%}
    {%- for row in run_query(listing).rows
        if row[1] | lower == relation.identifier and (row[2] | string | lower) != 'true' -%}
        {%- do found.append(row[3] or '') -%}
    {%- endfor -%}
    {%- if found | length == 0 -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set re = modules.re -%}
    {%- set kind = re.search('(?m)^Type: *(.*?) *$', found[0]) -%}
    {%- set kind = kind.group(1) | upper if kind else 'UNKNOWN' -%}
    {%- set found_at = re.search('(?m)^Location: *(.*?) *$', found[0]) -%}
    {%- set found_at = found_at.group(1) if found_at else '' -%}
    {%- set properties = re.search('(?m)^Table Properties: *\\[(.*)\\] *$', found[0]) -%}
    {%- set properties = (', ' ~ properties.group(1) ~ ',') | lower if properties else '' -%}
    {%- set purges = ', external.table.purge=true,' in properties -%}
    {%- set ours = (', ' ~ entity_state._landing_table_property() ~ '=true,') in properties
        or entity_state._same_folder(found_at, location) -%}
    {%- if kind == 'EXTERNAL' and ours and not purges -%}
        {{ return(none) }}
    {%- endif -%}
    {%- if kind == 'MANAGED' -%}
        {%- set what = 'a managed table (its files in ' ~ found_at ~ '): dropping it would delete its data' -%}
    {%- elif kind == 'EXTERNAL' and purges -%}
        {%- set what = 'an external table with external.table.purge=true: dropping it would delete its files in '
            ~ found_at -%}
    {%- elif kind == 'EXTERNAL' -%}
        {%- set what = 'an external table over ' ~ found_at ~ ' that this project did not create (its landing '
            ~ 'folder is ' ~ location ~ ')' -%}
    {%- else -%}
        {%- set what = 'a ' ~ kind | lower ~ ', not the external table this project creates' -%}
    {%- endif -%}
    {{ exceptions.raise_compiler_error(
        relation ~ " exists and is " ~ what ~ ". This project drops and recreates `landing_events` at the start of "
        ~ "every dbt invocation, as an external table over ENTITY_STATE_LANDING_DIR, and never drops a table it did "
        ~ "not create: nothing was dropped. Rename that table (alter table " ~ relation ~ " rename to ...) or use "
        ~ "another schema (ENTITY_STATE_SCHEMA), then run again."
    ) }}
{% endmacro %}

{#- Whether a table's Location (`file:/abs/path`, a URI) is the folder ENTITY_STATE_LANDING_DIR names (absolute, a
    URI, or on `local` relative to the working directory, which Spark prefixes). -#}
{% macro _same_folder(found_at, location) %}
    {%- set found_at = modules.re.sub('^file:(//)?', '', found_at).rstrip('/') -%}
    {%- set wanted = modules.re.sub('^file:(//)?', '', location).rstrip('/') -%}
    {%- if not wanted -%}
        {{ return(false) }}
    {%- endif -%}
    {%- if wanted.startswith('/') or modules.re.match('^[a-zA-Z][a-zA-Z0-9+.-]*:', wanted) -%}
        {{ return(found_at == wanted) }}
    {%- endif -%}
    {{ return(found_at.endswith('/' ~ modules.re.sub('^(\\./)+', '', wanted))) }}
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
