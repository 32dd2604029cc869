{#- The staleness setting, checked: none when `entity_state__stale_after` is off (null), else the duration as a Spark
    interval string ('2 hours', '90 minutes', '1 day 12 hours'). Anything else stops the run saying what to write. -#}
{% macro stale_after() %}
    {%- set value = entity_state.setting('stale_after') -%}
    {%- if value is none or (value is string and value | trim == '') -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set unit = '(second|minute|hour|day|week)s?' -%}
    {%- set pattern = '^\\s*\\d+\\s+' ~ unit ~ '(\\s+\\d+\\s+' ~ unit ~ ')*\\s*$' -%}
    {%- if value is not string or not modules.re.match(pattern, value, modules.re.IGNORECASE) -%}
        {{ exceptions.raise_compiler_error(
            "var entity_state__stale_after must be a duration such as '2 hours', '90 minutes' or '1 day 12 hours' "
            ~ "(whole numbers of seconds, minutes, hours, days or weeks), or null to turn staleness off; got '"
            ~ value ~ "'"
        ) }}
    {%- endif -%}
    {{ return(value | trim | lower) }}
{% endmacro %}

{#- The staleness rule, shared by entity_state_view (moment: now) and as_of (moment: the moment asked about): a stay
    is stale at `moment` when staleness is on, the stay is the entity's open one at that moment, and its last event
    is more than `stale_after` before the moment. Always false when the setting is off. -#}
{% macro stay_is_stale(is_open_then, last_event_ts, moment='current_timestamp()') %}
    {%- set after = entity_state.stale_after() -%}
    {%- if after is none -%}
        false
    {%- else -%}
        coalesce({{ is_open_then }} and {{ last_event_ts }} < {{ moment }} - interval '{{ after }}', false)
    {%- endif -%}
{% endmacro %}

{#- Seconds (a double, microsecond precision) from `start_time` to `end_time`. -#}
{% macro seconds_between(start_time, end_time) %}
    (unix_micros({{ end_time }}) - unix_micros({{ start_time }})) / 1000000.0d
{%- endmacro %}
