{#- Each entity's state at `moment` (a SQL timestamp expression), from entity_state_view, as a parenthesised
    subquery for a `from`: one row per entity whose first event is at or before the moment. Stays are half-open
    [start_time, end_time): at a boundary the new stay holds, and a zero-length stay never holds. -#}
{% macro as_of(moment) %}
(
    select
        tenant_id,
        entity_id,
        state_id,
        start_time,
        last_event_ts,
        {{ entity_state.stay_is_stale('true', 'last_event_ts', '(' ~ moment ~ ')') }} as is_stale
    from {{ ref('entity_state', 'entity_state_view') }}
    where
        start_time <= ({{ moment }})
        and (is_open or ({{ moment }}) < end_time)
)
{%- endmacro %}
