{#- How a walk of `window` (low, high] seeded with the open stays of `stays` (entity_state_segments) treats late
    events, decided once while the model compiles and again, the same way, by its merge (spark__get_merge_sql).
    Returns a dict:
    - `may_have_late_events`: whether any entity of the window may have a late event. When none may, the usual
      window of in-order events, the walk is planned without its repair and the merge touches open stays only;
    - `event_time_from`: when an entity with stored stays may have one, the earliest event time a repair may need
      (epoch microseconds), else none. Per such entity it is the latest stored `end_time` at or before its earliest
      window event whose stay's last event is strictly before that end (the next stay starts alone at its time, so a
      repair starts there or later: entity_state_islands), else its first stay's start. Every stay a repair can
      replace ends at or after it, which bounds both the landed history a repair reads (repair_history_predicate)
      and the stored rows the merge matches.
    The query judges lateness more coarsely than the walk (any window event older than the stored last one, or
    events from several batches), which only moves the bound earlier. -#}
{% macro repair_plan(window, stays) %}
    {%- set plan = {'may_have_late_events': true, 'event_time_from': none} -%}
    {%- if not execute or not entity_state.is_built(stays) -%}
        {{ return(plan) }}
    {%- endif -%}
    {%- if entity_state.is_window_empty(window.low, window.high) -%}
        {{ return({'may_have_late_events': false, 'event_time_from': none}) }}
    {%- endif -%}
    {%- set query -%}
        with

        late_entities as (
            {{ entity_state._possibly_late_entities(window, stays) | indent(12) }}
        ),

        stored_entities as (
            select * from late_entities where has_stored_stay
        ),

        entity_bounds as (
            select /*+ broadcast(stored_entities) */
                stored_entities.tenant_id,
                stored_entities.entity_id,
                max(
                    case
                        when stored.end_time <= stored_entities.first_late_event_time
                            and stored.last_event_ts < stored.end_time
                            then stored.end_time
                    end
                ) as standing_bound_ts,
                least(min(stored.start_time), min(stored_entities.stored_start_time)) as first_start_ts
            from stored_entities
            left join {{ stays }} as stored
                on stored_entities.tenant_id = stored.tenant_id
                and stored_entities.entity_id = stored.entity_id
                and not stored.is_open
            group by stored_entities.tenant_id, stored_entities.entity_id
        )

        select
            (select count(*) from late_entities) as late_entities,
            unix_micros(min(coalesce(standing_bound_ts, first_start_ts))) as event_time_from
        from entity_bounds
    {%- endset -%}
    {%- set row = run_query(query).rows[0] -%}
    {{ return({
        'may_have_late_events': row['late_entities'] > 0,
        'event_time_from': none if row['event_time_from'] is none else row['event_time_from'] | int,
    }) }}
{% endmacro %}

{#- Every entity of the window that may have a late event: an event older than its stored last one, or events from
    several batches (one may be older than an event of an earlier one). A superset of the ones the walk repairs,
    each with a time at or before its earliest late event (classify_window_events judges by the same two rules, on
    fewer rows). One aggregate of the window's rows joined with the stored open stays. -#}
{% macro _possibly_late_entities(window, stays) %}
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

open_stays as (
    select
        tenant_id,
        entity_id,
        start_time,
        last_event_ts
    from {{ stays }}
    where is_open
),

final as (
    select
        window_entities.tenant_id,
        window_entities.entity_id,
        open_stays.tenant_id is not null as has_stored_stay,
        open_stays.start_time as stored_start_time,
        window_entities.first_event_time as first_late_event_time
    from window_entities
    left join open_stays
        on window_entities.tenant_id = open_stays.tenant_id
        and window_entities.entity_id = open_stays.entity_id
    where window_entities.first_event_time < open_stays.last_event_ts
        or window_entities.has_several_batches
)

select * from final
{% endmacro %}

{#- Filter for the landed rows a repair of the window's late events reads (its history): the window's own rows and,
    when an entity with stored stays may be repaired, every row from the plan's event time on (repair_plan). A row
    at or after that time arrived at most the event clock skew before it (reject_reason rejects the others), so
    files modified before then, less both skews, are skipped unread. -#}
{% macro repair_history_predicate(window, plan) %}
    {%- if plan.event_time_from is none -%}
        {{ entity_state.landed_window_predicate(window.low, window.high) }}
    {%- else -%}
        {%- set arrived_after = [
            plan.event_time_from - entity_state.event_clock_skew_micros() - 1, window.low | int
        ] | min -%}
        {{ entity_state.window_predicate('ingested_at', arrived_after, window.high) }}
        and (
            event_time >= {{ entity_state.micros_to_timestamp(plan.event_time_from) }}
            or ingested_at > {{ entity_state.micros_to_timestamp(window.low) }}
        )
        and {{ entity_state.landing_files_since(arrived_after) }}
    {%- endif -%}
{% endmacro %}

{#- Filter on the stored stays a repair may replace, as the merge and the walk's retractions read them: the open
    stays, and the closed ones ending at or after the plan's event time (repair_plan). A literal, so Delta skips the
    files of older stays by their statistics. -#}
{% macro replaceable_stays_predicate(plan, alias) %}
    {%- if plan.event_time_from is none -%}
        {{ alias }}.is_open
    {%- else -%}
        ({{ alias }}.is_open or {{ alias }}.end_time >= {{ entity_state.micros_to_timestamp(plan.event_time_from) }})
    {%- endif -%}
{% endmacro %}
