{{ config(tags=['scheduled']) }}
-- Each row of entity_state_daily is one tenant, state and UTC day, with its keys set, and seconds in state between
-- 0 and a whole day for each entity in the state. One read of the view for the three checks: it counts the open
-- stays up to the moment it is read, so each read costs as much as a run's time in state.
with

days as (
    select
        tenant_id,
        state_id,
        utc_date,
        seconds_in_state,
        entities_in_state,
        count(*) over (partition by tenant_id, state_id, utc_date) as rows_of_the_day
    from {{ ref('entity_state_daily') }}
),

checked as (
    select
        tenant_id,
        state_id,
        utc_date,
        seconds_in_state,
        entities_in_state,
        concat_ws(
            ', ',
            case when tenant_id is null or state_id is null or utc_date is null then 'a key is null' end,
            case when rows_of_the_day > 1 then 'the day has several rows' end,
            case
                when not coalesce(seconds_in_state >= 0 and seconds_in_state <= 86400.0 * entities_in_state, false)
                    then 'seconds_in_state is out of range'
            end
        ) as problems
    from days
),

final as (
    select *
    from checked
    where problems <> ''
)

select * from final
