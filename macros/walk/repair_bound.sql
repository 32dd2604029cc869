{#- How far back a repair of this window's late events must read the landed history, decided once when the model
    compiles (a literal is what lets Spark skip files: it pushes no subquery into a scan or its file listing).
    Returns none (no bound known: read every landed file) or a dict:
    - `has_stored_repairs`: whether an entity with a stored open stay has a late event. When none has, a repaired
      entity (new in this window) has all its events in the window, and the repair reads nothing older;
    - `event_time_from`: otherwise, the earliest event time a repair needs (epoch microseconds).
    Per repaired entity with a stored stay, the bound is the latest `end_time` at or before its earliest late event
    among its standing closed stays (as of its stored watermark) whose last event is strictly before their end: the
    stay after such a stay starts alone at its time, so a repair starts there or later (entity_state_islands). With
    no such stay, the repair walks all of the entity's events: the bound is its first stored event (the start of its
    first stay). Any time up to the repair start gives the same walk from the events at or after it; the window's
    own events are read whatever their time (repair_history_predicate). -#}
{% macro repair_history_bound(window, closed_stays) %}
    {%- if not execute or window.seed is none or closed_stays is none or window.low is none
        or entity_state.is_window_empty(window.low, window.high) -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set query -%}
with

events as (
    {{ entity_state.applicable_events(entity_state.landed_window_predicate(window.low, window.high)) }}
),

classified as (
    {{ entity_state.classify_window_events('events', window.seed) }}
),

-- the same late events the walk repairs, of the entities with a stored open stay
repaired_entities as (
    select
        tenant_id,
        entity_id,
        min(event_time) as first_late_event_time,
        max(seed_watermark_ingested_at) as watermark_ingested_at
    from classified
    where is_late
        and seed_watermark_ingested_at is not null
    group by tenant_id, entity_id
),

stored_stays as (
    {{ entity_state.standing_closed_stays(closed_stays, 'repaired_entities', broadcast_caught_up=true) }}
),

stored_open_stays as (
    select
        seed_rows.tenant_id,
        seed_rows.entity_id,
        seed_rows.start_time
    from {{ window.seed }} as seed_rows
    left semi join repaired_entities
        on seed_rows.tenant_id = repaired_entities.tenant_id
        and seed_rows.entity_id = repaired_entities.entity_id
),

entity_bounds as (
    select
        repaired_entities.tenant_id,
        repaired_entities.entity_id,
        coalesce(
            max(
                case
                    when stored_stays.end_time <= repaired_entities.first_late_event_time
                        and stored_stays.last_event_ts < stored_stays.end_time
                        then stored_stays.end_time
                end
            ),
            -- its first event: least skips nulls, and an entity without closed stays has its first stay open
            least(min(stored_stays.start_time), min(stored_open_stays.start_time))
        ) as history_from_ts
    from repaired_entities
    left join stored_open_stays
        on repaired_entities.tenant_id = stored_open_stays.tenant_id
        and repaired_entities.entity_id = stored_open_stays.entity_id
    left join stored_stays
        on repaired_entities.tenant_id = stored_stays.tenant_id
        and repaired_entities.entity_id = stored_stays.entity_id
    group by repaired_entities.tenant_id, repaired_entities.entity_id
)

select
    count(*) as repaired_entities,
    unix_micros(min(history_from_ts)) as event_time_from
from entity_bounds
    {%- endset -%}
    {%- set row = run_query(query).rows[0] -%}
    {{ return({
        'has_stored_repairs': row['repaired_entities'] > 0,
        'event_time_from': row['event_time_from'] | int if row['repaired_entities'] > 0 else none,
    }) }}
{% endmacro %}
