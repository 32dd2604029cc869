{#- Gaps and islands over (seed ∪ window events), shared by the batch recompute and the incremental state models.

    events:  relation or CTE name with tenant_id, entity_id, state_id, event_time, ingested_at.
    seed:    none (walk from the beginning of history) or a relation or CTE name with one stored row per entity:
             tenant_id, entity_id, state_id, start_time, last_event_ts, states_at_last_event_ts, watermark_ingested_at.
    history: with a seed, a relation or CTE name like `events` holding every landed event up to the window's end
             (repeats may be left in).
    may_have_late_events: with a seed, false when no event of the window can be late (may_have_late_events): the
             walk is then planned without its repair, which would find no entity to repair, and needs no `history`.

    counts_batches: also return `batch_counts` on the open stay: per batch of the entity's window events, how many
             the walk applied and how many were late (an array of structs).

    Returns one row per stay of every entity that has an applied event: the stays the window closed (is_open false)
    and the stay that is open after it (is_open true). A stay that started before the window rides in on the seed
    with its true start_time. An entity with a late event in the window (older than one of its events from an
    earlier batch, or than its stored last event) is repaired: walked again from its events in `history`, without
    its seed, from the start of the stored stay its earliest late event falls in (an earlier stay's when another
    stored stay had an event at that start; the beginning when the late event is older than every stored one), so
    every stay from there on comes out, with repaired_through_ingested_at: the arrival of the newest event the repair
    walked (null for an entity walked from its seed). Without a seed every event is walked
    anyway, and nothing is marked repaired. -#}
{% macro entity_state_islands(
    events, seed=none, history=none, may_have_late_events=true, counts_batches=false
) %}
{%- set walks_repairs = seed is not none and may_have_late_events -%}
{%- if walks_repairs and history is none -%}
    {{ exceptions.raise_compiler_error(
        'entity_state_islands: a seeded walk needs `history` (the landed events up to the window end), '
        ~ 'to repair the entities that receive late events; pass may_have_late_events=false only when no event '
        ~ 'of the window can be late (may_have_late_events)'
    ) }}
{%- endif %}
with

classified as (
    {{ entity_state.classify_window_events(events, seed) }}
),

{%- if counts_batches %}

-- what the walk made of each batch's events, per entity, carried on the entity's open stay: the batch counts
-- (entity_state_batches) read it from the change feed of the commit that wrote the stay
entity_batch_counts as (
    select
        tenant_id as counted_tenant_id,
        entity_id as counted_entity_id,
        collect_list(named_struct(
            'batch_ingested_at', ingested_at, 'rows_applied', rows_applied, 'rows_late', rows_late
        )) as batch_counts
    from (
        select
            tenant_id,
            entity_id,
            ingested_at,
            count_if(not is_late and not is_seen_before) as rows_applied,
            count_if(is_late) as rows_late
        from classified
        group by tenant_id, entity_id, ingested_at
    ) as batch_rows
    group by tenant_id, entity_id
),
{%- endif %}

{%- if walks_repairs %}

-- an entity with a late event is repaired; a window function over the partitioning classified already has, so
-- telling the entities apart costs no join
classified_entities as (
    select
        *,
        max(is_late) over (partition by tenant_id, entity_id) as is_entity_repaired
    from classified
),

-- each repaired entity: its earliest late event, and how far its stored row had applied its events
repaired_entities as (
    select
        tenant_id as repaired_tenant_id,
        entity_id as repaired_entity_id,
        min(event_time) as first_late_event_time,
        max(seed_watermark_ingested_at) as stored_through_ingested_at
    from classified
    where is_late
    group by tenant_id, entity_id
),

-- every landed event of a repaired entity, each distinct event at its first arrival. The repaired entities are
-- broadcast, and history holds landed rows as scanned (no shuffle below the join), so the scan runs in the stage
-- that waits for the broadcast: when no entity is repaired, adaptive execution finds the broadcast empty and drops
-- the scan before it starts (test_landing_history checks that such a run opens no old file)
entity_history as (
    select /*+ broadcast(repaired_entities) */
        history_events.tenant_id,
        history_events.entity_id,
        history_events.state_id,
        history_events.event_time,
        min(history_events.ingested_at) as ingested_at
    from {{ history }} as history_events
    left semi join repaired_entities
        on history_events.tenant_id = repaired_entities.repaired_tenant_id
        and history_events.entity_id = repaired_entities.repaired_entity_id
    group by
        history_events.tenant_id,
        history_events.entity_id,
        history_events.state_id,
        history_events.event_time
),

-- the events the stored stays were walked from, each marked where a repair may start: the first event of a stored
-- stay that is alone first at its time (the stay before it had its last event strictly earlier). The stays before
-- such an event cannot change, and an event arriving later at its time sorts after it, so a walk from it alone
-- gives every stay from its time on
stored_events as (
    select
        entity_history.tenant_id,
        entity_history.entity_id,
        entity_history.event_time,
        repaired_entities.first_late_event_time,
        coalesce(
            lag(entity_history.state_id) over stored_order <> entity_history.state_id
            and lag(entity_history.event_time) over stored_order < entity_history.event_time,
            true
        ) as is_repair_start
    from entity_history
    inner join repaired_entities
        on entity_history.tenant_id = repaired_entities.repaired_tenant_id
        and entity_history.entity_id = repaired_entities.repaired_entity_id
    where entity_history.ingested_at <= repaired_entities.stored_through_ingested_at
    window stored_order as (
        partition by entity_history.tenant_id, entity_history.entity_id
        order by entity_history.event_time, entity_history.ingested_at, entity_history.state_id
    )
),

-- a repair starts at the latest such event at or before the entity's earliest late event; with none (the late
-- event is older than every stored one, or nothing was stored) it walks all of the entity's events
repair_starts as (
    select
        tenant_id,
        entity_id,
        max(event_time) as repair_from_ts
    from stored_events
    where is_repair_start
        and event_time <= first_late_event_time
    group by tenant_id, entity_id
),

