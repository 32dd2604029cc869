{% test unique_combination_of_columns(model, combination_of_columns) %}
{%- if not combination_of_columns -%}
    {{ exceptions.raise_compiler_error('unique_combination_of_columns needs a non-empty combination_of_columns list') }}
{%- endif -%}
with

grouped as (
    select
        {{ combination_of_columns | join(', ') }},
        count(*) as row_count
    from {{ model }}
    group by {{ combination_of_columns | join(', ') }}
),

final as (
    select *
    from grouped
    where row_count > 1
)

select * from final
{% endtest %}
