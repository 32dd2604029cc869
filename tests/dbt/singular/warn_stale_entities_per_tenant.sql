{{ config(severity='warn', store_failures=true, tags=['scheduled']) }}

-- one row per tenant with stale entities (entity_state__stale_after; none while it is off)
select
    tenant_id,
    count(*) as stale_entities,
    min(last_event_ts) as oldest_last_event_ts
from {{ ref('entity_state_view') }}
where is_open and is_stale
group by tenant_id
