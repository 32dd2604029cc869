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


{#- Post-hook of a `compacted_log` (state_window), after record_watermark: once a compaction (write plan `compacts`)
    has its watermark recorded, its partition holds every entity's newest row, so the partitions before it hold no
    row a reader takes, and they are dropped. A run stopped before this leaves them: readers still take the newest
    rows, and the next compaction drops them. Renders nothing for any other run, and nothing when the compaction's
    partition is not registered (nothing would then hold the rows of the partitions before it). -#}
{% macro drop_partitions_before_compaction() %}
    {%- if not execute -%}
        {{ return('') }}
    {%- endif -%}
    {%- set plan = entity_state.read_write_plan(model.compiled_code) -%}
    {%- if not plan.get('compacts') -%}
        {{ return('') }}
    {%- endif -%}
    {%- set registered = [] -%}
    {%- for row in run_query('show partitions ' ~ this).rows -%}
        {%- do registered.append(row[0].partition('=')[2]) -%}
    {%- endfor -%}
    {%- set older = registered | select('lt', plan.partition) | list -%}
    {%- if plan.partition not in registered or not older -%}
        {{ return('') }}
    {%- endif -%}
    alter table {{ this }} drop if exists
    {%- for value in older %}
        partition (emitted_window = '{{ value }}'){{ ',' if not loop.last }}
    {%- endfor %}
{% endmacro %}
