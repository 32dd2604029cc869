{#- documented in _format__macros.yml -#}
{% macro commit_versions(relation) %}
    {%- set versions = {'latest': none, 'rebuilt': none} -%}
    {%- if entity_state.is_empty_ref(relation) or not entity_state.is_built(relation) -%}
        {{ return(versions) }}
    {%- endif -%}
    {%- set builds = ['CREATE TABLE AS SELECT', 'CREATE OR REPLACE TABLE AS SELECT', 'REPLACE TABLE AS SELECT'] -%}
    {#- describe history lists the newest commit first -#}
    {%- for commit in run_query('describe history ' ~ relation).rows -%}
        {%- if loop.first -%}
            {%- do versions.update({'latest': commit['version'] | int}) -%}
        {%- endif -%}
        {%- if versions.rebuilt is none and commit['operation'] in builds -%}
            {%- do versions.update({'rebuilt': commit['version'] | int}) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(versions) }}
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
