{#- The partition a run writes into a table written one partition per window (`emitted_window`): the window's high
    watermark as zero-padded text, so that text order is number order and the Hive metastore (which filters
    partitions on string keys only) can prune on it, then the moment the invocation started, so that two writes of
    one window (a rerun) sort in the order they were made, then the invocation's id, so that no two writes ever
    share a partition (see insert_new_partition_sql). -#}
{% macro window_partition_value(micros) %}
    {{ return(
        entity_state._padded_micros(micros)
        ~ '_' ~ run_started_at.strftime('%Y%m%d%H%M%S%f')
        ~ '_' ~ invocation_id.replace('-', '')[:12]
    ) }}
{% endmacro %}

{#- Partition values sort as their windows do: the value of a window ending at `micros` starts with this text, so
    `emitted_window >= this` keeps exactly the windows that ended at or after `micros`. -#}
{% macro _padded_micros(micros) %}
    {{ return('%020d' % (micros | int) if micros is not none else 'none') }}
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

{#- Filter for the partitions of a table written one partition per window whose windows ended after `start` and at
    or before `high` (epoch microseconds; start none = from the first), on `column`, the partition column or a copy
    of its values. The partition value starts with its window's end as fixed-width text, and '~' sorts after every
    character that follows it, so the bounds are plain text comparisons that Spark prunes partitions with. -#}
{% macro written_in_window(start, high, column='emitted_window') %}
    {%- if high is none -%}
        false
    {%- else -%}
        {%- if start is not none -%}
            {{ column }} > '{{ entity_state._padded_micros(start) }}~' and
        {% endif -%}
        {{ column }} < '{{ entity_state._padded_micros(high) }}~'
    {%- endif -%}
{% endmacro %}

{#- The end of the window of a partition value, as a timestamp (SQL): the inverse of window_partition_value. -#}
{% macro partition_window_end(column) %}
    timestamp_micros(cast(substr({{ column }}, 1, 20) as bigint))
{% endmacro %}
