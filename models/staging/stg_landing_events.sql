{#- Every landed row, as landed: the one place that reads the landing table. Rows that cannot be applied keep
    their reject_reason here; stg_events takes the others and events_rejected keeps these. -#}
with

source as (
    select
        tenant_id,
        entity_id,
        state_id,
        event_time,
        event_time_text,
        {{ entity_state.landing_ingested_at() }} as ingested_at,
        _metadata.file_name as source_file_name,
        _metadata.file_modification_time as source_file_modified_at
    from {{ source('landing', 'events') }}
),

final as (
    select
        tenant_id,
        entity_id,
        state_id,
        event_time,
        event_time_text,
        ingested_at,
        source_file_name,
        source_file_modified_at,
        {{ entity_state.reject_reason('tenant_id', 'entity_id', 'state_id', 'event_time', 'event_time_text') }}
            as reject_reason
    from source
)

select * from final
