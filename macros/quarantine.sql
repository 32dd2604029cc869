{#- Why a landed row cannot be applied, or null if it can. Keys are judged after trimming; the first failing
    check wins, in column order. One definition for the staging filter and the quarantine, so a row is either
    applied or rejected, never both and never neither. -#}
{% macro reject_reason(tenant_id, entity_id, state_id, event_time, event_time_text) %}
    case
        {%- for column, name in [(tenant_id, 'tenant_id'), (entity_id, 'entity_id'), (state_id, 'state_id')] %}
        when {{ column }} is null then 'null_{{ name }}'
        when trim({{ column }}) = '' then 'empty_{{ name }}'
        {%- endfor %}
        when {{ event_time }} is null and nullif(trim({{ event_time_text }}), '') is not null
            then 'unparseable_event_time'
        when {{ event_time }} is null then 'null_event_time'
    end
{% endmacro %}

{#- Fails the run, before anything is written, when a landed file of the window lacks a required column or is
    stamped later than the input contract allows. A parquet table reads a missing column as null, so a required
    column that is null in every row of a file is taken as missing: rejecting each row would hide a broken producer
    behind a pile of quarantined rows. A file whose `ingested_at` is later than its modification time plus the
    allowed clock skew breaks what lets runs skip old files unread (landing_files_since): a later file like it could
    be skipped, so the first one seen stops the run. -#}
{% macro assert_landing_files_complete(low, high) %}
    {#- a table input has no files; landing_high_watermark has checked that its columns are there -#}
    {%- if not execute or high is none or entity_state.is_table_input() -%}
        {{ return('') }}
    {%- endif -%}
    {%- set required = ['tenant_id', 'entity_id', 'state_id', 'event_time'] -%}
    {%- set skew_micros = entity_state.landing_clock_skew_micros() -%}
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
        having
            least({% for column in required %}{{ column }}_values{{ ', ' if not loop.last }}{% endfor %}) = 0
            or is_stamped_after_file
        order by file_name
        limit 20
    {%- endset -%}
    {%- set problems = [] -%}
    {%- for row in run_query(query).rows -%}
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
