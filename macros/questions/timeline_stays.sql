{#- Every stay of every entity, as entity_state_view shows it (its columns), as a select for a view or a CTE:
    entity_state_segments' stays, the open one ending now. `segments_filter`: SQL on segments' columns, for a reader
    that needs only the stays ending from some time on (entity_state_daily_counted); the open stays always pass. -#}
{% macro timeline_stays(segments_filter=none) %}
with

segments as (
    select
        tenant_id,
        entity_id,
        state_id,
        next_state_id,
        start_time,
        end_time,
        last_event_ts,
        is_open
    from {{ ref('entity_state_segments') }}
    {%- if segments_filter %}
    where is_open or ({{ segments_filter }})
    {%- endif %}
),

closed_stays as (
    select
        tenant_id,
        entity_id,
        state_id,
        next_state_id,
        start_time,
        end_time,
        last_event_ts,
        false as is_open
    from segments
    where not is_open
),

open_stays as (
    select
        tenant_id,
        entity_id,
        state_id,
        cast(null as string) as next_state_id,
        start_time,
        current_timestamp() as end_time,
        last_event_ts,
        true as is_open
    from segments
    where is_open
),

all_stays as (
    select * from closed_stays
    union all
    select * from open_stays
),

-- staleness and duration: the rules live in macros/questions/staleness.sql, shared with the macro as_of
with_staleness as (
    select
        tenant_id,
        entity_id,
        state_id,
        next_state_id,
        start_time,
        end_time,
        last_event_ts,
        is_open,
        {{ entity_state.stay_is_stale('is_open', 'last_event_ts') }} as is_stale
    from all_stays
),

final as (
    select
        tenant_id,
        entity_id,
        state_id,
        next_state_id,
        start_time,
        end_time,
        last_event_ts,
        is_open,
        is_stale,
        -- a stale open stay counts up to its last event, not to now: nobody knows where the entity went since
        {{ entity_state.seconds_between('start_time', 'case when is_stale then last_event_ts else end_time end') }}
            as duration_seconds
    from with_staleness
)

select * from final
{% endmacro %}
