{#- Used by `make demo` to start its own schema from scratch. Refuses any schema but the demo's. -#}
{% macro drop_schema_for_demo(schema) %}
    {%- if not schema.endswith('_demo') -%}
        {{ exceptions.raise_compiler_error(
            "drop_schema_for_demo only drops schemas whose name ends in '_demo', got '" ~ schema ~ "'"
        ) }}
    {%- endif -%}
    {#- a statement, not run_query: over thrift a DDL statement has no result set to fetch -#}
    {% call statement('drop_demo_schema') -%}
        drop schema if exists {{ adapter.quote(schema) }} cascade
    {%- endcall %}
{% endmacro %}
