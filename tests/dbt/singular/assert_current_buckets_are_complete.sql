{{ config(tags=['scheduled']) }}
-- Each bucket of entity_state_current holds as many rows as it was written with. Fewer means rows were lost (a run
-- killed while Spark replaced the bucket); the next dbt run rebuilds the table from the landed events.
with

current_rows as (
    select
        entity_bucket,
        bucket_entities
    from {{ ref('entity_state_current') }}
),

bucket_counts as (
    select
        entity_bucket,
        count(*) as stored_entities,
        min(bucket_entities) as fewest_written_entities,
        max(bucket_entities) as most_written_entities
    from current_rows
    group by entity_bucket
),

final as (
    select
        entity_bucket,
        stored_entities,
        fewest_written_entities,
        most_written_entities
    from bucket_counts
    where stored_entities != fewest_written_entities
        or fewest_written_entities != most_written_entities
)

select * from final
