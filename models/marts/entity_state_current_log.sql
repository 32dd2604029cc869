{{
    config(
        materialized='state_table',
        incremental_strategy=entity_state.state_write_strategy('new_partition'),
        partition_by=['emitted_window'],
        clustered_by=['tenant_id', 'entity_id'],
        buckets=entity_state.positive_integer_setting(
            'log_buckets', 'how many buckets by entity entity_state_current_log is stored in'
        ),
        pre_hook=["{{ entity_state.record_write_intent() }}"],
        post_hook=[
            "{{ entity_state.record_watermark() }}",
            "{{ entity_state.drop_partitions_before_compaction() }}",
        ],
        on_schema_change='fail',
    )
}}

-- depends_on: {{ ref('entity_state_segments') }}
-- depends_on: {{ ref('entity_state_batches') }}
{#- clustered_by, buckets: every read ranks each entity's rows (newest_logged_rows); the yml says why -#}
{%- do entity_state.warn_if_bucketed_otherwise(this) -%}
{#- The open stays as runs move them, one partition per run (its window: yml meta `state_window`, macro state_window):
    each run adds the open stay of every entity its window advanced, and nothing for the others, so a write follows
    the batch, not the number of entities. An entity's open stay is its newest row (newest_logged_rows), which seeds
    the next walk and makes the view entity_state_current. It never moves past what segments has emitted, nor past
    what the batch counts have counted. Once the log holds entity_state__compact_after_windows windows, a run writes
    every entity's open stay into its partition and then drops the partitions before it
    (drop_partitions_before_compaction), so readers take the newest row among a few windows only. -#}
{%- set window = entity_state.state_window() -%}
{#- when segments wrote this window's walk whole, from these stored rows or, on a first build or a full refresh, from
    every landed event (the usual run: segments, then this table, over the same window), each open stay follows from
    the closed stays there, and nothing is walked again, neither the window nor a repair's history; any other window
    (after some --select runs, or a segments write that stopped) is walked here -#}
{%- set reads_walk = window.get('walked_partition') is not none -%}
{#- a window with no event that can be late (the usual one) is walked without the repair, and reads no history -#}
{%- set may_have_late_events = entity_state.may_have_late_events(window) -%}
{%- set reads_history = window.seed is not none and may_have_late_events and not reads_walk -%}
{#- a compaction keeps the stored open stays of the entities the window did not advance -#}
{%- set keeps_stored_stays = window.plan.get('compacts', false) -%}
{{ entity_state.write_plan(**window.plan) }}

with

-- repeated rows left in (both the walk and the open stays read from segments' walk aggregate them), spread by entity
-- once for the aggregations and windows over each entity that follow
events as (
    {{ entity_state.applicable_events(
        entity_state.landed_window_predicate(window.low, window.high), each_row_once=false, spread_by_entity=true
    ) }}
),

{%- if window.seed is not none %}

stored as (
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

{%- if reads_history %}

history as (
    {{ entity_state.applicable_events(entity_state.repair_history_predicate(window), each_row_once=false) }}
),
{%- endif %}

stays as (
    {{ entity_state.open_stays_from_walked(
        'events',
        'stored' if window.seed is not none else none,
        ref('entity_state_segments'),
        window.walked_partition,
    ) if reads_walk else entity_state.entity_state_islands(
        'events',
        'stored' if window.seed is not none else none,
        'history' if reads_history else none,
        may_have_late_events=may_have_late_events,
    ) }}
),

open_stays as (
    select
        tenant_id,
        entity_id,
        state_id,
        start_time,
        last_event_ts,
        states_at_last_event_ts
    from stays
    where is_open
),

{%- if keeps_stored_stays %}

-- one union ranked per entity rather than an anti join with the walk's stays, so the walk is planned once
ranked_stays as (
    select
        *,
        row_number() over (partition by tenant_id, entity_id order by is_walked desc) as entity_rank
    from (
        select
            tenant_id,
            entity_id,
            state_id,
            start_time,
            last_event_ts,
            states_at_last_event_ts,
            true as is_walked
        from open_stays

        union all

        select
            tenant_id,
            entity_id,
            state_id,
            start_time,
            last_event_ts,
            states_at_last_event_ts,
            false as is_walked
        from stored
    ) as candidate_stays
),
{%- endif %}

written_stays as (
    select
        tenant_id,
        entity_id,
        state_id,
        start_time,
        last_event_ts,
        states_at_last_event_ts
    from {{ 'ranked_stays' if keeps_stored_stays else 'open_stays' }}
    {%- if keeps_stored_stays %}
    where entity_rank = 1
    {%- endif %}
),

final as (
    select
        tenant_id,
        entity_id,
        state_id,
        start_time,
        last_event_ts,
        states_at_last_event_ts,
        {{ entity_state.micros_to_timestamp(window.high) if window.high is not none
            else 'cast(null as timestamp)' }} as watermark_ingested_at,
        '{{ window.plan.partition }}' as emitted_window
    from written_stays
)

select * from final
