{% test expression_is_true(model, expression) %}
with

final as (
    select *
    from {{ model }}
    where not coalesce({{ expression }}, false)
)

select * from final
{% endtest %}
