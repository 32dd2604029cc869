{{ config(materialized='incremental', incremental_strategy='append') }}

{#- Landed rows that cannot be applied, with the reason, appended per run window (entity_state_runs): the rows of
    the windows after the newest one this table holds, skipping the windows the manifest counted none in. -#}
{%- set window = entity_state.manifest_window(
    entity_state.progress_of(this, 'window_end_ingested_at'), 'rows_rejected'
) %}

with

landed as (
    select
        tenant_id,
        entity_id,
        state_id,
        event_time,
        event_time_text,
        ingested_at,
        source_file_name,
        reject_reason
    from {{ ref('stg_landing_events') }}
    where {{ entity_state.landed_window_predicate(window.low, window.high) }}
),

final as (
    select
        tenant_id,
        entity_id,
        state_id,
        event_time,
        event_time_text,
        reject_reason,
        source_file_name,
        ingested_at,
        {{ entity_state.window_end_literal(window) }} as window_end_ingested_at
    from landed
    where reject_reason is not null
)

select * from final
