{#- Whether the stay `stay` (an alias with closed_ingested_at, repaired_through_ingested_at and emitted_window) was
    written before the repair `repair` (an alias with repair_through_ingested_at and repair_window) of its entity.
    A stay closed in order was, when the repair walked the event that closed it; a stay written by a repair was,
    when that repair walked to an earlier arrival, or to the same one in an earlier write (a rerun). Used with the
    repair's reach (the stay starts at or after the repair's first stay) to tell which stays a repair replaces. -#}
{% macro written_before_repair(stay, repair) %}
    (
        (
            {{ stay }}.repaired_through_ingested_at is null
            and {{ stay }}.closed_ingested_at <= {{ repair }}.repair_through_ingested_at
        )
        or {{ stay }}.repaired_through_ingested_at < {{ repair }}.repair_through_ingested_at
        or (
            {{ stay }}.repaired_through_ingested_at = {{ repair }}.repair_through_ingested_at
            and {{ stay }}.emitted_window < {{ repair }}.repair_window
        )
    )
{% endmacro %}

{#- The closed stays that stand in `segments` (entity_state_segments' rows) for each entity of `caught_up_through`
    (tenant_id, entity_id, watermark_ingested_at): the stays written from events that arrived at or before the
    entity's watermark, less those a repair written after them replaced. For an entity's stored open stay (its
    watermark), these are exactly the closed stays of the full recompute over its events landed through it.
    Shared by entity_state_view and the bound of a repair's read (repair_history_bound). `broadcast_caught_up` for
    a small `caught_up_through`: the scan of `segments` then waits for it, and is dropped when it is empty. -#}
{% macro standing_closed_stays(segments, caught_up_through, broadcast_caught_up=false) %}
with

caught_up_segments as (
    select {{ '/*+ broadcast(caught_up_through) */' if broadcast_caught_up }}
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
    from {{ segments }} as segments
    inner join {{ caught_up_through }} as caught_up_through
        on segments.tenant_id = caught_up_through.tenant_id
        and segments.entity_id = caught_up_through.entity_id
    where segments.closed_ingested_at <= caught_up_through.watermark_ingested_at
        and coalesce(segments.repaired_through_ingested_at <= caught_up_through.watermark_ingested_at, true)
),

-- each repair caught up with, and the start of its first stay: a repair walks the entity again from a stay whose
-- start no late event could move, so it replaces what was written before it from there on
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
final as (
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
)

select * from final
{% endmacro %}

{#- Filter on entity_state_segments' partitions for entity_state_changes: the writes that the changes of the window's
    writes (start, high] can depend on, so that a run does not list and open every partition segments ever wrote.
    Two kinds of rows are read besides the window's own writes:
    - every repair that may have walked the closing event of a stay the window closes in order: its write's window
      ended at or after that arrival, so at or after the window's earliest in-order `closed_ingested_at`;
    - for a repair in the window, the stays written before it that it reaches and the repairs between them: each
      starts at or after the repair's first stay, so the event that closed it is no older, and it arrived at most
      the event clock skew before that event (the input contract), in a write whose window ended after it.
    One query over the window's writes finds the earliest of both while the model compiles, because Spark prunes
    partitions with literals only. Renders `false` when the window's writes hold no rows. -#}
{% macro changes_history_predicate(segments, window) %}
    {%- if not execute -%}
        {{ return('true') }}
    {%- endif -%}
    {%- if entity_state.is_window_empty(window.start, window.high) -%}
        {{ return('false') }}
    {%- endif -%}
    {%- set query -%}
        select
            unix_micros(min(case when repaired_through_ingested_at is null then closed_ingested_at end))
                as first_closed_in_order,
            unix_micros(min(case when repaired_through_ingested_at is not null then start_time end))
                as first_repaired_start
        from {{ segments }}
        where {{ entity_state.written_in_window(window.start, window.high) }}
    {%- endset -%}
    {%- set row = run_query(query).rows[0] -%}
    {%- set bounds = [] -%}
    {%- if row['first_closed_in_order'] is not none -%}
        {%- do bounds.append(row['first_closed_in_order'] | int) -%}
    {%- endif -%}
    {%- if row['first_repaired_start'] is not none -%}
        {%- do bounds.append((row['first_repaired_start'] | int) - entity_state.event_clock_skew_micros() - 1) -%}
    {%- endif -%}
    {{ return(entity_state.emitted_since(bounds | min) if bounds else 'false') }}
{% endmacro %}
