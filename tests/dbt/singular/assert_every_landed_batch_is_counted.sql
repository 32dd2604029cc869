-- Landed batches that no run will ever process: stamped with an `ingested_at` at or below what entity_state_batches
-- has already counted, but missing from it, wholly or in part (a second file with an `ingested_at` already counted).
-- Runs read only arrivals after their watermarks, so these rows never reach the state. One row per such arrival
-- time, with its files: land their rows again with a later `ingested_at` (`entity-state load FILE`), then move the
-- listed files out of the landing folder. Scans all landed rows: in `--selector audit`.
with

landed as (
    select
        ingested_at,
        source_file_name
    from {{ ref('stg_landing_events') }}
),

batches as (
    select
        batch_ingested_at,
        rows_landed,
        window_end_ingested_at
    from {{ ref('entity_state_batches') }}
),

counted_through as (
    select max(window_end_ingested_at) as counted_through
    from batches
),

landed_per_arrival as (
    select
        ingested_at,
        count(*) as rows_landed,
        concat_ws(', ', sort_array(collect_set(source_file_name))) as source_files
    from landed
    group by ingested_at
),

final as (
    select
        landed_per_arrival.ingested_at,
        landed_per_arrival.source_files,
        landed_per_arrival.rows_landed,
        coalesce(batches.rows_landed, 0) as rows_counted,
        counted_through.counted_through
    from landed_per_arrival
    cross join counted_through
    left join batches
        on landed_per_arrival.ingested_at = batches.batch_ingested_at
    where landed_per_arrival.ingested_at <= counted_through.counted_through
        and landed_per_arrival.rows_landed != coalesce(batches.rows_landed, 0)
)

select * from final
