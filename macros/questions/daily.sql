{#- What a run of entity_state_daily_counted recomputes. Returns {'recompute_from': a 'YYYY-MM-DD' day or none (every
    day), 'recompute_from_micros': the start of that day in epoch microseconds (when there is one), 'watermark': the
    current table's watermark it is computed for, 'is_counted': true when the table has already counted everything
    up to that watermark, so the run writes nothing}. Only the days from `recompute_from` on can differ from what the
    table holds, because since its last count (at `counted_at`, applying events through its recorded watermark) only
    these moved:
    - every open stay grew from then on (from `stale_after` earlier when staleness is on: a stay that went stale since
      counts up to its last event, which is at most that long before then);
    - the events applied since can only start, close or extend stays at or after the earliest of their event times;
    - with staleness on, an entity that got events since may have been stale then, counted up to an earlier last
      event; its open stay's start bounds that.
    The open stays' growth alone needs no write: entity_state_daily adds it when it is read.
    Every day is recomputed on a first run, a full refresh, a changed `entity_state__stale_after`, a table without
    the watermark (a run stopped before recording it), and when the current table is behind what this table counted. -#}
{% macro daily_recompute_plan() %}
    {%- set segments = ref('entity_state_segments') -%}
    {%- set through = entity_state.progress_of(segments, 'watermark_ingested_at', 'is_open') -%}
    {%- set plan = {'recompute_from': none, 'watermark': through, 'is_counted': false} -%}
    {#- `dbt build --empty` reads no stays (its refs have a row limit): the rows kept are the table's -#}
    {%- if entity_state.is_empty_ref(segments) and entity_state.is_built(this) -%}
        {%- do plan.update({'is_counted': true}) -%}
        {{ return(plan) }}
    {%- endif -%}
    {%- if not entity_state.is_built(this) or through is none -%}
        {{ return(plan) }}
    {%- endif -%}
    {%- set counted = run_query(
        'select unix_micros(max(counted_through_ingested_at)) as counted_through, '
        ~ 'count(distinct counted_stale_after) as settings, max(counted_stale_after) as stale_after from ' ~ this
    ).rows[0] -%}
    {%- set counted_through = counted['counted_through'] -%}
    {%- if counted_through is none
        or counted_through | int > through
        or counted['settings'] != 1
        or counted['stale_after'] != entity_state.daily_stale_after_text() -%}
        {{ return(plan) }}
    {%- endif -%}
    {%- if counted_through | int == through -%}
        {%- do plan.update({'is_counted': true}) -%}
        {{ return(plan) }}
    {%- endif -%}
    {%- set stale_after = entity_state.stale_after() -%}
    {%- set query -%}
        with

        window_events as (
            {{ entity_state.applicable_events(entity_state.landed_window_predicate(counted_through | int, through)) }}
        ),

        last_count as (
            select max(counted_at) {{- " - interval '" ~ stale_after ~ "'" if stale_after }} as counted_until
            from {{ this }}
        ),

        window_start as (
            select min(event_time) as first_event_time
            from window_events
        ),

        touched_stays as (
            {%- if stale_after %}
            select min(current_stays.start_time) as first_start_time
            from {{ segments }} as current_stays
            left semi join window_events
                on current_stays.tenant_id = window_events.tenant_id
                and current_stays.entity_id = window_events.entity_id
            where current_stays.is_open
            {%- else %}
            select cast(null as timestamp) as first_start_time
            {%- endif %}
        ),

        recompute_day as (
            select
                to_date(least(
                    last_count.counted_until, window_start.first_event_time, touched_stays.first_start_time
                )) as recompute_from,
                last_count.counted_until is null as has_no_rows
            from last_count
            cross join window_start
            cross join touched_stays
        )

        select
            cast(recompute_from as string) as recompute_from,
            unix_micros(cast(recompute_from as timestamp)) as recompute_from_micros,
            has_no_rows
        from recompute_day
    {%- endset -%}
    {%- set row = run_query(query).rows[0] -%}
    {%- if not row['has_no_rows'] -%}
        {%- do plan.update({
            'recompute_from': row['recompute_from'], 'recompute_from_micros': row['recompute_from_micros'] | int
        }) -%}
    {%- endif -%}
    {{ return(plan) }}
{% endmacro %}

{#- The staleness setting as entity_state_daily_counted records it on its rows: a run with another setting
    recomputes every day instead of mixing the two. -#}
{% macro daily_stale_after_text() %}
    {{ return(entity_state.stale_after() or 'off') }}
{% endmacro %}
