{{ config(materialized='incremental', incremental_strategy='merge', unique_key=['tenant_id', 'entity_id']) }}

{#- One row per entity: its open stay, merged from entity_state_segments' open stays that runs wrote since this
    table's newest watermark (every run that touches an entity writes its open stay with the run's window end). A
    run stopped between the two tables leaves this one behind, never wrong: the next run catches it up. -#}
{%- set synced_through = entity_state.progress_of(this, 'watermark_ingested_at') %}
{%- set segments = ref('entity_state_segments') %}

with

open_stays as (
    {%- if not entity_state.is_built(segments) and execute %}
    -- segments was never built: nothing to follow yet, and the table starts empty with its columns
    select
        cast(null as string) as tenant_id,
        cast(null as string) as entity_id,
        cast(null as string) as state_id,
        cast(null as timestamp) as start_time,
        cast(null as timestamp) as last_event_ts,
        cast(null as array<string>) as states_at_last_event_ts,
        cast(null as timestamp) as watermark_ingested_at
    where false
    {%- else %}
    select
        tenant_id,
        entity_id,
        state_id,
        start_time,
        last_event_ts,
        states_at_last_event_ts,
        watermark_ingested_at
    from {{ segments }}
    where is_open
        {%- if synced_through is not none %}
        and watermark_ingested_at > {{ entity_state.micros_to_timestamp(synced_through) }}
        {%- endif %}
    {%- endif %}
),

final as (
    select * from open_stays
)

select * from final
