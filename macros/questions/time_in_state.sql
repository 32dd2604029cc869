{#- Time in state per tenant, state and UTC day, from `stays` (a relation with entity_state_view's columns), over the
    days from `from_day` on (a SQL date; none: every day), as a statement for a CTE or a view. Each stay counts from
    its start to its end, to now while it is open, or to its last event once it is stale (the view's
    duration_seconds; never before its start). A stay is split at UTC midnight: its first and last day are counted
    from its times, and the days it covers whole with a running sum of +1/-1 per stay, so a stay open for a year
    costs two rows, not 365. `measured_at` is now, the moment open stays are counted up to.
    `weight`: a column of `stays` (1 or -1) that every amount of its stay is multiplied by, for a difference of two
    countings in one pass; the entities in the state are then summed, not counted distinct, so an entity may have
    only one stay of each weight per state and day (open stays), and the days whose amounts cancel are kept. -#}
{% macro time_in_state_per_day(stays, from_day=none, weight=none) %}
{%- set weighted = 'weight * ' if weight else '' %}
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
        is_stale,
        {{ weight or '1' }} as weight
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
        not is_open as has_ended,
        weight
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
        weight,
        to_date(start_time) as first_day,
        to_date(counted_until) as last_day,
        -- the first day the stay may cover whole, from the first day recomputed on
        {% if from_day -%}
        greatest(date_add(to_date(start_time), 1), {{ from_day }}) as first_whole_day
        {%- else -%}
        date_add(to_date(start_time), 1) as first_whole_day
        {%- endif %}
    from counted_stays
),

-- what each stay adds to its days, in one pass over the stays (Spark would read the view again for every CTE that
-- used them): its first day, and its last day when that is another one, with the part of the day it spends in the
-- state; and a +1 on the first day it covers whole (from the first day recomputed on) and a -1 on its last day, a
-- running sum of which counts the entities in the state the whole day
stay_parts as (
    select
        tenant_id,
        entity_id,
        state_id,
        weight,
        inline(filter(
            array(
                named_struct(
                    'utc_date', first_day,
                    'seconds_in_state', {{ entity_state.seconds_between(
                        'start_time',
                        'case when last_day = first_day then counted_until else cast(date_add(first_day, 1) as timestamp) end'
                    ) }},
                    'stays_started', 1,
                    'stays_ended', case when has_ended and last_day = first_day then 1 else 0 end,
                    'is_in_state', true,
                    'step', 0
                ),
                case when last_day > first_day then named_struct(
                    'utc_date', last_day,
                    'seconds_in_state', {{ entity_state.seconds_between('cast(last_day as timestamp)', 'counted_until') }},
                    'stays_started', 0,
                    'stays_ended', case when has_ended then 1 else 0 end,
                    -- a stay that ends exactly at midnight does not spend its last day in the state
                    'is_in_state', counted_until > cast(last_day as timestamp),
                    'step', 0
                ) end,
                case when first_whole_day < last_day then named_struct(
                    'utc_date', first_whole_day,
                    'seconds_in_state', 0.0d,
                    'stays_started', 0,
                    'stays_ended', 0,
                    'is_in_state', false,
                    'step', 1
                ) end,
                case when first_whole_day < last_day then named_struct(
                    'utc_date', last_day,
                    'seconds_in_state', 0.0d,
                    'stays_started', 0,
                    'stays_ended', 0,
                    'is_in_state', false,
                    'step', -1
                ) end
            ),
            part -> part is not null
        ))
    from stay_days
),

day_totals as (
    select
        tenant_id,
        state_id,
        utc_date,
        sum({{ weighted }}seconds_in_state) as seconds_in_state,
        sum({{ weighted }}stays_started) as stays_started,
        sum({{ weighted }}stays_ended) as stays_ended,
        {%- if weight %}
        sum(case when is_in_state then weight else 0 end) as entities_in_state_part_day,
        {%- else %}
        count(distinct case when is_in_state then entity_id end) as entities_in_state_part_day,
        {%- endif %}
        sum({{ weighted }}step) as step
    from stay_parts
    {%- if from_day %}
    where utc_date >= {{ from_day }}
    {%- endif %}
    group by tenant_id, state_id, utc_date
),

-- each counted day with the running sum of the steps up to it, which holds on every day until the next counted one.
-- The days between are made from this row rather than from a calendar joined back to day_totals: Spark would
-- compute day_totals, and every stay before it, once for each use
running_days as (
    select
        tenant_id,
        state_id,
        utc_date,
        seconds_in_state,
        stays_started,
        stays_ended,
        entities_in_state_part_day,
        sum(step) over (
            partition by tenant_id, state_id
            order by utc_date
            rows between unbounded preceding and current row
        ) as entities_whole_day,
        lead(utc_date) over (partition by tenant_id, state_id order by utc_date) as next_counted_date
    from day_totals
),

-- every day from a (tenant, state)'s first counted day to its last, the days no stay starts or ends on included. An
-- entity in the state a whole day has no other stay in that state that day, so these add to the partial days
with_whole_days as (
    select
        tenant_id,
        state_id,
        calendar_day as utc_date,
        case when calendar_day = utc_date then seconds_in_state else 0.0d end as seconds_in_state,
        case when calendar_day = utc_date then stays_started else 0 end as stays_started,
        case when calendar_day = utc_date then stays_ended else 0 end as stays_ended,
        case when calendar_day = utc_date then entities_in_state_part_day else 0 end as entities_in_state_part_day,
        entities_whole_day
    from running_days
    lateral view explode(sequence(utc_date, coalesce(date_sub(next_counted_date, 1), utc_date))) as calendar_day
),

recomputed as (
    select
        tenant_id,
        state_id,
        utc_date,
        86400.0d * entities_whole_day + seconds_in_state as seconds_in_state,
        stays_started,
        stays_ended,
        entities_whole_day + entities_in_state_part_day as entities_in_state,
        current_timestamp() as measured_at
    from with_whole_days
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
{%- if not weight %}
-- a stale stay whose last event is exactly at midnight touches that day with nothing to count
where stays_started > 0 or stays_ended > 0 or entities_in_state > 0
{%- endif %}
{% endmacro %}
