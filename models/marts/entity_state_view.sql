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

current_stays as (
    select
        tenant_id,
        entity_id,
        state_id,
        start_time,
        last_event_ts,
        watermark_ingested_at
    from {{ ref('entity_state_current') }}
),

-- segments may be a run ahead of the current table (it is written first); showing only the stays the current
-- row has caught up with keeps every timeline consistent, whatever was run last
caught_up_segments as (
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
    from segments
    inner join current_stays
        on segments.tenant_id = current_stays.tenant_id
        and segments.entity_id = current_stays.entity_id
    where segments.closed_ingested_at <= current_stays.watermark_ingested_at
        and coalesce(segments.repaired_through_ingested_at <= current_stays.watermark_ingested_at, true)
),

-- each repair the current row has caught up with, and the start of its first stay: a repair walks the entity
-- again from a stay whose start no late event could move, so it replaces what was written before it from there on
caught_up_repairs as (
    select
        tenant_id as repaired_tenant_id,
        entity_id as repaired_entity_id,
        repaired_through_ingested_at as repair_through_ingested_at,
        emitted_window as repair_window,
        min(start_time) as repair_from_ts
    from caught_up_segments
    where repaired_through_ingested_at is not null
    group by tenant_id, entity_id, repaired_through_ingested_at, emitted_window
),

-- a stay stands unless a repair of its entity written after it starts at or before it. After it: the repair walked
-- the event that closed it (a stay closed in order), or came later than the repair that wrote it (two writes of
-- one repair, a rerun, hold the same stays: the later one stands)
standing_segments as (
    select
        caught_up_segments.tenant_id,
        caught_up_segments.entity_id,
        caught_up_segments.state_id,
        caught_up_segments.next_state_id,
        caught_up_segments.start_time,
        caught_up_segments.end_time,
        caught_up_segments.last_event_ts
    from caught_up_segments
    left anti join caught_up_repairs
        on caught_up_segments.tenant_id = caught_up_repairs.repaired_tenant_id
        and caught_up_segments.entity_id = caught_up_repairs.repaired_entity_id
        and caught_up_segments.start_time >= caught_up_repairs.repair_from_ts
        and {{ entity_state.written_before_repair('caught_up_segments', 'caught_up_repairs') }}
),

closed_stays as (
    select
        tenant_id,
        entity_id,
        state_id,
        next_state_id,
        start_time,
        end_time,
        last_event_ts,
        false as is_open
    from standing_segments
),

open_stays as (
    select
        tenant_id,
        entity_id,
        state_id,
        cast(null as string) as next_state_id,
        start_time,
        current_timestamp() as end_time,
        last_event_ts,
        true as is_open
    from current_stays
),

all_stays as (
    select * from closed_stays
    union all
    select * from open_stays
),

-- staleness and duration: the rules live in macros/questions/staleness.sql, shared with the macro as_of
with_staleness as (
    select
        tenant_id,
        entity_id,
        state_id,
        next_state_id,
        start_time,
        end_time,
        last_event_ts,
        is_open,
        {{ entity_state.stay_is_stale('is_open', 'last_event_ts') }} as is_stale
    from all_stays
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
        is_open,
        is_stale,
        -- a stale open stay counts up to its last event, not to now: nobody knows where the entity went since
        {{ entity_state.seconds_between('start_time', 'case when is_stale then last_event_ts else end_time end') }}
            as duration_seconds
    from with_staleness
)

select * from final
