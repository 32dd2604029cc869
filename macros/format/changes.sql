{#- documented in _format__macros.yml; a relation with a row limit is a ref of `dbt build --empty` -#}
{% macro latest_version(relation) %}
    {%- if relation.limit is not none or not entity_state.is_built(relation) -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set rows = run_query('describe history ' ~ relation ~ ' limit 1').rows -%}
    {{ return(rows[0]['version'] | int if rows else none) }}
{% endmacro %}

{#- The rows Delta's change data feed holds for `relation`'s commits `from_version` to `to_version` (constants:
    table_changes evaluates them before it plans), with `_change_type`, `_commit_version` and `_commit_timestamp`. -#}
{% macro changes_between(relation, from_version, to_version) %}
    table_changes('{{ relation }}', {{ from_version | int }}, {{ to_version | int }})
{% endmacro %}

{#- `relation` as it was at commit `version` (Delta time travel). -#}
{% macro relation_at_version(relation, version) %}
    {{ relation }} version as of {{ version | int }}
{% endmacro %}

{#- documented in _format__macros.yml -#}
{% macro rebuilt_version(relation) %}
    {%- if relation.limit is not none or not entity_state.is_built(relation) -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set builds = ['CREATE TABLE AS SELECT', 'CREATE OR REPLACE TABLE AS SELECT', 'REPLACE TABLE AS SELECT'] -%}
    {#- describe history lists the newest commit first -#}
    {%- for commit in run_query('describe history ' ~ relation).rows if commit['operation'] in builds -%}
        {%- if loop.first -%}
            {{ return(commit['version'] | int) }}
        {%- endif -%}
    {%- endfor -%}
    {{ return(none) }}
{% endmacro %}
