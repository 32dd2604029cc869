{#- Says in the run's log when `relation`, a table already stored, is not bucketed as its model's config asks
    (`buckets`): Spark writes a table as it was created, so a table built before the setting (or before a change of
    it) keeps its layout until it is built again. Reads the `Num Buckets` line of dbt's listing of the schema
    (_listed_description), so it sends no query, and says nothing when the listing has no text for the table (built
    during this invocation), when the relation is still a view, or when this run builds the table anew. -#}
{% macro warn_if_bucketed_otherwise(relation) %}
    {%- set wanted = config.get('buckets') -%}
    {%- if not execute or wanted is none or should_full_refresh() -%}
        {{ return('') }}
    {%- endif -%}
    {%- set information = entity_state._listed_description(relation) -%}
    {%- if information is none or modules.re.search('(?m)^Type: VIEW', information) -%}
        {{ return('') }}
    {%- endif -%}
    {%- set listed = modules.re.search('(?m)^Num Buckets: (\\d+)', information) -%}
    {%- set stored = listed.group(1) | int if listed else none -%}
    {%- if stored is none -%}
        {%- do log(
            relation ~ ' is stored without buckets, not in the ' ~ wanted ~ ' its config asks for, so reads that '
            ~ 'rank its rows per entity shuffle it first; `dbt run --full-refresh -s ' ~ model.name
            ~ '` rebuilds it in buckets (README, Settings)',
            info=true
        ) -%}
    {%- elif stored != wanted -%}
        {%- do log(
            relation ~ ' is stored in ' ~ stored ~ ' buckets, not the ' ~ wanted ~ ' its config asks for, so reads '
            ~ 'that rank its rows per entity run in ' ~ stored ~ ' tasks; `dbt run --full-refresh -s ' ~ model.name
            ~ '` rebuilds it with ' ~ wanted ~ ' (README, Settings)',
            info=true
        ) -%}
    {%- endif -%}
{% endmacro %}
