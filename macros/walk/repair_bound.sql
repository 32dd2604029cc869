{#- How far back a repair of this window's late events must read the landed history, decided once when the model
    compiles (a literal is what lets Spark skip files: it pushes no subquery into a scan or its file listing).
    Returns none (no bound known: read every landed file) or a dict:
    - `has_possible_late_events`: whether any entity of the window may have a late event (may_have_late_events).
      When none may, the usual window of in-order events from one batch, the walk has nothing to repair and is
      planned without its repair;
    - `has_stored_repairs`: whether an entity with a stored open stay may have a late event. When none may, a
      repaired entity (new in this window) has all its events in the window, and the repair reads nothing older;
    - `event_time_from`: otherwise, the earliest event time a repair may need (epoch microseconds).
    Per entity that may be repaired, the bound is the latest `end_time` at or before its earliest window event
    among its standing closed stays (as of its stored watermark) whose last event is strictly before their end: the
    stay after such a stay starts alone at its time, so a repair starts there or later (entity_state_islands). With
    no such stay, the repair walks all of the entity's events: the bound is at or before its first stored event,
    the earliest start of its stays in `closed_stays` (standing or not) or of its stored open stay. So it is too when
    `closed_stays` holds a repair of the entity past its stored watermark (a segments write that stopped before its
    watermark, then the batch counts and current run without it): that repair may have walked late events the
    stored row has applied, and replace standing stays that no longer hold for it. Any time up to the repair start
    gives the same walk from the events at or after it; the window's own events are read whatever their time
    (repair_history_predicate). The query judges lateness more coarsely than the walk (any window event older than
    the stored last one, or several batches), which only moves the bound earlier.
    Listing the writes of `closed_stays` costs more the more runs wrote it, so the query reads as few as it can:
    - first a count of those entities (one aggregate of the window's rows joined with the stored rows): a window
      without any, the usual one, opens no write at all;
    - then the writes whose window ended at or after the earliest of their stored watermarks (a repair written past
      one is in such a write) and of their reach (the earliest first window event or stored open stay start) less
      as much again as the window's end is after it and less the event clock skew. A stay ending at or after T was
      closed by an event that arrived at or after T less the skew, so a qualifying stay ending between the reach
      and the entity's earliest window event is in those writes, and so is every repair written after a stay found
      there. Any qualifying standing stay found there bounds the repair (the latest one is the nearest);
    - every write only when an entity has no qualifying standing stay in those, or a repair past its watermark, and
      the table holds writes that ended before those (its recorded first window is later than the cut). -#}
{% macro repair_history_bound(window, closed_stays) %}
    {%- if not execute or window.seed is none or closed_stays is none or window.low is none
        or entity_state.is_window_empty(window.low, window.high) -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set count_query -%}
        select
            count(*) as late_entities,
            count_if(has_stored_stay) as repaired_entities,
            unix_micros(min(
                case when has_stored_stay then least(first_late_event_time, stored_start_time) end
            )) as first_reach,
            unix_micros(min(watermark_ingested_at)) as first_watermark
        from ({{ entity_state._possibly_late_entities(window) }}) as late_entities
    {%- endset -%}
    {%- set counted = run_query(count_query).rows[0] -%}
    {%- if counted['repaired_entities'] == 0 -%}
        {{ return({
            'has_possible_late_events': counted['late_entities'] > 0,
            'has_stored_repairs': false,
            'event_time_from': none,
        }) }}
    {%- endif -%}
    {%- set reach = counted['first_reach'] | int -%}
    {%- set look_back = [window.high | int - reach, 0] | max -%}
    {%- set recent_since = [
        reach - look_back - entity_state.event_clock_skew_micros(), counted['first_watermark'] | int
    ] | min - 1 -%}
    {%- set recent = run_query(entity_state._repair_bound_query(
        window, closed_stays, entity_state.emitted_since(recent_since)
    )).rows[0] -%}
    {%- set bound = recent if recent['entities_without_bound'] == 0
        or entity_state._every_write_ended_since(closed_stays, recent_since)
        else run_query(entity_state._repair_bound_query(window, closed_stays, 'true')).rows[0] -%}
    {{ return({
        'has_possible_late_events': true,
        'has_stored_repairs': true,
        'event_time_from': bound['event_time_from'] | int,
    }) }}
{% endmacro %}

{#- Whether every write of `closed_stays` (a table written one partition per window) ended at or after `micros`: its
    build recorded the window it ended at (first_window_property), and no later write ended before that. A young
    table, whose writes all ended after the recent writes' cut, then needs no second read. -#}
{% macro _every_write_ended_since(closed_stays, micros) %}
    {%- set first_window = entity_state.table_properties(closed_stays).get(entity_state.first_window_property()) -%}
    {{ return(first_window is not none and micros <= first_window | int) }}
{% endmacro %}

{#- The query of repair_history_bound over the writes of `closed_stays` that `writes_filter` keeps. It returns the
    bound (`event_time_from`) and how many entities that may be repaired have no qualifying standing stay in those
    writes, or have a repair written past their stored watermark (`entities_without_bound`): the bound is exact
    when that is 0 or every write is read. A write holding a stay also holds, or precedes, every repair written
    after it, so a stay's standing is decided by the writes from its own on. -#}
{% macro _repair_bound_query(window, closed_stays, writes_filter) %}
with

repaired_entities as (
    {{ entity_state._possibly_repaired_entities(window) }}
),

written_closed_stays as (
    select * from {{ closed_stays }}
    where {{ writes_filter }}
),

stored_stays as (
    {{ entity_state.standing_closed_stays('written_closed_stays', 'repaired_entities', broadcast_caught_up=true) }}
),

written_stays as (
    select /*+ broadcast(repaired_entities) */
        written_closed_stays.tenant_id,
        written_closed_stays.entity_id,
        min(written_closed_stays.start_time) as first_start_time,
        coalesce(
            max(written_closed_stays.repaired_through_ingested_at > repaired_entities.watermark_ingested_at), false
        ) as has_repair_ahead
    from written_closed_stays
    inner join repaired_entities
        on written_closed_stays.tenant_id = repaired_entities.tenant_id
        and written_closed_stays.entity_id = repaired_entities.entity_id
    group by written_closed_stays.tenant_id, written_closed_stays.entity_id
),

entity_bounds as (
    select
        repaired_entities.tenant_id,
        repaired_entities.entity_id,
        max(
            case
                when not coalesce(written_stays.has_repair_ahead, false)
                    and stored_stays.end_time <= repaired_entities.first_late_event_time
                    and stored_stays.last_event_ts < stored_stays.end_time
                    then stored_stays.end_time
            end
        ) as standing_bound_ts,
        -- at or before its first event: least skips nulls, and an entity without closed stays has its first stay open
        least(min(written_stays.first_start_time), min(repaired_entities.stored_start_time)) as first_start_ts
    from repaired_entities
    left join written_stays
        on repaired_entities.tenant_id = written_stays.tenant_id
        and repaired_entities.entity_id = written_stays.entity_id
    left join stored_stays
        on repaired_entities.tenant_id = stored_stays.tenant_id
        and repaired_entities.entity_id = stored_stays.entity_id
    group by repaired_entities.tenant_id, repaired_entities.entity_id
),

final as (
    select
        count(*) - count(standing_bound_ts) as entities_without_bound,
        unix_micros(min(coalesce(standing_bound_ts, first_start_ts))) as event_time_from
    from entity_bounds
)

select * from final
{% endmacro %}

{#- Whether the walk of `window` may meet a late event, and so must be planned with its repair: false only when
    repair_history_bound found that no entity of the window may have one (none without a seed, or for a window whose
    bound is unknown, or recorded before the bound said: then it may). -#}
{% macro may_have_late_events(window) %}
    {%- set bound = window.get('repair_history') -%}
    {{ return(bound is none or bound.get('has_possible_late_events', true)) }}
{% endmacro %}

{#- Every entity with a stored open stay that may have a late event in the window (_possibly_late_entities). -#}
{% macro _possibly_repaired_entities(window) %}
select
    tenant_id,
    entity_id,
    stored_start_time,
    watermark_ingested_at,
    first_late_event_time
from ({{ entity_state._possibly_late_entities(window) }}) as late_entities
where has_stored_stay
{% endmacro %}

{#- Every entity of the window that may have a late event: an event older than its stored last one, or events from
    several batches (one may be older than an event of an earlier one). A superset of the ones the walk repairs,
    each with a time at or before its earliest late event, so its bound is at or before the walk's own; an entity
    that is not here has no late event (classify_window_events judges by the same two rules, on fewer rows). One
    aggregate of the window's rows joined with the stored rows. -#}
{% macro _possibly_late_entities(window) %}
with

events as (
    {{ entity_state.applicable_events(
        entity_state.landed_window_predicate(window.low, window.high), each_row_once=false
    ) }}
),

window_entities as (
    select
        tenant_id,
        entity_id,
        min(event_time) as first_event_time,
        min(ingested_at) < max(ingested_at) as has_several_batches
    from events
    group by tenant_id, entity_id
),

final as (
    select
        window_entities.tenant_id,
        window_entities.entity_id,
        seed_rows.tenant_id is not null as has_stored_stay,
        seed_rows.start_time as stored_start_time,
        seed_rows.watermark_ingested_at,
        window_entities.first_event_time as first_late_event_time
    from window_entities
    left join {{ window.seed_rows }} as seed_rows
        on window_entities.tenant_id = seed_rows.tenant_id
        and window_entities.entity_id = seed_rows.entity_id
    where window_entities.first_event_time < seed_rows.last_event_ts
        or window_entities.has_several_batches
)

select * from final
{% endmacro %}
