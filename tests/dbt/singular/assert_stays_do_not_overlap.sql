-- Ordered by start and end, each stay of an entity starts no earlier than the previous one ended, and an entity
-- has exactly one open stay, its last.
with

stays as (
    select
        tenant_id,
        entity_id,
        start_time,
        end_time,
        is_open,
        lag(end_time) over entity_timeline as previous_end_time,
        lead(start_time) over entity_timeline as following_start_time
    from {{ ref('entity_state_view') }}
    window entity_timeline as (partition by tenant_id, entity_id order by start_time, is_open, end_time)
),

final as (
    select
        tenant_id,
        entity_id,
        start_time,
        end_time,
        is_open
    from stays
    where start_time < previous_end_time
        or (is_open and following_start_time is not null)
)

select * from final
