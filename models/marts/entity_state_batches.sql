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

{#- One row per landed batch, once segments and the quarantine have both processed it (its window: yml meta
    `state_window`, macro state_window). Lateness is judged as the walk judges it: the window's events against the
    current table's stored rows, read from that table's watermark; the current table never moves past what this
    table has counted, so every batch counted here is newer than the rows it is judged against. -#}
{%- set window = entity_state.state_window() -%}
{{ entity_state.write_plan(**window.plan) }}

with

landed as (
    select
        trim(tenant_id) as tenant_id,
        trim(entity_id) as entity_id,
        trim(state_id) as state_id,
        event_time,
        ingested_at,
        source_file_name,
        reject_reason
    from {{ ref('stg_landing_events') }}
    where {{ entity_state.landed_window_predicate(window.start, window.high) }}
),

rejected as (
    select
        ingested_at,
        count(*) as rows_rejected
    from {{ ref('events_rejected') }}
    where
        {{ entity_state.window_predicate('ingested_at', window.start, window.high) }}
        and {{ entity_state.emitted_since(window.start) }}
    group by ingested_at
),

-- the window the walk sees: from the current table's watermark, so the stored rows seed it. Repeated rows are left
-- in (the classification keeps each event's first arrival anyway), and the rows are spread by entity once: the
-- classification's aggregation and its window over the entity's batches then run without a shuffle of their own
events as (
    {{ entity_state.applicable_events(
        entity_state.landed_window_predicate(window.low, window.high), each_row_once=false, spread_by_entity=true
    ) }}
),

{%- if window.seed is not none %}

seed as (
    select
        tenant_id,
        entity_id,
        state_id,
        start_time,
        last_event_ts,
        states_at_last_event_ts,
        watermark_ingested_at
    from {{ window.seed_rows }} as stored_rows
),
{%- endif %}

-- each distinct event the seed has not applied once, at its first arrival in the window, with its lateness; an
-- event that arrived again in a later batch of the window is a repeat there
classified as (
    {{ entity_state.classify_window_events('events', 'seed' if window.seed is not none else none) }}
),

first_arrival_counts as (
    select
        ingested_at,
        sum(case when is_late then 1 else 0 end) as rows_late,
        sum(case when not is_late and not is_seen_before then 1 else 0 end) as rows_applied
    from classified
    group by ingested_at
),

landed_counts as (
    select
        ingested_at,
        count(distinct source_file_name) as source_files,
        count(*) as rows_landed,
        count(*) - count(reject_reason) as rows_applicable,
        count(distinct case when reject_reason is null then concat_ws('\u0000', tenant_id, entity_id) end)
            as entities_touched
    from landed
    group by ingested_at
),

-- a stay is closed by the first event of the next one (its end_time and next_state_id); a repair writes stays again,
-- so each closing event counts once, however many writes hold a stay it closes
closed_counts as (
    select
        closed_ingested_at as ingested_at,
        count(distinct tenant_id, entity_id, end_time, next_state_id) as stays_closed
    from {{ ref('entity_state_segments') }}
    where
        {{ entity_state.window_predicate('closed_ingested_at', window.start, window.high) }}
        and {{ entity_state.emitted_since(window.start) }}
    group by closed_ingested_at
),

final as (
    select
        landed_counts.ingested_at as batch_ingested_at,
        landed_counts.source_files,
        landed_counts.rows_landed,
        coalesce(first_arrival_counts.rows_applied, 0) as rows_applied,
        -- an applicable row is the first arrival of its event in the window (applied, late, or a repeat of the seed's
        -- latest events) or a repeat of one (in its batch or an earlier batch of the window): those not applied and
        -- not late are the repeats. Counted as the rest rather than on their own, which would take two more
        -- shuffles of every event (a distinct count and a numbering of arrivals), most of a full refresh's count
        landed_counts.rows_applicable
        - coalesce(first_arrival_counts.rows_applied, 0)
        - coalesce(first_arrival_counts.rows_late, 0) as rows_duplicate,
        coalesce(rejected.rows_rejected, 0) as rows_rejected,
        coalesce(first_arrival_counts.rows_late, 0) as rows_late,
        landed_counts.entities_touched,
        coalesce(closed_counts.stays_closed, 0) as stays_closed,
        {{ entity_state.micros_to_timestamp(window.start) if window.start is not none
            else 'cast(null as timestamp)' }} as window_start_ingested_at,
        {{ entity_state.micros_to_timestamp(window.high) if window.high is not none
            else 'cast(null as timestamp)' }} as window_end_ingested_at,
        current_timestamp() as processed_at,
        '{{ window.plan.partition }}' as emitted_window
    from landed_counts
    left join first_arrival_counts on landed_counts.ingested_at = first_arrival_counts.ingested_at
    left join rejected on landed_counts.ingested_at = rejected.ingested_at
    left join closed_counts on landed_counts.ingested_at = closed_counts.ingested_at
)

select * from final
