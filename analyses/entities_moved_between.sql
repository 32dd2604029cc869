-- Which entities moved between two moments (UTC), from where to where: as_of at each, compared. A different stay
-- holding at the second moment counts, even one back in the first state.
-- An entity first seen after the first moment shows with a null state_before.
select
    state_after.tenant_id,
    state_after.entity_id,
    state_before.state_id as state_before,
    state_after.state_id as state_after,
    state_after.start_time as in_state_after_since
from {{ entity_state.as_of("timestamp'2026-01-01 09:30:00'") }} as state_after
left join {{ entity_state.as_of("timestamp'2026-01-01 09:00:00'") }} as state_before
    on state_after.tenant_id = state_before.tenant_id
    and state_after.entity_id = state_before.entity_id
where state_before.state_id is null or state_before.start_time <> state_after.start_time
order by state_after.tenant_id, state_after.entity_id
