with

landed as (
    select
        tenant_id,
        entity_id,
        state_id,
        event_time,
        ingested_at,
        reject_reason
    from {{ ref('stg_landing_events') }}
),

-- rows without a full key or an event time cannot be placed on any timeline: events_rejected keeps them
applicable as (
    select
        trim(tenant_id) as tenant_id,
        trim(entity_id) as entity_id,
        trim(state_id) as state_id,
        event_time,
        ingested_at
    from landed
    where reject_reason is null
),

final as (
    select distinct
        tenant_id,
        entity_id,
        state_id,
        event_time,
        ingested_at
    from applicable
)

select * from final
