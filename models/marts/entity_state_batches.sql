{{ config(materialized='incremental', incremental_strategy='append') }}

{#- One row per landed batch, appended once entity_state_segments has applied the window of the run manifest that
    holds it (a window with nothing to apply counts at once). Landing counts come from the landed rows; what the
    walk made of each batch's events (applied, late) comes from the batch counts segments wrote on the open stays of
    the entities it touched, read from its change data feed since the commit this table last followed, so a batch is
    counted as the walk that applied it judged it, whichever run that was. A first build classifies every landed
    event as the full recompute does. -#}
{%- set segments = ref('entity_state_segments') -%}
{%- set runs = ref('entity_state_runs') -%}
{%- set done_version = entity_state.progress_of(this, 'stays_version', is_version=true) -%}
{#- a table without rows (a first build, or a build on --empty) counts every landed batch from scratch -#}
{%- set is_first_build = done_version is none -%}
{#- one that follows segments from before its last rebuild (a full refresh of segments alone) cannot read the change
    feed across it: it reads the rebuilt table whole, whose open stays carry the counts of every batch, then the
    feed after it -#}
{%- set versions = entity_state.commit_versions(segments) -%}
{%- set latest, rebuilt = versions.latest, versions.rebuilt -%}
{%- set follows_a_rebuild = not is_first_build and rebuilt is not none and done_version < rebuilt -%}
{%- set feed_from = rebuilt + 1 if follows_a_rebuild else (done_version if done_version is not none else -1) + 1 -%}
{%- set reads_feed = latest is not none and latest >= feed_from -%}
{%- set written_parts = (['rebuilt_stays'] if follows_a_rebuild else []) + (['fed_stays'] if reads_feed else []) -%}
{%- set low = none if is_first_build else entity_state.progress_of(this, 'window_end_ingested_at') -%}
{%- set applied_through = entity_state.progress_of(segments, 'watermark_ingested_at', 'is_open') -%}
{#- the newest manifest window segments has applied, or that follows only windows with nothing to apply -#}
{%- set high = none if not execute or not entity_state.is_built(runs) else entity_state._query_value(
    "select unix_micros(max(window_end_ingested_at)) from " ~ runs ~ " where window_end_ingested_at < coalesce(("
    ~ "select min(window_end_ingested_at) from " ~ runs ~ " where rows_applicable > 0"
    ~ (" and window_end_ingested_at > " ~ entity_state.micros_to_timestamp(applied_through) if applied_through is not none else "")
    ~ "), timestamp'9999-12-31')"
) -%}
{%- set high = none if high is none else high | int -%}
{%- set window = {'low': low, 'high': high} %}

with

landed as (
    select
        trim(tenant_id) as tenant_id,
        trim(entity_id) as entity_id,
        ingested_at,
        source_file_name,
        reject_reason
    from {{ ref('stg_landing_events') }}
    where {{ entity_state.landed_window_predicate(window.low, window.high) }}
),

landed_counts as (
    select
        ingested_at,
        count(distinct source_file_name) as source_files,
        count(*) as rows_landed,
        count(reject_reason) as rows_rejected,
        count(distinct case when reject_reason is null then concat_ws('\u0000', tenant_id, entity_id) end)
            as entities_touched
    from landed
    group by ingested_at
),

{%- if is_first_build %}

events as (
    {{ entity_state.applicable_events(
        entity_state.landed_window_predicate(none, window.high), each_row_once=false, spread_by_entity=true
    ) }}
),

classified as (
    {{ entity_state.classify_window_events('events') }}
),

walk_counts as (
    select
        ingested_at,
        count_if(not is_late and not is_seen_before) as rows_applied,
        count_if(is_late) as rows_late
    from classified
    group by ingested_at
),
{%- else %}

{%- if follows_a_rebuild %}

-- segments as its last rebuild wrote it: its open stays carry the counts of every batch before it
rebuilt_stays as (
    select
        tenant_id,
        entity_id,
        next_state_id,
        end_time,
        is_open,
        closed_ingested_at,
        batch_counts
    from {{ entity_state.relation_at_version(segments, rebuilt) }}
),
{%- endif %}

{%- if reads_feed %}

-- the stays segments wrote in its commits since the one this table followed last (or since its rebuild): the open
-- ones carry their entity's counts. (A query that reads the table besides its change feed loses the feed's columns,
-- so the closed stays are counted from here too.)
fed_stays as (
    select
        tenant_id,
        entity_id,
        next_state_id,
        end_time,
        is_open,
        closed_ingested_at,
        batch_counts
    from {{ entity_state.changes_between(segments, feed_from, latest) }}
    where _change_type in ('insert', 'update_postimage')
),
{%- endif %}

written_stays as (
    {%- for part in written_parts %}
    select * from {{ part }}
    {%- if not loop.last %}

    union all
    {% endif %}
    {%- else %}
    select
        tenant_id,
        entity_id,
        next_state_id,
        end_time,
        is_open,
        closed_ingested_at,
        batch_counts
    from {{ segments }}
    where false
    {%- endfor %}
),

walk_counts as (
    select
        batch.batch_ingested_at as ingested_at,
        sum(batch.rows_applied) as rows_applied,
        sum(batch.rows_late) as rows_late
    from written_stays
    lateral view explode(batch_counts) exploded_counts as batch
    where is_open and {{ entity_state.window_predicate('batch.batch_ingested_at', window.low, window.high) }}
    group by batch.batch_ingested_at
),
{%- endif %}

-- a stay is closed by the first event of the next one (its end_time and next_state_id)
closed_counts as (
    select
        closed_ingested_at as ingested_at,
        count(distinct tenant_id, entity_id, end_time, next_state_id) as stays_closed
    from {{ segments if is_first_build else 'written_stays' }}
    where not is_open
        and {{ entity_state.window_predicate('closed_ingested_at', window.low, window.high) }}
    group by closed_ingested_at
),

final as (
    select
        landed_counts.ingested_at as batch_ingested_at,
        landed_counts.source_files,
        landed_counts.rows_landed,
        coalesce(walk_counts.rows_applied, 0) as rows_applied,
        -- the applicable rows neither applied nor late repeat an event: in their batch, an earlier batch of the
        -- window, or the latest events the seed had seen
        landed_counts.rows_landed
        - landed_counts.rows_rejected
        - coalesce(walk_counts.rows_applied, 0)
        - coalesce(walk_counts.rows_late, 0) as rows_duplicate,
        landed_counts.rows_rejected,
        coalesce(walk_counts.rows_late, 0) as rows_late,
        landed_counts.entities_touched,
        coalesce(closed_counts.stays_closed, 0) as stays_closed,
        {{ entity_state.micros_to_timestamp(window.low) if window.low is not none
            else 'cast(null as timestamp)' }} as window_start_ingested_at,
        {{ entity_state.window_end_literal(window) }} as window_end_ingested_at,
        cast({{ latest if latest is not none else 'null' }} as bigint) as stays_version,
        current_timestamp() as processed_at
    from landed_counts
    left join walk_counts on landed_counts.ingested_at = walk_counts.ingested_at
    left join closed_counts on landed_counts.ingested_at = closed_counts.ingested_at
)

select * from final
