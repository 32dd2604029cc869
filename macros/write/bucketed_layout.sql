{#- Says in the run's log when `relation`, a table already stored, is not bucketed as its model's config asks
    (`buckets`): Spark writes a table as it was created, so a table built before the setting (or before a change of
    it) keeps its layout until it is built again. Reads the `Num Buckets` line of dbt's listing of the schema, so it
    sends no query, and says nothing when the listing has no text for the table (built during this invocation) or
    the run builds the table anew. -#}
{% macro warn_if_bucketed_otherwise(relation) %}
    {%- set wanted = config.get('buckets') -%}
    {%- if not execute or wanted is none or flags.FULL_REFRESH -%}
        {{ return('') }}
    {%- endif -%}
    {%- set cached = adapter.get_relation(
        database=relation.database, schema=relation.schema, identifier=relation.identifier
    ) -%}
    {%- set information = cached.information if cached is not none else none -%}
    {%- if not information or not modules.re.search('(?m)^Type: ', information) -%}
        {{ return('') }}
    {%- endif -%}
    {%- set listed = modules.re.search('(?m)^Num Buckets: (\\d+)', information) -%}
    {%- set stored = listed.group(1) | int if listed else none -%}
    {%- if stored != wanted | int -%}
        {%- do log(
            relation ~ ' is stored in ' ~ (stored ~ ' buckets' if stored else 'no buckets') ~ ', not the '
            ~ wanted ~ ' its config asks for, so reads that rank its rows per entity shuffle it first; '
            ~ '`dbt run --full-refresh -s ' ~ model.name ~ '` rebuilds it with them (README, Settings)',
            info=true
        ) -%}
    {%- endif -%}
{% endmacro %}
