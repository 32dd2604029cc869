{{ config(materialized='kept_view') }}

{#- One row per entity: its newest row in the log of open stays (macro newest_logged_rows). -#}
with

final as (
    select
        tenant_id,
        entity_id,
        state_id,
        start_time,
        last_event_ts,
        states_at_last_event_ts,
        watermark_ingested_at
    from {{ entity_state.newest_logged_rows(ref('entity_state_current_log')) }} as logged_rows
)

select * from final
