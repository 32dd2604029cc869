{#- Each entity's newest row in a `compacted_log` table (`relation`, written one partition per window with its rows
    for the entities the window touched: state_window), as SQL to select from: the row of the latest window that
    touched the entity, among the windows that ended at or before `through` (epoch microseconds; none: every window
    written). Partition values sort as their windows' ends, then their runs' starts (window_partition_value), so the
    rows of a rerun come after those of a write of the same window that stopped before recording its watermark. -#}
{% macro newest_logged_rows(relation, through=none) %}
(
    select
        tenant_id,
        entity_id,
        state_id,
        start_time,
        last_event_ts,
        states_at_last_event_ts,
        watermark_ingested_at
    from (
        select
            *,
            row_number() over (partition by tenant_id, entity_id order by emitted_window desc) as entity_rank
        from {{ relation }}
        {%- if through is not none %}
        where {{ entity_state.written_in_window(none, through) }}
        {%- endif %}
    ) as logged_rows
    where entity_rank = 1
)
{%- endmacro %}