repair_events as (
    select
        entity_history.tenant_id,
        entity_history.entity_id,
        entity_history.state_id,
        entity_history.event_time,
        entity_history.ingested_at
    from entity_history
    left join repair_starts
        on entity_history.tenant_id = repair_starts.tenant_id
        and entity_history.entity_id = repair_starts.entity_id
    where repair_starts.repair_from_ts is null
        or entity_history.event_time >= repair_starts.repair_from_ts
),
{%- endif %}

applied_events as (
    select
        tenant_id,
        entity_id,
        state_id,
        event_time,
        ingested_at,
    {%- if seed is not none %}
        false as is_repaired
    from {{ 'classified_entities' if walks_repairs else 'classified' }}
    where not is_seen_before
        {%- if walks_repairs %}
        and not is_entity_repaired
        {%- endif %}
    {%- endif %}
    {%- if walks_repairs %}

    union all

    select
        tenant_id,
        entity_id,
        state_id,
        event_time,
        ingested_at,
        true as is_repaired
    from repair_events
    {%- elif seed is none %}
        -- without a seed every event is walked, so nothing needs reading again
        false as is_repaired
    from classified
    {%- endif %}
),

points as (
    {%- if seed is not none %}
    -- the stored open stay of each entity the window has events of, placed before all of its new events. Keyed on
    -- the window's events rather than on applied_events, so the classification is not planned a second time: an
    -- entity whose window events were all applied already walks its seed alone, which gives the stored stay again
    select
        seed_rows.tenant_id,
        seed_rows.entity_id,
        seed_rows.state_id,
        0 as point_rank,
        seed_rows.last_event_ts as event_time,
        cast(null as timestamp) as ingested_at,
        seed_rows.start_time as point_start_time,
        seed_rows.last_event_ts as point_last_event_ts,
        seed_rows.last_event_ts as seed_last_event_ts,
        seed_rows.states_at_last_event_ts as seed_states_at_last_event_ts,
        false as is_repaired
    from {{ seed }} as seed_rows
    left semi join {{ events }} as window_events
        on seed_rows.tenant_id = window_events.tenant_id
        and seed_rows.entity_id = window_events.entity_id

    union all
    {%- endif %}

    select
        tenant_id,
        entity_id,
        state_id,
        1 as point_rank,
        event_time,
        ingested_at,
        event_time as point_start_time,
        event_time as point_last_event_ts,
        cast(null as timestamp) as seed_last_event_ts,
        cast(null as array<string>) as seed_states_at_last_event_ts,
        is_repaired
    from applied_events
),

