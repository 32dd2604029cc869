{{
    config(
        materialized='state_table',
        incremental_strategy=entity_state.state_write_strategy('new_partition'),
        partition_by=['emitted_window'],
        pre_hook=["{{ entity_state.record_write_intent() }}"],
        post_hook=["{{ entity_state.record_watermark() }}"],
        on_schema_change='fail',
    )
}}

{#- Landed rows that cannot be applied, with the reason; one partition per run window that has some, like
    entity_state_segments (its window: yml meta `state_window`, macro state_window). A window whose landed rows can
    all be applied, as the check of its files found (landed_window_has_rejected_rows), writes nothing: its write
    would cost Spark jobs and add an empty partition; its columns are checked and its watermark is recorded all the
    same. An events table as input has no files check, so there the quarantine adds a partition every run. -#}
{%- set window = entity_state.state_window() -%}
{%- if window.plan.rebuild is none and entity_state.has_stored_state()
    and entity_state.landed_window_has_rejected_rows(window.low, window.high) == false -%}
    {%- do window.plan.update({'writes_no_rows': true}) -%}
{%- endif %}
{{ entity_state.write_plan(**window.plan) }}

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
        '{{ window.plan.partition }}' as emitted_window
    from landed
    where reject_reason is not null
)

select * from final
