{#- Filter for the landed rows of the window (low, high]: the window on the arrival time, and the file filter that
    lets Spark skip the files the window cannot hold. Every read of the landing data in a run goes through it. -#}
{% macro landed_window_predicate(low, high, ingested_at='ingested_at', file_modified_at='source_file_modified_at') %}
    {{ entity_state.window_predicate(ingested_at, low, high) }}
    and {{ entity_state.landing_files_since(low, file_modified_at) }}
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

{% macro micros_to_timestamp(micros) %}
    {%- if micros is none -%}
        {{ exceptions.raise_compiler_error('micros_to_timestamp needs a number of microseconds, got none') }}
    {%- endif -%}
    timestamp_micros({{ micros | int }})
{% endmacro %}
