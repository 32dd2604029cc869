{#- A query's single value, fetched while the model compiles: literals in a model's SQL are what let Spark skip files
    (it pushes no subquery into a scan). None when dbt only parses. -#}
{% macro _query_value(query) %}
    {%- if not execute -%}
        {{ return(none) }}
    {%- endif -%}
    {{ return(run_query(query).columns[0].values()[0]) }}
{% endmacro %}

{#- Whether `relation` is a table this run reads rows from: it exists (dbt's relation cache) and, for the model's own
    table, the run is no full refresh. Unlike is_incremental(), true for any model's relation, so a model can ask
    about its parents; false while compiling a schema that was never built. -#}
{% macro is_built(relation) %}
    {%- if not execute or relation is none -%}
        {{ return(false) }}
    {%- endif -%}
    {#- a full refresh rebuilds the model's own table; the parents it reads were rebuilt before it -#}
    {%- if relation.identifier == this.identifier and relation.schema == this.schema and should_full_refresh() -%}
        {{ return(false) }}
    {%- endif -%}
    {%- set found = adapter.get_relation(database=relation.database, schema=relation.schema, identifier=relation.identifier) -%}
    {#- a table this run created has no type in dbt's relation cache, only its name -#}
    {%- if found is none or found.type == 'view' -%}
        {{ return(false) }}
    {%- endif -%}
    {%- if found.is_delta == false -%}
        {%- do exceptions.raise_compiler_error(
            relation ~ " is not a Delta Lake table: an earlier version of this project built it in parquet. Rebuild"
            ~ " the state from the landed history, once: `dbt run --full-refresh` (README, \"Upgrading from the"
            ~ " parquet state\"); it reads every landed event and replaces the state tables."
        ) -%}
    {%- endif -%}
    {{ return(true) }}
{% endmacro %}

{#- documented in _window__macros.yml -#}
{% macro is_empty_ref(relation) %}
    {{ return(relation.limit is not none) }}
{% endmacro %}

{#- How far a table's rows say it got: max(`column`) of `relation`'s rows that match `where`, in epoch microseconds for
    a timestamp column (an arrival), as is for a commit version (`is_version`); none when the table is not built or
    holds no such row. -#}
{% macro progress_of(relation, column, where='true', is_version=false) %}
    {%- if not entity_state.is_built(relation) -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set value = entity_state._query_value(
        'select ' ~ ('max(' ~ column ~ ')' if is_version else 'unix_micros(max(' ~ column ~ '))')
        ~ ' from ' ~ relation ~ ' where ' ~ where
    ) -%}
    {{ return(none if value is none else value | int) }}
{% endmacro %}

{#- The window (low, high] of landed arrivals a model reads, from the run manifest entity_state_runs and the model's
    own progress `done` (epoch microseconds, none: nothing applied yet). `high` is the manifest's newest window end,
    so every model of a run ends where that run's manifest row does, whichever models are selected. `low` skips the
    manifest windows after `done` whose `count_column` is 0 (nothing there for this model), so a model whose rows
    lag behind the windows it had nothing to do for does not read their landing files again. The window is empty
    (high <= low) when nothing is left. -#}
{% macro manifest_window(done, count_column) %}
    {%- set runs = ref('entity_state_runs') -%}
    {%- if not entity_state.is_built(runs) -%}
        {{ return({'low': done, 'high': none}) }}
    {%- endif -%}
    {%- set done_ts = 'timestamp_micros(' ~ done ~ ')' if done is not none else 'null' -%}
    {%- set query -%}
        select
            unix_micros(max(window_end_ingested_at)) as high,
            unix_micros(min(case when {{ count_column }} > 0 then coalesce(window_start_ingested_at, timestamp'0001-01-01') end))
                as first_start
        from {{ runs }}
        where {{ done_ts }} is null or window_end_ingested_at > {{ done_ts }}
    {%- endset -%}
    {%- set row = run_query(query).rows[0] -%}
    {%- if row['high'] is none -%}
        {{ return({'low': done, 'high': done}) }}
    {%- endif -%}
    {%- set high = row['high'] | int -%}
    {%- if row['first_start'] is none -%}
        {{ return({'low': high, 'high': high}) }}
    {%- endif -%}
    {%- set first_start = row['first_start'] | int -%}
    {#- timestamp'0001-01-01': the manifest's first window, which starts at the beginning -#}
    {%- set low = none if first_start < -62000000000000000 else first_start -%}
    {%- if done is not none and (low is none or low < done) -%}
        {%- set low = done -%}
    {%- endif -%}
    {{ return({'low': low, 'high': high}) }}
{% endmacro %}

{#- The window end of `window` as a timestamp literal, for the rows a model writes (null when nothing has landed). -#}
{% macro window_end_literal(window) %}
    {{- entity_state.micros_to_timestamp(window.high) if window.high is not none else 'cast(null as timestamp)' -}}
{% endmacro %}
