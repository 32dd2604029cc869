{{ config(materialized='table') }}

-- depends_on: {{ ref('stg_landing_events') }}
{#- Time in state per tenant, state and UTC day as counted at `counted_at` (macro time_in_state_per_day), the stored
    part of the view entity_state_daily, which counts the open stays on up to the query's moment. A run that applied
    events recomputes the days from `recompute_from` on (macros/questions/daily.sql says why the days before cannot
    have changed) and keeps the stored rows of the days before; a run after which segments holds nothing this table
    has not counted keeps every row. The table is small (one row per tenant, state and day): it is replaced whole, in
    one commit. -#}
{%- set plan = entity_state.daily_recompute_plan() -%}
{%- set recompute_from = plan['recompute_from'] -%}
{%- set from_day = "date'" ~ recompute_from ~ "'" if recompute_from else none -%}
{#- the stays ending from that day on; the open ones always count -#}
{%- set segments_filter = "end_time >= cast(" ~ from_day ~ " as timestamp)" if from_day else none %}

with
{%- if plan['is_counted'] %}

final as (
    select
        tenant_id,
        state_id,
        utc_date,
        seconds_in_state,
        stays_started,
        stays_ended,
        entities_in_state,
        counted_at,
        counted_through_ingested_at,
        counted_stale_after
    from {{ this }}
)
{%- else %}

timeline as (
    {{ entity_state.timeline_stays(segments_filter) | indent(4) }}
),

recomputed as (
    {{ entity_state.time_in_state_per_day('timeline', from_day) | indent(4) }}
),

counted_days as (
    select
        tenant_id,
        state_id,
        utc_date,
        seconds_in_state,
        stays_started,
        stays_ended,
        entities_in_state
    from recomputed
    {%- if from_day %}
    union all
    select
        tenant_id,
        state_id,
        utc_date,
        seconds_in_state,
        stays_started,
        stays_ended,
        entities_in_state
    from {{ this }}
    where utc_date < {{ from_day }}
    {%- endif %}
),

final as (
    select
        tenant_id,
        state_id,
        utc_date,
        seconds_in_state,
        stays_started,
        stays_ended,
        entities_in_state,
        -- the moment time_in_state_per_day counted the open stays up to: one per statement
        current_timestamp() as counted_at,
        {{ entity_state.micros_to_timestamp(plan['watermark']) if plan['watermark'] is not none
            else 'cast(null as timestamp)' }} as counted_through_ingested_at,
        '{{ entity_state.daily_stale_after_text() }}' as counted_stale_after
    from counted_days
)
{%- endif %}

select * from final
