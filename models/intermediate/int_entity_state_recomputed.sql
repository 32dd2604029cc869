{#- The batch definition of every stay: the shared walk over all events with no seed. Nothing reads it on the
    incremental path; it exists so the incremental tables can be audited against it and unit-tested. -#}
with

events as (
    select
        tenant_id,
        entity_id,
        state_id,
        event_time,
        ingested_at
    from {{ ref('stg_events') }}
),

stays as (
    {{ entity_state.entity_state_islands('events') }}
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
        closed_ingested_at,
        is_open
    from stays
)

select * from final
