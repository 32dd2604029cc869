{{
    config(
        materialized='incremental',
        incremental_strategy='merge',
        unique_key=['tenant_id', 'entity_id', 'start_time', 'state_id'],
        partition_by=['is_open'],
        meta={'merges_stays': true},
        on_schema_change='fail',
    )
}}

{#- Every stay, closed and open, merged in one commit per run: the state. The walk of the window's events is seeded
    with each touched entity's stored open stay, from the events that arrived after that stay's
    watermark_ingested_at (so a rerun or a run alone never applies an event twice), and its stays are merged by key:
    the open stay that closed or grew is updated, new stays are inserted. An entity with a late event is repaired:
    walked again from its landed events, from the stored stay its earliest late event falls in (or an earlier one,
    see entity_state_islands); its stored stays from there on that the walk did not give again are retracted
    (deleted by the merge, spark__get_merge_sql, which knows them by a null is_open). The window ends at the run manifest's newest window. -#}
{%- set stored = entity_state.is_built(this) -%}
{%- set window = entity_state.manifest_window(
    entity_state.progress_of(this, 'watermark_ingested_at', 'is_open'), 'rows_applicable'
) -%}
{%- set plan = entity_state.repair_plan(window, this) if stored else none -%}
{%- set walks_repairs = stored and plan.may_have_late_events %}

with

events as (
    {{ entity_state.applicable_events(
        entity_state.landed_window_predicate(window.low, window.high), each_row_once=false, spread_by_entity=true
    ) }}
),

{%- if stored %}

seed as (
    select
        tenant_id,
        entity_id,
        state_id,
        start_time,
        last_event_ts,
        states_at_last_event_ts,
        watermark_ingested_at
    from {{ this }}
    where is_open
),
{%- endif %}

{%- if walks_repairs %}

history as (
    {{ entity_state.applicable_events(entity_state.repair_history_predicate(window, plan), each_row_once=false) }}
),
{%- endif %}

stays as (
    {{ entity_state.entity_state_islands(
        'events',
        'seed' if stored else none,
        'history' if walks_repairs else none,
        may_have_late_events=walks_repairs,
        counts_batches=true,
    ) }}
),

walked as (
    select
        tenant_id,
        entity_id,
        state_id,
        next_state_id,
        start_time,
        end_time,
        last_event_ts,
        is_open,
        closed_ingested_at,
        repaired_through_ingested_at,
        case when is_open then states_at_last_event_ts end as states_at_last_event_ts,
        case when is_open then {{ entity_state.window_end_literal(window) }} end as watermark_ingested_at,
        batch_counts
    from stays
),

{%- if walks_repairs %}

-- each repaired entity's stored stays from where its repair starts that the walk did not give again: the merge
-- deletes them
repair_starts as (
    select
        tenant_id,
        entity_id,
        min(start_time) as repair_from_ts
    from walked
    where repaired_through_ingested_at is not null
    group by tenant_id, entity_id
),

retracted as (
    select /*+ broadcast(repair_starts) */
        stored.tenant_id,
        stored.entity_id,
        stored.state_id,
        stored.next_state_id,
        stored.start_time,
        stored.end_time,
        stored.last_event_ts,
        -- no is_open: what tells the merge to delete the stay (spark__get_merge_sql)
        cast(null as boolean) as is_open,
        stored.closed_ingested_at,
        stored.repaired_through_ingested_at,
        stored.states_at_last_event_ts,
        stored.watermark_ingested_at,
        stored.batch_counts
    from {{ this }} as stored
    inner join repair_starts
        on stored.tenant_id = repair_starts.tenant_id
        and stored.entity_id = repair_starts.entity_id
        and stored.start_time >= repair_starts.repair_from_ts
    left anti join walked
        on stored.tenant_id = walked.tenant_id
        and stored.entity_id = walked.entity_id
        and stored.start_time = walked.start_time
        and stored.state_id = walked.state_id
    where {{ entity_state.replaceable_stays_predicate(plan, 'stored') }}
),
{%- endif %}

final as (
    select * from walked
    {%- if walks_repairs %}

    union all

    select * from retracted
    {%- endif %}
)

select * from final
