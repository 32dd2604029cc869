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

{#- What each write of entity_state_segments changed in the closed stays (`change_window`, the partition the write
    added), added by each run for the writes segments made since the last (its window: yml meta `state_window`, macro
    state_window). A stay closed in order is added once. A repair (an entity that received a late event) retracts the
    entity's stays that stood before it from its first stay on and adds the ones it walked, leaving out the stays that
    are the same in both;
    what stood before is read from the entity's earlier writes, so only repaired entities' history is read. Applying
    the rows in `change_window` order (retract, then add) rebuilds the closed stays of entity_state_view once the
    current table has caught up. -#}
{%- set window = entity_state.state_window() -%}
{%- set earlier_writes = entity_state.changes_history_predicate(ref('entity_state_segments'), window) -%}
{{ entity_state.write_plan(**window.plan) }}

with

-- the writes of segments this run turns into changes
new_writes as (
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
        emitted_window
    from {{ ref('entity_state_segments') }}
    where {{ entity_state.written_in_window(window.start, window.high) }}
),

-- every repair that can matter to the window's writes (changes_history_predicate), with the start of its first stay
-- (from there on it replaces the stays written before it): rare, and parquet skips the row groups where the column
-- is null throughout
repairs as (
    select
        tenant_id as repaired_tenant_id,
        entity_id as repaired_entity_id,
        emitted_window as repair_window,
        repaired_through_ingested_at as repair_through_ingested_at,
        min(start_time) as repair_from_ts
    from {{ ref('entity_state_segments') }}
    where
        repaired_through_ingested_at is not null
        and {{ earlier_writes }}
    group by tenant_id, entity_id, emitted_window, repaired_through_ingested_at
),

repaired_in_window as (
    select distinct
        tenant_id,
        entity_id
    from new_writes
    where repaired_through_ingested_at is not null
),

-- the writes of the entities repaired in this run's writes that those repairs can reach
repaired_entity_writes as (
    select
        segments.tenant_id,
        segments.entity_id,
        segments.state_id,
        segments.next_state_id,
        segments.start_time,
        segments.end_time,
        segments.last_event_ts,
        segments.closed_ingested_at,
        segments.repaired_through_ingested_at,
        segments.emitted_window
    from {{ ref('entity_state_segments') }} as segments
    left semi join repaired_in_window
        on segments.tenant_id = repaired_in_window.tenant_id
        and segments.entity_id = repaired_in_window.entity_id
    where {{ earlier_writes }}
),

-- for each repair in this run's writes, the stays of its entity written before it that it reaches
reached_by_repair as (
    select
        new_repairs.repair_window,
        repaired_entity_writes.tenant_id,
        repaired_entity_writes.entity_id,
        repaired_entity_writes.state_id,
        repaired_entity_writes.next_state_id,
        repaired_entity_writes.start_time,
        repaired_entity_writes.end_time,
        repaired_entity_writes.last_event_ts,
        repaired_entity_writes.closed_ingested_at,
        repaired_entity_writes.repaired_through_ingested_at,
        repaired_entity_writes.emitted_window
    from repairs as new_repairs
    inner join repaired_entity_writes
        on new_repairs.repaired_tenant_id = repaired_entity_writes.tenant_id
        and new_repairs.repaired_entity_id = repaired_entity_writes.entity_id
        and new_repairs.repair_window > repaired_entity_writes.emitted_window
        and new_repairs.repair_from_ts <= repaired_entity_writes.start_time
    where {{ entity_state.written_in_window(window.start, window.high, 'new_repairs.repair_window') }}
),

-- of those, the ones that still stood just before it: no repair between them replaced them
standing_before_repair as (
    select
        reached_by_repair.repair_window,
        reached_by_repair.tenant_id,
        reached_by_repair.entity_id,
        reached_by_repair.state_id,
        reached_by_repair.next_state_id,
        reached_by_repair.start_time,
        reached_by_repair.end_time,
        reached_by_repair.last_event_ts,
        reached_by_repair.closed_ingested_at
    from reached_by_repair
    left anti join repairs as earlier_repairs
        on reached_by_repair.tenant_id = earlier_repairs.repaired_tenant_id
        and reached_by_repair.entity_id = earlier_repairs.repaired_entity_id
        and reached_by_repair.repair_window > earlier_repairs.repair_window
        and reached_by_repair.start_time >= earlier_repairs.repair_from_ts
        and {{ entity_state.written_before_repair('reached_by_repair', 'earlier_repairs') }}
),

repaired as (
    select
        emitted_window as repair_window,
        tenant_id,
        entity_id,
        state_id,
        next_state_id,
        start_time,
        end_time,
        last_event_ts,
        closed_ingested_at
    from new_writes
    where repaired_through_ingested_at is not null
),

-- what each repair changed: the stays that stood before it and that it did not walk again (retracted), and the stays
-- it walked that did not stand before it (added). One full outer join rather than an anti join each way, so that
-- Spark plans the two sides once each
repair_changes as (
    select
        case when repaired.repair_window is null then 'retracted' else 'added' end as change_kind,
        case
            when repaired.repair_window is null then struct(standing_before_repair.*)
            else struct(repaired.*)
        end as stay
    from standing_before_repair
    full outer join repaired
        on standing_before_repair.repair_window = repaired.repair_window
        and standing_before_repair.tenant_id = repaired.tenant_id
        and standing_before_repair.entity_id = repaired.entity_id
        and standing_before_repair.state_id = repaired.state_id
        and standing_before_repair.next_state_id = repaired.next_state_id
        and standing_before_repair.start_time = repaired.start_time
        and standing_before_repair.end_time = repaired.end_time
        and standing_before_repair.last_event_ts = repaired.last_event_ts
    where standing_before_repair.repair_window is null or repaired.repair_window is null
),

changed_by_repairs as (
    select
        stay.repair_window as change_window,
        change_kind,
        stay.tenant_id,
        stay.entity_id,
        stay.state_id,
        stay.next_state_id,
        stay.start_time,
        stay.end_time,
        stay.last_event_ts,
        stay.closed_ingested_at
    from repair_changes
),

-- a stay closed in order, unless an earlier repair of its entity reaching it already walked its closing event
-- (possible when a run was stopped before it recorded the watermark)
added_in_order as (
    select
        new_writes.emitted_window as change_window,
        'added' as change_kind,
        new_writes.tenant_id,
        new_writes.entity_id,
        new_writes.state_id,
        new_writes.next_state_id,
        new_writes.start_time,
        new_writes.end_time,
        new_writes.last_event_ts,
        new_writes.closed_ingested_at
    from new_writes
    left anti join repairs
        on new_writes.tenant_id = repairs.repaired_tenant_id
        and new_writes.entity_id = repairs.repaired_entity_id
        and new_writes.emitted_window > repairs.repair_window
        and new_writes.start_time >= repairs.repair_from_ts
        and new_writes.closed_ingested_at <= repairs.repair_through_ingested_at
    where new_writes.repaired_through_ingested_at is null
),

all_changes as (
    select * from changed_by_repairs
    union all
    select * from added_in_order
),

final as (
    select
        change_window,
        change_kind,
        tenant_id,
        entity_id,
        state_id,
        next_state_id,
        start_time,
        end_time,
        last_event_ts,
        closed_ingested_at,
        {{ entity_state.partition_window_end('change_window') }} as change_window_end_ingested_at,
        '{{ window.plan.partition }}' as emitted_window
    from all_changes
)

select * from final
