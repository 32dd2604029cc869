{#- Time in state per tenant, state and UTC day, from `stays` (a relation with entity_state_view's columns), over the
    days from `from_day` on (a SQL date; none: every day), as a statement for a CTE or a view. Each stay counts from
    its start to its end, to now while it is open, or to its last event once it is stale (the view's
    duration_seconds; never before its start). A stay is split at UTC midnight: its first and last day are counted
    from its times, and the days it covers whole with a running sum of +1/-1 per stay, so a stay open for a year
    costs two rows, not 365. `measured_at` is now, the moment open stays are counted up to. -#}
{% macro time_in_state_per_day(stays, from_day=none) %}
with

stays as (
    select
        tenant_id,
        entity_id,
        state_id,
        start_time,
        end_time,
        last_event_ts,
        is_open,
        is_stale
    from {{ stays }}
    {%- if from_day %}
    where end_time >= cast({{ from_day }} as timestamp)
    {%- endif %}
),

-- the same end as duration_seconds in the view: now for an open stay, its last event once it is stale (never before
-- the stay's start, for events stamped in the future)
counted_stays as (
    select
        tenant_id,
        entity_id,
        state_id,
        start_time,
        greatest(start_time, case when is_stale then last_event_ts else end_time end) as counted_until,
        not is_open as has_ended
    from stays
),

stay_days as (
    select
        tenant_id,
        entity_id,
        state_id,
        start_time,
        counted_until,
        has_ended,
        to_date(start_time) as first_day,
        to_date(counted_until) as last_day
    from counted_stays
),

-- a stay's first day, and its last day when that is another one: the parts of days it spends in the state
partial_days as (
    select
        tenant_id,
        entity_id,
        state_id,
        first_day as utc_date,
        {{ entity_state.seconds_between(
            'start_time',
            'case when last_day = first_day then counted_until else cast(date_add(first_day, 1) as timestamp) end'
        ) }} as seconds_in_state,
        1 as stays_started,
        case when has_ended and last_day = first_day then 1 else 0 end as stays_ended,
        true as is_in_state
    from stay_days
    union all
    select
        tenant_id,
        entity_id,
        state_id,
        last_day as utc_date,
        {{ entity_state.seconds_between('cast(last_day as timestamp)', 'counted_until') }} as seconds_in_state,
        0 as stays_started,
        case when has_ended then 1 else 0 end as stays_ended,
        -- a stay that ends exactly at midnight does not spend its last day in the state
        counted_until > cast(last_day as timestamp) as is_in_state
    from stay_days
    where last_day > first_day
),

partial_day_totals as (
    select
        tenant_id,
        state_id,
        utc_date,
        sum(seconds_in_state) as seconds_in_state,
        sum(stays_started) as stays_started,
        sum(stays_ended) as stays_ended,
        count(distinct case when is_in_state then entity_id end) as entities_in_state
    from partial_days
    {%- if from_day %}
    where utc_date >= {{ from_day }}
    {%- endif %}
    group by tenant_id, state_id, utc_date
),

-- the days strictly between a stay's first and last day, from the first day recomputed on
whole_day_ranges as (
    select
        tenant_id,
        state_id,
        {{ 'greatest(date_add(first_day, 1), ' ~ from_day ~ ')' if from_day else 'date_add(first_day, 1)' }}
            as first_whole_day,
        last_day as after_last_whole_day
    from stay_days
),

whole_day_steps as (
    select
        tenant_id,
        state_id,
        utc_date,
        sum(step) as step
    from (
        select tenant_id, state_id, first_whole_day as utc_date, 1 as step
        from whole_day_ranges
        where first_whole_day < after_last_whole_day
        union all
        select tenant_id, state_id, after_last_whole_day as utc_date, -1 as step
        from whole_day_ranges
        where first_whole_day < after_last_whole_day
    ) as steps
    group by tenant_id, state_id, utc_date
),

whole_day_spans as (
    select
        tenant_id,
        state_id,
        min(utc_date) as first_day,
        max(utc_date) as last_day
    from whole_day_steps
    group by tenant_id, state_id
),

whole_day_calendar as (
    select
        tenant_id,
        state_id,
        explode(sequence(first_day, last_day)) as utc_date
    from whole_day_spans
),

-- an entity in the state a whole day has no other stay in that state that day, so these add to the partial days
whole_day_totals as (
    select
        whole_day_calendar.tenant_id,
        whole_day_calendar.state_id,
        whole_day_calendar.utc_date,
        sum(coalesce(whole_day_steps.step, 0)) over (
            partition by whole_day_calendar.tenant_id, whole_day_calendar.state_id
            order by whole_day_calendar.utc_date
            rows between unbounded preceding and current row
        ) as entities_whole_day
    from whole_day_calendar
    left join whole_day_steps
        on whole_day_calendar.tenant_id = whole_day_steps.tenant_id
        and whole_day_calendar.state_id = whole_day_steps.state_id
        and whole_day_calendar.utc_date = whole_day_steps.utc_date
),

recomputed as (
    select
        coalesce(partial_day_totals.tenant_id, whole_day_totals.tenant_id) as tenant_id,
        coalesce(partial_day_totals.state_id, whole_day_totals.state_id) as state_id,
        coalesce(partial_day_totals.utc_date, whole_day_totals.utc_date) as utc_date,
        86400.0d * coalesce(whole_day_totals.entities_whole_day, 0)
            + coalesce(partial_day_totals.seconds_in_state, 0.0d) as seconds_in_state,
        coalesce(partial_day_totals.stays_started, 0) as stays_started,
        coalesce(partial_day_totals.stays_ended, 0) as stays_ended,
        coalesce(whole_day_totals.entities_whole_day, 0)
            + coalesce(partial_day_totals.entities_in_state, 0) as entities_in_state,
        current_timestamp() as measured_at
    from partial_day_totals
    full outer join (
        select
            tenant_id,
            state_id,
            utc_date,
            entities_whole_day
        from whole_day_totals
        where entities_whole_day > 0
    ) as whole_day_totals
        on partial_day_totals.tenant_id = whole_day_totals.tenant_id
        and partial_day_totals.state_id = whole_day_totals.state_id
        and partial_day_totals.utc_date = whole_day_totals.utc_date
)

select
    tenant_id,
    state_id,
    utc_date,
    seconds_in_state,
    cast(stays_started as bigint) as stays_started,
    cast(stays_ended as bigint) as stays_ended,
    cast(entities_in_state as bigint) as entities_in_state,
    measured_at
from recomputed
-- a stale stay whose last event is exactly at midnight touches that day with nothing to count
where stays_started > 0 or stays_ended > 0 or entities_in_state > 0
{% endmacro %}
