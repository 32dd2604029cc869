{#- Highest `ingested_at` landed in the files a window starting at `files_since` can hold (all files when it is
    none), fixed once when the run manifest entity_state_runs compiles: every other model ends its window where the
    manifest's newest row does. None under `--empty`, where the models read no rows of any ref or source: no window then reaches the landing. -#}
{% macro landing_high_watermark(files_since=none) %}
    {%- if not execute or flags.EMPTY -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set landing = source('landing', 'events') -%}
    {%- if entity_state.is_table_input() -%}
        {%- do entity_state.assert_events_table_readable() -%}
    {#- dbt's relation cache first: it was filled at the start of the invocation, when the hook found the table in
        it and only refreshed it. It misses a table the hook created after it was filled, so the catalog is asked
        then; and a compile without hooks (sqlfluff, dbt compile on a new machine) may find no table at all. -#}
    {%- elif adapter.get_relation(database=none, schema=landing.schema, identifier=landing.identifier) is none
        and (run_query("show schemas like '" ~ landing.schema ~ "'").rows | length == 0
        or run_query("show tables in " ~ landing.schema ~ " like '" ~ landing.identifier ~ "'").rows | length == 0) -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set value = entity_state._query_value(
        'select unix_micros(max(' ~ entity_state.input_column('ingested_at') ~ ')) from ' ~ landing
        ~ ' where ' ~ entity_state.landing_files_since(files_since, entity_state.input_column('source_file_modified_at'))
    ) -%}
    {{ return(none if value is none else value | int) }}
{% endmacro %}

{#- How much later than its file's modification time a landed row's `ingested_at` may be: the clock skew allowed
    between the producer that stamps a batch and the file system that stamps its file. -#}
{% macro landing_clock_skew_micros() %}
    {{ return(entity_state._minutes_setting_micros('landing_clock_skew_minutes')) }}
{% endmacro %}

{#- How much later than its `ingested_at` an event's `event_time` may be: the clock skew allowed between the device
    that stamps an event and the producer that stamps its batch. A later event is rejected (reject_reason). -#}
{% macro event_clock_skew_micros() %}
    {{ return(entity_state._minutes_setting_micros('event_clock_skew_minutes')) }}
{% endmacro %}

{% macro _minutes_setting_micros(name) %}
    {%- set minutes = entity_state.setting(name) -%}
    {%- if minutes is not number or minutes < 0 -%}
        {{ exceptions.raise_compiler_error(
            "var entity_state__" ~ name ~ " must be a number of minutes, 0 or more; got '" ~ minutes ~ "'"
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

{#- Fails the run, before anything is written, when a landed file of the window lacks a required column or is
    stamped later than the input contract allows. A parquet table reads a missing column as null, so a required
    column that is null in every row of a file is taken as missing: rejecting each row would hide a broken producer
    behind a pile of quarantined rows. A file whose `ingested_at` is later than its modification time plus the
    allowed clock skew breaks what lets runs skip old files unread (landing_files_since): a later file like it could
    be skipped, so the first one seen stops the run. Checked once per run window, by the run manifest
    entity_state_runs, before anything is written. -#}
{% macro assert_landing_files_complete(low, high) %}
    {#- a table input has no files; landing_high_watermark has checked that its columns are there. A window with
        nothing new has no file to check, and the query would still cost a Spark job. -#}
    {%- if not execute or entity_state.is_window_empty(low, high) or entity_state.is_table_input() -%}
        {{ return('') }}
    {%- endif -%}
    {%- set required = ['tenant_id', 'entity_id', 'state_id', 'event_time'] -%}
    {%- set skew_micros = entity_state.landing_clock_skew_micros() -%}
    {#- one row per file that breaks the contract: 20 at most, enough to say what to fix -#}
    {%- set breaks_contract -%}
        (least({% for column in required %}{{ column }}_values{{ ', ' if not loop.last }}{% endfor %}) = 0
            or is_stamped_after_file)
    {%- endset -%}
    {%- set query -%}
        select
            _metadata.file_name as file_name,
            {%- for column in required %}
            count({{ 'coalesce(cast(event_time as string), event_time_text)' if column == 'event_time' else column }})
                as {{ column }}_values,
            {%- endfor %}
            max(ingested_at) as last_ingested_at,
            max(_metadata.file_modification_time) as file_modified_at,
            coalesce(
                max(unix_micros(ingested_at)) - max(unix_micros(_metadata.file_modification_time)) > {{ skew_micros }},
                false
            ) as is_stamped_after_file
        from {{ source('landing', 'events') }}
        where {{ entity_state.landed_window_predicate(
            low, high, entity_state.input_column('ingested_at'), '_metadata.file_modification_time'
        ) }}
        group by _metadata.file_name
        having {{ breaks_contract }}
        order by file_name
        limit 20
    {%- endset -%}
    {%- set rows = run_query(query).rows -%}
    {%- set problems = [] -%}
    {%- for row in rows -%}
        {%- for column in required if row[column ~ '_values'] == 0 -%}
            {%- do problems.append("landing file '" ~ row['file_name'] ~ "': column " ~ column
                ~ " is missing (null in every row)") -%}
        {%- endfor -%}
        {%- if row['is_stamped_after_file'] -%}
            {%- do problems.append("landing file '" ~ row['file_name'] ~ "': column ingested_at ("
                ~ row['last_ingested_at'] ~ ") is later than the file's modification time ("
                ~ row['file_modified_at'] ~ ") by more than the allowed clock skew of "
                ~ entity_state.setting('landing_clock_skew_minutes') ~ " minutes (var entity_state__landing_clock_skew_minutes)") -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if problems -%}
        {{ exceptions.raise_compiler_error(
            problems | join('; ') ~ ". Nothing was written. Move the file out of " ~ entity_state.landing_dir()
            ~ ", fix it (or land it again with `entity-state load`, which checks it), then rerun."
        ) }}
    {%- endif -%}
    {{ return('') }}
{% endmacro %}
