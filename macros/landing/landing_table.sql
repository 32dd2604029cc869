{% macro create_landing_table() %}
    {{ return(adapter.dispatch('create_landing_table', 'entity_state')()) }}
{% endmacro %}

{% macro default__create_landing_table() %}
    {{ exceptions.raise_compiler_error(
        "create_landing_table has no implementation for the '" ~ target.type ~ "' adapter: declare the landing "
        ~ "table yourself and remove the on-run-start hook from dbt_project.yml."
    ) }}
{% endmacro %}

{#- The landing table is external: dropping it never deletes landed files. At the start of every invocation it is
    refreshed, so that a long-lived Spark session lists the folder afresh (a cached listing would hide files that
    landed since the last run). It is recreated instead when its location, columns or kind are not what this
    project creates, so that its location follows ENTITY_STATE_LANDING_DIR. The refresh needs no statement to find
    the table: dbt's relation cache, filled before the hook, holds the same `show table extended` text the check
    reads. A `landing_events` this hook did not create is never dropped (_check_landing_table_is_ours asks the
    catalog again, right before the drop). -#}
{% macro spark__create_landing_table() %}
    {%- if execute and not entity_state.is_table_input() -%}
        {%- set relation = entity_state._landing_relation() -%}
        {%- set location = entity_state.landing_dir() -%}
        {%- set cached = adapter.get_relation(database=none, schema=relation.schema, identifier=relation.identifier) -%}
        {%- if cached is not none and entity_state._is_landing_table_as_created(cached.information or '', location) -%}
            {% call statement('refresh_landing_table') -%}
                refresh table {{ relation }}
            {%- endcall %}
        {%- else -%}
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
                    {%- for name, type in entity_state._landing_columns() %}
                    {{ name }} {{ type }}{{ ',' if not loop.last }}
                    {%- endfor %}
                )
                using parquet
                location '{{ dbt.escape_single_quotes(location) }}'
                tblproperties ('{{ entity_state._landing_table_property() }}' = 'true')
            {%- endcall %}
        {%- endif -%}
    {%- endif -%}
{% endmacro %}

{% macro _landing_columns() %}
    {{ return([
        ('tenant_id', 'string'),
        ('entity_id', 'string'),
        ('state_id', 'string'),
        ('event_time', 'timestamp'),
        ('event_time_text', 'string'),
        ('ingested_at', 'timestamp'),
    ]) }}
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
    {%- set table = entity_state._landing_table_facts(found[0]) -%}
    {%- set kind, found_at, purges = table.kind, table.location, table.purges -%}
    {%- set ours = table.has_property or entity_state._same_folder(found_at, location) -%}
    {%- if kind == 'EXTERNAL' and ours and not purges -%}
        {{ return(none) }}
    {%- endif -%}
    {%- if kind == 'MANAGED' -%}
        {%- set what = 'a managed table (its files in ' ~ found_at ~ '): dropping it would delete its data' -%}
    {%- elif kind == 'EXTERNAL' and purges -%}
        {%- set what = 'an external table that may delete its files in ' ~ found_at ~ ' when dropped (its '
            ~ 'external.table.purge is not read as false)' -%}
    {%- elif kind == 'EXTERNAL' -%}
        {%- set what = 'an external table over ' ~ found_at ~ ' that this project did not create (its landing '
            ~ 'folder is ' ~ location ~ ')' -%}
    {%- else -%}
        {%- set what = 'a ' ~ kind | lower ~ ', not the external table this project creates' -%}
    {%- endif -%}
    {{ exceptions.raise_compiler_error(
        relation ~ " exists and is " ~ what ~ ". At the start of every dbt invocation this project makes "
        ~ "`landing_events` the external table over ENTITY_STATE_LANDING_DIR it creates, and never drops a table it "
        ~ "did not create: nothing was dropped. Rename that table (alter table " ~ relation ~ " rename to ...) or use "
        ~ "another schema (ENTITY_STATE_SCHEMA), then run again."
    ) }}
{% endmacro %}

