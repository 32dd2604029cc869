{{ config(materialized='incremental', incremental_strategy='append') }}

{#- What each commit of entity_state_segments (`stays_version`) changed in the closed stays, from its change data feed:
    a stay closed in order is added once; a repair retracts the stays it replaced and adds the ones it walked, leaving
    out the stays that are the same in both. Each run appends the changes of the commits since the newest one this
    table holds; its first build adds every closed stay at segments' newest commit. Applying the rows in
    `stays_version` order (retract, then add) rebuilds the closed stays of entity_state_view. -#}
{%- set segments = ref('entity_state_segments') -%}
{%- set done_version = entity_state.progress_of(this, 'stays_version', is_version=true) -%}
{%- set versions = entity_state.commit_versions(segments) -%}
{%- set latest, rebuilt = versions.latest, versions.rebuilt -%}
{#- a table without rows (a first build, or a build on --empty) starts from segments' closed stays -#}
{#- ... or one that follows segments from before its last rebuild (a full refresh of segments alone), which also
    retracts what it had added: its next version gives the difference, as for any commit -#}
{%- set follows_a_rebuild = done_version is not none and rebuilt is not none and done_version < rebuilt -%}
{%- set is_first_build = done_version is none or follows_a_rebuild -%}
{%- set has_new_commits = latest is not none and (done_version is none or latest > done_version) %}

with

{%- if is_first_build %}

changed_rows as (
    select
        cast({{ latest if latest is not none else 'null' }} as bigint) as stays_version,
        current_timestamp() as changed_at,
        1 as change_sign,
        tenant_id,
        entity_id,
        state_id,
        next_state_id,
        start_time,
        end_time,
        last_event_ts,
        closed_ingested_at
    from {{ entity_state.relation_at_version(segments, latest) if latest is not none else segments }}
    where not is_open {{- ' and false' if latest is none }}
    {%- if follows_a_rebuild %}

    union all

    -- the closed stays this table had given before segments was rebuilt, retracted at the rebuilt version
    select
        cast({{ latest }} as bigint) as stays_version,
        current_timestamp() as changed_at,
        -1 as change_sign,
        tenant_id,
        entity_id,
        state_id,
        next_state_id,
        start_time,
        end_time,
        last_event_ts,
        max(closed_ingested_at) as closed_ingested_at
    from {{ this }}
    group by tenant_id, entity_id, state_id, next_state_id, start_time, end_time, last_event_ts
    having sum(case when change_kind = 'added' then 1 else -1 end) > 0
    {%- endif %}
),
{%- else %}

changed_rows as (
    select
        {%- if has_new_commits %}
        _commit_version as stays_version,
        _commit_timestamp as changed_at,
        case when _change_type in ('insert', 'update_postimage') then 1 else -1 end as change_sign,
        {%- else %}
        -- no commit since the newest one this table holds: no rows, and segments itself has no change columns
        cast(null as bigint) as stays_version,
        cast(null as timestamp) as changed_at,
        1 as change_sign,
        {%- endif %}
        tenant_id,
        entity_id,
        state_id,
        next_state_id,
        start_time,
        end_time,
        last_event_ts,
        closed_ingested_at
    {%- if has_new_commits %}
    from {{ entity_state.changes_between(segments, (done_version if done_version is not none else -1) + 1, latest) }}
    where not is_open
    {%- else %}
    from {{ segments }}
    where false
    {%- endif %}
),
{%- endif %}

-- a stay a commit both retracted and added (a repair that walked it again unchanged) is no change
netted as (
    select
        stays_version,
        max(changed_at) as changed_at,
        tenant_id,
        entity_id,
        state_id,
        next_state_id,
        start_time,
        end_time,
        last_event_ts,
        max(closed_ingested_at) as closed_ingested_at,
        sum(change_sign) as net_sign
    from changed_rows
    group by stays_version, tenant_id, entity_id, state_id, next_state_id, start_time, end_time, last_event_ts
),

final as (
    select
        stays_version,
        case when net_sign > 0 then 'added' else 'retracted' end as change_kind,
        tenant_id,
        entity_id,
        state_id,
        next_state_id,
        start_time,
        end_time,
        last_event_ts,
        closed_ingested_at,
        changed_at
    from netted
    where net_sign <> 0
)

select * from final
