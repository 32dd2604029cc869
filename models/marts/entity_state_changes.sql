{#- What each write of entity_state_segments changed in the closed stays, in the order of the writes
    (`change_window`, the partition the write added). A stay closed in order is added once. A repair (an entity that
    received a late event) retracts the entity's stays that stood before it and adds the ones it walked, leaving out
    the stays that are the same in both. Applying the rows in `change_window` order (retract, then add) rebuilds
    the closed stays of entity_state_view once the current table has caught up. A view over the partitions of
    entity_state_segments, which are only ever added: a window's rows never change once written. -#}

with

segments as (
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
),

repairs as (
    select distinct
        tenant_id as repaired_tenant_id,
        entity_id as repaired_entity_id,
        emitted_window as repair_window,
        repaired_through_ingested_at
    from segments
    where repaired_through_ingested_at is not null
),

-- each repair with the one before it, in write order
repair_sequence as (
    select
        repaired_tenant_id,
        repaired_entity_id,
        repair_window,
        repaired_through_ingested_at,
        lag(repair_window) over entity_repairs as previous_repair_window,
        lag(repaired_through_ingested_at) over entity_repairs as previous_repaired_through_ingested_at
    from repairs
    window entity_repairs as (partition by repaired_tenant_id, repaired_entity_id order by repair_window)
),

-- the stays of the entity that stood just before each repair: the previous repair's, and stays closed after it
standing_before_repair as (
    select
        repair_sequence.repair_window,
        segments.tenant_id,
        segments.entity_id,
        segments.state_id,
        segments.next_state_id,
        segments.start_time,
        segments.end_time,
        segments.last_event_ts,
        segments.closed_ingested_at
    from repair_sequence
    inner join segments
        on repair_sequence.repaired_tenant_id = segments.tenant_id
        and repair_sequence.repaired_entity_id = segments.entity_id
        and repair_sequence.repair_window > segments.emitted_window
    where (
        segments.repaired_through_ingested_at is null
        and coalesce(
            segments.closed_ingested_at > repair_sequence.previous_repaired_through_ingested_at, true
        )
    )
    or segments.emitted_window = repair_sequence.previous_repair_window
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
    from segments
    where repaired_through_ingested_at is not null
),

retracted as (
    select
        standing_before_repair.repair_window as change_window,
        'retracted' as change_kind,
        standing_before_repair.tenant_id,
        standing_before_repair.entity_id,
        standing_before_repair.state_id,
        standing_before_repair.next_state_id,
        standing_before_repair.start_time,
        standing_before_repair.end_time,
        standing_before_repair.last_event_ts,
        standing_before_repair.closed_ingested_at
    from standing_before_repair
    left anti join repaired
        on standing_before_repair.repair_window = repaired.repair_window
        and standing_before_repair.tenant_id = repaired.tenant_id
        and standing_before_repair.entity_id = repaired.entity_id
        and standing_before_repair.state_id = repaired.state_id
        and standing_before_repair.next_state_id = repaired.next_state_id
        and standing_before_repair.start_time = repaired.start_time
        and standing_before_repair.end_time = repaired.end_time
        and standing_before_repair.last_event_ts = repaired.last_event_ts
),

added_by_repairs as (
    select
        repaired.repair_window as change_window,
        'added' as change_kind,
        repaired.tenant_id,
        repaired.entity_id,
        repaired.state_id,
        repaired.next_state_id,
        repaired.start_time,
        repaired.end_time,
        repaired.last_event_ts,
        repaired.closed_ingested_at
    from repaired
    left anti join standing_before_repair
        on repaired.repair_window = standing_before_repair.repair_window
        and repaired.tenant_id = standing_before_repair.tenant_id
        and repaired.entity_id = standing_before_repair.entity_id
        and repaired.state_id = standing_before_repair.state_id
        and repaired.next_state_id = standing_before_repair.next_state_id
        and repaired.start_time = standing_before_repair.start_time
        and repaired.end_time = standing_before_repair.end_time
        and repaired.last_event_ts = standing_before_repair.last_event_ts
),

-- a stay closed in order, unless an earlier repair of its entity already walked its closing event (possible
-- when a run was stopped before it recorded the watermark)
added_in_order as (
    select
        segments.emitted_window as change_window,
        'added' as change_kind,
        segments.tenant_id,
        segments.entity_id,
        segments.state_id,
        segments.next_state_id,
        segments.start_time,
        segments.end_time,
        segments.last_event_ts,
        segments.closed_ingested_at
    from segments
    left anti join repairs
        on segments.tenant_id = repairs.repaired_tenant_id
        and segments.entity_id = repairs.repaired_entity_id
        and segments.emitted_window > repairs.repair_window
        and segments.closed_ingested_at <= repairs.repaired_through_ingested_at
    where segments.repaired_through_ingested_at is null
),

all_changes as (
    select * from retracted
    union all
    select * from added_by_repairs
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
        closed_ingested_at
    from all_changes
)

select * from final
