{#- Time in state per tenant, state and UTC day, counted up to the moment it is read: the days
    entity_state_daily_counted counted at its `counted_at`, plus what the open stays it counted added or lost since
    (they grew, or went stale and count up to their last event again). So a run that applies no events writes
    nothing for this question. Only days from the count's moment on can move (from `stale_after` before it when
    staleness is on: a stay not stale then had its last event at most that long before), so the open stays are
    counted from that day on only. -#}
{%- set stale_after = entity_state.stale_after() -%}
{%- set first_moved_day -%}
(select to_date(counted_at {{- " - interval '" ~ stale_after ~ "'" if stale_after }}) from count_moment)
{%- endset %}
with

counted as (
    select
        tenant_id,
        state_id,
        utc_date,
        seconds_in_state,
        stays_started,
        stays_ended,
        entities_in_state,
        counted_at,
        counted_through_ingested_at
    from {{ ref('entity_state_daily_counted') }}
),

current_stays as (
    select
        tenant_id,
        entity_id,
        state_id,
        start_time,
        last_event_ts,
        watermark_ingested_at
    from {{ ref('entity_state_segments') }}
    where is_open
),

count_moment as (
    select
        max(counted_at) as counted_at,
        max(counted_through_ingested_at) as counted_through_ingested_at
    from counted
),

-- the open stays the count saw: current rows no run rewrote since. An entity whose row a later run rewrote keeps
-- the time it was counted with until the next run of entity_state_daily_counted counts it again.
counted_open_stays as (
    select
        current_stays.tenant_id,
        current_stays.entity_id,
        current_stays.state_id,
        current_stays.start_time,
        current_stays.last_event_ts,
        count_moment.counted_at,
        {{ entity_state.stay_is_stale('true', 'current_stays.last_event_ts', 'count_moment.counted_at') }}
            as was_stale,
        {{ entity_state.stay_is_stale('true', 'current_stays.last_event_ts') }} as is_stale
    from current_stays
    inner join count_moment
        on current_stays.watermark_ingested_at <= count_moment.counted_through_ingested_at
),

-- a stay stale at both moments counts up to its last event both times: nothing moved
moved_stays as (
    select
        tenant_id,
        entity_id,
        state_id,
        start_time,
        last_event_ts,
        counted_at,
        was_stale,
        is_stale
    from counted_open_stays
    where not (was_stale and is_stale)
),

-- each moved stay twice: as counted then, taken away, and as it stands now, added; what remains per day is what it
-- moved since
stays_moved as (
    select
        tenant_id,
        entity_id,
        state_id,
        start_time,
        counted_at as end_time,
        last_event_ts,
        true as is_open,
        was_stale as is_stale,
        -1 as weight
    from moved_stays
    union all
    select
        tenant_id,
        entity_id,
        state_id,
        start_time,
        current_timestamp() as end_time,
        last_event_ts,
        true as is_open,
        is_stale,
        1 as weight
    from moved_stays
),

-- open stays only: each starts on the same day at both moments and ends on none, so only the seconds and the
-- entities in the state differ (an entity has one open stay, and no closed stay in its state after that stay's
-- first day, so the open stay alone decides whether it counts on those days)
moved_days as (
    {{ entity_state.time_in_state_per_day('stays_moved', first_moved_day, weight='weight') | indent(4) }}
),

days as (
    select
        coalesce(counted.tenant_id, moved_days.tenant_id) as tenant_id,
        coalesce(counted.state_id, moved_days.state_id) as state_id,
        coalesce(counted.utc_date, moved_days.utc_date) as utc_date,
        -- to the microsecond, the seconds' precision: what the sum and difference of doubles add beyond it is noise
        round(coalesce(counted.seconds_in_state, 0.0d) + coalesce(moved_days.seconds_in_state, 0.0d), 6)
            as seconds_in_state,
        coalesce(counted.stays_started, 0) as stays_started,
        coalesce(counted.stays_ended, 0) as stays_ended,
        coalesce(counted.entities_in_state, 0) + coalesce(moved_days.entities_in_state, 0) as entities_in_state
    from counted
    full outer join moved_days
        on counted.tenant_id = moved_days.tenant_id
        and counted.state_id = moved_days.state_id
        and counted.utc_date = moved_days.utc_date
),

final as (
    select
        tenant_id,
        state_id,
        utc_date,
        seconds_in_state,
        cast(stays_started as bigint) as stays_started,
        cast(stays_ended as bigint) as stays_ended,
        cast(entities_in_state as bigint) as entities_in_state,
        current_timestamp() as measured_at
    from days
    -- a stay that went stale since the count may leave a day it no longer reaches
    where stays_started > 0 or stays_ended > 0 or entities_in_state > 0
)

select * from final
