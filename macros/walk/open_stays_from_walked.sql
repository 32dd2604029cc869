{#- The open stays a walk of (seed ∪ events) leaves, read from the closed stays that walk wrote instead of walking
    again: the rows entity_state_islands gives with is_open, for every entity with an event the seed has not applied
    (the others walk their seed alone, which gives the stored stay again).

    events:        relation or CTE name with tenant_id, entity_id, state_id, event_time, ingested_at: the window's.
    seed:          relation or CTE name with the stored open stays (entity_state_islands' `seed` columns), at least
                   one row for each entity of `events` that has one; none when the walk had no seed (it walked every
                   landed event: a first build, a full refresh).
    closed_stays:  the relation holding the closed stays of the walk (entity_state_segments).
    partition:     its partition (`emitted_window`) holding every stay that walk of the same events and seed closed,
                   the repaired entities' included (state_window, `walked_partition`).

    A walk closes each stay at the start of the next, so the open stay follows the last closed one: it is in that
    stay's next state from its end. An entity the walk closed no stay of stayed in one state, its stored stay's (or,
    new, its events'), from the earliest of that stay's start and its new events (a repair that walks events older
    than the stay's first one closes a stay unless they are in its state). Its last event and the states seen then
    come from the stored row and the new events, as the walk takes them. -#}
{% macro open_stays_from_walked(events, seed, closed_stays, partition) %}
with

-- the window's events the stored rows have not applied yet (each row skips what arrived at or before its watermark),
-- each with its entity's stored row; without a seed, every event of the window
new_events as (
    select
        window_events.tenant_id,
        window_events.entity_id,
        window_events.state_id,
        window_events.event_time,
        max(window_events.event_time) over (
            partition by window_events.tenant_id, window_events.entity_id
        ) as entity_last_event_ts,
        {%- if seed is not none %}
        seed_rows.state_id as stored_state_id,
        seed_rows.start_time as stored_start_time,
        seed_rows.last_event_ts as stored_last_event_ts,
        seed_rows.states_at_last_event_ts as stored_states_at_last_event_ts
    from {{ events }} as window_events
    left join {{ seed }} as seed_rows
        on window_events.tenant_id = seed_rows.tenant_id
        and window_events.entity_id = seed_rows.entity_id
    where seed_rows.watermark_ingested_at is null
        or window_events.ingested_at > seed_rows.watermark_ingested_at
        {%- else %}
        cast(null as string) as stored_state_id,
        cast(null as timestamp) as stored_start_time,
        cast(null as timestamp) as stored_last_event_ts,
        cast(null as array<string>) as stored_states_at_last_event_ts
    from {{ events }} as window_events
        {%- endif %}
),

new_event_bounds as (
    select
        tenant_id,
        entity_id,
        stored_state_id,
        stored_start_time,
        stored_last_event_ts,
        stored_states_at_last_event_ts,
        min(event_time) as first_event_ts,
        max(entity_last_event_ts) as last_event_ts,
        -- the state of an entity whose events all share one (the walk closed no stay of it)
        max(state_id) as state_id,
        array_distinct(collect_list(case when event_time = entity_last_event_ts then state_id end))
            as states_at_last_event_ts
    from new_events
    group by
        tenant_id,
        entity_id,
        stored_state_id,
        stored_start_time,
        stored_last_event_ts,
        stored_states_at_last_event_ts
),

walked_closed_stays as (
    select
        tenant_id,
        entity_id,
        state_id,
        next_state_id,
        start_time,
        end_time
    from {{ closed_stays }}
    where emitted_window = '{{ partition }}'
),

-- the last stay the walk closed: no other stay of the walk starts where it ends, in its next state (a walk gives
-- no two stays of an entity that start at the same time in the same state: events are distinct in both)
last_closed_stays as (
    select
        closed.tenant_id,
        closed.entity_id,
        closed.next_state_id as state_id,
        closed.end_time as start_time
    from walked_closed_stays as closed
    left anti join walked_closed_stays as following
        on closed.tenant_id = following.tenant_id
        and closed.entity_id = following.entity_id
        and closed.next_state_id = following.state_id
        and closed.end_time = following.start_time
),

open_stays as (
    select
        new_event_bounds.tenant_id,
        new_event_bounds.entity_id,
        coalesce(
            last_closed_stays.state_id, new_event_bounds.stored_state_id, new_event_bounds.state_id
        ) as state_id,
        coalesce(
            last_closed_stays.start_time,
            least(new_event_bounds.stored_start_time, new_event_bounds.first_event_ts)
        ) as start_time,
        greatest(new_event_bounds.stored_last_event_ts, new_event_bounds.last_event_ts) as last_event_ts,
        new_event_bounds.last_event_ts as new_last_event_ts,
        new_event_bounds.states_at_last_event_ts as new_states_at_last_event_ts,
        new_event_bounds.stored_last_event_ts,
        new_event_bounds.stored_states_at_last_event_ts
    from new_event_bounds
    left join last_closed_stays
        on new_event_bounds.tenant_id = last_closed_stays.tenant_id
        and new_event_bounds.entity_id = last_closed_stays.entity_id
),

-- the states seen at the entity's last event: the new events' and the stored row's, those at that time
final as (
    select
        tenant_id,
        entity_id,
        state_id,
        start_time,
        last_event_ts,
        array_sort(array_distinct(concat(
            case
                when new_last_event_ts = last_event_ts then new_states_at_last_event_ts
                else cast(array() as array<string>)
            end,
            case
                when stored_last_event_ts = last_event_ts then stored_states_at_last_event_ts
                else cast(array() as array<string>)
            end
        ))) as states_at_last_event_ts,
        true as is_open
    from open_stays
)

select * from final
{% endmacro %}
