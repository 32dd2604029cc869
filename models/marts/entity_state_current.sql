{{
    config(
        materialized='state_table',
        incremental_strategy=entity_state.state_write_strategy('replace_partitions'),
        partition_by=['entity_bucket'],
        post_hook=["{{ entity_state.record_watermark() }}"],
        on_schema_change='fail',
    )
}}

-- depends_on: {{ ref('entity_state_segments') }}
-- depends_on: {{ ref('entity_state_batches') }}
{#- This table never moves past what entity_state_segments has emitted: the window ends at the segments
    watermark, so segments can always seed its next walk from the rows stored here. Nor past what
    entity_state_batches has counted (once that table exists), so the batches it counts next are all newer than
    the rows stored here. Only the hash buckets that the window touches are rewritten. A bucket that lost rows (a
    run killed while Spark replaced it, see lost_current_buckets) makes this run rebuild the table from the landed
    events instead; segments and the batch counts wait for that rebuild. -#}
{%- set lost_buckets = entity_state.lost_current_buckets(this) if entity_state.has_stored_state() else [] -%}
{%- set incremental = entity_state.has_stored_state() and not lost_buckets -%}
{%- if lost_buckets %}
{%- do log(
    this ~ ': the rows of buckets ' ~ lost_buckets | join(', ') ~ ' are gone (a run was killed while Spark replaced '
    ~ 'them); rebuilding the table from the landed events', info=true
) -%}
{%- endif -%}
{%- set low = entity_state.read_watermark(this) if incremental else none -%}
{%- set segments_relation = entity_state.state_relation('entity_state_segments') -%}
{%- set segments_through = entity_state.emitted_watermark(
    segments_relation, 'closed_ingested_at', entity_state.read_watermark(segments_relation)
) -%}
{%- set batches_relation = entity_state.state_relation('entity_state_batches') -%}
{%- set counted_through = entity_state.emitted_watermark(
    batches_relation, 'batch_ingested_at', entity_state.read_watermark(batches_relation)
) -%}
{%- if batches_relation is none or segments_through is none -%}
    {%- set high = segments_through -%}
{%- elif counted_through is none -%}
    {%- set high = none -%}
{%- else -%}
    {%- set high = [segments_through, counted_through] | min -%}
{%- endif -%}
{{ entity_state.write_plan(
    watermark=high,
    rebuild='buckets ' ~ lost_buckets | join(', ') ~ ' lost rows' if lost_buckets else none,
    is_window_empty=incremental and entity_state.is_window_empty(low, high),
    recorded_watermark=low,
) }}

with

events as (
    {{ entity_state.applicable_events(entity_state.landed_window_predicate(low, high)) }}
),

{%- if incremental %}

touched_buckets as (
    select distinct {{ entity_state.entity_bucket() }} as entity_bucket
    from events
),

stored as (
    select
        tenant_id,
        entity_id,
        state_id,
        start_time,
        last_event_ts,
        states_at_last_event_ts,
        watermark_ingested_at
    from {{ this }}
    where entity_bucket in (select touched_buckets.entity_bucket from touched_buckets)
),
{%- endif %}

{%- if incremental %}

history as (
    {{ entity_state.applicable_events(entity_state.landed_window_predicate(none, high), each_row_once=false) }}
),
{%- endif %}

stays as (
    {{ entity_state.entity_state_islands(
        'events',
        'stored' if incremental else none,
        'history' if incremental else none,
    ) }}
),

open_stays as (
    select
        tenant_id,
        entity_id,
        state_id,
        start_time,
        last_event_ts,
        states_at_last_event_ts
    from stays
    where is_open
),

{%- if incremental %}

-- entities in a rewritten bucket that the window did not advance keep their stored stay
unchanged as (
    select
        stored.tenant_id,
        stored.entity_id,
        stored.state_id,
        stored.start_time,
        stored.last_event_ts,
        stored.states_at_last_event_ts
    from stored
    left anti join open_stays
        on stored.tenant_id = open_stays.tenant_id
        and stored.entity_id = open_stays.entity_id
),
{%- endif %}

all_stays as (
    select * from open_stays
    {%- if incremental %}
    union all
    select * from unchanged
    {%- endif %}
),

final as (
    select
        tenant_id,
        entity_id,
        state_id,
        start_time,
        last_event_ts,
        states_at_last_event_ts,
        {{ entity_state.micros_to_timestamp(high) if high is not none else 'cast(null as timestamp)' }}
            as watermark_ingested_at,
        count(*) over (partition by {{ entity_state.entity_bucket() }}) as bucket_entities,
        {{ entity_state.entity_bucket() }} as entity_bucket
    from all_stays
)

select * from final