{#- What the checks read from a table's `show table extended` text: its kind, location, columns, and whether it
    carries this project's table property or purges its files when dropped. Both read as what keeps the table from
    being dropped when its properties do not parse cleanly: the property only as exactly true, the purge as anything
    but false (a line that does not parse, or a value that took in a pair the parser could not split, counts as
    purging), or wherever the listing's text says it is true (a value that holds a second, later pair of that key
    would otherwise win). -#}
{% macro _landing_table_facts(information) %}
    {%- set re = modules.re -%}
    {%- set kind = re.search('(?m)^Type: *(.*?) *$', information) -%}
    {%- set location = re.search('(?m)^Location: *(.*?) *$', information) -%}
    {%- set listed = entity_state._table_properties_in_listing(information) -%}
    {%- set properties = listed if listed is not none else {} -%}
    {{ return({
        'kind': kind.group(1) | upper if kind else 'UNKNOWN',
        'location': location.group(1) if location else '',
        'columns': re.findall('(?m)^ \\|-- ([^:]+): ([a-z]+)', information),
        'has_property': properties.get(entity_state._landing_table_property(), '') | lower == 'true',
        'purges': listed is none or properties.get('external.table.purge', 'false') | lower != 'false'
            or 'external.table.purge=true' in information | lower,
    }) }}
{% endmacro %}

{#- Whether a `landing_events` is exactly what the hook would create now: external, with its property, not purging,
    the project's columns, over the configured folder. Only an absolute folder or a URI is compared: a relative one
    may name another folder from another working directory. -#}
{% macro _is_landing_table_as_created(information, location) %}
    {%- set table = entity_state._landing_table_facts(information) -%}
    {{ return(
        table.kind == 'EXTERNAL' and table.has_property and not table.purges
        and table.columns == entity_state._landing_columns()
        and entity_state._is_absolute_location(location)
        and entity_state._same_folder(table.location, location)
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
    {%- if entity_state._is_absolute_location(wanted) -%}
        {{ return(found_at == wanted) }}
    {%- endif -%}
    {{ return(found_at.endswith('/' ~ modules.re.sub('^(\\./)+', '', wanted))) }}
{% endmacro %}

{#- A relative folder resolves against the working directory of the process that runs Spark: dbt's own on the
    in-process `local` output, a server's on any other, where it would silently point somewhere else. (Keyed on the
    output's name because dbt does not expose the connection method to Jinja.) -#}
{% macro landing_dir() %}
    {%- set location = env_var('ENTITY_STATE_LANDING_DIR', 'data/landing/events') -%}
    {%- if target.name != 'local' and not entity_state._is_absolute_location(location) -%}
        {{ exceptions.raise_compiler_error(
            "ENTITY_STATE_LANDING_DIR must be an absolute path or a URI (file:/..., s3://...) on target '"
            ~ target.name ~ "': Spark runs in another process there and would resolve '" ~ location
            ~ "' against its own working directory."
        ) }}
    {%- endif -%}
    {{ return(location) }}
{% endmacro %}

{% macro _is_absolute_location(location) %}
    {{ return(location.startswith('/') or modules.re.match('^[a-zA-Z][a-zA-Z0-9+.-]*:', location) is not none) }}
{% endmacro %}

{% macro _landing_relation() %}
    {{ return(api.Relation.create(
        database=none, schema=target.schema, identifier='landing_events'
    )) }}
{% endmacro %}

{#- The table properties in one table's `show table extended` text (`information`), for the landing
    table's check: none when the text is not such a listing or its line does not parse, an empty dict when it has no
    such line. -#}
{% macro _table_properties_in_listing(information) %}
    {%- if not information or not modules.re.search('(?m)^Type: ', information) -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set listed = modules.re.search('(?m)^Table Properties: *\\[(.*)\\] *$', information) -%}
    {%- if listed is none -%}
        {{ return(none if 'Table Properties:' in information else {}) }}
    {%- endif -%}
    {%- set properties = {} -%}
    {%- for pair in modules.re.split(', (?=[A-Za-z_][\\w.-]*=)', listed.group(1)) if pair -%}
        {%- set parts = pair.partition('=') -%}
        {%- if not parts[1] -%}
            {{ return(none) }}
        {%- endif -%}
        {%- do properties.update({parts[0]: parts[2]}) -%}
    {%- endfor -%}
    {{ return(properties) }}
{% endmacro %}
