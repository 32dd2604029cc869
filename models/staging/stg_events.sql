with

source as (
    select
        tenant_id,
        entity_id,
        state_id,
        event_time,
        {{ entity_state.landing_ingested_at() }} as ingested_at
    from {{ source('landing', 'events') }}
),

trimmed as (
    select
        trim(tenant_id) as tenant_id,
        trim(entity_id) as entity_id,
        trim(state_id) as state_id,
        event_time,
        ingested_at
    from source
),

-- rows without a full key or an event time cannot be placed on any timeline
valid as (
    select
        tenant_id,
        entity_id,
        state_id,
        event_time,
        ingested_at
    from trimmed
    where coalesce(tenant_id, '') <> ''
        and coalesce(entity_id, '') <> ''
        and coalesce(state_id, '') <> ''
        and event_time is not null
),

final as (
    select distinct
        tenant_id,
        entity_id,
        state_id,
        event_time,
        ingested_at
    from valid
)

select * from final
