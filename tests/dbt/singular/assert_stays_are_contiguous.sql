-- Every closed stay ends where a stay of its next state begins, and every open stay begins where a closed stay
-- of the same entity ends, unless it is the entity's only stay.
with

stays as (
    select
        tenant_id,
        entity_id,
        state_id,
        next_state_id,
        start_time,
        end_time,
        is_open
    from {{ ref('entity_state_view') }}
),

closed_without_successor as (
    select
        'closed stay has no following stay' as problem,
        closed.tenant_id,
        closed.entity_id,
        closed.state_id,
        closed.start_time
    from stays as closed
    left anti join stays as following
        on closed.tenant_id = following.tenant_id
        and closed.entity_id = following.entity_id
        and closed.end_time = following.start_time
        and closed.next_state_id = following.state_id
    where not closed.is_open
),

open_without_predecessor as (
    select
        'open stay does not start where a closed stay ends' as problem,
        open_stay.tenant_id,
        open_stay.entity_id,
        open_stay.state_id,
        open_stay.start_time
    from stays as open_stay
    left semi join stays as any_closed
        on open_stay.tenant_id = any_closed.tenant_id
        and open_stay.entity_id = any_closed.entity_id
        and not any_closed.is_open
    left anti join stays as preceding
        on open_stay.tenant_id = preceding.tenant_id
        and open_stay.entity_id = preceding.entity_id
        and not preceding.is_open
        and open_stay.start_time = preceding.end_time
        and open_stay.state_id = preceding.next_state_id
    where open_stay.is_open
),

final as (
    select * from closed_without_successor
    union all
    select * from open_without_predecessor
)

select * from final
