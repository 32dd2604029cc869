{#- Watermarks are the highest `ingested_at` (as epoch microseconds) a state table has fully applied. They are
    stored as a table property of the state table itself, so a full refresh (which recreates the table) resets
    its watermark with it, and no helper table can go stale. -#}

{% macro watermark_property() %}
    {{ return('entity_state.watermark_micros') }}
{% endmacro %}

{% macro read_watermark(relation) %}
    {{ return(adapter.dispatch('read_watermark', 'entity_state')(relation)) }}
{% endmacro %}

{% macro spark__read_watermark(relation) %}
    {%- if not execute or relation is none -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set properties = run_query('show tblproperties ' ~ relation) -%}
    {%- for row in properties.rows if row[0] == entity_state.watermark_property() -%}
        {{ return(row[1] | int) }}
    {%- endfor -%}
    {{ return(none) }}
{% endmacro %}

{#- Post-hook of the state models: records the watermark of the model's write plan, the one its rows were computed
    for. -#}
{% macro record_watermark() %}
    {%- if not execute -%}
        {{ return('') }}
    {%- endif -%}
    {%- set watermark = entity_state.read_write_plan(model.compiled_code).get('watermark') -%}
    {%- if watermark is none -%}
        {{ return('') }}
    {%- endif -%}
    {{ return(adapter.dispatch('record_watermark', 'entity_state')(this, watermark)) }}
{% endmacro %}

{% macro spark__record_watermark(relation, watermark_micros) %}
    alter table {{ relation }} set tblproperties ('{{ entity_state.watermark_property() }}' = '{{ watermark_micros }}')
{% endmacro %}

{#- Highest `ingested_at` landed in the files a window starting at `files_since` can hold (all files when it is
    none), fixed once when a model compiles. -#}
{% macro landing_high_watermark(files_since=none) %}
    {%- if not execute -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set landing = source('landing', 'events') -%}
    {%- if entity_state.is_table_input() -%}
        {%- do entity_state.assert_events_table_readable() -%}
    {#- Asked of the catalog, not dbt's relation cache: the on-run-start hook creates the table after the cache is
        filled, and a compile without hooks (sqlfluff, dbt compile on a new machine) may find no table at all. -#}
    {%- elif run_query("show schemas like '" ~ landing.schema ~ "'").rows | length == 0
        or run_query("show tables in " ~ landing.schema ~ " like '" ~ landing.identifier ~ "'").rows | length == 0 -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set result = run_query(
        'select unix_micros(max(' ~ entity_state.input_column('ingested_at') ~ ')) from ' ~ landing
        ~ ' where ' ~ entity_state.landing_files_since(files_since, entity_state.input_column('source_file_modified_at'))
    ) -%}
    {%- set value = result.columns[0].values()[0] -%}
    {{ return(none if value is none else value | int) }}
{% endmacro %}

{#- How much later than its file's modification time a landed row's `ingested_at` may be: the clock skew allowed
    between the producer that stamps a batch and the file system that stamps its file. -#}
{% macro landing_clock_skew_micros() %}
    {%- set minutes = entity_state.setting('landing_clock_skew_minutes') -%}
    {%- if minutes is not number or minutes < 0 -%}
        {{ exceptions.raise_compiler_error(
            "var entity_state__landing_clock_skew_minutes must be a number of minutes, 0 or more; got '" ~ minutes ~ "'"
        ) }}
    {%- endif -%}
    {{ return((minutes * 60 * 1000000) | int) }}
{% endmacro %}

{#- Filter on a landed file's modification time that keeps every file able to hold a row that arrived after
    `micros`. A row's `ingested_at` is at most its file's modification time plus the clock skew (the input contract;
    assert_landing_files_complete fails a run on a file that breaks it), so older files are skipped unread: Spark
    prunes them when it lists the folder, and a run reads only recent files however long the history. On a table
    input the arrival column stands in for the modification time (input_column), so there it is a filter on the
    arrival time alone, which Spark can push down to the table's files as a min/max filter. -#}
{% macro landing_files_since(micros, column='source_file_modified_at') %}
    {%- if micros is none -%}
        true
    {%- else -%}
        {{ column }} > {{ entity_state.micros_to_timestamp((micros | int) - entity_state.landing_clock_skew_micros()) }}
    {%- endif -%}
{% endmacro %}

{#- Filter for the landed rows of the window (low, high]: the window on the arrival time, and the file filter that
    lets Spark skip the files the window cannot hold. Every read of the landing data in a run goes through it. -#}
{% macro landed_window_predicate(low, high, ingested_at='ingested_at', file_modified_at='source_file_modified_at') %}
    {{ entity_state.window_predicate(ingested_at, low, high) }}
    and {{ entity_state.landing_files_since(low, file_modified_at) }}
{% endmacro %}

{#- How far a table written one partition per window (`entity_state_segments`, `events_rejected`) has emitted:
    its recorded watermark, or further if a run wrote rows and then stopped before recording it (the rows
    themselves then say how far it got: `column` is the arrival time each row was emitted for). -#}
{% macro emitted_watermark(relation, column) %}
    {%- if not execute or relation is none -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set recorded = entity_state.read_watermark(relation) -%}
    {%- set query -%}
        select unix_micros(max({{ column }})) from {{ relation }}
        {%- if recorded is not none %}
        where {{ entity_state.emitted_since(recorded) }}
        {%- endif %}
    {%- endset -%}
    {%- set written = run_query(query).columns[0].values()[0] -%}
    {%- set candidates = [] -%}
    {%- for value in [recorded, written] if value is not none -%}
        {%- do candidates.append(value | int) -%}
    {%- endfor -%}
    {{ return(candidates | max if candidates else none) }}
{% endmacro %}

{#- The partition a run writes into a table written one partition per window (`emitted_window`): the window's high
    watermark as zero-padded text, so that text order is number order and the Hive metastore (which filters
    partitions on string keys only) can prune on it, then the invocation's id, so that no two writes ever share a
    partition (see insert_new_partition_sql). -#}
{% macro window_partition_value(micros) %}
    {{ return(entity_state._padded_micros(micros) ~ '_' ~ invocation_id.replace('-', '')[:12]) }}
{% endmacro %}

{#- Partition values sort as their windows do: the value of a window ending at `micros` starts with this text, so
    `emitted_window >= this` keeps exactly the windows that ended at or after `micros`. -#}
{% macro _padded_micros(micros) %}
    {{ return('%020d' % (micros | int) if micros is not none else 'none') }}
{% endmacro %}

{% macro micros_to_timestamp(micros) %}
    {%- if micros is none -%}
        {{ exceptions.raise_compiler_error('micros_to_timestamp needs a number of microseconds, got none') }}
    {%- endif -%}
    timestamp_micros({{ micros | int }})
{% endmacro %}

{#- Filter for the events of the half-open window (low, high]: low none means from the beginning, high none means
    nothing has landed (or nothing may be processed yet), so no event qualifies. An empty window (high <= low, a run
    with nothing new) is rendered as a literal false: Spark then prunes the scan of the landing files, which the
    range on the coalesced ingested_at cannot do, and the plan collapses to an empty relation. -#}
{% macro window_predicate(column, low, high) %}
    {%- if entity_state.is_window_empty(low, high) -%}
        false
    {%- elif low is none -%}
        {{ column }} <= {{ entity_state.micros_to_timestamp(high) }}
    {%- else -%}
        {{ column }} > {{ entity_state.micros_to_timestamp(low) }}
        and {{ column }} <= {{ entity_state.micros_to_timestamp(high) }}
    {%- endif -%}
{% endmacro %}

{#- True when the window (low, high] holds no arrival: nothing has landed or may be processed (high none), or
    nothing since low. -#}
{% macro is_window_empty(low, high) %}
    {{ return(high is none or (low is not none and high | int <= low | int)) }}
{% endmacro %}

{#- Partition filter for a table written one partition per window: only the partitions of windows that ended
    after `micros` can hold rows that arrived after it. Renders `true` when micros is none (every partition). -#}
{% macro emitted_since(micros) %}
    {%- if micros is none -%}
        true
    {%- else -%}
        emitted_window >= '{{ entity_state._padded_micros(micros) }}'
    {%- endif -%}
{% endmacro %}
