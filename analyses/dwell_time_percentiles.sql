-- How long entities stay in each state: percentiles of the closed stays' durations, in minutes, per tenant and state.
-- Open stays are left out (they have not ended); zero-length stays count as 0.
select
    tenant_id,
    state_id,
    count(*) as closed_stays,
    round(percentile_approx(duration_seconds, 0.5) / 60, 1) as p50_minutes,
    round(percentile_approx(duration_seconds, 0.9) / 60, 1) as p90_minutes,
    round(percentile_approx(duration_seconds, 0.99) / 60, 1) as p99_minutes,
    round(max(duration_seconds) / 60, 1) as max_minutes
from {{ ref('entity_state_view') }}
where not is_open
group by tenant_id, state_id
order by tenant_id, state_id
