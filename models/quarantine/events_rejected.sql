{{
    config(
        materialized='state_table',
        incremental_strategy=entity_state.state_write_strategy('new_partition'),
        partition_by=['emitted_window'],
        post_hook=["{{ entity_state.record_watermark() }}"],
        on_schema_change='fail',
    )
}}

{#- Landed rows that cannot be applied, with the reason. Written like entity_state_segments: one partition per
    window, rows of arrivals after what it has already emitted, so reruns and killed runs never duplicate a row. -#}
{%- set recorded = entity_state.read_watermark(this) if entity_state.has_stored_state() else none -%}
{%- set low = entity_state.emitted_watermark(this, 'ingested_at', recorded) if entity_state.has_stored_state() else none -%}
{%- set high = entity_state.landing_high_watermark(files_since=low) -%}
{%- do entity_state.assert_landing_files_complete(low, high) -%}
{%- set known_watermarks = [low, high] | reject('none') | list -%}
{%- set next_watermark = known_watermarks | max if known_watermarks else none -%}
{%- set emitted_window = entity_state.window_partition_value(next_watermark) -%}
{{ entity_state.write_plan(
    watermark=next_watermark,
    partition=emitted_window,
    is_window_empty=entity_state.is_window_empty(low, high),
    recorded_watermark=recorded,
) }}

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
    where {{ entity_state.landed_window_predicate(low, high) }}
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
        '{{ emitted_window }}' as emitted_window
    from landed
    where reject_reason is not null
)

select * from final
