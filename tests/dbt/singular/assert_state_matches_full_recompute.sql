{{ config(tags=['audit']) }}
-- The incremental state must equal the batch recompute of every event segments has applied.
-- Scans all history: `dbt build --selector audit` runs it, `--selector scheduled` leaves it out.
with

processed as (
    select max(watermark_ingested_at) as watermark_ingested_at
    from {{ ref('entity_state_segments') }}
    where is_open
),

events as (
    select
        tenant_id,
        entity_id,
        state_id,
        event_time,
        ingested_at
    from {{ ref('stg_events') }}
    where ingested_at <= (select processed.watermark_ingested_at from processed)
),

recomputed as (
    {{ entity_state.entity_state_islands('events') }}
),

expected as (
    select
        tenant_id,
        entity_id,
        state_id,
        next_state_id,
        start_time,
        case when is_open then null else end_time end as end_time,
        last_event_ts,
        is_open
    from recomputed
),

actual as (
    select
        tenant_id,
        entity_id,
        state_id,
        next_state_id,
        start_time,
        case when is_open then null else end_time end as end_time,
        last_event_ts,
        is_open
    from {{ ref('entity_state_view') }}
),

missing as (
    select * from expected
    except all
    select * from actual
),

unexpected as (
    select * from actual
    except all
    select * from expected
),

final as (
    select
        'missing from the state' as problem,
        *
    from missing
    union all
    select
        'not in the recompute' as problem,
        *
    from unexpected
)

select * from final
