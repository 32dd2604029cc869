{#- Where the events come from. By default, the landing folder this project owns: one Parquet file per arriving
    batch, read through the external table `landing_events` (folder input). With the var
    `entity_state__events_table` set to 'schema.table', any table or view Spark can read instead (table input), its
    columns mapped by `entity_state__events_columns` ({tenant_id: ..., entity_id: ..., state_id: ..., event_time:
    ..., ingested_at: ..., event_time_text: ...}; each value a column or a SQL expression over the table, missing
    keys mapping to the column of the same name, event_time_text to nothing). The source `landing.events` points at
    whichever is in use, so `dbt source freshness` works on both. -#}

{#- The user's events table as 'schema.table', or none for the folder input. -#}
{% macro events_table() %}
    {%- set name = entity_state.setting('events_table') -%}
    {%- if name is none or name == '' -%}
        {{ return(none) }}
    {%- endif -%}
    {%- if name is not string or name.split('.') | length != 2 or '' in name.split('.') -%}
        {{ exceptions.raise_compiler_error(
            "var entity_state__events_table must be 'schema.table' (a table or view Spark can read), got '"
            ~ name ~ "'. Leave it unset to read the landing folder."
        ) }}
    {%- endif -%}
    {{ return(name) }}
{% endmacro %}

{% macro is_table_input() %}
    {{ return(entity_state.events_table() is not none) }}
{% endmacro %}

{#- SQL for one column of the landed rows, over the source `landing.events`: the input contract's columns
    (tenant_id, entity_id, state_id, event_time, event_time_text, ingested_at) and where a row came from
    (source_file_name, source_file_modified_at). A table input has no files: its rows name the table instead, and
    their arrival time stands in for the file's modification time, so the filter on files (landing_files_since)
    filters on the arrival column there. -#}
{% macro input_column(name) %}
    {%- if not entity_state.is_table_input() -%}
        {%- set folder_columns = {
            'ingested_at': 'coalesce(ingested_at, _metadata.file_modification_time)',
            'source_file_name': '_metadata.file_name',
            'source_file_modified_at': '_metadata.file_modification_time',
        } -%}
        {{ return(folder_columns.get(name, name)) }}
    {%- endif -%}
    {%- set mapping = entity_state._events_column_mapping() -%}
    {%- set types = {
        'tenant_id': 'string', 'entity_id': 'string', 'state_id': 'string', 'event_time_text': 'string',
        'event_time': 'timestamp', 'ingested_at': 'timestamp',
    } -%}
    {%- if name == 'source_file_name' -%}
        {{ return("'" ~ entity_state.events_table() ~ "'") }}
    {%- elif name == 'source_file_modified_at' -%}
        {{ return(entity_state.input_column('ingested_at')) }}
    {%- elif name == 'event_time_text' and mapping.get(name) is none -%}
        {{ return('cast(null as string)') }}
    {%- elif name in types -%}
        {{ return('cast((' ~ mapping.get(name, name) ~ ') as ' ~ types[name] ~ ')') }}
    {%- endif -%}
    {{ exceptions.raise_compiler_error("input_column: unknown column '" ~ name ~ "'") }}
{% endmacro %}

{% macro _events_column_mapping() %}
    {%- set columns = entity_state.setting('events_columns') or {} -%}
    {%- set known = ['tenant_id', 'entity_id', 'state_id', 'event_time', 'ingested_at', 'event_time_text'] -%}
    {%- if columns is not mapping -%}
        {{ exceptions.raise_compiler_error(
            "var entity_state__events_columns must map columns of the contract to columns of your table, e.g. "
            ~ "{entity_id: device_id, ingested_at: arrived_at}; got '" ~ columns ~ "'"
        ) }}
    {%- endif -%}
    {%- for key in columns if key not in known -%}
        {{ exceptions.raise_compiler_error(
            "var entity_state__events_columns: unknown key '" ~ key ~ "'; use " ~ known | join(', ')
        ) }}
    {%- endfor -%}
    {{ return(columns) }}
{% endmacro %}

{#- Fails with a message that says what to fix when the table input does not exist or lacks a mapped column
    (Spark's own error would name neither the var nor the mapping). Mapped values that are expressions rather than
    plain column names are left to Spark. -#}
{% macro assert_events_table_readable() %}
    {%- set name = entity_state.events_table() -%}
    {%- set schema, identifier = name.split('.') -%}
    {%- set relation = adapter.get_relation(database=none, schema=schema, identifier=identifier) -%}
    {%- if relation is none -%}
        {{ exceptions.raise_compiler_error(
            "var entity_state__events_table names '" ~ name ~ "', which Spark does not find. Create it, or fix "
            ~ "the name (schema.table)."
        ) }}
    {%- endif -%}
    {%- set available = adapter.get_columns_in_relation(relation) | map(attribute='name') | map('lower') | list -%}
    {%- set mapping = entity_state._events_column_mapping() -%}
    {%- set missing = [] -%}
    {%- for column in ['tenant_id', 'entity_id', 'state_id', 'event_time', 'ingested_at', 'event_time_text'] -%}
        {%- set expression = mapping.get(column, none if column == 'event_time_text' else column) -%}
        {%- if expression is not none and modules.re.fullmatch('[A-Za-z_][A-Za-z0-9_]*', expression)
            and expression | lower not in available -%}
            {%- do missing.append(column ~ ' -> ' ~ expression) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if missing -%}
        {{ exceptions.raise_compiler_error(
            "The events table '" ~ name ~ "' has no column for " ~ missing | join(', ') ~ " (its columns: "
            ~ available | join(', ') ~ "). Map them with the var entity_state__events_columns."
        ) }}
    {%- endif -%}
{% endmacro %}
