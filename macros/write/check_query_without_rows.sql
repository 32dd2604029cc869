{#- What the state_table and kept_view materializations run under `--empty` for a relation that exists, in place of
    their write: the model's query planned with no rows, and held to the model's enforced contract. The contract
    check plans the query itself (dbt's empty query of it), so the query is planned once either way. -#}
{% macro _check_query_without_rows() %}
    {%- if model['contract']['enforced'] -%}
        {%- do get_assert_columns_equivalent(compiled_code) -%}
        {%- do store_raw_result('main', message='OK (checked with no rows)', code='OK', rows_affected=0) -%}
    {%- else -%}
        {%- call statement('main') -%}
            select * from (
{{ compiled_code }}
            ) as checked_rows limit 0
        {%- endcall -%}
    {%- endif -%}
{% endmacro %}
