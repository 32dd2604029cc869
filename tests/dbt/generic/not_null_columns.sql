{% test not_null_columns(model, column_names) %}
{%- if not column_names or column_names is string -%}
    {{ exceptions.raise_compiler_error('not_null_columns needs column_names, a non-empty list of column names') }}
{%- endif -%}
with

-- one predicate per column, which Spark pushes into the scan (Parquet keeps a null count per column chunk)
with_a_null as (
    select *
    from {{ model }}
    where {% for column in column_names %}{{ column }} is null{{ ' or ' if not loop.last }}{% endfor %}
),

final as (
    select
        *,
        concat_ws(', '
            {%- for column in column_names %}, case when {{ column }} is null then '{{ column }}' end
            {%- endfor %}
        ) as null_columns
    from with_a_null
)

select * from final
{% endtest %}