{%- if walks_repairs %}

-- a repaired entity walks its history alone, without its seed row
walked_points as (
    select *
    from (
        select
            *,
            max(is_repaired) over (partition by tenant_id, entity_id) as has_repaired_points
        from points
    ) as entity_marked_points
    where point_rank = 1 or not has_repaired_points
),
{%- endif %}

sequenced as (
    select
        *,
        lag(state_id) over entity_points as previous_state_id
    from {{ 'walked_points' if walks_repairs else 'points' }}
    window entity_points as (
        partition by tenant_id, entity_id
        order by point_rank, event_time, ingested_at, state_id
    )
),

flagged as (
    select
        *,
        coalesce(previous_state_id <> state_id, true) as is_island_start
    from sequenced
),

numbered as (
    select
        *,
        sum(case when is_island_start then 1 else 0 end) over (
            partition by tenant_id, entity_id
            order by point_rank, event_time, ingested_at, state_id
            rows between unbounded preceding and current row
        ) as island_number
    from flagged
),

islands as (
    select
        tenant_id,
        entity_id,
        island_number,
        max(state_id) as state_id,
        max(case when is_island_start then point_start_time end) as start_time,
        max(case when is_island_start then ingested_at end) as started_ingested_at,
        max(point_last_event_ts) as last_event_ts,
        max(seed_last_event_ts) as seed_last_event_ts,
        max(seed_states_at_last_event_ts) as seed_states_at_last_event_ts,
        max(is_repaired) as is_repaired,
        max(ingested_at) as last_ingested_at
    from numbered
    group by tenant_id, entity_id, island_number
),

linked as (
    select
        *,
        lead(state_id) over entity_islands as next_state_id,
        lead(start_time) over entity_islands as end_time,
        lead(started_ingested_at) over entity_islands as closed_ingested_at,
        max(last_event_ts) over (partition by tenant_id, entity_id) as entity_last_event_ts,
        max(last_ingested_at) over (partition by tenant_id, entity_id) as entity_last_ingested_at
    from islands
    window entity_islands as (partition by tenant_id, entity_id order by island_number)
),

-- the states seen at the entity's latest timestamp; a later batch repeating one of them is a duplicate. Only the
-- islands at that timestamp feed the aggregate, so it stays small however many events the entity has. A window over
-- the entity rather than a join with its aggregate: the walk above is planned once
with_states_at_last as (
    select
        *,
        array_sort(array_distinct(concat(
            collect_list(case when last_event_ts = entity_last_event_ts then state_id end) over entity_stays,
            flatten(collect_list(
                case when seed_last_event_ts = entity_last_event_ts then seed_states_at_last_event_ts end
            ) over entity_stays)
        ))) as states_at_last_event_ts
    from linked
    window entity_stays as (partition by tenant_id, entity_id)
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
        closed_ingested_at,
        states_at_last_event_ts,
        next_state_id is null as is_open,
        case when is_repaired then entity_last_ingested_at end as repaired_through_ingested_at
        {%- if counts_batches %},
        case when next_state_id is null then entity_batch_counts.batch_counts end as batch_counts
        {%- endif %}
    from with_states_at_last
    {%- if counts_batches %}
    left join entity_batch_counts
        on with_states_at_last.tenant_id = entity_batch_counts.counted_tenant_id
        and with_states_at_last.entity_id = entity_batch_counts.counted_entity_id
    {%- endif %}
)

