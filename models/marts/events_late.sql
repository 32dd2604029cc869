{#- Events that arrived after a newer event of the same entity had already been applied from an earlier batch.
    They are applied like any other event (the walk repairs their entity's history); this view lists them for the
    audit. Lateness uses the same rule as the walk
    (macros/walk/islands.sql), evaluated over all history. -#}
with

events as (
    select
        tenant_id,
        entity_id,
        state_id,
        event_time,
        ingested_at
    from {{ ref('stg_events') }}
),

batches as (
    select
        batch_ingested_at,
        window_end_ingested_at,
        processed_at
    from {{ ref('entity_state_batches') }}
),

classified as (
    {{ entity_state.classify_window_events('events') }}
),

-- the run that counted the event's batch: the state tables applied it in that run window
final as (
    select
        classified.tenant_id,
        classified.entity_id,
        classified.state_id,
        classified.event_time,
        classified.ingested_at,
        batches.window_end_ingested_at as applied_in_window_end_ingested_at,
        batches.processed_at as applied_processed_at
    from classified
    left join batches
        on classified.ingested_at = batches.batch_ingested_at
    where classified.is_late
)

select * from final
