{#- Events that arrived after a newer event of the same entity had already been applied from an earlier batch.
    They never move the state; they are kept here so nothing is lost. Lateness uses the same rule as the walk
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

classified as (
    {{ entity_state.classify_window_events('events') }}
),

final as (
    select
        tenant_id,
        entity_id,
        state_id,
        event_time,
        ingested_at
    from classified
    where is_late
)

select * from final
