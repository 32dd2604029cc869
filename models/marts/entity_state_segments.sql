{{
    config(
        materialized='state_table',
        incremental_strategy=entity_state.state_write_strategy('new_partition'),
        partition_by=['emitted_window'],
        post_hook=["{{ entity_state.record_watermark() }}"],
        on_schema_change='fail',
    )
}}

{#- Window of this run. The seed is the current table as stored, read without `ref` (see state_relation); events
    are read from the lowest watermark any current row may have, and each seed row skips what it already applied.
    Stays whose closing event arrived at or before `emitted_through` are already in this table and are not emitted
    again, so a rerun after a failure, or a run alone with `--select`, never duplicates a stay.
    Each run adds its stays as a partition of their own, named after its window and the invocation: the partition
    is registered only once its files are complete, so a run killed mid-write leaves nothing readers or a later
    write could pick up (see insert_new_partition_sql), and the write looks up no other partition, however many
    runs came before. While the current table has lost rows the window is empty (is_seed_damaged).
    An entity with a late event is repaired: all its closed stays are emitted again from its landed history, marked
    with repaired_through_ingested_at; entity_state_view shows an entity's latest repair in place of what came
    before it. -#}
{%- set current_relation = entity_state.state_relation('entity_state_current') if entity_state.has_stored_state() else none -%}
{%- set is_waiting_for_current = entity_state.is_seed_damaged(current_relation) -%}
{%- set low = entity_state.read_watermark(current_relation) -%}
{%- set high = none if is_waiting_for_current else entity_state.landing_high_watermark(files_since=low) -%}
{%- do entity_state.assert_landing_files_complete(low, high) -%}
{%- set recorded = entity_state.read_watermark(this) if entity_state.has_stored_state() else none -%}
{%- set emitted_through = entity_state.emitted_watermark(this, 'closed_ingested_at', recorded) if entity_state.has_stored_state() else none -%}
{%- set known_watermarks = [emitted_through, high] | reject('none') | list -%}
{%- set next_watermark = known_watermarks | max if known_watermarks else none -%}
{%- set emitted_after = 'closed_ingested_at > ' ~ entity_state.micros_to_timestamp(emitted_through)
    if emitted_through is not none else 'true' -%}
{%- set emitted_window = entity_state.window_partition_value(next_watermark) -%}
{#- every stay the window can close arrived at or before `high`: past what is emitted, nothing is left to write -#}
{%- set emitted_or_seeded = [low, emitted_through] | reject('none') | list -%}
{{ entity_state.write_plan(
    watermark=next_watermark,
    partition=emitted_window,
    is_window_empty=entity_state.is_window_empty(emitted_or_seeded | max if emitted_or_seeded else none, high),
    recorded_watermark=recorded,
) }}

with

events as (
    {{ entity_state.applicable_events(entity_state.landed_window_predicate(low, high)) }}
),

{%- if current_relation is not none %}

seed as (
    select
        tenant_id,
        entity_id,
        state_id,
        start_time,
        last_event_ts,
        states_at_last_event_ts,
        watermark_ingested_at
    from {{ current_relation }}
),
{%- endif %}

{%- if current_relation is not none %}

history as (
    {{ entity_state.applicable_events(entity_state.landed_window_predicate(none, high), each_row_once=false) }}
),
{%- endif %}

stays as (
    {{ entity_state.entity_state_islands(
        'events',
        'seed' if current_relation is not none else none,
        'history' if current_relation is not none else none,
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
        and (repaired_through_ingested_at is not null or {{ emitted_after }})
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
        '{{ emitted_window }}' as emitted_window
    from closed
)

select * from final
