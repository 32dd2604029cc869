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

{#- Closed stays as runs close them, one partition per run (its window: yml meta `state_window`, macro state_window).
    The walk is seeded by the current table's stored open stays; a stay already emitted (closed at or before what
    this table holds) is not emitted again, so a rerun or a run alone with `--select` never duplicates one. An entity
    with a late event is repaired: its closed stays from the stored stay its earliest late event falls in (or an
    earlier one, see entity_state_islands) are emitted again from its landed events, marked with
    repaired_through_ingested_at; they replace what was written before them from their first stay on. -#}
{%- set window = entity_state.state_window() -%}
{#- a window with no event that can be late (the usual one) is walked without the repair, and reads no history -#}
{%- set may_have_late_events = entity_state.may_have_late_events(window) -%}
{%- set reads_history = window.seed is not none and may_have_late_events -%}
{{ entity_state.write_plan(**window.plan) }}

with

events as (
    {{ entity_state.applicable_events(entity_state.landed_window_predicate(window.low, window.high)) }}
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

{%- if reads_history %}

history as (
    {{ entity_state.applicable_events(entity_state.repair_history_predicate(window), each_row_once=false) }}
),
{%- endif %}

stays as (
    {{ entity_state.entity_state_islands(
        'events',
        'seed' if window.seed is not none else none,
        'history' if reads_history else none,
        has_stored_stays=window.start is not none,
        may_have_late_events=may_have_late_events,
    ) }}
),

closed as (
    select
        tenant_id,
        entity_id,
        state_id,
        next_state_id,
        start_time,
        end_time,
        last_event_ts,
        closed_ingested_at,
        repaired_through_ingested_at
    from stays
    where not is_open
        and (
            repaired_through_ingested_at is not null
            or {{ entity_state.window_predicate('closed_ingested_at', window.start, window.high) }}
        )
),

final as (
    select
        tenant_id,
        entity_id,
        state_id,
        next_state_id,
        start_time,
        end_time,
        last_event_ts,
        closed_ingested_at,
        repaired_through_ingested_at,
        '{{ window.plan.partition }}' as emitted_window
    from closed
)

select * from final
