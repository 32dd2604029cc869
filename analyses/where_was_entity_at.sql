-- Where was an entity at a moment: its state then, the stay's start and last event, and whether it had gone silent
-- (entity_state__stale_after). Edit the tenant, the entity and the moment (UTC).
select
    tenant_id,
    entity_id,
    state_id,
    start_time,
    last_event_ts,
    is_stale
from {{ entity_state.as_of("timestamp'2026-01-01 09:20:00'") }} as state_then
where tenant_id = 'acme' and entity_id = 'e-1'
