{{ config(materialized='incremental', incremental_strategy='append') }}

{#- The run manifest: one row per window of landed arrivals a run opened. It decides each window once, from the
    newest arrival landed when it compiles; every other model ends its window at the newest row here, so the models
    of one run agree on it whatever is selected, and a rerun opens no window twice (its rows are its progress). A
    run with nothing new landed adds no row. -#}
{%- set previous_end = entity_state.progress_of(this, 'window_end_ingested_at') -%}
{%- set window_end = entity_state.landing_high_watermark(previous_end) -%}
{%- do entity_state.assert_landing_files_complete(previous_end, window_end) -%}

with

landed as (
    select
        ingested_at,
        source_file_name,
        reject_reason
    from {{ ref('stg_landing_events') }}
    where {{ entity_state.landed_window_predicate(previous_end, window_end) }}
),

counted as (
    select
        count(distinct ingested_at) as batches,
        count(distinct source_file_name) as source_files,
        count(*) as rows_landed,
        count(reject_reason) as rows_rejected
    from landed
),

final as (
    select
        {{ entity_state.micros_to_timestamp(previous_end) if previous_end is not none
            else 'cast(null as timestamp)' }} as window_start_ingested_at,
        {{ entity_state.micros_to_timestamp(window_end) if window_end is not none
            else 'cast(null as timestamp)' }} as window_end_ingested_at,
        batches,
        source_files,
        rows_landed,
        rows_rejected,
        rows_landed - rows_rejected as rows_applicable,
        '{{ invocation_id }}' as invocation_id,
        current_timestamp() as opened_at
    from counted
    where rows_landed > 0
)

select * from final