select * from final
{% endmacro %}

{#- Classifies the events of a window against the seed, with the same rules the batch recompute uses:
    - an event the seed has already applied (ingested at or before the seed row's watermark) is dropped;
    - exact duplicates (same tenant, entity, state and event_time) keep their earliest arrival;
    - is_late: older than an event of the same entity that arrived in an earlier batch (or than the seed's last
      event); entity_state_islands repairs the entities that have one;
    - is_seen_before: repeats a state the seed already saw at its latest timestamp.
    Lateness only looks at earlier batches, so it does not depend on how batches are grouped into runs. -#}
{% macro classify_window_events(events, seed=none) %}
with

unapplied as (
    {{ entity_state._events_after_seed(events, seed) }}
),

final as (
    {{ entity_state._classify_unapplied_events('unapplied') }}
)

select * from final
{% endmacro %}

{#- The second half of classify_window_events: the classification of the window's events the seed has not applied
    yet (`unapplied`, as _events_after_seed returns them). -#}
{% macro _classify_unapplied_events(unapplied) %}
with

first_arrivals as (
    select
        tenant_id,
        entity_id,
        state_id,
        event_time,
        min(ingested_at) as ingested_at,
        max(seed_last_event_ts) as seed_last_event_ts,
        max(seed_states_at_last_event_ts) as seed_states_at_last_event_ts,
        max(seed_watermark_ingested_at) as seed_watermark_ingested_at
    from {{ unapplied }}
    group by tenant_id, entity_id, state_id, event_time
),

with_earlier_batches as (
    select
        *,
        max(event_time) over (
            partition by tenant_id, entity_id
            order by unix_micros(ingested_at)
            range between unbounded preceding and 1 preceding
        ) as earlier_batches_last_event_ts
    from first_arrivals
),

final as (
    select
        tenant_id,
        entity_id,
        state_id,
        event_time,
        ingested_at,
        seed_watermark_ingested_at,
        coalesce(event_time < greatest(seed_last_event_ts, earlier_batches_last_event_ts), false) as is_late,
        coalesce(
            event_time = seed_last_event_ts and array_contains(seed_states_at_last_event_ts, state_id), false
        ) as is_seen_before
    from with_earlier_batches
)

select * from final
{% endmacro %}

{#- The window's events that the seed has not applied yet (each entity's stored row skips what arrived at or before
    its own watermark), with the seed's last event time and the states seen then; without a seed, all events. -#}
{% macro _events_after_seed(events, seed=none) %}
{%- if seed is not none %}
with

seed_rows as (
    select
        tenant_id as seed_tenant_id,
        entity_id as seed_entity_id,
        last_event_ts as seed_last_event_ts,
        states_at_last_event_ts as seed_states_at_last_event_ts,
        watermark_ingested_at as seed_watermark_ingested_at
    from {{ seed }}
),

final as (
    select
        window_events.tenant_id,
        window_events.entity_id,
        window_events.state_id,
        window_events.event_time,
        window_events.ingested_at,
        seed_rows.seed_last_event_ts,
        seed_rows.seed_states_at_last_event_ts,
        seed_rows.seed_watermark_ingested_at
    from {{ events }} as window_events
    left join seed_rows
        on window_events.tenant_id = seed_rows.seed_tenant_id
        and window_events.entity_id = seed_rows.seed_entity_id
    where seed_rows.seed_watermark_ingested_at is null
        or window_events.ingested_at > seed_rows.seed_watermark_ingested_at
)

select * from final
{%- else %}
select
    tenant_id,
    entity_id,
    state_id,
    event_time,
    ingested_at,
    cast(null as timestamp) as seed_last_event_ts,
    cast(null as array<string>) as seed_states_at_last_event_ts,
    cast(null as timestamp) as seed_watermark_ingested_at
from {{ events }}
{%- endif %}
{% endmacro %}

