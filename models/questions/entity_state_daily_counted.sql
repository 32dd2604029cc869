{{
    config(
        materialized='state_table',
        post_hook=[
            "{{ entity_state.record_watermark() }}",
            "{{ entity_state.record_daily_stale_after() }}",
        ],
    )
}}

-- depends_on: {{ ref('stg_landing_events') }}
{#- Time in state per tenant, state and UTC day as counted at `counted_at` (macro time_in_state_per_day), the stored
    part of the view entity_state_daily, which counts the open stays on up to the query's moment. A run that applied
    events recomputes the days from `recompute_from` on (macros/questions/daily.sql says why the days before cannot
    have changed) and keeps the stored rows of the days before; a run after which the current table holds nothing
    this table has not counted writes nothing. The table is small (one row per tenant, state and day), so it is
    written whole, aside, and swapped in: a run stopped midway leaves the old table or none, and a rerun repairs
    both. -#}
{%- set plan = entity_state.daily_recompute_plan() -%}
{%- set recompute_from = plan['recompute_from'] -%}
{%- set from_day = "date'" ~ recompute_from ~ "'" if recompute_from else none -%}
{#- the stays ending from that day on were closed by events from then on, which arrived at most the event clock skew
    earlier, so segments' writes of windows that ended before that hold none of them (macro timeline_stays) -#}
{%- set segments_filter = entity_state.emitted_since(
    plan['recompute_from_micros'] - entity_state.event_clock_skew_micros() - 1
) if recompute_from else none -%}
{%- if plan['is_counted'] %}
{{ entity_state.write_plan(
    watermark=plan['watermark'], recorded_watermark=plan['watermark'], is_window_empty=true
) }}
{%- else %}
{{ entity_state.write_plan(
    watermark=plan['watermark'],
    rebuild='written whole when it counts; recomputed from ' ~ (recompute_from or 'the first day'),
) }}
{%- endif %}

with

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
            else 'cast(null as timestamp)' }} as counted_through_ingested_at
    from counted_days
)

select * from final
